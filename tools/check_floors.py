#!/usr/bin/env python3
"""Checks that the C core keeps its floors (docs/architecture.md, "Floors").

Every source file under csrc/ sits on a floor (the FLOORS table below, which
docs/architecture.md repeats). A file may include headers and use functions
of its own floor or lower ones; the script fails (exit 1) on

  * an #include of a header on a higher floor,
  * a use (call or reference) of a function defined on a higher floor,
  * a function declared in one file's header but defined in another file
    (a header declares what its own .c defines; INTERFACES lists the few
    headers that are contracts implemented elsewhere on purpose),

printing each offending edge, and when the floors table of
docs/architecture.md names other floors than FLOORS. Usage: check_floors.py [CSRC_DIR] (default:
the csrc/ beside this script). Standard library only; the parsing is a
small approximation of C that the core's style keeps sufficient: function
definitions and prototypes start at column 0 (outside braces).
"""
import os
import re
import sys

# (floor, name, path prefixes relative to csrc/). A file takes the floor of
# the longest prefix that matches it. Keep in step with docs/architecture.md.
FLOORS = [
    (0, "core", ["core/"]),
    (1, "pjrt", ["pjrt/"]),
    (2, "shlo, cache", ["shlo/", "cache/"]),
    (2, "runner", ["runner/"]),
    (3, "storage, program, state", [
        "graph/arena.", "graph/grow.", "graph/key_buf.", "graph/core.", "graph/storage.",
        "graph/program.", "graph/program_serial.", "graph/persistent.", "graph/explain.",
        "graph/modes.", "graph/step_stats.", "graph/device_checks.", "graph/value_args.", "graph/view_layout.", "graph/dump.",
        "graph/hlo_listing.",
        "dist/",
    ]),
    (4, "lowering context, ops", ["graph/lower_ctx.", "graph/view.", "ops/"]),
    (5, "strict, region, replay", ["graph/strict.", "graph/region.", "graph/replay.", "graph/exported."]),
    (6, "execute", ["graph/execute."]),
    (7, "torch boundary", ["torch/"]),
]

# Folders whose headers are shared by the folder's files: a header there
# may declare functions any file of the same folder defines (the ops'
# family helpers, the PJRT runtime's public and internal headers, the
# boundary's bridge.h). Elsewhere a header declares what its own .c defines.
SHARED_HEADER_FOLDERS = {"ops", "pjrt", "torch"}

# Headers that declare a contract implemented in another folder on purpose:
# the lowering contract's context is the graph floor's lower_ctx.c, on the
# ops' own floor.
INTERFACES = {
    "ops/lowering.h": {"graph/lower_ctx.c"},
}

KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "defined", "_Static_assert",
            "static_assert", "__attribute__", "alignof", "_Alignof", "typeof", "__typeof__"}


def floor_of(rel):
    best = None
    for floor, name, prefixes in FLOORS:
        for p in prefixes:
            if rel.startswith(p) and (best is None or len(p) > best[0]):
                best = (len(p), floor, name)
    return (best[1], best[2]) if best else (None, None)


