#!/usr/bin/env python3
"""The layers of src/, enforced: which folder may include which.

Each folder of src/ is one layer (a "room"); a file may include headers of its own folder and of
folders on a lower floor, never of one on its own floor or above. The composition root
(src/runtime/) is the one folder on the top floor that builds and owns every subsystem, so it is
the only one allowed to include them all. Code outside the library (python/csrc, bench/,
examples/) includes public headers (include/axon/) only; benchmarks of internal pieces live with
the tests (tests/perf), which may include private headers.

Known debts (an include that still runs up a floor) are listed in DEBTS with the reason; the
check fails on any other, and also on a debt that is gone (so the list only shrinks).

  check_layers.py [--root DIR]      check; exit 1 naming every violation
  check_layers.py --report          the folder graph: floors, arrows, arrows up, circles

CMake runs the check at configure time and ctest runs it as the test `layers`
(docs/architecture.md, "Layers").
"""
import argparse
import os
import re
import sys
from collections import defaultdict

# Floors, bottom first. A folder may include folders on lower floors only.
FLOORS = [
    ["core"],        # env, errors, logging, sockets, liveness, progress, the PE context interface
    ["bootstrap"],   # launcher detection, the key-value store, set-up steps
    ["memory"],      # the symmetric allocator and the host heap
    ["kernels"],     # the runtime's own CUDA kernels and their launchers' interfaces
    ["gpu"],         # the driver, the GPU heap, IPC, the GPU backend
    ["transport"],   # one interface; shm, cuda_ipc, staged, ucx; the router
    ["onesided"],    # put/get/signal/atomics/waits from the host and on streams
    ["p2p"],         # two-sided messages
    ["coll", "space"],  # collectives; the staging space (beside the PE runtime)
    ["runtime"],     # the composition root: builds and owns every subsystem; init, teams
    ["capi"],        # the C API, over the public C++ API only
]
FLOOR = {room: i for i, rooms in enumerate(FLOORS) for room in rooms}

# Includes that still break the rules: (including file, included header) -> why, and what will
# remove it. Keep this list short and shrinking: the check fails on a debt that is paid.
DEBTS = {
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_ENDINGS = (".hpp", ".h", ".cpp", ".cu", ".cuh", ".c", ".inc")


def sources(top):
    for base, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_ENDINGS):
                yield os.path.join(base, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def room_of(header, src):
    """The src/ folder a quoted include names, or None (public, system or same-folder header)."""
    first = header.split("/", 1)[0]
    if "/" in header and os.path.isdir(os.path.join(src, first)) and os.path.exists(os.path.join(src, header)):
        return first
    return None


def library_edges(src):
    """(file relative to src, line, its room, included header, that header's room) per include."""
    for path in sources(src):
        rel = os.path.relpath(path, src)
        room = rel.split(os.sep, 1)[0]
        if os.sep not in rel:
            continue
        for number, header in includes(path):
            target = room_of(header, src)
            if target and target != room:
                yield rel, number, room, header, target


def outside_edges(root, src):
    """Includes of private src/ headers from python/csrc, bench/ and examples/."""
    for folder in ("python/csrc", "bench", "examples"):
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            continue
        for path in sources(top):
            for number, header in includes(path):
                if room_of(header, src):
                    yield os.path.relpath(path, root), number, header


def check(root):
    src = os.path.join(root, "src")
    problems = []
    seen_debts = set()
    for rel, number, room, header, target in library_edges(src):
        if room not in FLOOR:
            problems.append(f"src/{rel}: folder src/{room}/ is on no floor: add it to FLOORS in cmake/check_layers.py")
            continue
        if target not in FLOOR:
            problems.append(f"src/{rel}:{number}: includes {header} from src/{target}/, which is on no floor")
            continue
        if FLOOR[target] < FLOOR[room]:
            continue
        key = ("src/" + rel, header)
        if key in DEBTS:
            seen_debts.add(key)
            continue
        where = "its own floor" if FLOOR[target] == FLOOR[room] else "a floor above"
        problems.append(f"src/{rel}:{number}: src/{room}/ includes {header}, which is on {where} "
                        f"(src/{target}/): move the code down, or hand it what it needs from below")
    for rel, number, header in outside_edges(root, src):
        if (rel, header) in DEBTS:
            seen_debts.add((rel, header))
            continue
        problems.append(f"{rel}:{number}: includes the library's private header {header}: use a public "
                        "header (include/axon/), or move the program to tests/ (tests/perf for a benchmark of "
                        "an internal piece)")
    public = os.path.join(root, "include")
    for path in sources(public) if os.path.isdir(public) else ():
        for number, header in includes(path):
            if room_of(header, src):
                problems.append(f"{os.path.relpath(path, root)}:{number}: a public header includes the library's "
                                f"private header {header}")
    for key in sorted(set(DEBTS) - seen_debts):
        problems.append(f"debt paid: {key[0]} no longer includes {key[1]}: remove it from DEBTS in "
                        "cmake/check_layers.py")
    return problems


def report(root):
    src = os.path.join(root, "src")
    graph = defaultdict(set)
    up = []
    for rel, number, room, header, target in library_edges(src):
        graph[room].add(target)
        if FLOOR.get(target, 99) >= FLOOR.get(room, -1):
            up.append(f"  src/{rel}:{number} -> {header}")
    rooms = sorted(set(graph) | {t for ts in graph.values() for t in ts}, key=lambda r: (FLOOR.get(r, 99), r))
    print(f"{len(rooms)} folders on {len({FLOOR.get(r, 99) for r in rooms})} floors")
    for r in rooms:
        print(f"  floor {FLOOR.get(r, '?')}: {r} -> {', '.join(sorted(graph[r], key=lambda t: FLOOR.get(t, 99)))}")
    pairs = {(r, t) for r in graph for t in graph[r] if FLOOR.get(t, 99) >= FLOOR.get(r, -1)}
    print(f"{len(pairs)} folder arrows run up ({len(up)} includes):")
    for r, t in sorted(pairs):
        print(f"  {r} -> {t}")
    for line in up:
        print(line)
    circles = [c for c in strongly_connected(graph, rooms) if len(c) > 1]
    print(f"{len(circles)} circles" + "".join(f"\n  {' <-> '.join(sorted(c))}" for c in circles))


def strongly_connected(graph, nodes):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--report", action="store_true", help="print the folder graph instead of checking")
    args = parser.parse_args()
    if args.report:
        report(args.root)
        return 0
    problems = check(args.root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break the layers (docs/architecture.md, 'Layers')",
              file=sys.stderr)
        return 1
    debts = f", but for {len(DEBTS)} known debts (DEBTS)" if DEBTS else ""
    print(f"check_layers: every include runs down a floor{debts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
