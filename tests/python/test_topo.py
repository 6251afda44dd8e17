"""Tests of `axon topo` and its topology model (axon.tools.topology), without a GPU.

GPU machines are injected: a hand-written 4 x H200 dump (data/topo_4xh200.json) through
AXON_TOPO_FILE, and a fake NVML plus a fake sysfs tree for discovery itself.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
from pathlib import Path

import pytest

from axon.tools import topo as topo_cmd
from axon.tools import topology
from axon.tools.topology import pci_distance

FIXTURE = Path(__file__).parent / "data" / "topo_4xh200.json"

# A PCIe tree: root complex 15 (NUMA 0) with a switch (upstream 16:00.0, downstream ports on bus
# 17) holding a NIC and a GPU; a second switch below one downstream port; root complex 37 (NUMA 0)
# and 97 (NUMA 1).
SW = "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0"
GPU0 = f"{SW}/0000:17:01.0/0000:19:00.0"
NIC0 = f"{SW}/0000:17:00.0/0000:18:00.0"
NIC0_PORT2 = f"{SW}/0000:17:00.0/0000:18:00.1"
DEEP = f"{SW}/0000:17:02.0/0000:1a:00.0/0000:1b:00.0/0000:1c:00.0"
OTHER_ROOT_PORT = "/sys/devices/pci0000:15/0000:15:03.0/0000:30:00.0"
SAME_NUMA = "/sys/devices/pci0000:37/0000:37:01.0/0000:38:00.0/0000:39:01.0/0000:3b:00.0"
OTHER_NUMA = "/sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9b:00.0"


# --------------------------------------------------------------------------
# The sysfs path distance
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, numa_a, numa_b, expected",
    [
        (GPU0, GPU0, 0, 0, "X"),
        (GPU0, NIC0, 0, 0, "PIX"),            # one switch: downstream ports of one upstream port
        (NIC0, NIC0_PORT2, 0, 0, "PIX"),      # two functions behind the same bridge
        (GPU0, DEEP, 0, 0, "PXB"),            # through a second switch
        (GPU0, OTHER_ROOT_PORT, 0, 0, "PHB"),  # only the root complex in common
        (GPU0, SAME_NUMA, 0, 0, "NODE"),      # other root complex, same NUMA node
        (GPU0, OTHER_NUMA, 0, 1, "SYS"),
        (GPU0, SAME_NUMA, -1, -1, "NODE"),    # no NUMA information: one node
        (GPU0, SAME_NUMA, 0, None, "SYS"),    # unknown on one side: assume the worst
        ("/sys/devices/pci0000:00/0000:00:03.0/virtio2",
         "/sys/devices/pci0000:00/0000:00:05.0", -1, -1, "PHB"),  # a VM: both on the root bus
        (GPU0 + "/net/eth0", NIC0, 0, 0, "PIX"),  # what follows the PCI function is ignored
        ("/sys/devices/virtual/net/lo", GPU0, 0, 0, "?"),
    ],
)
def test_pci_distance(a, b, numa_a, numa_b, expected):
    assert pci_distance(a, b, numa_a, numa_b) == expected
    assert pci_distance(b, a, numa_b, numa_a) == expected  # symmetric


def test_pci_distance_accepts_nvml_spelling_and_long_domains():
    upper = GPU0.replace("0000:19:00.0", "0000:19:00.0".upper())
    assert pci_distance(upper, NIC0, 0, 0) == "PIX"
    vmd_a = "/sys/devices/pci10000:e0/10000:e0:01.0/10000:e1:00.0"
    vmd_b = "/sys/devices/pci10000:e0/10000:e0:03.0/10000:e2:00.0"
    assert pci_distance(vmd_a, vmd_b, 0, 0) == "PHB"


def test_small_helpers():
    assert topology.normalize_bus_id("00000000:1A:00.0") == "0000:1a:00.0"
    assert topology.normalize_bus_id(b"00010000:E1:00.0") == "10000:e1:00.0"
    assert topology.cpulist_from_mask([0x0F, 0x1]) == "0-3,64"
    assert topology.cpulist_from_mask([0b1011]) == "0-1,3"
    assert topology.cpulist_from_mask([0]) == ""
    assert topology.cuda_version_text(12060) == "12.6"
    assert topology.dmabuf_possible("5.15.0-119-generic", "560.35.03") is True
    assert topology.dmabuf_possible("5.11.0", "560.35.03") is False
    assert topology.dmabuf_possible("6.1.0", "510.47.03") is False
    assert topology.dmabuf_possible("6.1.0", None) is None


# --------------------------------------------------------------------------
# JSON: the fixture, round trips, validation
# --------------------------------------------------------------------------


def test_fixture_is_canonical_and_round_trips(tmp_path):
    text = FIXTURE.read_text()
    loaded = topology.load(str(FIXTURE))
    assert loaded.loaded_from == str(FIXTURE)
    assert topology.dumps(loaded.data) == text  # the file is what dump writes
    out = tmp_path / "again.json"
    topology.dump(loaded.data, str(out))
    assert topology.dumps(topology.load(str(out)).data) == text


def test_fixture_nic_distances_follow_its_sysfs_paths():
    data = json.loads(FIXTURE.read_text())
    assert [len(r) for r in data["links"]] == [4, 4, 4, 4]
    assert all(data["links"][a][b] == ("X" if a == b else "NV18")
               for a in range(4) for b in range(4))
    assert len(data["nics"]) == 2
    for nic in data["nics"]:
        expected = [pci_distance(nic["sysfs_path"], g["sysfs_path"], nic["numa_node"],
                                 g["numa_node"]) for g in data["gpus"]]
        assert nic["gpu_distance"] == expected


def test_discovered_host_round_trips(monkeypatch):
    data = _host_only_discovery(monkeypatch)
    text = topology.dumps(data)
    again = topology.validate(json.loads(text))
    assert topology.dumps(again) == text


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema="something else"), "not an axon topology"),
        (lambda d: d.update(schema_version=99), "schema_version 99"),
        (lambda d: d["links"].pop(), "4x4 matrix"),
        (lambda d: d["p2p"]["read"][1].pop(), "p2p.read"),
        (lambda d: d["nics"][0]["gpu_distance"].pop(), "nics[0].gpu_distance"),
        (lambda d: d.pop("gpus"), '"gpus" is missing'),
    ],
)
def test_load_rejects_broken_files(tmp_path, mutate, message):
    data = json.loads(FIXTURE.read_text())
    mutate(data)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(topology.TopologyError, match="broken.json") as info:
        topology.load(str(path))
    assert message in str(info.value)


def test_load_names_missing_and_non_json_files(tmp_path):
    with pytest.raises(topology.TopologyError, match="cannot read topology file .*nope.json"):
        topology.load(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(topology.TopologyError, match="bad.json is not JSON"):
        topology.load(str(bad))


# --------------------------------------------------------------------------
# axon topo on the injected machine
# --------------------------------------------------------------------------


def _matrix_rows(text: str) -> dict:
    """{row name: first six cells} of the link matrix, whatever drew the table (rich or plain)."""
    rows = {}
    section = text.split("Link matrix", 1)[1].split("P2P", 1)[0]
    for line in section.splitlines():
        cells = line.split()
        if len(cells) >= 7 and re.match(r"^(GPU|NIC)\d+$", cells[0]) and \
                not cells[1].startswith("GPU"):
            rows[cells[0]] = cells[1:7]
    return rows


@pytest.mark.parametrize("plain", [True, False])
def test_table_shows_the_injected_link_matrix(monkeypatch, plain):
    monkeypatch.setenv("AXON_TOPO_FILE", str(FIXTURE))
    out = io.StringIO()
    assert topo_cmd.run(plain=plain, out=out) == 0
    text = out.getvalue()
    assert f"loaded from {FIXTURE} (AXON_TOPO_FILE)" in text
    assert "nothing was discovered on this machine" in text
    rows = _matrix_rows(text)
    assert rows["GPU0"] == ["X", "NV18", "NV18", "NV18", "PIX", "SYS"]
    assert rows["GPU1"] == ["NV18", "X", "NV18", "NV18", "NODE", "SYS"]
    assert rows["GPU2"] == ["NV18", "NV18", "X", "NV18", "SYS", "PIX"]
    assert rows["GPU3"] == ["NV18", "NV18", "NV18", "X", "SYS", "NODE"]
    assert rows["NIC0"] == ["PIX", "NODE", "SYS", "SYS", "X", "SYS"]
    assert rows["NIC1"] == ["SYS", "SYS", "PIX", "NODE", "SYS", "X"]
    for expected in ("NVIDIA H200", "0000:19:00.0", "0-47,96-143", "140.4 GiB", "18/18",
                     "mlx5_0", "400 Gb/sec (4X NDR)", "ACTIVE", "NVIDIA driver 560.35.03",
                     "CUDA driver 12.6", "nvidia_peermem loaded", "dma-buf possible",
                     topology.DMABUF_RULE, "NV#  = connection traversing a bonded set"):
        assert expected in text, expected


def test_json_to_stdout_and_file_from_injected_machine(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AXON_TOPO_FILE", str(FIXTURE))
    assert topo_cmd.main(["--json"]) == 0
    assert capsys.readouterr().out == FIXTURE.read_text()
    target = tmp_path / "dump.json"
    assert topo_cmd.main(["--json", str(target)]) == 0
    assert str(target) in capsys.readouterr().out
    assert target.read_text() == FIXTURE.read_text()


def test_bad_topo_file_is_an_error_naming_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AXON_TOPO_FILE", str(tmp_path / "missing.json"))
    assert topo_cmd.main([]) == 1
    assert "missing.json" in capsys.readouterr().err


def test_add_subcommand_wires_a_handler(monkeypatch, capsys):
    parser = argparse.ArgumentParser(prog="axon")
    sub = parser.add_subparsers(dest="subcommand", required=True)
    topo_cmd.add_subcommand(sub)
    args = parser.parse_args(["topo", "--json"])
    monkeypatch.setenv("AXON_TOPO_FILE", str(FIXTURE))
    assert args.handler(args) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == topology.SCHEMA


# --------------------------------------------------------------------------
# Without a GPU
# --------------------------------------------------------------------------


def _host_only_discovery(monkeypatch) -> dict:
    """discover() as on a machine without the NVIDIA driver, whatever this machine has."""
    monkeypatch.setattr(topology, "_nvml_library_error",
                        lambda: "libnvidia-ml.so.1: cannot open shared object file: "
                                "No such file or directory")
    return topology.discover(cuda=lambda: (None, {}, "CUDA driver not found"))


def test_host_only_report_says_what_it_could_not_see(monkeypatch):
    data = _host_only_discovery(monkeypatch)
    assert data["gpus"] == [] and data["links"] == [] and data["driver"] is None
    assert data["host"]["cpus"] == os.cpu_count()
    assert data["host"]["hostname"]
    assert any(u.startswith("NVML not found: libnvidia-ml.so.1") for u in data["unavailable"])
    out = io.StringIO()
    topo_cmd.render(topology.Topology(data), out, plain=True)
    text = out.getvalue()
    assert "(discovered)" in text
    assert f"{os.cpu_count()} CPUs" in text
    assert "Could not see:" in text
    assert "NVML not found: libnvidia-ml.so.1 could not be loaded" in text
    assert "no GPUs, GPU links, P2P status or driver versions" in text


def test_this_machine(monkeypatch, capsys):
    """`axon topo` here, for real: exit 0; without NVML it says so."""
    monkeypatch.delenv("AXON_TOPO_FILE", raising=False)
    assert topo_cmd.main(["--plain"]) == 0
    text = capsys.readouterr().out
    assert "Host:" in text
    if topology._nvml_library_error() is not None:
        assert "NVML not found: libnvidia-ml.so.1" in text


# --------------------------------------------------------------------------
# Discovery with a fake NVML and a fake sysfs
# --------------------------------------------------------------------------


class _FakeNvmlError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


class _Pci:
    def __init__(self, bus):
        self.busId = bus


class _Mem:
    total = 80 * 1024 ** 3


class FakeNvml:
    """The pynvml calls discover() makes, answering from a description of GPUs and links.

    ``links[i]`` lists GPU i's active NVLinks as (remote bus id, remote type); link indices past
    the list are "not supported", as NVML answers on a GPU with fewer links.
    """

    NVMLError = _FakeNvmlError
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, buses, links, ancestor, p2p_bad=()):
        self.buses, self.links, self.ancestor, self.p2p_bad = buses, links, ancestor, set(p2p_bad)
        self.shut = False

    def nvmlInit(self): pass
    def nvmlShutdown(self): self.shut = True
    def nvmlSystemGetDriverVersion(self): return b"550.54.15"
    def nvmlSystemGetCudaDriverVersion_v2(self): return 12040
    def nvmlDeviceGetCount(self): return len(self.buses)
    def nvmlDeviceGetHandleByIndex(self, i): return i
    def nvmlDeviceGetPciInfo(self, h): return _Pci(self.buses[h].upper().replace("0000:", "00000000:", 1))
    def nvmlDeviceGetName(self, h): return "NVIDIA H100 80GB HBM3"
    def nvmlDeviceGetUUID(self, h): return f"GPU-fake-{h}"
    def nvmlDeviceGetMemoryInfo(self, h): return _Mem()
    def nvmlDeviceGetCpuAffinity(self, h, n): return [0xFF]

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= len(self.links[h]):
            raise _FakeNvmlError(3)  # NVML_ERROR_NOT_SUPPORTED
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, h, link):
        return _Pci(self.links[h][link][0])

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return self.links[h][link][1]

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return self.ancestor

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        return 1 if (min(a, b), max(a, b)) in self.p2p_bad else 0


def _fake_sysfs(root: Path, gpus: dict) -> None:
    """A sysfs tree: GPUs (bus -> (path, numa)), one RDMA NIC with an IPoIB netdev, an Ethernet
    NIC, and virtual interfaces."""
    def mkdev(path: str, numa: int, cpus: str = "0-7") -> Path:
        d = root / path.lstrip("/").split("/", 1)[1]  # below root, without the leading "sys"
        d.mkdir(parents=True, exist_ok=True)
        (d / "numa_node").write_text(f"{numa}\n")
        (d / "local_cpulist").write_text(cpus + "\n")
        return d

    (root / "bus/pci/devices").mkdir(parents=True)
    for bus, (path, numa) in gpus.items():
        d = mkdev(path, numa)
        os.symlink(d, root / "bus/pci/devices" / bus)
    nic = mkdev(NIC0, 0)
    ib = root / "class/infiniband/mlx5_0"
    (ib / "ports/1").mkdir(parents=True)
    os.symlink(nic, ib / "device")
    (ib / "ports/1/state").write_text("4: ACTIVE\n")
    (ib / "ports/1/rate").write_text("400 Gb/sec (4X NDR)\n")
    (ib / "ports/1/link_layer").write_text("InfiniBand\n")
    (nic / "net/ibp24s0").mkdir(parents=True)
    eth = mkdev(OTHER_NUMA.replace("9b:00.0", "9c:00.0"), 1)
    (eth / "virtio0/net/eth0").mkdir(parents=True)
    net = root / "class/net"
    for name in ("ibp24s0", "eth0", "lo"):
        (net / name).mkdir(parents=True)
    os.symlink(nic, net / "ibp24s0/device")
    os.symlink(eth / "virtio0", net / "eth0/device")
    (net / "eth0/operstate").write_text("up\n")
    (net / "eth0/speed").write_text("100000\n")
    (root / "devices/system/node/node0").mkdir(parents=True)
    (root / "devices/system/node/node0/cpulist").write_text("0-7\n")


def test_discovery_through_nvswitches(tmp_path):
    buses = ["0000:19:00.0", "0000:3b:00.0", "0000:9b:00.0"]
    paths = {buses[0]: (GPU0, 0), buses[1]: (SAME_NUMA, 0), buses[2]: (OTHER_NUMA, 1)}
    _fake_sysfs(tmp_path, paths)
    switches = ["0000:c1:00.0", "0000:c2:00.0", "0000:c3:00.0", "0000:c4:00.0"]
    links = [[(switches[k % 4], 2) for k in range(18)] for _ in buses]  # 2: NVSwitch
    links[2] = links[2][:16]  # two links of GPU2 are down (not listed as active)
    (tmp_path / "modules").write_text("nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 0\n")
    nvml = FakeNvml(buses, links, ancestor=50, p2p_bad=[(0, 2)])
    data = topology.discover(sysfs=str(tmp_path), proc_modules=str(tmp_path / "modules"),
                             nvml=nvml,
                             cuda=lambda: (12040, {buses[0]: {"ordinal": 0, "vmm": True,
                                                              "posix_fd": True}}, None))
    assert nvml.shut
    assert data["driver"] == {"version": "550.54.15", "cuda_version": "12.4",
                              "cuda_driver_api_version": 12040}
    assert [g["pci_bus_id"] for g in data["gpus"]] == buses
    assert data["gpus"][0]["numa_node"] == 0 and data["gpus"][0]["cpu_affinity"] == "0-7"
    assert data["gpus"][0]["cuda"] == {"ordinal": 0, "vmm": True, "posix_fd": True}
    assert data["gpus"][1]["cuda"] is None
    assert data["gpus"][2]["nvlinks"] == {"links": 16, "up": 16}
    assert data["links"] == [["X", "NV18", "NV16"], ["NV18", "X", "NV16"], ["NV16", "NV16", "X"]]
    assert data["p2p"]["read"][0] == ["X", "OK", "CNS"]
    assert data["p2p"]["write"][2] == ["CNS", "OK", "X"]
    nics = {n["name"]: n for n in data["nics"]}
    assert set(nics) == {"mlx5_0", "eth0"}  # ibp24s0 belongs to mlx5_0; lo is virtual
    ib = nics["mlx5_0"]
    assert ib["kind"] == "rdma" and ib["pci_bus_id"] == "0000:18:00.0" and ib["numa_node"] == 0
    assert ib["ports"] == [{"port": 1, "state": "ACTIVE", "rate": "400 Gb/sec (4X NDR)",
                            "link_layer": "InfiniBand"}]
    assert ib["netdevs"] == ["ibp24s0"]
    assert ib["gpu_distance"] == ["PIX", "NODE", "SYS"]
    eth = nics["eth0"]
    assert eth["pci_bus_id"] == "0000:9c:00.0" and eth["speed_mbps"] == 100000
    assert eth["gpu_distance"] == ["SYS", "SYS", "PIX"]
    assert data["gpudirect_rdma"]["nvidia_peermem"] is True
    assert data["gpudirect_rdma"]["dmabuf_rule"] == topology.DMABUF_RULE
    assert data["unavailable"] == [] and data["notes"] == []
    # The result is a valid topology and survives a round trip.
    text = topology.dumps(data)
    assert topology.dumps(topology.validate(json.loads(text))) == text


def test_discovery_direct_nvlinks_and_pcie(tmp_path):
    buses = ["0000:19:00.0", "0000:3b:00.0", "0000:9b:00.0"]
    _fake_sysfs(tmp_path, {buses[0]: (GPU0, 0), buses[1]: (SAME_NUMA, 0),
                           buses[2]: (OTHER_NUMA, 1)})
    # GPU0 and GPU1 joined by 4 direct links (type 0: GPU); GPU2 has no NVLink.
    links = [[(buses[1], 0)] * 4, [(buses[0], 0)] * 4, []]
    nvml = FakeNvml(buses, links, ancestor=40)
    data = topology.discover(sysfs=str(tmp_path), proc_modules=str(tmp_path / "none"),
                             nvml=nvml, cuda=lambda: (None, {}, "CUDA driver not found"))
    assert data["links"] == [["X", "NV4", "NODE"], ["NV4", "X", "NODE"], ["NODE", "NODE", "X"]]
    assert data["gpus"][2]["nvlinks"] == {"links": 0, "up": 0}
    assert data["gpudirect_rdma"]["nvidia_peermem"] is False
    assert any("IPC/VMM attributes not read" in u for u in data["unavailable"])
