"""The wheel a user installs: `make wheel` packs the build and auditwheel tags it manylinux (PyPI
refuses plain linux_x86_64 wheels). The wheel is installed into a fresh virtual environment that
sees nothing of the test environment but NumPy (its one requirement), and must run a job through
its own `axon` command and build a C program against itself, with no LD_LIBRARY_PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy
import pytest

from conftest import LAUNCHER_VARS

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = Path(__file__).resolve().parent / "consumer"

# The environment running the tests packs the wheel (`make pack-wheel VENV=...`).
ENV_PREFIX = Path(sys.prefix)
pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / "build" / "CMakeCache.txt").exists()
    or not (ENV_PREFIX / "bin" / "auditwheel").exists(),
    reason="needs make, the build (make build) and auditwheel in the test environment (make venv installs it)")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the wheel, the fresh environment's bin folder, an environment for its commands)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    out = _run(["make", "-C", str(ROOT), "pack-wheel", f"DIST={dist}", f"VENV={ENV_PREFIX}"])
    assert out.returncode == 0, out.stdout + out.stderr
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = base / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    python = bin_dir / "python"
    # NumPy from the test environment, and nothing else of it (not its axon): a folder holding
    # only numpy, named by a .pth file in the fresh environment.
    deps = base / "deps"
    deps.mkdir()
    numpy_dir = Path(numpy.__file__).parent
    for entry in numpy_dir.parent.iterdir():
        if entry.name == "numpy" or entry.name.startswith("numpy.libs") or entry.name.startswith("numpy-"):
            (deps / entry.name).symlink_to(entry)
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "test_deps.pth").write_text(f"{deps}\n")
    out = _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheels[0])])
    assert out.returncode == 0, out.stdout + out.stderr
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(AXON_BACKEND="host", AXON_TIMEOUT="30", PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return wheels[0], bin_dir, env


def test_the_wheel_is_tagged_for_pypi(installed):
    wheel, _, _ = installed
    m = re.fullmatch(r"axon_comm-[\d.]+-(cp\d+)-(cp\d+)-manylinux_(\d+)_(\d+)_x86_64\.whl", wheel.name)
    assert m, wheel.name
    assert m.group(1) == f"cp{sys.version_info.major}{sys.version_info.minor}"


def test_the_installed_wheel_runs_a_job_with_its_own_command(installed):
    _, bin_dir, env = installed
    out = _run([str(bin_dir / "python"), "-c", "import axon; print(axon.__file__)"], env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(str(bin_dir.parent)), f"axon came from {out.stdout} instead of the wheel"
    out = _run([str(bin_dir / "axon"), "--version"], env=env)
    assert out.returncode == 0 and out.stdout.startswith("axon"), out.stdout + out.stderr
    out = _run([str(bin_dir / "axon"), "run", "-n", "2", str(ROOT / "examples" / "ring.py")], env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for pe in range(2):
        assert f"[{pe}] PE {pe} of 2: 1024 values from PE {1 - pe}, all correct" in out.stdout, out.stdout


def test_a_c_program_builds_against_the_installed_wheel(installed, tmp_path):
    _, bin_dir, env = installed
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    flags = _run([str(bin_dir / "axon"), "config", "--cflags", "--libs"], env=env)
    assert flags.returncode == 0, flags.stderr
    assert str(bin_dir.parent) in flags.stdout, flags.stdout
    program = tmp_path / "hello_c"
    out = _run([cc, str(CONSUMER / "hello.c"), *flags.stdout.split(), "-o", str(program)])
    assert out.returncode == 0, out.stderr
    out = _run([str(program)], env=dict(env, AXON_TIMEOUT="10"), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello from PE 0 of 1: 4242"