def strip(text):
    """Blanks comments, string and char literals (keeping line numbers)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_preprocessor(text):
    lines = text.split("\n")
    out, cont = [], False
    for line in lines:
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def name_before_paren(head):
    """The identifier just before the first '(' of a declaration head."""
    m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
    if not m or m.group(1) in KEYWORDS or head[m.end():].lstrip().startswith("*"):
        return None
    prefix = head[:m.start(1)]
    if "=" in prefix or re.match(r"\s*(typedef|struct|union|enum)\b", head):
        return None
    if re.match(r"\s*(return|else|do)\b", head):
        return None
    return m.group(1)


def top_level_items(text):
    """Yields (kind, name, is_static, line) for definitions ('def') and
    prototypes ('decl') at brace depth 0 (extern "C" blocks looked into)."""
    items = []
    depth = 0
    head_start = 0
    i, n = 0, len(text)
    transparent = []  # depths of extern "C" / namespace blocks
    while i < n:
        c = text[i]
        if c == "{":
            head = text[head_start:i]
            if depth == len(transparent) and re.search(r'(extern\s+"\s*"|namespace\b[\w\s:]*)\s*$', head):
                transparent.append(depth + 1)
                depth += 1
                head_start = i + 1
            elif depth == len(transparent):
                name = name_before_paren(head)
                if name and re.search(r"\)\s*(const)?\s*$", head):
                    line = text.count("\n", 0, head_start + len(head) - len(head.lstrip()))
                    items.append(("def", name, bool(re.search(r"\bstatic\b", head)), line + 1))
                    # skip the body
                    d = 1
                    j = i + 1
                    while j < n and d:
                        if text[j] == "{":
                            d += 1
                        elif text[j] == "}":
                            d -= 1
                        j += 1
                    i = j
                    head_start = j
                    continue
                depth += 1
            else:
                depth += 1
        elif c == "}":
            depth -= 1
            if transparent and transparent[-1] == depth + 1:
                transparent.pop()
                head_start = i + 1
        elif c == ";" and depth == len(transparent):
            head = text[head_start:i]
            name = name_before_paren(head)
            if name and not re.match(r"\s*(typedef|using|template)\b", head):
                line = text.count("\n", 0, head_start + len(head) - len(head.lstrip()))
                items.append(("decl", name, bool(re.search(r"\bstatic\b", head)), line + 1))
            head_start = i + 1
        i += 1
    return items


def collect(csrc):
    files = {}
    for root, _, names in os.walk(csrc):
        for nm in sorted(names):
            rel = os.path.relpath(os.path.join(root, nm), csrc).replace(os.sep, "/")
            if rel.endswith((".c", ".h")) or (rel.startswith("torch/") and rel.endswith(".cpp")):
                with open(os.path.join(root, nm), encoding="utf-8") as f:
                    files[rel] = f.read()
    return files


def check(csrc):
    files = collect(csrc)
    problems = []
    stripped = {rel: strip(t) for rel, t in files.items()}
    floors = {}
    for rel in files:
        fl, name = floor_of(rel)
        if fl is None:
            problems.append("csrc/%s: on no floor (add it to FLOORS in tools/check_floors.py)" % rel)
        floors[rel] = (fl, name)

    # includes
    for rel, text in stripped.items():
        fl = floors[rel][0]
        for ln, line in enumerate(files[rel].split("\n"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = m.group(1)
            tf, tname = floors.get(target, (None, None))
            if tf is not None and fl is not None and tf > fl:
                problems.append("csrc/%s:%d includes %s (%s, floor %d) from %s (floor %d)" % (
                    rel, ln, target, tname, tf, floors[rel][1], fl))

    # definitions and declarations
    defs = {}   # name -> rel (non-static C definitions)
    decls = []  # (rel, name, line) in headers
    for rel, text in stripped.items():
        for kind, name, static, line in top_level_items(without_preprocessor(text)):
            if kind == "def" and not static and rel.endswith(".c"):
                defs.setdefault(name, rel)
            elif kind == "decl" and rel.endswith(".h") and not static:
                decls.append((rel, name, line))

    # declared in one file's header, defined in another
    for rel, name, line in decls:
        d = defs.get(name)
        if not d or d[:-2] == rel[:-2]:
            continue
        folder = os.path.dirname(rel)
        if folder in SHARED_HEADER_FOLDERS and os.path.dirname(d) == folder:
            continue
        if d in INTERFACES.get(rel, ()):
            continue
        problems.append("csrc/%s:%d declares %s, defined in csrc/%s (a header declares what its own "
                        "file defines)" % (rel, line, name, d))

    # uses that run up a floor
    if defs:
        pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, defs), key=len, reverse=True))
                             + r")\b(\s*\()?")
        for rel, text in stripped.items():
            fl = floors[rel][0]
            if fl is None:
                continue
            text = without_preprocessor(text)
            for m in pattern.finditer(text):
                target = defs[m.group(1)]
                tf, tname = floors[target]
                if tf is None or tf <= fl or target[:-2] == rel[:-2]:
                    continue
                ln = text.count("\n", 0, m.start()) + 1
                verb = ("declares" if rel.endswith(".h") else "calls") if m.group(2) else "refers to"
                problems.append("csrc/%s:%d %s %s (%s, floor %d) from %s (floor %d)" % (
                    rel, ln, verb, m.group(1), tname, tf, floors[rel][1], fl))
    return problems, len(files), len(defs)


def check_docs(csrc):
    """The floors table in docs/architecture.md names the same floors."""
    doc = os.path.join(csrc, os.pardir, "docs", "architecture.md")
    if not os.path.exists(doc):
        return []
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    rows = re.findall(r"^\| (\d+) \| ([^|]+?) \|", text.split("## Floors", 1)[-1], re.M)
    documented = [(int(n), name) for n, name in rows]
    expected = [(floor, name) for floor, name, _ in FLOORS]
    if documented[:len(expected)] != expected:
        return ["docs/architecture.md: the Floors table lists %s, the checker %s" % (
            documented, expected)]
    return []


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    csrc = argv[1] if len(argv) > 1 else os.path.join(here, os.pardir, "csrc")
    problems, n_files, n_defs = check(csrc)
    problems += check_docs(csrc)
    for p in problems:
        print(p)
    if problems:
        print("check_floors: %d problem(s): edges run against the floors" % len(problems))
        return 1
    print("check_floors: %d files, %d functions, every include and call keeps to its floor"
          % (n_files, n_defs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
