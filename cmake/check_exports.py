#!/usr/bin/env python3
"""Checks that shared objects export nothing they took from static archives.

Usage: check_exports.py LIBRARY...

A library that links libstdc++ or the CUDA runtime statically and exports their symbols interposes
on the copies the process already has (PyTorch loads both): parts of one iostream or locale call then
run in one copy and parts in the other, which ended in SIGSEGV (issue 45). `--exclude-libs,ALL` at
link time keeps them local; this check fails the build's tests if a library exports one of the
sentinels below, naming it. Sentinels are symbols only the runtime libraries define (a library's own
template instantiations, also in namespace std, are its own business and are not listed).
"""

import shutil
import subprocess
import sys

SENTINELS = {
    "_ZNSo9_M_insertImEERSoT_": "std::ostream::_M_insert<unsigned long> (libstdc++)",
    "_ZNSt6locale7classicEv": "std::locale::classic() (libstdc++)",
    "_ZSt4cout": "std::cout (libstdc++)",
    "_ZNSt8ios_base4InitC1Ev": "std::ios_base::Init::Init() (libstdc++)",
    "__cxa_throw": "__cxa_throw (libstdc++/libsupc++)",
    "cudaMalloc": "cudaMalloc (the CUDA runtime)",
    "cudaGetDevice": "cudaGetDevice (the CUDA runtime)",
    "cudaLaunchKernel": "cudaLaunchKernel (the CUDA runtime)",
}


def exported(library: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def main(argv: list[str]) -> int:
    if not shutil.which("nm"):
        print("check_exports: nm (binutils) is not installed; nothing checked")
        return 0
    bad = []
    for library in argv[1:]:
        for symbol in sorted(exported(library) & SENTINELS.keys()):
            bad.append(f"{library} exports {SENTINELS[symbol]} [{symbol}]")
    for line in bad:
        print(line)
    if bad:
        print("link it with -Wl,--exclude-libs,ALL (see src/CMakeLists.txt)")
        return 1
    print(f"check_exports: {len(argv) - 1} libraries export none of the {len(SENTINELS)} runtime sentinels")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
