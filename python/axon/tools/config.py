"""``axon config``: the compiler and linker flags for C and C++ programs that use libaxon.

The wheel installs libaxon, its headers, a pkg-config file and a CMake package inside the ``axon``
package folder (src/CMakeLists.txt, cmake/axon.pc.in, cmake/axonConfig.cmake.in). That folder is
not on the dynamic linker's path, so ``--libs`` carries an rpath to it: a program linked with
these flags runs without LD_LIBRARY_PATH. Nothing here imports the compiled extension.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import cli_parser

__all__ = ["Layout", "add_subcommand", "installed_layout"]

#: Where the installed package keeps what C and C++ builds read, relative to its folder.
INCLUDE_DIR = "include"
PKGCONFIG_DIR = "lib/pkgconfig"
CMAKE_DIR = "lib/cmake/axon"


class Layout:
    """The folders of an installed axon package that C and C++ builds need."""

    def __init__(self, prefix: Path) -> None:
        self.prefix = prefix
        self.libdir = prefix                    # libaxon sits beside the extension, which loads it
        self.includedir = prefix / INCLUDE_DIR
        self.pkgconfigdir = prefix / PKGCONFIG_DIR
        self.cmakedir = prefix / CMAKE_DIR

    def cflags(self) -> list[str]:
        return [f"-I{self.includedir}"]

    def libs(self) -> list[str]:
        return [f"-L{self.libdir}", f"-Wl,-rpath,{self.libdir}", "-laxon"]


def installed_layout(package_dir: Path | None = None) -> Layout:
    """The layout of the installed package at `package_dir` (default: this one).

    Raises UsageError where the package holds no libaxon to link against: a source checkout run
    in place (python/axon) has none.
    """
    prefix = (package_dir or Path(__file__).resolve().parents[1])
    layout = Layout(prefix)
    if not (layout.libdir / "libaxon.so").exists() or not (layout.includedir / "axon" / "axon.h").exists():
        raise cli_parser.UsageError(
            f"{prefix} holds no libaxon.so and headers (include/axon): this axon package is not an "
            "installed build; install one (pip install dist/axon_comm-*.whl after python -m build, or "
            "`make build` in a checkout) and run its `axon config`", "axon config")
    return layout


_QUERIES = {
    "cflags": ("the compiler flags: the include folder", Layout.cflags),
    "libs": ("the linker flags: -L, an rpath to libaxon's folder and -laxon", Layout.libs),
}
_FOLDERS = {
    "prefix": "the installed axon package folder",
    "libdir": "the folder of libaxon.so",
    "includedir": "the folder that holds axon/axon.h and axon/axon.hpp",
    "pkgconfigdir": "the folder of axon.pc (for PKG_CONFIG_PATH)",
    "cmakedir": "the folder of axonConfig.cmake (for -Daxon_DIR=)",
}


def add_subcommand(subparsers: argparse._SubParsersAction) -> None:
    """Add ``config`` to the ``axon`` command line."""
    parser = subparsers.add_parser(
        "config",
        help="compiler and linker flags for C and C++ programs using libaxon",
        description=(
            "Print what a C or C++ build needs to use the libaxon of this installed package: "
            "`cc prog.c $(axon config --cflags --libs)`. The flags carry an rpath to libaxon's "
            "folder, so the program runs without LD_LIBRARY_PATH. Without options, print every "
            "folder, one NAME: VALUE a line."
        ),
        epilog=(
            "pkg-config: PKG_CONFIG_PATH=$(axon config --pkgconfigdir) pkg-config --cflags --libs "
            "axon. CMake: find_package(axon) with -Daxon_DIR=$(axon config --cmakedir), then "
            "target_link_libraries(prog PRIVATE axon::axon)."
        ),
    )
    for name, (text, _) in _QUERIES.items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    for name, text in _FOLDERS.items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    parser.set_defaults(handler=_cmd_config)


def _cmd_config(args: argparse.Namespace) -> int:
    layout = installed_layout()
    flags = [flag for name, (_, get) in _QUERIES.items() if getattr(args, name) for flag in get(layout)]
    folders = [str(getattr(layout, name)) for name in _FOLDERS if getattr(args, name)]
    if flags and folders:
        raise cli_parser.UsageError("give flags (--cflags, --libs) or one folder, not both", "axon config")
    if len(folders) > 1:
        raise cli_parser.UsageError("give one folder option at a time", "axon config")
    if flags:
        # One line, as pkg-config prints it, for $(...) in a shell or a Makefile.
        print(" ".join(flags))
    elif folders:
        print(folders[0])
    else:
        for name in _FOLDERS:
            print(f"{name}: {getattr(layout, name)}")
    return 0
