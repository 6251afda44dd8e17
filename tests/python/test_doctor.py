"""Tests of `axon doctor`: every check on injected inputs (a topology dict, rlimits, /dev/shm
sizes, ucx_info output, environments), the output format and the exit code."""

from __future__ import annotations

import argparse
import copy
import io
import json
import resource
import socket
from pathlib import Path

import pytest

from axon.tools import doctor
from axon.tools.doctor import FAIL, NO_GPU, OK, WARN, CheckResult, Facts

FIXTURE = Path(__file__).parent / "data" / "topo_4xh200.json"
GIB, MIB = 1024 ** 3, 1024 ** 2
INF = resource.RLIM_INFINITY


@pytest.fixture
def h200() -> dict:
    return json.loads(FIXTURE.read_text())


NO_GPU_TOPO = {
    "gpus": [], "links": [], "nics": [], "driver": None,
    "unavailable": ["NVML not found: libnvidia-ml.so.1 could not be loaded (libnvidia-ml.so.1: "
                    "cannot open shared object file: No such file or directory); without ..."],
}

GPU_CHECKS = [doctor.check_driver, doctor.check_peer_access, doctor.check_nvlink,
              doctor.check_ipc_vmm, doctor.check_gpudirect_rdma]


# --------------------------------------------------------------------------
# GPU checks
# --------------------------------------------------------------------------


@pytest.mark.parametrize("check", GPU_CHECKS)
def test_gpu_checks_pass_on_the_h200_fixture(check, h200):
    result = check(h200)
    assert result.status == OK, result
    assert result.advice == ""


@pytest.mark.parametrize("check", GPU_CHECKS)
def test_gpu_checks_warn_without_gpu(check):
    result = check(NO_GPU_TOPO)
    assert result.status == WARN
    assert result.finding == NO_GPU
    assert "NVML not found: libnvidia-ml.so.1" in result.advice


@pytest.mark.parametrize("check", GPU_CHECKS)
def test_gpu_checks_fail_without_gpu_when_the_gpu_backend_is_required(check):
    result = check(NO_GPU_TOPO, require_gpu=True)
    assert result.status == FAIL
    assert "AXON_BACKEND=gpu" in result.finding
    assert "unset AXON_BACKEND" in result.advice


def test_driver_findings(h200):
    assert doctor.check_driver(h200).finding == (
        "NVIDIA driver 560.35.03, CUDA driver 12.6, 4 GPUs (NVIDIA H200)")
    h200["driver"]["cuda_driver_api_version"] = 11080
    result = doctor.check_driver(h200)
    assert result.status == WARN and "CUDA >= 12" in result.advice
    h200["driver"]["cuda_driver_api_version"] = 11020
    result = doctor.check_driver(h200)
    assert result.status == FAIL and "update the NVIDIA driver" in result.advice
    # Without the CUDA driver API's number the NVML text is used.
    del h200["driver"]["cuda_driver_api_version"]
    assert doctor.check_driver(h200).status == OK
    h200["driver"]["cuda_version"] = None
    assert doctor.check_driver(h200).status == WARN


def test_peer_access_names_the_pairs_without_p2p(h200):
    for a, b in ((0, 2), (2, 0)):
        h200["p2p"]["read"][a][b] = "CNS"
        h200["p2p"]["write"][a][b] = "CNS"
    result = doctor.check_peer_access(h200)
    assert result.status == WARN
    assert "1 of 6 GPU pairs: GPU0-GPU2 (read CNS, write CNS)" in result.finding
    assert "staged path" in result.advice
    one = copy.deepcopy(h200)
    one["gpus"] = one["gpus"][:1]
    assert doctor.check_peer_access(one).status == OK
    two = copy.deepcopy(h200)
    two["gpus"] = two["gpus"][:2]
    two["p2p"] = {k: [row[:2] for row in m[:2]] for k, m in two["p2p"].items()}
    assert doctor.check_peer_access(two).finding == "P2P read and write OK between the 2 GPUs"
    h200["p2p"] = {}
    assert doctor.check_peer_access(h200).status == WARN


