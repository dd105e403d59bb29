"""tools/check_floors.py: the C core keeps its floors (docs/architecture.md),
and the checker fails, naming the edge, when a back edge is planted."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, "tools", "check_floors.py")
CSRC = os.path.join(ROOT, "csrc")


def run_checker(csrc):
    return subprocess.run([sys.executable, CHECKER, csrc], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def csrc_copy(tmp_path):
    dst = tmp_path / "csrc"
    shutil.copytree(CSRC, dst)
    return dst


def append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def test_real_tree_keeps_its_floors():
    r = run_checker(CSRC)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every include and call keeps to its floor" in r.stdout


def test_planted_include_up_a_floor_fails(csrc_copy):
    storage_c = csrc_copy / "graph" / "storage.c"
    text = storage_c.read_text()
    storage_c.write_text(text.replace('#include "graph/core.h"\n',
                                      '#include "graph/core.h"\n#include "graph/region.h"\n', 1))
    # the planted line's number: the line after storage.c's own core.h include
    line = text.splitlines().index('#include "graph/core.h"') + 2
    r = run_checker(str(csrc_copy))
    assert r.returncode == 1, r.stdout
    assert (f"csrc/graph/storage.c:{line} includes graph/region.h (strict, region, replay, floor 5) "
            "from storage, program, state (floor 3)") in r.stdout, r.stdout


def test_planted_call_up_a_floor_fails(csrc_copy):
    append(csrc_copy / "graph" / "storage.c",
           "\nvoid tt_storage_planted(void);\n"
           "void tt_storage_planted(void) { (void)tt_region_flush(TT_FLUSH_SYNC); }\n")
    r = run_checker(str(csrc_copy))
    assert r.returncode == 1, r.stdout
    lines = [l for l in r.stdout.splitlines() if "calls tt_region_flush" in l]
    assert len(lines) == 1, r.stdout
    assert lines[0].startswith("csrc/graph/storage.c:")
    assert lines[0].endswith("calls tt_region_flush (strict, region, replay, floor 5) "
                             "from storage, program, state (floor 3)"), lines[0]


def test_planted_call_from_core_into_pjrt_fails(csrc_copy):
    append(csrc_copy / "core" / "error.c",
           "\nint tt_planted(void) { return tt_runtime_device_count(0); }\n")
    r = run_checker(str(csrc_copy))
    assert r.returncode == 1, r.stdout
    assert "calls tt_runtime_device_count (pjrt, floor 1) from core (floor 0)" in r.stdout, r.stdout


def test_declaration_in_another_files_header_fails(csrc_copy):
    # what tt_storage_sync was before the floors: declared by storage.h,
    # defined by the region layer
    append(csrc_copy / "graph" / "storage.h", "\nvoid tt_region_planted(void);\n")
    append(csrc_copy / "graph" / "region.c", "\nvoid tt_region_planted(void) {}\n")
    r = run_checker(str(csrc_copy))
    assert r.returncode == 1, r.stdout
    assert "csrc/graph/storage.h" in r.stdout and \
        "declares tt_region_planted, defined in csrc/graph/region.c" in r.stdout, r.stdout


def test_file_on_no_floor_fails(csrc_copy):
    (csrc_copy / "graph" / "newcomer.c").write_text("int tt_newcomer(void) { return 0; }\n")
    r = run_checker(str(csrc_copy))
    assert r.returncode == 1, r.stdout
    assert "csrc/graph/newcomer.c: on no floor" in r.stdout, r.stdout
