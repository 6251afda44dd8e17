"""What this machine is made of, for ``axon topo`` and ``axon doctor``.

``discover()`` builds one JSON-ready dict (the *topology*) from NVML, the CUDA driver and sysfs:

* the host: name, kernel, CPUs, NUMA nodes, memory;
* the GPUs: index, name, memory, PCI bus id, NUMA node, CPU affinity, NVLinks, CUDA attributes;
* the GPU-to-GPU link matrix in ``nvidia-smi topo -m``'s vocabulary (``X``, ``NV#``, ``PIX``,
  ``PXB``, ``PHB``, ``NODE``, ``SYS``) and the P2P read/write status of every pair;
* the NICs (RDMA devices and network interfaces on a PCI device) with their distance to each GPU
  in the same vocabulary, computed from the PCI paths in sysfs (``pci_distance``);
* whether GPUDirect RDMA is possible (nvidia_peermem loaded, dma-buf);
* ``unavailable``: what could not be seen, and why.

``dump``/``load`` write and read that dict (``SCHEMA_VERSION``); ``AXON_TOPO_FILE`` makes
``load_or_discover`` load a dump instead of discovering, which is how tests inject a machine.

NVML comes from NVIDIA's ``pynvml`` (PyPI package ``nvidia-ml-py``), imported only when
``libnvidia-ml.so.1`` is there; nothing here imports axon's compiled extension.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import socket
from dataclasses import dataclass
from typing import Any, Optional

__all__ = [
    "DMABUF_RULE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TOPO_FILE_VAR",
    "Topology",
    "TopologyError",
    "cpulist_from_mask",
    "discover",
    "dump",
    "dumps",
    "load",
    "load_or_discover",
    "normalize_bus_id",
    "pci_distance",
]

SCHEMA = "axon.topology"
SCHEMA_VERSION = 1
TOPO_FILE_VAR = "AXON_TOPO_FILE"

#: The rule ``axon topo`` applies to say whether dma-buf GPUDirect RDMA is possible.
DMABUF_RULE = "dma-buf needs Linux >= 5.12 and NVIDIA driver >= 515"
_DMABUF_MIN_KERNEL = (5, 12)
_DMABUF_MIN_DRIVER = 515

# The nvidia-smi topo -m vocabulary, nearest first (NV# is above all of them).
LINK_LEGEND = {
    "X": "self",
    "NV#": "connection traversing a bonded set of # NVLinks",
    "PIX": "connection traversing at most a single PCIe bridge (one PCIe switch)",
    "PXB": "connection traversing multiple PCIe bridges (without the PCIe host bridge)",
    "PHB": "connection traversing PCIe and a PCIe host bridge (typically the CPU)",
    "NODE": "connection traversing PCIe and the interconnect between host bridges of one NUMA node",
    "SYS": "connection traversing PCIe and the SMP interconnect between NUMA nodes",
}

# nvmlGpuP2PStatus_t -> nvidia-smi topo -p2p's codes ("DIS" is ours: disabled by a registry key).
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DIS", 5: "NS", 6: "U"}
P2P_LEGEND = {
    "OK": "peer access possible",
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "DIS": "disabled by a driver registry key",
    "NS": "not supported",
    "U": "unknown",
}

# NVML constants, spelled out: some pynvml releases define a few of them as tuples.
_P2P_READ, _P2P_WRITE = 0, 1
_NVML_ERROR_INVALID_ARGUMENT = 2
_NVML_ERROR_NOT_SUPPORTED = 3
_NVML_FEATURE_ENABLED = 1
_NVLINK_DEVICE_GPU, _NVLINK_DEVICE_SWITCH = 0, 2
_TOPOLOGY_LEVEL = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}

# CUdevice_attribute values (cuda.h).
_CU_ATTR_VMM = 102  # CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
_CU_ATTR_POSIX_FD = 103  # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED

_BDF = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_PCI_ROOT = re.compile(r"^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$")


class TopologyError(Exception):
    """A topology file that cannot be read or is not a topology; the message names the file."""


@dataclass
class Topology:
    """A topology dict and where it came from (``"discovered"`` or the file it was loaded from)."""

    data: dict
    loaded_from: Optional[str] = None

    @property
    def gpus(self) -> list:
        return self.data.get("gpus", [])

    @property
    def nics(self) -> list:
        return self.data.get("nics", [])


# --------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------


def normalize_bus_id(bus_id: "str | bytes") -> str:
    """PCI bus id in sysfs's spelling: ``"00000000:1A:00.0"`` -> ``"0000:1a:00.0"``."""
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    bus_id = bus_id.strip().lower()
    parts = bus_id.split(":")
    if len(parts) == 3:
        try:
            parts[0] = f"{int(parts[0], 16):04x}"
        except ValueError:
            pass
    return ":".join(parts)


