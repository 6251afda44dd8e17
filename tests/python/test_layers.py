"""The layer check (cmake/check_layers.py) on trees made here: what it refuses and what it allows."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "cmake" / "check_layers.py"


def run(root, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args],
                          capture_output=True, text=True, timeout=60)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def tree(tmp_path):
    write(tmp_path, "src/core/pe.hpp", "#pragma once\n")
    write(tmp_path, "src/coll/plan.hpp", '#pragma once\n#include "core/pe.hpp"\n')
    write(tmp_path, "include/axon/axon.hpp", "#pragma once\n")
    return tmp_path


def test_the_project_keeps_its_layers():
    res = run(ROOT)
    assert res.returncode == 0, res.stderr
    assert "every include runs down a floor" in res.stdout


def test_an_include_up_a_floor_is_refused_by_file_line_and_rule(tree):
    write(tree, "src/core/env.cpp", '#include "core/pe.hpp"\n\n#include "coll/plan.hpp"\n')
    res = run(tree)
    assert res.returncode == 1
    assert "src/core/env.cpp:3: src/core/ includes coll/plan.hpp, which is on a floor above (src/coll/)" in res.stderr


def test_folders_on_one_floor_may_not_include_each_other(tree):
    write(tree, "src/space/box.hpp", '#include "coll/plan.hpp"\n')
    res = run(tree)
    assert res.returncode == 1
    assert "src/space/ includes coll/plan.hpp, which is on its own floor" in res.stderr


def test_a_folder_on_no_floor_is_named(tree):
    write(tree, "src/extras/x.cpp", '#include "core/pe.hpp"\n')
    res = run(tree)
    assert "folder src/extras/ is on no floor" in res.stderr


def test_private_headers_outside_the_library_are_refused(tree):
    write(tree, "bench/b.cpp", '#include "axon/axon.hpp"\n#include "coll/plan.hpp"\n')
    write(tree, "include/axon/leak.hpp", '#include "core/pe.hpp"\n')
    res = run(tree)
    assert "bench/b.cpp:2: includes the library's private header coll/plan.hpp" in res.stderr
    assert "include/axon/leak.hpp:1: a public header includes the library's private header core/pe.hpp" in res.stderr


def test_a_paid_debt_must_leave_the_list(tree, monkeypatch):
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    # A listed debt the tree still has is allowed; one it no longer has must leave the list.
    write(tree, "src/core/env.cpp", '#include "coll/plan.hpp"\n')
    monkeypatch.setattr(layers, "DEBTS", {("src/core/env.cpp", "coll/plan.hpp"): "why",
                                          ("src/core/gone.cpp", "coll/plan.hpp"): "why"})
    problems = layers.check(str(tree))
    assert problems == ["debt paid: src/core/gone.cpp no longer includes coll/plan.hpp: remove it from DEBTS in "
                        "cmake/check_layers.py"], problems


def test_the_report_counts_arrows_up_and_circles(tree):
    write(tree, "src/core/env.cpp", '#include "coll/plan.hpp"\n')
    res = run(tree, "--report")
    assert res.returncode == 0
    assert "1 folder arrows run up (1 includes)" in res.stdout
    assert "core <-> coll" in res.stdout or "coll <-> core" in res.stdout
