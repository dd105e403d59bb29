"""The expectations file: every PyTorch test that does not pass on tpu.

One line per test:

    <file.py>::<Class>::<test> | <outcome> | <category> | <reason>

outcome is what the run must see (failed, or xpassed for an expected failure
on CPU/CUDA that passes here), or not-run: the runner deselects the test (one
that cannot run here, e.g. it allocates more host memory than a test machine
has); category is one of CATEGORIES. Lines starting
with '#' are comments. `run.py --update-expectations` rewrites the entries
of the files it ran, keeps the category and reason of tests still failing
the same way, and proposes a category for new ones from the error message
(`unclassified` when it cannot tell): the result is reviewed by hand.
"""
import collections
import os
import re

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expectations.txt")

CATEGORIES = {
    "complex": "a complex case tpu does not support (complex32, view(dtype) across real/complex); "
               "the entries of files not rerun since complex64/128 landed need a rerun",
    "dtype": "another dtype tpu does not support (float64 on some ops, uint16/32/64, float8, quantized, sparse)",
    "message": "tpu raises the right exception type with a message worded differently",
    "limitation": "a documented limitation of tpu (docs/architecture.md), or an API "
                  "the test reaches that a PrivateUse1 device does not have",
    "known-bug": "a bug on tpu, not fixed yet (owner and repro in the reason)",
    "test-env": "the test assumes CPU/CUDA internals or its environment (not a tpu behaviour)",
    "unclassified": "not reviewed yet",
}

Entry = collections.namedtuple("Entry", "outcome category reason")

HEADER = """\
# Expected outcomes of PyTorch's device-generic tests on tpu (make pytorch-tests).
# Every test that does not pass on tpu is listed with a category and a reason;
# a test not listed must pass (or be skipped). The run fails on any difference.
# Categories:
""" + "".join(f"#   {k:13s} {v}\n" for k, v in CATEGORIES.items()) + """\
# Format: <file.py>::<Class>::<test> | <outcome> | <category> | <reason>
"""


def load(path=DEFAULT_PATH):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split(" | ", 3)]
            if len(parts) != 4:
                raise ValueError(f"{path}:{n}: expected 4 fields separated by ' | '")
            key, outcome, category, reason = parts
            if category not in CATEGORIES:
                raise ValueError(f"{path}:{n}: unknown category {category!r}")
            out[key] = Entry(outcome, category, reason)
    return out


def save(path, entries):
    with open(path, "w") as f:
        f.write(HEADER)
        current = None
        for key in sorted(entries):
            file_name = key.split("::", 1)[0]
            if file_name != current:
                counts = collections.Counter(
                    e.category for k, e in entries.items() if k.startswith(file_name + "::"))
                f.write(f"\n# {file_name}: " + ", ".join(
                    f"{c} {n}" for c, n in sorted(counts.items())) + "\n")
                current = file_name
            e = entries[key]
            reason = " ".join(e.reason.split())
            f.write(f"{key} | {e.outcome} | {e.category} | {reason}\n")


_COMPLEX = re.compile(r"complex|cfloat|cdouble|chalf|ComplexFloat|ComplexDouble|ComplexHalf", re.I)
_DTYPES = re.compile(r"uint16|uint32|uint64|float8|quint|qint|sparse|Sparse|float64|Double", re.I)
_MESSAGE = re.compile(r"does not match|didn't match|Regex|regex", re.I)


def classify(key, message, cpu_outcome=None):
    """A proposed (category, reason) for a new expected failure."""
    test = key.rsplit("::", 1)[-1]
    msg = " ".join((message or "").split())[:300]
    if cpu_outcome in ("failed", "hang"):
        return "test-env", "fails on CPU too with torch 2.13 (this test version expects other behaviour): " + msg
    if _COMPLEX.search(test) or _COMPLEX.search(msg):
        return "complex", "a complex-dtype case not supported on tpu: " + (msg[:100] or "complex dtype")
    if re.search(r"does not support dtype (UInt16|UInt32|UInt64|Float8|QInt|QUInt|Bits)", msg) \
            or re.search(r"Quantized|quantized|Sparse|sparse", msg):
        return "dtype", msg
    if _MESSAGE.search(msg):
        return "message", msg
    if _DTYPES.search(test) and ("not implemented" in msg.lower() or "not supported" in msg.lower()):
        return "dtype", msg
    return "unclassified", msg


def updated(entries, file_name, results, whole_file):
    """entries with those of file_name replaced from this run's results."""
    out = dict(entries)
    if whole_file:
        for key in [k for k in out if k.startswith(file_name + ".py::")]:
            if out[key].outcome == "not-run":
                continue
            if key not in results or results[key]["outcome"] not in ("failed", "xpassed"):
                del out[key]
    for key, rec in results.items():
        outcome = rec["outcome"]
        if outcome not in ("failed", "xpassed"):
            if key in out and out[key].outcome != "not-run":
                del out[key]
            continue
        old = out.get(key)
        if old is not None and old.outcome in (outcome, "not-run"):
            continue
        category, reason = classify(key, rec.get("message", ""), rec.get("cpu"))
        out[key] = Entry(outcome, category, reason)
    return out