def cpulist_from_mask(words: "list[int]", bits_per_word: int = 64) -> str:
    """``[0x0f, 0x1]`` (NVML's CPU affinity words) -> ``"0-3,64"``."""
    cpus = [i * bits_per_word + b for i, w in enumerate(words) for b in range(bits_per_word)
            if (int(w) >> b) & 1]
    return _ranges(cpus)


def _ranges(cpus: "list[int]") -> str:
    out: list[str] = []
    start = prev = None
    for c in sorted(cpus):
        if prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(out)


def _pci_chain(path: str) -> "tuple[str, list[str]] | None":
    """``(root bus, [bridge, ..., device])`` of a resolved sysfs device path, or None.

    ``/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/virtio3`` gives
    ``("pci0000:17", ["0000:17:01.0", "0000:18:00.0"])``: what follows the last PCI function
    (a virtio device, ``net/eth0``) is not part of the PCI path.
    """
    parts = [p for p in path.split("/") if p]
    roots = [i for i, p in enumerate(parts) if _PCI_ROOT.match(p)]
    if not roots:
        return None
    i = roots[-1]
    chain: list[str] = []
    for p in parts[i + 1:]:
        if not _BDF.match(p):
            break
        chain.append(normalize_bus_id(p))
    if not chain:
        return None
    return parts[i].lower(), chain


def pci_distance(path_a: str, path_b: str, numa_a: Optional[int] = None,
                 numa_b: Optional[int] = None) -> str:
    """How two PCI devices reach each other, in nvidia-smi topo -m's words, from sysfs paths.

    The paths are resolved ``/sys/devices/pci<root>/<bridge>/.../<device>`` paths:

    * ``X``: the same PCI function;
    * ``PIX``: behind one PCIe switch (the same bridge, or bridges one level below the same
      bridge, as a switch's downstream ports are);
    * ``PXB``: a common bridge further up (several switches), not the host bridge;
    * ``PHB``: only the root complex (host bridge) in common;
    * ``NODE``: different root complexes on the same NUMA node (``-1``, "no NUMA", on both
      counts as one node);
    * ``SYS``: different NUMA nodes, or a NUMA node unknown on one side;
    * ``?``: a path that is not a PCI device path.
    """
    a, b = _pci_chain(path_a), _pci_chain(path_b)
    if a is None or b is None:
        return "?"
    (root_a, chain_a), (root_b, chain_b) = a, b
    if root_a == root_b and chain_a == chain_b:
        return "X"
    if root_a != root_b:
        if numa_a is None or numa_b is None or numa_a != numa_b:
            return "SYS"
        return "NODE"
    bridges_a, bridges_b = chain_a[:-1], chain_b[:-1]
    common = 0
    for x, y in zip(bridges_a, bridges_b):
        if x != y:
            break
        common += 1
    if common == 0:
        return "PHB"
    below_a, below_b = len(bridges_a) - common, len(bridges_b) - common
    if below_a <= 1 and below_b <= 1:
        return "PIX"
    return "PXB"


def dmabuf_possible(kernel_release: str, driver_version: Optional[str]) -> Optional[bool]:
    """``DMABUF_RULE`` applied; None when the driver version is unknown."""
    m = re.match(r"(\d+)\.(\d+)", kernel_release or "")
    kernel_ok = bool(m) and (int(m.group(1)), int(m.group(2))) >= _DMABUF_MIN_KERNEL
    if not kernel_ok:
        return False
    if not driver_version:
        return None
    d = re.match(r"(\d+)", driver_version)
    return bool(d) and int(d.group(1)) >= _DMABUF_MIN_DRIVER


