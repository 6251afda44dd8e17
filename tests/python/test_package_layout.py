"""The layout of the axon package, read from its sources with ast (nothing is imported).

* No import circle among its modules. Every import counts: at the top of a module or inside a
  function (a lazy import hides a circle, it does not break it); importing ``a.b.c`` also runs the
  ``__init__`` of ``a.b`` (and ``a``), so those count too, but for the packages that hold the
  importing module (they are being imported already). ``from . import name`` is an import of the
  submodule ``name`` where there is one (or a compiled one, NATIVE), else of the package's
  ``__init__``, which must then not import the module back.
* The package root holds the API (what ``axon/__init__.py`` imports) and the command line's entry
  (cli, __main__); everything the ``axon`` command runs is under tools/.
* A module run as a program (``python -m``, it has a ``__main__`` block) is not imported by the
  packages above it: runpy would find it imported already and run a second copy of it.

The checker functions are tried on small trees made here first, so that a broken checker cannot
pass the package by finding nothing.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "axon"

#: Submodules the build adds beside the sources (python/CMakeLists.txt: nanobind_add_module(_axon)).
NATIVE = frozenset({"axon._axon"})

#: The root's modules that are not API: the ``axon`` command's entry.
COMMAND_ENTRY = frozenset({"axon.cli", "axon.__main__"})


@dataclass(frozen=True)
class Edge:
    """`source` runs `target` when the import at `line` runs; `top`: at the module's import (not
    inside a function)."""

    source: str
    target: str
    line: int
    top: bool


def find_modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package in `root` (a package by its __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported_modules(node: ast.Import | ast.ImportFrom, here: str, is_package: bool,
                      known: set[str]) -> list[str]:
    """The modules of the package that an import statement names (not yet their parents)."""
    if isinstance(node, ast.Import):
        # `import a.b.c` imports a module; the longest part of it that is ours.
        names = [alias.name for alias in node.names]
        return [next((p for p in [n, *reversed(_ancestors(n))] if p in known), "") for n in names]
    if node.level:
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        module = ".".join(base + (node.module.split(".") if node.module else []))
    else:
        module = node.module or ""
    # `from m import n`: the submodule m.n where there is one, else a name defined by m.
    return [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module for alias in node.names]


def import_edges(root: Path, native: frozenset[str] = frozenset()) -> list[Edge]:
    """Every import of one module of the package by another, with the parents it runs."""
    modules = find_modules(root)
    known = set(modules) | set(native)
    edges: list[Edge] = []
    for name, path in modules.items():
        _add_edges(edges, ast.parse(path.read_text(), str(path)), True, name, path.name == "__init__.py",
                   modules, known)
    return list(dict.fromkeys(edges))  # `from m import a, b` is one import of m


def _add_edges(edges: list[Edge], node: ast.AST, top: bool, here: str, is_package: bool,
               modules: dict[str, Path], known: set[str]) -> None:
    """The imports in `node` and below it, made by the module `here`."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        already = {here, *_ancestors(here)}  # being imported whenever `here` runs
        for target in _imported_modules(node, here, is_package, known):
            if target not in known:
                continue  # another distribution's module
            runs = [target, *(p for p in _ancestors(target) if p not in already)]
            edges.extend(Edge(here, t, node.lineno, top) for t in runs if t != here and t in modules)
    inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    for child in ast.iter_child_nodes(node):
        _add_edges(edges, child, inner, here, is_package, modules, known)


def find_circles(edges: list[Edge]) -> list[list[Edge]]:
    """Circles of imports, one for each import that closes one in a depth-first walk: the graph has
    a circle exactly when this finds at least one."""
    out: dict[str, list[Edge]] = defaultdict(list)
    for e in edges:
        out[e.source].append(e)
    done: set[str] = set()
    path_nodes: list[str] = []
    path_edges: list[Edge] = []
    circles: list[list[Edge]] = []

    def walk(node: str) -> None:
        path_nodes.append(node)
        for e in out[node]:
            if e.target in path_nodes:
                circles.append(path_edges[path_nodes.index(e.target):] + [e])
            elif e.target not in done:
                path_edges.append(e)
                walk(e.target)
                path_edges.pop()
        path_nodes.pop()
        done.add(node)

    for node in sorted(out):
        if node not in done:
            walk(node)
    return circles


def describe(circle: list[Edge]) -> str:
    """'a (line 3) -> b (line 9, in a function) -> a'."""
    steps = [f"{e.source} (line {e.line}{'' if e.top else ', in a function'})" for e in circle]
    return " -> ".join(steps + [circle[-1].target])


def misplaced_at_root(root: Path, entry: frozenset[str], native: frozenset[str] = frozenset()) -> list[str]:
    """The root's modules that its __init__ does not import (not API) and that are no command entry."""
    package = root.name
    api = {e.target for e in import_edges(root, native) if e.source == package and e.top}
    return sorted(m for m, path in find_modules(root).items()
                  if m.count(".") == 1 and path.name != "__init__.py" and m not in api | entry)


