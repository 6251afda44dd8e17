"""``axon doctor``: preflight checks, one line each: ``ok``, ``warn`` or ``fail``, the finding and
what to do.

Every check is a small function of its inputs (a topology dict, rlimit numbers, ``/dev/shm``
sizes, ``ucx_info`` output, an environment) returning a ``CheckResult``, so tests feed it any
machine; ``gather()`` reads this machine (the topology through ``AXON_TOPO_FILE`` when set) and
``run_checks()`` applies every check. The command exits 1 when a check fails.

Without a GPU the GPU checks ``warn`` ("no GPU: the host backend will be used"), unless
``AXON_BACKEND=gpu`` asks for the GPU backend: then they ``fail``.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import topology
from .topology import Topology, TopologyError

__all__ = [
    "CheckResult",
    "Facts",
    "add_subcommand",
    "check_bootstrap",
    "check_driver",
    "check_gpudirect_rdma",
    "check_ipc_vmm",
    "check_memlock",
    "check_module_loading",
    "check_nvlink",
    "check_peer_access",
    "check_shm",
    "check_ucx",
    "format_result",
    "gather",
    "main",
    "run_checks",
    "store_address",
]

OK, WARN, FAIL = "ok", "warn", "fail"
_MIB, _GIB = 1024 ** 2, 1024 ** 3

#: /dev/shm below these sizes warns / fails (the host backend's heaps live there).
SHM_WARN_BYTES = 1 * _GIB
SHM_FAIL_BYTES = 64 * _MIB

#: Oldest CUDA driver the GPU backend can start on (cuGetProcAddress), and the one it is tested on.
CUDA_MIN = 11030
CUDA_TESTED = 12000

NO_GPU = "no GPU: the host backend will be used"


@dataclass(frozen=True)
class CheckResult:
    """One line of ``axon doctor``: which check, ``ok``/``warn``/``fail``, what it found, and
    what to do about it (empty when nothing)."""

    name: str
    status: str
    finding: str
    advice: str = ""


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 1024 ** 4), ("GiB", _GIB), ("MiB", _MIB), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{int(nbytes)} B"


# --------------------------------------------------------------------------
# GPU checks (from a topology dict)
# --------------------------------------------------------------------------


def _no_gpu(name: str, topo: dict, require_gpu: bool) -> CheckResult:
    # The first reason, without its explanation: "NVML not found: ... (dlopen's message)".
    why = ((topo.get("unavailable") or ["NVML lists no GPU"])[0]).split("; ")[0]
    if require_gpu:
        return CheckResult(name, FAIL, f"no GPU, but AXON_BACKEND=gpu asks for the GPU backend "
                                       f"({why})",
                           "install or load the NVIDIA driver (nvidia-smi must list the GPUs), "
                           "or unset AXON_BACKEND to run on the host backend")
    return CheckResult(name, WARN, NO_GPU,
                       f"nothing to do for host-only runs; for the GPU backend: {why}")


def _cuda_api_version(topo: dict) -> Optional[int]:
    driver = topo.get("driver") or {}
    version = driver.get("cuda_driver_api_version")
    if isinstance(version, int) and version > 0:
        return version
    m = re.match(r"(\d+)\.(\d+)", str(driver.get("cuda_version") or ""))
    return int(m.group(1)) * 1000 + int(m.group(2)) * 10 if m else None


def check_driver(topo: dict, require_gpu: bool = False) -> CheckResult:
    """NVIDIA driver and CUDA driver versions."""
    name = "driver"
    gpus = topo.get("gpus") or []
    if not gpus:
        return _no_gpu(name, topo, require_gpu)
    driver = topo.get("driver") or {}
    cuda = _cuda_api_version(topo)
    models = sorted({g.get("name", "?") for g in gpus})
    finding = (f"NVIDIA driver {driver.get('version') or 'unknown'}, CUDA driver "
               f"{topology.cuda_version_text(cuda) or 'unknown'}, {len(gpus)} GPU"
               f"{'s' if len(gpus) != 1 else ''} ({', '.join(models)})")
    if cuda is None:
        return CheckResult(name, WARN, finding + ": CUDA driver version unknown",
                           "check that libcuda.so.1 loads (nvidia-smi prints the CUDA version)")
    if cuda < CUDA_MIN:
        return CheckResult(name, FAIL, finding + f": older than CUDA "
                                                 f"{topology.cuda_version_text(CUDA_MIN)}",
                           "update the NVIDIA driver: the GPU backend takes driver functions "
                           "through cuGetProcAddress (CUDA >= 11.3)")
    if cuda < CUDA_TESTED:
        return CheckResult(name, WARN, finding + ": older than CUDA 12, which axon is tested on",
                           "update the NVIDIA driver to one with CUDA >= 12")
    return CheckResult(name, OK, finding)


def check_peer_access(topo: dict, require_gpu: bool = False) -> CheckResult:
    """P2P read and write between every pair of GPUs."""
    name = "peer access"
    gpus = topo.get("gpus") or []
    if not gpus:
        return _no_gpu(name, topo, require_gpu)
    n = len(gpus)
    if n == 1:
        return CheckResult(name, OK, "one GPU: no GPU pairs to check")
    p2p = topo.get("p2p") or {}
    read, write = p2p.get("read") or [], p2p.get("write") or []
    if len(read) != n or len(write) != n:
        return CheckResult(name, WARN, "P2P status unknown (NVML did not report it)",
                           "nvidia-smi topo -p2p rw shows it")
    pairs = n * (n - 1) // 2
    bad = []
    for a in range(n):
        for b in range(a + 1, n):
            r, w = read[a][b], write[a][b]
            if r != "OK" or w != "OK" or read[b][a] != "OK" or write[b][a] != "OK":
                bad.append(f"GPU{a}-GPU{b} (read {r}, write {w})")
    if not bad:
        both = "the 2 GPUs" if pairs == 1 else f"all {pairs} GPU pairs"
        return CheckResult(name, OK, f"P2P read and write OK between {both}")
    return CheckResult(
        name, WARN,
        f"no peer access for {len(bad)} of {pairs} GPU pairs: {', '.join(bad)}",
        "these pairs use the staged path through pinned host memory (slower; no device calls "
        "or stream barriers between them); PCIe ACS or an IOMMU often blocks P2P: see "
        "nvidia-smi topo -p2p rw")


def check_nvlink(topo: dict, require_gpu: bool = False) -> CheckResult:
    """NVLinks up per GPU."""
    name = "nvlink"
    gpus = topo.get("gpus") or []
    if not gpus:
        return _no_gpu(name, topo, require_gpu)
    links = [(g.get("index", i), (g.get("nvlinks") or {}).get("links", 0) or 0,
              (g.get("nvlinks") or {}).get("up", 0) or 0) for i, g in enumerate(gpus)]
    if all(total == 0 for _, total, _ in links):
        return CheckResult(name, OK, "no NVLink on these GPUs: they reach each other over PCIe")
    down = [f"GPU{i}: {up} of {total} up" for i, total, up in links if up < total]
    if down:
        return CheckResult(
            name, WARN, f"NVLinks down: {'; '.join(down)}",
            "nvidia-smi nvlink -s shows each link; on NVSwitch systems check that "
            "nvidia-fabricmanager runs; a GPU reset or reboot usually brings links back")
    counts = sorted({total for _, total, _ in links})
    per_gpu = "/".join(str(c) for c in counts)
    return CheckResult(name, OK, f"all NVLinks up ({per_gpu} per GPU on {len(gpus)} GPUs)")


def check_ipc_vmm(topo: dict, require_gpu: bool = False) -> CheckResult:
    """VMM and POSIX-fd export, which the GPU heap needs (cuMemCreate + fd passing)."""
    name = "ipc/vmm"
    gpus = topo.get("gpus") or []
    if not gpus:
        return _no_gpu(name, topo, require_gpu)
    missing, unknown = [], []
    for i, g in enumerate(gpus):
        cuda = g.get("cuda")
        if not cuda or cuda.get("vmm") is None or cuda.get("posix_fd") is None:
            unknown.append(f"GPU{g.get('index', i)}")
            continue
        lacks = [what for key, what in (("vmm", "VMM"), ("posix_fd", "POSIX fd export"))
                 if not cuda.get(key)]
        if lacks:
            missing.append(f"GPU{g.get('index', i)} lacks {' and '.join(lacks)}")
    if missing:
        return CheckResult(
            name, FAIL, "; ".join(missing),
            "the GPU heap needs cuMemCreate memory exported as POSIX fds, so the GPU backend "
            "cannot start on these GPUs (vGPU and some virtualised setups lack it): run with "
            "AXON_BACKEND=host, or use GPUs/drivers that support it")
    if unknown:
        cuda = _cuda_api_version(topo)
        if cuda is not None and cuda >= 10020 and sys.platform.startswith("linux"):
            return CheckResult(
                name, OK, f"inferred from CUDA driver {topology.cuda_version_text(cuda)} on "
                          f"Linux (>= 10.2 has VMM and POSIX fd export); the device attributes "
                          f"were not read for {', '.join(unknown)}",
                "GPUs hidden by CUDA_VISIBLE_DEVICES are not queried")
        return CheckResult(name, WARN, f"VMM / fd export support unknown for {', '.join(unknown)}",
                           "check that libcuda.so.1 loads and cuInit succeeds")
    return CheckResult(name, OK, f"VMM and POSIX fd export supported on all {len(gpus)} GPUs "
                                 "(cuDeviceGetAttribute 102, 103)")


def check_gpudirect_rdma(topo: dict, require_gpu: bool = False) -> CheckResult:
    """nvidia_peermem or dma-buf, where there are RDMA NICs."""
    name = "gpudirect rdma"
    gpus = topo.get("gpus") or []
    if not gpus:
        return _no_gpu(name, topo, require_gpu)
    rdma_nics = [n.get("name", "?") for n in topo.get("nics") or [] if n.get("kind") == "rdma"]
    info = topo.get("gpudirect_rdma") or {}
    rule = info.get("dmabuf_rule") or topology.DMABUF_RULE
    peermem = bool(info.get("nvidia_peermem") or info.get("nv_peer_mem"))
    dmabuf = info.get("dmabuf_possible")
    state = (f"nvidia_peermem {'loaded' if peermem else 'not loaded'}, dma-buf "
             f"{ {True: 'possible', False: 'not possible', None: 'unknown'}.get(dmabuf)} "
             f"({rule}; kernel {info.get('kernel') or '?'}, driver "
             f"{(topo.get('driver') or {}).get('version') or '?'})")
    if not rdma_nics:
        return CheckResult(name, OK, f"no RDMA NIC, so nothing to reach GPUs directly; {state}")
    if peermem or dmabuf:
        return CheckResult(name, OK, f"possible for {', '.join(rdma_nics)}: {state}")
    return CheckResult(
        name, WARN, f"not possible for {', '.join(rdma_nics)}: {state}",
        "modprobe nvidia_peermem (it ships with the NVIDIA driver and needs the RDMA stack), or "
        "use Linux >= 5.12 with driver >= 515 for dma-buf; otherwise GPU data between nodes "
        "goes through host memory")


def check_module_loading(topo: dict, env: Mapping[str, str]) -> CheckResult:
    """CUDA_MODULE_LOADING: with lazy loading (CUDA's default), a kernel's first launch while
    another kernel waits for a host thread of axon (PEs on other nodes, the staged path)
    deadlocks both until AXON_TIMEOUT (docs/architecture.md, "The device proxy")."""
    name = "module loading"
    if not topo.get("gpus"):
        return CheckResult(name, OK, "no GPU: CUDA_MODULE_LOADING does not apply")
    value = env.get("CUDA_MODULE_LOADING", "").strip().upper()
    if value == "EAGER":
        return CheckResult(name, OK, "CUDA_MODULE_LOADING=EAGER: kernels are loaded at start-up")
    shown = f"CUDA_MODULE_LOADING={value}" if value else "CUDA_MODULE_LOADING unset, CUDA's default"
    return CheckResult(
        name, OK, f"CUDA loads kernels lazily ({shown})",
        "for jobs across nodes whose kernels wait on other nodes (or GPUs without peer access), "
        "set CUDA_MODULE_LOADING=EAGER: a kernel launched for the first time meanwhile would "
        "deadlock (axon's init warns then; docs/architecture.md, \"The device proxy\")")


# --------------------------------------------------------------------------
# Host checks
# --------------------------------------------------------------------------


def check_memlock(soft: int, hard: int, ram_bytes: Optional[int]) -> CheckResult:
    """RLIMIT_MEMLOCK (ulimit -l) against the machine's memory."""
    name = "memlock"
    inf = resource.RLIM_INFINITY

    def text(v: int) -> str:
        return "unlimited" if v == inf else _size(v)

    if soft == inf:
        return CheckResult(name, OK, "max locked memory (ulimit -l) is unlimited")
    finding = f"max locked memory (ulimit -l) is {text(soft)} (hard limit {text(hard)})"
    if ram_bytes and soft < ram_bytes // 4:
        return CheckResult(
            name, WARN, finding + f", below 1/4 of the memory ({_size(ram_bytes)})",
            "pinning host buffers for RDMA (UCX, GPUDirect) fails past it: ulimit -l unlimited "
            "(raise the hard limit: memlock in /etc/security/limits.conf, LimitMEMLOCK= for "
            "systemd, docker run --ulimit memlock=-1)")
    return CheckResult(name, OK, finding)


def check_shm(size_bytes: Optional[int], free_bytes: Optional[int],
              path: str = "/dev/shm") -> CheckResult:
    """Size of /dev/shm, where the host heaps live."""
    name = "shm"
    advice = (f"enlarge it: mount -o remount,size=16G {path} (as root), or docker run "
              "--shm-size=16g (Kubernetes: an emptyDir with medium: Memory on /dev/shm)")
    if size_bytes is None:
        return CheckResult(name, FAIL, f"{path} is missing: the host heaps need POSIX shared "
                                       "memory", "mount -t tmpfs -o size=16G tmpfs /dev/shm")
    finding = f"{path} is {_size(size_bytes)} ({_size(free_bytes or 0)} free)"
    if size_bytes < SHM_FAIL_BYTES:
        return CheckResult(name, FAIL, finding + f": below {_size(SHM_FAIL_BYTES)}, too small "
                                                 "for axon's heaps", advice)
    if size_bytes < SHM_WARN_BYTES:
        return CheckResult(name, WARN, finding + f": below {_size(SHM_WARN_BYTES)}; heaps grow "
                                                 "there and a full /dev/shm fails allocations",
                           advice)
    if free_bytes is not None and free_bytes < SHM_FAIL_BYTES:
        return CheckResult(name, WARN, finding + ": almost full",
                           f"remove stale files from {path} (ls -la {path}) or enlarge it")
    return CheckResult(name, OK, finding)


_TRANSPORT_DEVICE = re.compile(r"^\s*#\s*Transport:\s*(\S+)\s*\n\s*#\s*Device:\s*(\S+)", re.M)
# Transports that drive an RDMA NIC (InfiniBand or RoCE).
_VERBS = ("rc_verbs", "rc_mlx5", "dc_mlx5", "ud_verbs", "ud_mlx5", "rc", "ud", "dc", "srd", "gga")


def parse_ucx_transports(devices_output: str) -> "dict[str, list[str]]":
    """``ucx_info -d``'s transports, each with its devices, in order of first appearance."""
    found: dict[str, list[str]] = {}
    for transport, device in _TRANSPORT_DEVICE.findall(devices_output or ""):
        devices = found.setdefault(transport, [])
        if device not in devices:
            devices.append(device)
    return found


def describe_transports(transports: "dict[str, list[str]]") -> str:
    """"posix (memory), tcp (eth0, eth1)"."""
    return ", ".join(f"{t} ({', '.join(d)})" for t, d in transports.items())


def check_ucx(library: Optional[dict], devices_output: Optional[str], has_gpu: bool = False,
              rdma_nics: "tuple[str, ...] | list[str]" = ()) -> CheckResult:
    """The UCX axon loads across nodes (``_axon.network_library()``), its transports per device
    (``ucx_info -d`` of that same UCX; None when no ucx_info ships with it), and whether it can
    use this machine's RDMA NICs and GPUs."""
    name = "ucx"
    if not library or not library.get("available"):
        why = (library or {}).get("why_not") or "axon's Python module is not built"
        return CheckResult(name, WARN, f"UCX not usable: {why}",
                           "axon runs on one node without it; across nodes it needs UCX 1.13 or newer "
                           "(the cluster's own, or pip install libucx-cu13)")
    where = f"UCX {library.get('version')} ({library.get('path')})"
    if devices_output is None:
        return CheckResult(name, OK, f"{where}; no ucx_info beside it, so its transports are not listed",
                           "put that UCX's bin/ on PATH to list its transports")
    transports = parse_ucx_transports(devices_output)
    if not transports:
        return CheckResult(name, WARN, f"{where}, but ucx_info -d lists no transports",
                           "run ucx_info -d to see why (UCX_TLS set? no devices?)")
    finding = f"{where}; transports: {describe_transports(transports)}"
    if rdma_nics and not any(t in _VERBS for t in transports):
        return CheckResult(name, WARN, finding + f": no verbs transport, so the RDMA NIC(s) "
                                                 f"{', '.join(rdma_nics)} go unused (TCP instead)",
                           "build axon against the cluster's UCX (set UCX_HOME to HPC-X's or MOFED's "
                           "UCX and rebuild): the libucx wheel has no InfiniBand")
    if has_gpu and not any(t.startswith("cuda") for t in transports):
        return CheckResult(name, WARN, finding + ": built without CUDA (no cuda_copy/cuda_ipc)",
                           "use a UCX built with CUDA (the libucx-cu13 wheel, or the cluster's) for GPU "
                           "buffers across nodes")
    return CheckResult(name, OK, finding)


def ucx_tool_beside(library: Optional[dict], tool: str = "ucx_info") -> "tuple[Optional[str], dict]":
    """A program of the UCX axon loads (ucx_info, ucx_perftest: its bin/ beside its lib/), with
    the environment that makes it load that same UCX; (None, {}) when it has none."""
    if not library or not library.get("path"):
        return None, {}
    lib_dir = os.path.dirname(os.path.realpath(library["path"]))
    for candidate in (os.path.join(lib_dir, "..", "bin", tool), os.path.join(lib_dir, "bin", tool)):
        if os.access(candidate, os.X_OK):
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
            return os.path.normpath(candidate), env
    on_path = shutil.which(tool)
    if on_path:
        info = shutil.which("ucx_info") if tool != "ucx_info" else on_path
        version = (run_text([info, "-v"]) or "") if info else ""
        if library.get("version") and library["version"] in version:
            return on_path, dict(os.environ)
    return None, {}


def network_library() -> Optional[dict]:
    """What ``_axon.network_library()`` says, or None without the compiled module."""
    try:
        from .. import _axon
    except ImportError:
        return None
    return _axon.network_library()


# --------------------------------------------------------------------------
# The bootstrap address
# --------------------------------------------------------------------------


def store_address(env: Mapping[str, str]) -> "tuple[Optional[str], str, bool]":
    """(address, how it was found, ok) of the store axon would use.

    It asks the runtime's own launcher detection (``_axon.detect_launch``, the function
    ``init()`` runs), so the answer cannot drift from what a job would do.
    ``(None, why, True)``: a world of one, which picks a free loopback port; ``(None, why,
    False)``: a launch in which no store address can be found, or malformed launcher variables.
    """
    from .. import _axon
    from ..errors import Error

    try:
        info = _axon.detect_launch(dict(env))
    except Error as exc:
        return None, str(exc), False
    if not info["store_addr"]:
        how = ("no launcher variables: a world of one" if info["source"] == "single"
               else f"started by {info['source']} as a world of one")
        return None, how, True
    return info["store_addr"], info["store_hint"] or info["source"], True


def _split_host_port(addr: str) -> "tuple[str, int]":
    m = re.match(r"^\[([^\]]+)\]:(\d+)$", addr) or re.match(r"^([^:]+):(\d+)$", addr)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ValueError(addr)
    return m.group(1), int(m.group(2))


def _tcp_connect(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def _can_bind(host: str, port: int) -> bool:
    """Whether (host, port) is an address of this machine that is free to listen on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False
    for family, kind, proto, _, sockaddr in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.bind(sockaddr)
                return True
        except OSError:
            continue
    return False


def _loopback_round_trip() -> int:
    """Bind a free loopback port, listen, connect to it; return the port (raises OSError)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        _tcp_connect("127.0.0.1", port, 2.0)
        return port


def check_bootstrap(env: Mapping[str, str], *, timeout: float = 2.0,
                    connect: Callable[[str, int, float], None] = _tcp_connect,
                    resolve: Callable[[str], Any] = socket.gethostbyname,
                    can_bind: Callable[[str, int], bool] = _can_bind,
                    loopback: Callable[[], int] = _loopback_round_trip) -> CheckResult:
    """Whether the store address axon would use can be reached (a TCP connect with a timeout)."""
    name = "bootstrap"
    addr, how, ok = store_address(env)
    if addr is None and not ok:
        return CheckResult(name, FAIL, f"no store address: {how}",
                           "set AXON_STORE_ADDR=host:port to a port on the host of rank 0")
    if addr is None:
        try:
            port = loopback()
        except OSError as exc:
            return CheckResult(name, FAIL, f"{how}, but a loopback port cannot be bound and "
                                           f"connected to: {exc}",
                               "the store of a world of one needs TCP on 127.0.0.1: check the "
                               "loopback interface (ip link set lo up) and local firewall rules")
        return CheckResult(name, OK, f"{how}: a free loopback port (127.0.0.1:{port}) could be "
                                     "bound and connected to")
    try:
        host, port = _split_host_port(addr)
    except ValueError:
        return CheckResult(name, FAIL, f"store address {addr!r} ({how}) is not host:port",
                           "set AXON_STORE_ADDR=host:port, e.g. node01:29500")
    where = f"{host}:{port} ({how})"
    try:
        resolve(host)
    except OSError as exc:
        return CheckResult(name, FAIL, f"cannot resolve the store host of {where}: {exc}",
                           "use a host name every node resolves, or an IP address")
    try:
        connect(host, port, timeout)
    except ConnectionRefusedError:
        if can_bind(host, port):
            return CheckResult(name, OK, f"{where} is on this machine and free: rank 0 can serve "
                                         "the store there")
        return CheckResult(
            name, WARN, f"{where} refused the connection: nothing listens there now",
            "expected before rank 0 starts; if rank 0 runs, check that it serves on this port "
            "and that no firewall rejects it")
    except socket.timeout:
        return CheckResult(name, FAIL, f"no answer from {where} within {timeout:g} s",
                           "check the host name, routing and firewalls between the nodes and "
                           "rank 0's host on this port")
    except OSError as exc:
        reason = errno.errorcode.get(exc.errno or 0, "") if exc.errno else ""
        return CheckResult(name, FAIL, f"cannot connect to {where}: {exc.strerror or exc}"
                                       + (f" ({reason})" if reason else ""),
                           "check the host name, routing and firewalls to rank 0's host")
    return CheckResult(name, OK, f"{where} accepts TCP connections (a store or other server "
                                 "listens there)")


# --------------------------------------------------------------------------
# This machine
# --------------------------------------------------------------------------


@dataclass
class Facts:
    """Everything the checks read; ``gather()`` fills it from this machine."""

    topo: dict
    loaded_from: Optional[str] = None
    require_gpu: bool = False
    memlock: "tuple[int, int]" = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    ram_bytes: Optional[int] = None
    shm_size: Optional[int] = None
    shm_free: Optional[int] = None
    ucx_library: Optional[dict] = None
    ucx_devices: Optional[str] = None
    env: Mapping[str, str] = field(default_factory=dict)


def run_text(argv: list, env: Optional[dict] = None) -> Optional[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout + done.stderr


def gather(env: Optional[Mapping[str, str]] = None) -> Facts:
    """Read this machine (the topology from AXON_TOPO_FILE when set)."""
    env = dict(os.environ if env is None else env)
    topo = topology.load_or_discover(env)
    try:
        ram: Optional[int] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        ram = None
    try:
        st = os.statvfs("/dev/shm")
        shm_size: Optional[int] = st.f_blocks * st.f_frsize
        shm_free: Optional[int] = st.f_bavail * st.f_frsize
    except OSError:
        shm_size = shm_free = None
    library = network_library()
    ucx_info, ucx_env = ucx_tool_beside(library)
    return Facts(
        topo=topo.data,
        loaded_from=topo.loaded_from,
        require_gpu=env.get("AXON_BACKEND", "").strip().lower() == "gpu",
        memlock=resource.getrlimit(resource.RLIMIT_MEMLOCK),
        ram_bytes=ram,
        shm_size=shm_size,
        shm_free=shm_free,
        ucx_library=library,
        ucx_devices=run_text([ucx_info, "-d"], ucx_env) if ucx_info else None,
        env=env,
    )


def run_checks(facts: Facts, **bootstrap_kwargs: Any) -> list:
    """Every check, in order, on ``facts``."""
    topo, gpu = facts.topo, facts.require_gpu
    return [
        check_driver(topo, gpu),
        check_peer_access(topo, gpu),
        check_nvlink(topo, gpu),
        check_ipc_vmm(topo, gpu),
        check_module_loading(topo, facts.env),
        check_memlock(facts.memlock[0], facts.memlock[1], facts.ram_bytes),
        check_ucx(facts.ucx_library, facts.ucx_devices, has_gpu=bool(topo.get("gpus")),
                  rdma_nics=[n.get("name", "?") for n in topo.get("nics") or [] if n.get("kind") == "rdma"]),
        check_gpudirect_rdma(topo, gpu),
        check_shm(facts.shm_size, facts.shm_free),
        check_bootstrap(facts.env, **bootstrap_kwargs),
    ]


def format_result(result: CheckResult) -> str:
    """``"warn  ucx             UCX not found ... -> what to do"``: one line."""
    line = f"{result.status:<4}  {result.name:<15} {result.finding}"
    return line + (f" -> {result.advice}" if result.advice else "")


# --------------------------------------------------------------------------
# The subcommand
# --------------------------------------------------------------------------

_DESCRIPTION = (
    "Preflight checks of this machine for axon: driver and CUDA versions, peer access, NVLink, "
    "IPC/VMM export, CUDA's module loading, pinned-memory limit, UCX, GPUDirect RDMA, /dev/shm "
    "and the bootstrap "
    "address. One line per check: ok, warn or fail, the finding, and what to do (after '->'). "
    "Exits 1 when a check fails."
)
_EPILOG = (
    "Without a GPU the GPU checks warn, unless AXON_BACKEND=gpu is set: then they fail. "
    f"{topology.TOPO_FILE_VAR}=FILE checks a topology dump (axon topo --json) instead of this "
    "machine's GPUs and NICs."
)


def add_subcommand(subparsers: argparse._SubParsersAction) -> None:
    """Add ``doctor`` to the ``axon`` command line."""
    parser = subparsers.add_parser("doctor", help="preflight checks: ok / warn / fail, and what "
                                                  "to do", description=_DESCRIPTION,
                                   epilog=_EPILOG)
    _configure(parser)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(handler=_cmd_doctor)


def _cmd_doctor(args: argparse.Namespace) -> int:
    return run()


def run(out: Any = None, env: Optional[Mapping[str, str]] = None) -> int:
    """What ``axon doctor`` does; returns 1 when a check fails, else 0."""
    out = sys.stdout if out is None else out
    try:
        facts = gather(env)
    except TopologyError as exc:
        print(f"axon doctor: {exc}", file=sys.stderr)
        return 1
    if facts.loaded_from:
        print(f"axon doctor: GPUs and NICs from {facts.loaded_from} ({topology.TOPO_FILE_VAR}), "
              "the rest from this machine", file=out)
    results = run_checks(facts)
    for result in results:
        print(format_result(result), file=out)
    counts = {s: sum(r.status == s for r in results) for s in (OK, WARN, FAIL)}
    print(f"axon doctor: {counts[OK]} ok, {counts[WARN]} warn, {counts[FAIL]} fail", file=out)
    return 1 if counts[FAIL] else 0


def main(argv: Optional[list] = None) -> int:
    """``python -m axon.tools.doctor``."""
    parser = argparse.ArgumentParser(prog="axon doctor", description=_DESCRIPTION,
                                     epilog=_EPILOG)
    _configure(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