def cuda_version_text(version: Optional[int]) -> Optional[str]:
    """``12060`` -> ``"12.6"`` (the CUDA driver API's encoding)."""
    if not version:
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


# --------------------------------------------------------------------------
# Reading sysfs / procfs
# --------------------------------------------------------------------------


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _read_int(path: str) -> Optional[int]:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _parse_cpulist(text: str) -> int:
    count = 0
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        count += (int(hi) - int(lo) + 1) if hi else 1
    return count


def _host(sysfs: str) -> dict:
    meminfo = _read("/proc/meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", meminfo, re.M)
    nodes = []
    node_dir = os.path.join(sysfs, "devices/system/node")
    try:
        names = sorted((n for n in os.listdir(node_dir) if re.match(r"^node\d+$", n)),
                       key=lambda n: int(n[4:]))
    except OSError:
        names = []
    for name in names:
        cpus = _read(os.path.join(node_dir, name, "cpulist")) or ""
        info = _read(os.path.join(node_dir, name, "meminfo")) or ""
        nm = re.search(r"MemTotal:\s+(\d+)\s*kB", info)
        nodes.append({"id": int(name[4:]), "cpus": cpus,
                      "memory_bytes": int(nm.group(1)) * 1024 if nm else None})
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_bytes": int(m.group(1)) * 1024 if m else None,
        "numa_nodes": nodes,
    }


def _pci_device(sysfs: str, bus_id: str) -> "tuple[Optional[str], Optional[int], Optional[str]]":
    """(resolved sysfs path, NUMA node, local_cpulist) of a PCI device."""
    link = os.path.join(sysfs, "bus/pci/devices", bus_id)
    if not os.path.exists(link):
        return None, None, None
    return (os.path.realpath(link), _read_int(os.path.join(link, "numa_node")),
            _read(os.path.join(link, "local_cpulist")))


def _pci_function_dir(device_path: str) -> Optional[str]:
    """The PCI function a device sits on: the path up to its last PCI bus id component."""
    parts = device_path.rstrip("/").split("/")
    for i in range(len(parts) - 1, -1, -1):
        if _BDF.match(parts[i]):
            return "/".join(parts[: i + 1])
    return None


def _nics(sysfs: str) -> "tuple[list[dict], list[str]]":
    """RDMA devices and PCI network interfaces; notes on what is missing."""
    nics: list[dict] = []
    notes: list[str] = []
    claimed: set[str] = set()
    ib_dir = os.path.join(sysfs, "class/infiniband")
    try:
        ib_names = sorted(os.listdir(ib_dir))
    except OSError:
        ib_names = []
        notes.append(f"no RDMA devices: {ib_dir} does not exist (no InfiniBand/RoCE adapter, "
                     "or its driver and rdma-core are not loaded)")
    for name in ib_names:
        dev = os.path.join(ib_dir, name)
        path = os.path.realpath(os.path.join(dev, "device"))
        func = _pci_function_dir(path)
        ports = []
        try:
            port_names = sorted(os.listdir(os.path.join(dev, "ports")), key=lambda p: int(p))
        except (OSError, ValueError):
            port_names = []
        for port in port_names:
            pdir = os.path.join(dev, "ports", port)
            state = _read(os.path.join(pdir, "state")) or ""
            ports.append({
                "port": int(port),
                "state": state.split(":", 1)[-1].strip() if state else None,
                "rate": _read(os.path.join(pdir, "rate")),
                "link_layer": _read(os.path.join(pdir, "link_layer")),
            })
        try:
            netdevs = sorted(os.listdir(os.path.join(dev, "device/net")))
        except OSError:
            netdevs = []
        claimed.update(netdevs)
        nics.append({
            "name": name,
            "kind": "rdma",
            "pci_bus_id": os.path.basename(func) if func else None,
            "sysfs_path": func,
            "numa_node": _read_int(os.path.join(dev, "device/numa_node")),
            "ports": ports,
            "netdevs": netdevs,
        })
    net_dir = os.path.join(sysfs, "class/net")
    try:
        net_names = sorted(os.listdir(net_dir))
    except OSError:
        net_names = []
    for name in net_names:
        if name in claimed:
            continue
        link = os.path.join(net_dir, name, "device")
        if not os.path.exists(link):
            continue  # virtual: lo, bridges, veth, ifb, ...
        func = _pci_function_dir(os.path.realpath(link))
        if func is None:
            continue  # not on PCI (e.g. a platform or USB device)
        speed = _read_int(os.path.join(net_dir, name, "speed"))
        nics.append({
            "name": name,
            "kind": "net",
            "pci_bus_id": os.path.basename(func),
            "sysfs_path": func,
            "numa_node": _read_int(os.path.join(func, "numa_node")),
            "state": _read(os.path.join(net_dir, name, "operstate")),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
        })
    return nics, notes