def programs_imported_by_their_packages(root: Path, native: frozenset[str] = frozenset()) -> list[str]:
    """Modules with a __main__ block that their parent packages import at import time (runpy would
    run such a module twice under ``python -m``)."""
    edges = import_edges(root, native)
    top: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        if e.top:
            top[e.source].add(e.target)
    bad = []
    for name, path in find_modules(root).items():
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            continue
        seen, todo = set(), _ancestors(name)
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(top[m])
        if name in seen:
            bad.append(name)
    return sorted(bad)


# -- the checker on trees made here ---------------------------------------------------------------


def make_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


#: (what it shows, the tree, its compiled modules, the circles found).
CIRCLE_CASES = [
    ("a circle through a lazy import", {
        "request.py": "def check():\n    from .space import TESTS\n",
        "space.py": "from .request import check\nTESTS = {}\n",
    }, frozenset(), ["pkg.request (line 2, in a function) -> pkg.space (line 1) -> pkg.request"]),
    ("absolute and parent imports", {
        "a.py": "import pkg.b\n",
        "b.py": "from .sub.c import f\n",
        "sub/__init__.py": "",
        "sub/c.py": "from ..a import g\n",
    }, frozenset(), ["pkg.a (line 1) -> pkg.b (line 1) -> pkg.sub.c (line 1) -> pkg.a"]),
    ("a submodule needs a name its package's __init__ defines", {
        "__init__.py": "from .api import put\nVERSION = 1\n",
        "api.py": "from . import VERSION\ndef put(): ...\n",
    }, frozenset(), ["pkg (line 1) -> pkg.api (line 1) -> pkg"]),
    ("an __init__ and its submodules importing each other by module", {
        "__init__.py": "from . import _native\nfrom .api import put\nfrom . import errors\n",
        "api.py": "from . import _native\nfrom . import errors\nfrom .errors import Error\ndef put(): ...\n",
        "errors.py": "class Error(Exception): ...\n",
    }, frozenset({"pkg._native"}), []),
    ("the same, the compiled module unknown: taken for a name of the __init__", {
        "__init__.py": "from . import _native\nfrom .api import put\n",
        "api.py": "from . import _native\ndef put(): ...\n",
    }, frozenset(), ["pkg (line 2) -> pkg.api (line 1) -> pkg"]),
    # pkg.space needs only pkg.tools.sizes, but importing it runs pkg/tools/__init__.
    ("importing a submodule runs its package's __init__", {
        "space.py": "from .tools.sizes import parse\n",
        "tools/__init__.py": "from .serve import main\n",
        "tools/sizes.py": "def parse(): ...\n",
        "tools/serve.py": "from ..space import Server\n",
    }, frozenset(), ["pkg.space (line 1) -> pkg.tools (line 1) -> pkg.tools.serve (line 1) -> pkg.space"]),
]


@pytest.mark.parametrize("files, native, expected", [c[1:] for c in CIRCLE_CASES],
                         ids=[c[0] for c in CIRCLE_CASES])
def test_the_circles_of_a_tree(tmp_path, files, native, expected):
    root = make_tree(tmp_path, {"__init__.py": "", **files})
    assert [describe(c) for c in find_circles(import_edges(root, native))] == expected


def test_modules_of_the_root_that_are_no_api_are_named(tmp_path):
    root = make_tree(tmp_path, {
        "__init__.py": "from .api import put\n",
        "api.py": "def put(): ...\n",
        "cli.py": "from . import launcher\n",
        "launcher.py": "def run(): ...\n",
        "tools/__init__.py": "",
        "tools/doctor.py": "",
    })
    assert misplaced_at_root(root, frozenset({"pkg.cli"})) == ["pkg.launcher"]


def test_a_program_its_package_imports_is_named(tmp_path):
    root = make_tree(tmp_path, {
        "__init__.py": "",
        "bench/__init__.py": "from .peers import NOTES\n",
        "bench/peers.py": "from .torch_peer import TESTS\nNOTES = []\n",
        "bench/torch_peer.py": "TESTS = ()\nif __name__ == '__main__':\n    pass\n",
        "bench/mpi_peer.py": "if __name__ == '__main__':\n    pass\n",
    })
    assert programs_imported_by_their_packages(root) == ["pkg.bench.torch_peer"]


# -- the package itself ---------------------------------------------------------------------------


def test_the_package_has_no_import_circle():
    edges = import_edges(PACKAGE, NATIVE)
    assert len(edges) > 50  # the walk saw the package's imports
    assert [describe(c) for c in find_circles(edges)] == []


def test_the_root_holds_the_api_and_the_command_entry_only():
    assert misplaced_at_root(PACKAGE, COMMAND_ENTRY, NATIVE) == []
    modules = find_modules(PACKAGE)
    # The launcher of `axon run` and its emulated nodes are tools; the comparison peers sit beside
    # the benchmark that runs them.
    for name in ("launcher", "emulated_nodes"):
        assert f"axon.{name}" not in modules and f"axon.tools.{name}" in modules
    for name in ("mpi_peer", "torch_peer", "ucx_perftest_peer"):
        assert f"axon.tools.{name}" not in modules and f"axon.tools.bench.{name}" in modules


def test_the_peer_programs_are_run_not_imported():
    modules = find_modules(PACKAGE)
    assert {"axon.tools.bench.torch_peer", "axon.tools.bench.ucx_perftest_peer"} <= set(modules)
    assert programs_imported_by_their_packages(PACKAGE, NATIVE) == []