def test_nvlink_down_and_absent(h200):
    h200["gpus"][1]["nvlinks"] = {"links": 18, "up": 16}
    result = doctor.check_nvlink(h200)
    assert result.status == WARN
    assert result.finding == "NVLinks down: GPU1: 16 of 18 up"
    assert "nvidia-fabricmanager" in result.advice
    for g in h200["gpus"]:
        g["nvlinks"] = {"links": 0, "up": 0}
    result = doctor.check_nvlink(h200)
    assert result.status == OK and "PCIe" in result.finding


def test_ipc_vmm_attributes(h200):
    h200["gpus"][3]["cuda"]["posix_fd"] = False
    result = doctor.check_ipc_vmm(h200)
    assert result.status == FAIL
    assert result.finding == "GPU3 lacks POSIX fd export"
    assert "AXON_BACKEND=host" in result.advice
    for g in h200["gpus"]:
        g["cuda"] = None  # not read (e.g. hidden by CUDA_VISIBLE_DEVICES): inferred
    result = doctor.check_ipc_vmm(h200)
    assert result.status == OK and result.finding.startswith("inferred from CUDA driver 12.6")
    h200["driver"] = {}
    assert doctor.check_ipc_vmm(h200).status == WARN


def test_gpudirect_rdma(h200):
    h200["gpudirect_rdma"].update(nvidia_peermem=False, dmabuf_possible=False,
                                  kernel="5.4.0-150-generic")
    result = doctor.check_gpudirect_rdma(h200)
    assert result.status == WARN
    assert "not possible for mlx5_0, mlx5_1" in result.finding
    assert "dma-buf needs Linux >= 5.12 and NVIDIA driver >= 515" in result.finding
    assert "modprobe nvidia_peermem" in result.advice
    h200["gpudirect_rdma"]["dmabuf_possible"] = True
    assert doctor.check_gpudirect_rdma(h200).status == OK
    h200["gpudirect_rdma"]["dmabuf_possible"] = False
    h200["nics"] = []
    result = doctor.check_gpudirect_rdma(h200)
    assert result.status == OK and "no RDMA NIC" in result.finding


def test_module_loading(h200):
    result = doctor.check_module_loading(NO_GPU_TOPO, {})
    assert result.status == OK and "does not apply" in result.finding
    result = doctor.check_module_loading(h200, {"CUDA_MODULE_LOADING": "eager"})
    assert result.status == OK and "EAGER" in result.finding and not result.advice
    for env, shown in (({}, "unset, CUDA's default"), ({"CUDA_MODULE_LOADING": "LAZY"}, "=LAZY")):
        result = doctor.check_module_loading(h200, env)
        assert result.status == OK and "lazily" in result.finding and shown in result.finding
        assert "CUDA_MODULE_LOADING=EAGER" in result.advice and "deadlock" in result.advice


# --------------------------------------------------------------------------
# Host checks
# --------------------------------------------------------------------------


def test_memlock():
    assert doctor.check_memlock(INF, INF, 64 * GIB).status == OK
    result = doctor.check_memlock(64 * 1024, 64 * 1024, 64 * GIB)
    assert result.status == WARN
    assert "64.0 KiB" in result.finding and "1/4 of the memory (64.0 GiB)" in result.finding
    assert "ulimit -l unlimited" in result.advice and "--ulimit memlock=-1" in result.advice
    result = doctor.check_memlock(32 * GIB, INF, 64 * GIB)
    assert result.status == OK and "hard limit unlimited" in result.finding