def _gpudirect(proc_modules: str, sysfs: str, kernel: str,
               driver_version: Optional[str]) -> dict:
    modules = _read(proc_modules) or ""
    loaded = {m.split()[0] for m in modules.splitlines() if m.strip()}

    def module(name: str) -> bool:
        return name in loaded or os.path.isdir(os.path.join(sysfs, "module", name))

    return {
        "nvidia_peermem": module("nvidia_peermem"),
        "nv_peer_mem": module("nv_peer_mem"),
        "kernel": kernel,
        "dmabuf_possible": dmabuf_possible(kernel, driver_version),
        "dmabuf_rule": DMABUF_RULE,
    }


# --------------------------------------------------------------------------
# NVML and the CUDA driver
# --------------------------------------------------------------------------


def _nvml_library_error() -> Optional[str]:
    """None when libnvidia-ml.so.1 loads, else why not (the loader's message)."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return None
    except OSError as exc:
        return str(exc)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _nvml_error_code(exc: BaseException) -> Optional[int]:
    return getattr(exc, "value", None)


def _nvlinks(nvml: Any, handle: Any) -> dict:
    """Active NVLinks of one GPU: count, and per remote (bus id, remote device type)."""
    remote_pci = (getattr(nvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None)
                  or nvml.nvmlDeviceGetNvLinkRemotePciInfo)
    remote_type = getattr(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None)
    max_links = getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)
    max_links = max_links if isinstance(max_links, int) else 18
    total = up = 0
    remotes: dict[str, dict] = {}
    for link in range(max_links):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError as exc:
            if _nvml_error_code(exc) in (_NVML_ERROR_NOT_SUPPORTED, _NVML_ERROR_INVALID_ARGUMENT):
                break
            total += 1
            continue
        total += 1
        if state != _NVML_FEATURE_ENABLED:
            continue
        up += 1
        try:
            bus = normalize_bus_id(remote_pci(handle, link).busId)
        except nvml.NVMLError:
            bus = "?"
        kind = None
        if remote_type is not None:
            try:
                kind = remote_type(handle, link)
            except nvml.NVMLError:
                kind = None
        entry = remotes.setdefault(bus, {"links": 0, "type": kind})
        entry["links"] += 1
    return {"links": total, "up": up, "remotes": remotes}


def _cuda_attributes() -> "tuple[Optional[int], dict[str, dict], Optional[str]]":
    """(CUDA driver version, {bus id: {ordinal, vmm, posix_fd}}, error) through libcuda.so.1."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return None, {}, f"CUDA driver not found: {exc}"
    version = ctypes.c_int(0)
    if cuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        version.value = 0
    rc = cuda.cuInit(0)
    if rc != 0:
        return version.value or None, {}, f"cuInit failed with CUresult {rc}"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return version.value or None, {}, "cuDeviceGetCount failed"
    devices: dict[str, dict] = {}
    for ordinal in range(count.value):
        dev = ctypes.c_int(0)
        if cuda.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
            continue
        buf = ctypes.create_string_buffer(32)
        if cuda.cuDeviceGetPCIBusId(buf, 32, dev) != 0:
            continue
        attrs: dict[str, Any] = {"ordinal": ordinal}
        for key, attr in (("vmm", _CU_ATTR_VMM), ("posix_fd", _CU_ATTR_POSIX_FD)):
            value = ctypes.c_int(0)
            ok = cuda.cuDeviceGetAttribute(ctypes.byref(value), attr, dev) == 0
            attrs[key] = bool(value.value) if ok else None
        devices[normalize_bus_id(buf.value)] = attrs
    return version.value or None, devices, None


