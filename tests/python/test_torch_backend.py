"""The torch.distributed backend "axon" (axon.torch) on CPU tensors: every operation against a
reference on 2 and 4 ranks under `axon run` (functional collectives and torch.compile included),
the same under torchrun's variables, DDP, FSDP2 and DTensor equal to gloo's, a dead rank as
DistBackendError, and axon without torch. Skipped where torch is not installed."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")
if not torch.distributed.is_available():
    pytest.skip("this torch build has no torch.distributed", allow_module_level=True)

SCRIPTS = Path(__file__).parent / "scripts"


def axon_run(n, *argv, env=None, timeout=180):
    full = dict(os.environ, AXON_TIMEOUT="60", **(env or {}))
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(n), *argv], capture_output=True,
                          text=True, env=full, timeout=timeout, stdin=subprocess.DEVNULL)


def _two_free_ports():
    """A port p with p + 1 free too (torch's store takes p, axon's p + 1)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p >= 65535:
            continue
        try:
            with socket.socket() as s2:
                s2.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    pytest.fail("no two consecutive free ports on 127.0.0.1")


@pytest.mark.parametrize("n, how", [(2, "compile"), (4, ""), (2, "no-backend")])
def test_every_op_matches_its_reference_under_axon_run(n, how):
    # "no-backend": groups register no c10d Backend, as on a torch without Python ones (2.11);
    # "compile": a torch.compile'd functional collective too (once: it costs seconds a process).
    res = axon_run(n, sys.executable, str(SCRIPTS / "torch_backend_ops.py"), "axon", *([how] if how else []))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("torch backend ops OK") == n, res.stdout


def test_every_op_matches_its_reference_under_torchrun_variables(tmp_path):
    # The processes are started as torchrun starts them: RANK, WORLD_SIZE, LOCAL_RANK,
    # LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no AXON_* variable and no job key: the backend
    # passes axon's key through torch's store.
    procs = _torchrun_processes(2, "torch_backend_ops.py", tmp_path, "torchrun", env={"AXON_TIMEOUT": "60"})
    outs = _communicate(procs, 180)
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out[-3000:] + err[-5000:]
        assert "torch backend ops OK" in out
    # The key went through torch's store: rank 0 wrote no key file.
    assert not list(tmp_path.rglob("job-*")), list(tmp_path.rglob("*"))


def _open_mpi() -> bool:
    if shutil.which("mpirun") is None:
        return False
    res = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, timeout=30)
    return "Open MPI" in res.stdout + res.stderr