@pytest.mark.parametrize(
    "size, free, status, text",
    [
        (None, None, FAIL, "is missing"),
        (32 * MIB, 32 * MIB, FAIL, "below 64.0 MiB"),
        (512 * MIB, 500 * MIB, WARN, "below 1.0 GiB"),
        (16 * GIB, 10 * MIB, WARN, "almost full"),
        (16 * GIB, 15 * GIB, OK, "/dev/shm is 16.0 GiB (15.0 GiB free)"),
    ],
)
def test_shm(size, free, status, text):
    result = doctor.check_shm(size, free)
    assert result.status == status
    assert text in result.finding
    if status != OK:
        assert result.advice
    if size is not None and status != OK and text != "almost full":
        assert "mount -o remount,size=" in result.advice and "--shm-size" in result.advice


UCX_DEVICES = """#
# Memory domain: posix
#     Component: posix
#   Transport: posix
#      Device: memory
#
# Memory domain: cuda_cpy
#   Transport: cuda_copy
#      Device: cuda
#   Transport: cuda_ipc
#      Device: cuda
#
# Memory domain: mlx5_0
#   Transport: rc_verbs
#      Device: mlx5_0:1
#   Transport: rc_mlx5
#      Device: mlx5_0:1
#   Transport: rc_verbs
#      Device: mlx5_1:1
#   Transport: tcp
#      Device: eth0
"""


UCX_LIBRARY = {"available": True, "name": "UCX", "version": "1.16.0", "path": "/opt/hpcx/ucx/lib/libucp.so.0",
               "why_not": ""}


def test_ucx():
    result = doctor.check_ucx(None, None)
    assert result.status == WARN
    assert "UCX not usable" in result.finding and "one node" in result.advice
    missing = dict(UCX_LIBRARY, available=False, why_not="libucp.so.0: cannot open shared object file")
    result = doctor.check_ucx(missing, None)
    assert result.status == WARN and "cannot open shared object" in result.finding
    result = doctor.check_ucx(UCX_LIBRARY, UCX_DEVICES, has_gpu=True, rdma_nics=["mlx5_0"])
    assert result.status == OK, result
    assert result.finding == ("UCX 1.16.0 (/opt/hpcx/ucx/lib/libucp.so.0); transports: posix (memory), "
                              "cuda_copy (cuda), cuda_ipc (cuda), rc_verbs (mlx5_0:1, mlx5_1:1), "
                              "rc_mlx5 (mlx5_0:1), tcp (eth0)")
    no_cuda = "\n".join(l for l in UCX_DEVICES.splitlines() if "cuda" not in l)
    result = doctor.check_ucx(UCX_LIBRARY, no_cuda, has_gpu=True)
    assert result.status == WARN and "without CUDA" in result.finding
    assert doctor.check_ucx(UCX_LIBRARY, no_cuda, has_gpu=False).status == OK
    # The wheel's UCX on a cluster with InfiniBand: the NICs go unused, and doctor says so.
    tcp_only = "# Memory domain: tcp\n#   Transport: tcp\n#      Device: eth0\n"
    result = doctor.check_ucx(UCX_LIBRARY, tcp_only, rdma_nics=["mlx5_0", "mlx5_1"])
    assert result.status == WARN and "mlx5_0, mlx5_1 go unused" in result.finding
    assert "UCX_HOME" in result.advice
    assert doctor.check_ucx(UCX_LIBRARY, tcp_only).status == OK
    assert doctor.check_ucx(UCX_LIBRARY, "").status == WARN
    assert doctor.check_ucx(UCX_LIBRARY, None).status == OK  # no ucx_info beside it


def test_ucx_info_of_the_library_axon_loads(tmp_path):
    lib = tmp_path / "lib"
    (tmp_path / "bin").mkdir()
    lib.mkdir()
    tool = tmp_path / "bin" / "ucx_info"
    tool.write_text("#!/bin/sh\necho $LD_LIBRARY_PATH\n")
    tool.chmod(0o755)
    path, env = doctor.ucx_tool_beside(dict(UCX_LIBRARY, path=str(lib / "libucp.so.0")))
    assert path == str(tool)
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(lib)
    assert doctor.ucx_tool_beside(None) == (None, {})