def _discover_gpus(nvml: Any, sysfs: str, cuda_devices: "dict[str, dict]") -> dict:
    """GPUs, link and P2P matrices, driver versions from an initialised pynvml."""
    driver = _text(nvml.nvmlSystemGetDriverVersion())
    try:
        cuda = cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion_v2())
    except (nvml.NVMLError, AttributeError):
        try:
            cuda = cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion())
        except nvml.NVMLError:
            cuda = None
    count = nvml.nvmlDeviceGetCount()
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    gpus: list[dict] = []
    links_of: list[dict] = []
    cpu_words = max(1, ((os.cpu_count() or 64) + 63) // 64)
    for index, h in enumerate(handles):
        bus = normalize_bus_id(nvml.nvmlDeviceGetPciInfo(h).busId)
        path, numa, cpulist = _pci_device(sysfs, bus)
        if not cpulist:
            try:
                cpulist = cpulist_from_mask(list(nvml.nvmlDeviceGetCpuAffinity(h, cpu_words)))
            except nvml.NVMLError:
                cpulist = None
        nvlink = _nvlinks(nvml, h)
        links_of.append(nvlink)
        gpus.append({
            "index": index,
            "name": _text(nvml.nvmlDeviceGetName(h)),
            "uuid": _text(nvml.nvmlDeviceGetUUID(h)),
            "memory_bytes": int(nvml.nvmlDeviceGetMemoryInfo(h).total),
            "pci_bus_id": bus,
            "sysfs_path": path,
            "numa_node": numa,
            "cpu_affinity": cpulist,
            "nvlinks": {"links": nvlink["links"], "up": nvlink["up"]},
            "cuda": cuda_devices.get(bus),
        })
    buses = [g["pci_bus_id"] for g in gpus]
    # Links to NVSwitches (or to remotes that are no GPU NVML lists) join every GPU that has some.
    via_switch = []
    for nvlink in links_of:
        n = 0
        for bus, r in nvlink["remotes"].items():
            if r["type"] == _NVLINK_DEVICE_SWITCH or (r["type"] != _NVLINK_DEVICE_GPU
                                                      and bus not in buses):
                n += r["links"]
        via_switch.append(n)
    links: list[list[str]] = []
    p2p_read: list[list[str]] = []
    p2p_write: list[list[str]] = []
    for a, ha in enumerate(handles):
        row, rrow, wrow = [], [], []
        for b, hb in enumerate(handles):
            if a == b:
                row.append("X")
                rrow.append("X")
                wrow.append("X")
                continue
            nv = links_of[a]["remotes"].get(buses[b], {}).get("links", 0)
            if via_switch[a] and via_switch[b]:
                nv += min(via_switch[a], via_switch[b])
            if nv:
                row.append(f"NV{nv}")
            else:
                try:
                    level = nvml.nvmlDeviceGetTopologyCommonAncestor(ha, hb)
                    row.append(_TOPOLOGY_LEVEL.get(int(level), f"?{level}"))
                except nvml.NVMLError:
                    row.append("?")
            for out, index in ((rrow, _P2P_READ), (wrow, _P2P_WRITE)):
                try:
                    out.append(P2P_STATUS.get(int(nvml.nvmlDeviceGetP2PStatus(ha, hb, index)), "U"))
                except nvml.NVMLError:
                    out.append("U")
        links.append(row)
        p2p_read.append(rrow)
        p2p_write.append(wrow)
    return {"driver": {"version": driver, "cuda_version": cuda}, "gpus": gpus, "links": links,
            "p2p": {"read": p2p_read, "write": p2p_write}}


# --------------------------------------------------------------------------
# Discovery, load and dump
# --------------------------------------------------------------------------


def discover(*, sysfs: str = "/sys", proc_modules: str = "/proc/modules",
             nvml: Any = None, cuda: Any = None) -> dict:
    """The topology of this machine. ``nvml`` (a pynvml-like module) and ``cuda`` (a function
    returning what ``_cuda_attributes`` does) replace the real ones, for tests."""
    host = _host(sysfs)
    unavailable: list[str] = []
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "host": host,
        "driver": None,
        "gpus": [],
        "links": [],
        "p2p": {"read": [], "write": []},
    }
    cuda_version, cuda_devices, cuda_error = (cuda or _cuda_attributes)()
    if nvml is None:
        lib_error = _nvml_library_error()
        if lib_error is not None:
            unavailable.append(
                f"NVML not found: libnvidia-ml.so.1 could not be loaded ({lib_error}); without "
                "the NVIDIA driver there are no GPUs, GPU links, P2P status or driver versions "
                "to show")
        else:
            try:
                import pynvml as nvml  # noqa: PLC0415 (lazy: an optional dependency)
            except ImportError:
                unavailable.append(
                    "GPUs not discovered: the Python package nvidia-ml-py (module pynvml) is not "
                    "installed: pip install nvidia-ml-py (or pip install 'axon-comm[tools]')")
    if nvml is not None:
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            unavailable.append(f"NVML is there but nvmlInit failed: {exc} (is the NVIDIA kernel "
                               "driver loaded? nvidia-smi says more)")
        else:
            try:
                data.update(_discover_gpus(nvml, sysfs, cuda_devices))
            except nvml.NVMLError as exc:
                unavailable.append(f"NVML failed while listing the GPUs: {exc}")
            finally:
                try:
                    nvml.nvmlShutdown()
                except nvml.NVMLError:
                    pass
    if data["driver"] is not None:
        data["driver"]["cuda_driver_api_version"] = cuda_version
    if cuda_error and data["gpus"]:
        unavailable.append(f"IPC/VMM attributes not read: {cuda_error}")
    nics, notes = _nics(sysfs)
    for nic in nics:
        nic["gpu_distance"] = [
            pci_distance(nic["sysfs_path"] or "", g["sysfs_path"] or "", nic["numa_node"],
                         g["numa_node"]) for g in data["gpus"]]
        nic["nic_distance"] = [
            pci_distance(nic["sysfs_path"] or "", other["sysfs_path"] or "", nic["numa_node"],
                         other["numa_node"]) for other in nics]
    data["nics"] = nics
    driver_version = data["driver"]["version"] if data["driver"] else None
    data["gpudirect_rdma"] = _gpudirect(proc_modules, sysfs, host["kernel"], driver_version)
    data["unavailable"] = unavailable
    data["notes"] = notes
    return data


