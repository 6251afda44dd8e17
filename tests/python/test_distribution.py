"""The distribution as pip and a C or C++ user get it.

* The wheel's metadata (built by the project's own build backend, as `python -m build` does, but
  without compiling): the distribution name axon-comm (``axon`` on PyPI is another project), the
  licence, URLs, classifiers, Python versions, and a description that no longer calls the staging
  space "on the roadmap".
* The installed package: its files (py.typed, axon.pc, the CMake package, libaxon, the headers).
* C and C++ programs built against it the three documented ways (``axon config``, pkg-config,
  CMake's find_package) run without LD_LIBRARY_PATH: the README's `-laxon` used to exit 127.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import LAUNCHER_VARS

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = Path(__file__).resolve().parent / "consumer"
BIN = Path(sys.executable).parent
DIST = "axon-comm"


def _axon_command() -> list[str]:
    script = BIN / "axon"
    return [str(script)] if script.exists() else [sys.executable, "-m", "axon"]


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def _config(*args: str) -> str:
    out = _run(_axon_command() + ["config", *args])
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _program_env() -> dict[str, str]:
    """A world of one on the host backend, and no LD_LIBRARY_PATH: the rpath must find libaxon."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and k != "LD_LIBRARY_PATH"}
    env.update(AXON_BACKEND="host", AXON_TIMEOUT="10")
    return env


# --------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory):
    """The METADATA the build backend writes for the wheel (PEP 517 prepare_metadata hook)."""
    out_dir = tmp_path_factory.mktemp("metadata")
    code = ("import sys; from scikit_build_core.build import prepare_metadata_for_build_wheel as p; "
            "print(p(sys.argv[1]))")
    out = _run([sys.executable, "-c", code, str(out_dir)], cwd=ROOT)
    assert out.returncode == 0, out.stderr
    dist_info = out_dir / out.stdout.strip().splitlines()[-1]
    return dist_info, email.parser.Parser().parsestr((dist_info / "METADATA").read_text())


def test_metadata_names_a_free_distribution_and_tells_the_truth(wheel_metadata):
    dist_info, meta = wheel_metadata
    assert meta["Name"] == DIST
    assert meta["Version"] == "0.1.0"
    assert meta["License"] == "Apache-2.0"
    assert meta["Requires-Python"] == ">=3.9"
    urls = meta.get_all("Project-URL")
    assert urls and all(u.split(", ", 1)[1].startswith("https://") for u in urls), urls
    classifiers = set(meta.get_all("Classifier"))
    for c in ("License :: OSI Approved :: Apache Software License", "Operating System :: POSIX :: Linux",
              "Programming Language :: Python :: 3", "Programming Language :: C++", "Typing :: Typed"):
        assert c in classifiers, c
    # Summary and description (the README) say what exists: the staging space is there.
    assert "staging space" in meta["Summary"]
    description = meta.get_payload()
    assert description.startswith("# axon") and meta["Description-Content-Type"] == "text/markdown"
    for stale in ("on the roadmap", "comes next"):
        assert stale not in description, f"the package description still says {stale!r}"
    assert (dist_info / "licenses" / "LICENSE").read_text().lstrip().startswith("Apache License")
    entry_points = (dist_info / "entry_points.txt").read_text()
    assert "axon = axon.cli:main" in entry_points


def test_installed_distribution_carries_what_users_need():
    dist = importlib.metadata.distribution(DIST)
    import axon

    assert dist.version == axon.__version__
    files = {str(f) for f in dist.files or ()}
    for needed in ("axon/py.typed", "axon/libaxon.so", "axon/include/axon/axon.h", "axon/include/axon/axon.hpp",
                   "axon/lib/pkgconfig/axon.pc", "axon/lib/cmake/axon/axonConfig.cmake",
                   "axon/lib/cmake/axon/axonConfigVersion.cmake", "axon/lib/cmake/axon/axonTargets.cmake"):
        assert needed in files, f"the installed {DIST} lacks {needed}"


# --------------------------------------------------------------------------
# axon config
# --------------------------------------------------------------------------