# --------------------------------------------------------------------------
# The bootstrap address
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env, addr, ok",
    [
        ({}, None, True),
        ({"AXON_STORE_ADDR": "n1:7000", "RANK": "0", "WORLD_SIZE": "4"}, "n1:7000", True),
        ({"AXON_RANK": "0", "AXON_WORLD_SIZE": "2"}, None, False),
        ({"AXON_RANK": "0", "AXON_WORLD_SIZE": "1"}, None, True),
        ({"RANK": "1", "WORLD_SIZE": "8", "MASTER_ADDR": "head", "MASTER_PORT": "29500"},
         "head:29501", True),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_ID": "12345",
          "SLURM_STEP_NODELIST": "gpu[07-08]"}, "gpu07:37892", True),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4",
          "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "PMIX_NAMESPACE": "job-7"}, "127.0.0.1:39708", True),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "8",
          "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "PMIX_NAMESPACE": "job-7"}, None, False),
    ],
)
def test_store_address(env, addr, ok):
    got, how, got_ok = doctor.store_address(env)
    assert (got, got_ok) == (addr, ok), how
    assert how


def test_bootstrap_world_of_one_binds_a_loopback_port():
    result = doctor.check_bootstrap({})
    assert result.status == OK and "127.0.0.1:" in result.finding


def test_bootstrap_connects_to_a_listener():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        result = doctor.check_bootstrap({"AXON_STORE_ADDR": f"127.0.0.1:{port}"})
    assert result.status == OK
    assert f"127.0.0.1:{port} (AXON_STORE_ADDR) accepts TCP connections" in result.finding


def test_bootstrap_free_local_port_is_ok():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = doctor.check_bootstrap({"AXON_STORE_ADDR": f"127.0.0.1:{port}"})
    assert result.status == OK and "free: rank 0 can serve" in result.finding


def _raise(exc):
    def connect(host, port, timeout):
        raise exc
    return connect


def test_bootstrap_failures_name_host_and_port():
    env = {"AXON_STORE_ADDR": "head:29500"}
    resolve_ok = {"resolve": lambda host: "10.0.0.1"}
    result = doctor.check_bootstrap(env, connect=_raise(socket.timeout()), timeout=0.5,
                                    **resolve_ok)
    assert result.status == FAIL
    assert result.finding == "no answer from head:29500 (AXON_STORE_ADDR) within 0.5 s"
    assert "firewall" in result.advice
    result = doctor.check_bootstrap(env, connect=_raise(ConnectionRefusedError()),
                                    can_bind=lambda h, p: False, **resolve_ok)
    assert result.status == WARN and "head:29500" in result.finding and "refused" in result.finding
    result = doctor.check_bootstrap(env, connect=_raise(OSError(101, "Network is unreachable")),
                                    **resolve_ok)
    assert result.status == FAIL and "Network is unreachable" in result.finding

    def no_such_host(host):
        raise socket.gaierror(-2, "Name or service not known")

    result = doctor.check_bootstrap(env, resolve=no_such_host)
    assert result.status == FAIL and "cannot resolve the store host of head:29500" in result.finding
    result = doctor.check_bootstrap({"AXON_STORE_ADDR": "head"})
    assert result.status == FAIL and "is not host:port" in result.finding
    result = doctor.check_bootstrap({"AXON_RANK": "0", "AXON_WORLD_SIZE": "2"})
    assert result.status == FAIL and "AXON_STORE_ADDR" in result.advice

    def loopback_broken():
        raise OSError(99, "Cannot assign requested address")

    result = doctor.check_bootstrap({}, loopback=loopback_broken)
    assert result.status == FAIL and "loopback" in result.finding


# --------------------------------------------------------------------------
# Output and exit codes
# --------------------------------------------------------------------------