def dumps(data: dict) -> str:
    """The topology as JSON text (stable: sorted keys, two-space indent, final newline)."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def dump(data: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(data))


def validate(data: Any, where: str = "topology") -> dict:
    """Return ``data`` if it is a topology this version reads; else raise TopologyError."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise TopologyError(f"{where}: not an axon topology (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1 or version > SCHEMA_VERSION:
        raise TopologyError(f"{where}: schema_version {version!r} is not one this axon reads "
                            f"(1..{SCHEMA_VERSION})")
    for key, kind in (("host", dict), ("gpus", list), ("links", list), ("nics", list)):
        if not isinstance(data.get(key), kind):
            raise TopologyError(f"{where}: \"{key}\" is missing or not a {kind.__name__}")
    n = len(data["gpus"])
    matrices = {"links": data["links"]}
    p2p = data.get("p2p") or {}
    matrices.update({f"p2p.{k}": v for k, v in p2p.items()})
    for name, matrix in matrices.items():
        if len(matrix) != n or any(not isinstance(r, list) or len(r) != n for r in matrix):
            raise TopologyError(f"{where}: \"{name}\" must be a {n}x{n} matrix (one row and "
                                f"column per GPU)")
    for i, nic in enumerate(data["nics"]):
        if len(nic.get("gpu_distance", [])) != n:
            raise TopologyError(f"{where}: nics[{i}].gpu_distance must have {n} entries")
    return data


def load(path: str) -> Topology:
    """Read a topology that ``dump`` (``axon topo --json``) wrote."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise TopologyError(f"cannot read topology file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise TopologyError(f"topology file {path} is not JSON: {exc}") from exc
    return Topology(validate(data, path), loaded_from=path)


def load_or_discover(environ: "Optional[dict]" = None) -> Topology:
    """The topology from ``$AXON_TOPO_FILE`` when set, else discovered on this machine."""
    env = os.environ if environ is None else environ
    path = env.get(TOPO_FILE_VAR)
    if path:
        return load(path)
    return Topology(discover())