def test_config_prints_the_installed_folders():
    import axon

    package = Path(axon.__file__).resolve().parent
    listing = dict(line.split(": ", 1) for line in _config().splitlines())
    assert set(listing) == {"prefix", "libdir", "includedir", "pkgconfigdir", "cmakedir"}
    assert Path(listing["prefix"]) == package
    assert (Path(listing["libdir"]) / "libaxon.so").is_file()
    assert (Path(listing["includedir"]) / "axon" / "axon.hpp").is_file()
    assert (Path(listing["pkgconfigdir"]) / "axon.pc").is_file()
    assert (Path(listing["cmakedir"]) / "axonConfig.cmake").is_file()
    assert _config("--cmakedir") == listing["cmakedir"]
    libs = _config("--libs").split()
    assert libs == [f"-L{package}", f"-Wl,-rpath,{package}", "-laxon"]
    assert _config("--cflags", "--libs").split() == [f"-I{package / 'include'}", *libs]


def test_config_refuses_a_mixed_request():
    out = _run(_axon_command() + ["config", "--libs", "--prefix"])
    assert out.returncode == 2
    assert out.stderr.strip() == ("axon config: error: give flags (--cflags, --libs) or one folder, not both")
    out = _run(_axon_command() + ["config", "--nonsense"])
    assert out.returncode == 2 and "unrecognized arguments: --nonsense" in out.stderr


# --------------------------------------------------------------------------
# C and C++ programs
# --------------------------------------------------------------------------


def _runs_alone(program: Path, expected: str) -> None:
    out = _run([str(program)], env=_program_env(), timeout=60)
    assert out.returncode == 0, f"{program.name} exited {out.returncode}: {out.stderr}"
    assert out.stdout.strip() == expected


def test_c_program_built_with_axon_config_runs_without_ld_library_path(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    program = tmp_path / "hello_c"
    flags = _config("--cflags", "--libs").split()
    out = _run([cc, str(CONSUMER / "hello.c"), *flags, "-o", str(program)])
    assert out.returncode == 0, out.stderr
    _runs_alone(program, "hello from PE 0 of 1: 4242")


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config is not installed")
def test_cpp_program_built_with_pkg_config_runs_without_ld_library_path(tmp_path):
    env = dict(os.environ, PKG_CONFIG_PATH=_config("--pkgconfigdir"))
    out = _run(["pkg-config", "--modversion", "axon"], env=env)
    assert out.returncode == 0 and out.stdout.strip() == "0.1.0", out.stderr
    flags = _run(["pkg-config", "--cflags", "--libs", "axon"], env=env)
    assert flags.returncode == 0, flags.stderr
    program = tmp_path / "hello_cpp"
    cxx = shutil.which("c++") or shutil.which("g++")
    out = _run([cxx, "-std=c++20", str(CONSUMER / "hello.cpp"), *flags.stdout.split(), "-o", str(program)])
    assert out.returncode == 0, out.stderr
    _runs_alone(program, "hello from PE 0 of 1: 4343")


def test_cmake_project_with_find_package_runs_without_ld_library_path(tmp_path):
    cmake = BIN / "cmake" if (BIN / "cmake").exists() else shutil.which("cmake")
    ninja = BIN / "ninja" if (BIN / "ninja").exists() else shutil.which("ninja")
    assert cmake and ninja, "CMake and Ninja come with the build's virtual environment"
    build = tmp_path / "build"
    out = _run([str(cmake), "-S", str(CONSUMER), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
                f"-Daxon_DIR={_config('--cmakedir')}"])
    assert out.returncode == 0, out.stdout + out.stderr
    out = _run([str(cmake), "--build", str(build)], timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    _runs_alone(build / "hello", "hello from PE 0 of 1: 4343")


def test_cmake_refuses_another_minor_version(tmp_path):
    # 0.x: find_package(axon 0.2) must not accept 0.1 (the API may change between minor versions).
    project = tmp_path / "src"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(p LANGUAGES C)\nfind_package(axon 0.2 REQUIRED)\n")
    cmake = BIN / "cmake" if (BIN / "cmake").exists() else shutil.which("cmake")
    out = _run([str(cmake), "-S", str(project), "-B", str(tmp_path / "build"),
                f"-Daxon_DIR={_config('--cmakedir')}"])
    assert out.returncode != 0 and "0.1.0" in out.stderr, out.stderr