def test_format_is_one_line():
    line = doctor.format_result(CheckResult("shm", WARN, "/dev/shm is 512 MiB", "enlarge it"))
    assert line == "warn  shm             /dev/shm is 512 MiB -> enlarge it"
    assert doctor.format_result(CheckResult("nvlink", OK, "all up")).endswith("all up")


def _facts(topo: dict, **overrides) -> Facts:
    values = dict(topo=topo, memlock=(INF, INF), ram_bytes=64 * GIB, shm_size=16 * GIB,
                  shm_free=16 * GIB, ucx_library=UCX_LIBRARY, ucx_devices=UCX_DEVICES,
                  env={})
    values.update(overrides)
    return Facts(**values)


def test_all_ok_on_a_healthy_injected_machine(h200, monkeypatch):
    monkeypatch.setattr(doctor, "gather", lambda env=None: _facts(h200))
    out = io.StringIO()
    assert doctor.run(out=out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 11
    assert all(line.startswith("ok    ") for line in lines[:-1]), lines
    assert lines[-1] == "axon doctor: 10 ok, 0 warn, 0 fail"


def test_exit_code_is_1_when_a_check_fails(h200, monkeypatch):
    monkeypatch.setattr(doctor, "gather", lambda env=None: _facts(h200, shm_size=16 * MIB,
                                                                  shm_free=16 * MIB))
    out = io.StringIO()
    assert doctor.run(out=out) == 1
    text = out.getvalue()
    assert "fail  shm" in text and "1 fail" in text
    # Warnings alone do not fail.
    monkeypatch.setattr(doctor, "gather", lambda env=None: _facts(NO_GPU_TOPO, ucx_library=None,
                                                                  ucx_devices=None))
    assert doctor.run(out=io.StringIO()) == 0
    monkeypatch.setattr(doctor, "gather", lambda env=None: _facts(NO_GPU_TOPO, require_gpu=True))
    assert doctor.run(out=io.StringIO()) == 1


def test_injected_topology_through_axon_topo_file(monkeypatch, capsys):
    monkeypatch.setenv("AXON_TOPO_FILE", str(FIXTURE))
    monkeypatch.delenv("AXON_STORE_ADDR", raising=False)
    code = doctor.main([])
    text = capsys.readouterr().out
    assert f"GPUs and NICs from {FIXTURE} (AXON_TOPO_FILE)" in text
    assert "ok    driver          NVIDIA driver 560.35.03, CUDA driver 12.6" in text
    assert "ok    nvlink          all NVLinks up (18 per GPU on 4 GPUs)" in text
    assert code == (1 if "\nfail  " in text else 0)


def test_this_machine(monkeypatch, capsys):
    """`axon doctor` here, for real: one line per check; GPU checks warn where NVML is absent."""
    monkeypatch.delenv("AXON_TOPO_FILE", raising=False)
    monkeypatch.setenv("AXON_BACKEND", "host")
    code = doctor.main([])
    lines = capsys.readouterr().out.splitlines()
    checks = [line for line in lines if not line.startswith("axon doctor:")]
    assert len(checks) == 10
    assert all(line.split()[0] in (OK, WARN, FAIL) for line in checks)
    assert code == (1 if any(line.startswith("fail") for line in checks) else 0)
    from axon.tools import topology
    if topology._nvml_library_error() is not None:
        assert any(line.startswith(f"warn  driver          {NO_GPU} -> ") for line in lines)


def test_add_subcommand_wires_a_handler(h200, monkeypatch, capsys):
    parser = argparse.ArgumentParser(prog="axon")
    sub = parser.add_subparsers(dest="subcommand", required=True)
    doctor.add_subcommand(sub)
    args = parser.parse_args(["doctor"])
    monkeypatch.setattr(doctor, "gather", lambda env=None: _facts(h200))
    assert args.handler(args) == 0
    assert "10 ok" in capsys.readouterr().out