@pytest.mark.skipif(not _open_mpi(), reason="no Open MPI mpirun on PATH")
def test_every_op_matches_its_reference_under_mpirun(tmp_path):
    # A script under mpirun passes its rank and size to init_process_group itself; axon reads
    # Open MPI's variables and checks that they agree.
    port = _two_free_ports()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXON_")}
    env.update(TEST_INIT_METHOD=f"tcp://127.0.0.1:{port}", AXON_TIMEOUT="60", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", XDG_RUNTIME_DIR=str(tmp_path), OMPI_MCA_rmaps_base_oversubscribe="1")
    res = subprocess.run(["mpirun", "-np", "2", sys.executable, str(SCRIPTS / "torch_backend_ops.py"), "mpirun"],
                         capture_output=True, text=True, env=env, timeout=180, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("torch backend ops OK") == 2, res.stdout


def _torchrun_processes(n, script, tmp_path, *args, env=None):
    """n processes of `script` started as torchrun starts them: no AXON_* variable but `env`'s."""
    port = _two_free_ports()
    base = {k: v for k, v in os.environ.items() if not k.startswith("AXON_")}
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                TORCHELASTIC_RUN_ID=f"axon-test-{port}", XDG_RUNTIME_DIR=str(tmp_path), **(env or {}))
    return [subprocess.Popen([sys.executable, str(SCRIPTS / script), *args],
                             env=dict(base, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL) for r in range(n)]


def _communicate(procs, timeout):
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs


@pytest.mark.parametrize("launcher", ["torchrun", "axon run"])
def test_group_timeout_bounds_a_call_a_rank_never_makes(tmp_path, launcher):
    if launcher == "torchrun":
        out, err = _communicate(_torchrun_processes(2, "torch_timeout.py", tmp_path), 120)[0]
    else:
        env = {k: v for k, v in os.environ.items() if k != "AXON_TIMEOUT"}
        res = subprocess.run([sys.executable, "-m", "axon", "run", "-n", "2", sys.executable,
                              str(SCRIPTS / "torch_timeout.py")], capture_output=True, text=True, env=env,
                             timeout=120, stdin=subprocess.DEVNULL)
        out, err = res.stdout, res.stderr
    assert "subgroup DistBackendError after" in out, out[-3000:] + err[-5000:]
    sub = out.split("subgroup DistBackendError after ")[1]
    seconds = float(sub.split(" s")[0])
    assert 1.2 < seconds < 2.9, out  # the subgroup's own 1.5 s (its team's timeout)
    assert "the team's timeout" in sub.splitlines()[0], out
    world = [line for line in out.splitlines() if "DistBackendError after " in line and "subgroup" not in line]
    assert world, out[-3000:] + err[-5000:]
    seconds = float(world[0].split("DistBackendError after ")[1].split(" s")[0])
    assert 2.5 < seconds < 9, out  # the default group's 3 s, not axon's default 300 s
    assert "AXON_TIMEOUT" in world[0], out


def test_a_script_that_never_destroys_its_groups_exits_quietly():
    # Its groups still hold their teams at the interpreter's exit; without the backend's atexit
    # hook the extension printed a page of "leaked instance" warnings after the script's output.
    code = ("import torch, torch.distributed as dist, axon.torch\n"
            "dist.init_process_group('axon')\n"
            "g = dist.new_group([0, 1])\n"
            "t = torch.ones(2)\n"
            "dist.all_reduce(t, group=g)\n"
            "print('sum', int(t[0]), flush=True)\n")
    res = axon_run(2, sys.executable, "-c", code)
    assert res.returncode == 0 and res.stdout.count("sum 2") == 2, res.stdout[-3000:] + res.stderr[-3000:]
    assert "leaked" not in res.stdout + res.stderr, res.stdout[-3000:] + res.stderr[-3000:]


def test_ddp_training_matches_gloo():
    res = axon_run(2, sys.executable, str(SCRIPTS / "torch_ddp_vs_gloo.py"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("ddp weights match gloo") == 2, res.stdout


@pytest.mark.parametrize("how", ["", "no-backend"])
def test_fsdp2_and_dtensor_match_gloo(how):
    res = axon_run(2, sys.executable, str(SCRIPTS / "torch_fsdp2_vs_gloo.py"), *([how] if how else []))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("fsdp2 and dtensor match gloo") == 2, res.stdout


def test_dead_rank_is_a_dist_backend_error_naming_it():
    res = axon_run(2, sys.executable, str(SCRIPTS / "torch_rank_dies.py"), timeout=120)
    assert res.stdout.count("DistBackendError after") == 1, res.stdout[-3000:] + res.stderr[-5000:]
    seconds = float(res.stdout.split("DistBackendError after ")[1].split(" s")[0])
    assert seconds < 10, res.stdout  # liveness, not the group's 60 s timeout


def test_axon_imports_without_torch(tmp_path):
    # A torch that fails to import stands in for none installed: `import axon` must not need it.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    code = "import axon, sys; assert 'torch' not in sys.modules; print('axon without torch')"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(tmp_path)), timeout=60)
    assert res.returncode == 0 and "axon without torch" in res.stdout, res.stderr[-3000:]


def test_vars_for_torch_derived_from_axon_run():
    from axon.torch import _launch

    env = {"AXON_RANK": "1", "AXON_WORLD_SIZE": "4", "AXON_LOCAL_RANK": "1", "AXON_LOCAL_SIZE": "2",
           "AXON_STORE_ADDR": "127.0.0.1:29400"}
    assert _launch.torch_vars_from_axon(env) == {
        "RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    # Variables already set are kept.
    env.update(LOCAL_RANK="0")
    assert _launch.torch_vars_from_axon(env) == {
        "RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
    assert _launch.torch_vars_from_axon({"RANK": "0"}) == {}
    import axon
    with pytest.raises(axon.InvalidArgumentError, match="AXON_STORE_ADDR"):
        _launch.torch_vars_from_axon({"AXON_RANK": "0", "AXON_STORE_ADDR": "nohost"})
