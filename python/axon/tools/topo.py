"""``axon topo``: GPUs, their links, NICs and GPUDirect RDMA of this machine.

The tables follow ``nvidia-smi topo -m``'s vocabulary (see ``topology.LINK_LEGEND``); ``--json``
dumps the whole topology, and ``AXON_TOPO_FILE=dump.json`` shows a dump instead of this machine.
The tables use ``rich`` when it is installed, plain text otherwise (or with ``--plain``).
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Optional

from . import topology
from .topology import Topology, TopologyError

__all__ = ["add_subcommand", "main", "render", "report_sections"]

_GIB = 1024 ** 3


def add_subcommand(subparsers: argparse._SubParsersAction) -> None:
    """Add ``topo`` to the ``axon`` command line."""
    parser = subparsers.add_parser(
        "topo",
        help="show GPUs, GPU links, NICs and GPUDirect RDMA of this machine",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    _configure(parser)


_DESCRIPTION = (
    "Show this machine's GPUs (name, memory, PCI bus, NUMA node, CPU affinity), the GPU-to-GPU "
    "link matrix as nvidia-smi topo -m prints it, P2P status, NICs with their distance to each "
    "GPU, and whether GPUDirect RDMA is possible."
)
_EPILOG = (
    f"Set {topology.TOPO_FILE_VAR}=FILE to show a dump written by --json instead of discovering "
    "this machine."
)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", nargs="?", const="-", default=None, metavar="FILE",
        help="write the whole topology as JSON to FILE (to stdout without FILE) instead of the "
             "tables",
    )
    parser.add_argument("--plain", action="store_true",
                        help="plain-text tables even when rich is installed")
    parser.set_defaults(handler=_cmd_topo)


def _cmd_topo(args: argparse.Namespace) -> int:
    return run(json_path=args.json, plain=args.plain)


def run(json_path: Optional[str] = None, plain: bool = False,
        out: Optional[IO[str]] = None) -> int:
    """What ``axon topo`` does; returns the exit code."""
    out = sys.stdout if out is None else out
    try:
        topo = topology.load_or_discover()
    except TopologyError as exc:
        print(f"axon topo: {exc}", file=sys.stderr)
        return 1
    if json_path == "-":
        out.write(topology.dumps(topo.data))
        return 0
    if json_path is not None:
        try:
            topology.dump(topo.data, json_path)
        except OSError as exc:
            print(f"axon topo: cannot write {json_path}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"axon topo: wrote the topology to {json_path}", file=out)
        return 0
    # The network library is this machine's, not the topology file's: only for a discovered one.
    render(topo, out, plain=plain, network=None if topo.loaded_from else network_line())
    return 0


# --------------------------------------------------------------------------
# Report content (independent of how it is drawn)
# --------------------------------------------------------------------------


class _Table:
    def __init__(self, title: str, headers: list[str], rows: list[list[str]]) -> None:
        self.title, self.headers, self.rows = title, headers, rows


def _fmt(value: object, none: str = "-") -> str:
    return none if value is None or value == "" else str(value)


def _gib(nbytes: Optional[int]) -> str:
    return "-" if not nbytes else f"{nbytes / _GIB:.1f} GiB"


def _origin(topo: Topology) -> str:
    host = topo.data.get("host", {}).get("hostname", "?")
    if topo.loaded_from:
        return (f"axon topo: {host}, loaded from {topo.loaded_from} "
                f"({topology.TOPO_FILE_VAR}); nothing was discovered on this machine")
    return f"axon topo: {host} (discovered)"


def report_sections(topo: Topology) -> list:
    """The report as a list of strings (lines) and ``_Table``s, in order."""
    d = topo.data
    out: list = [_origin(topo)]
    host = d.get("host", {})
    nodes = host.get("numa_nodes") or []
    numa = ", ".join(f"node{n['id']}: CPUs {n.get('cpus') or '-'}, {_gib(n.get('memory_bytes'))}"
                     for n in nodes) or "none listed"
    out.append(f"Host: {_fmt(host.get('hostname'))}, Linux {_fmt(host.get('kernel'))}, "
               f"{_fmt(host.get('cpus'))} CPUs, {_gib(host.get('memory_bytes'))} memory; "
               f"NUMA nodes: {numa}")
    driver = d.get("driver")
    if driver:
        api = driver.get("cuda_driver_api_version")
        out.append(f"NVIDIA driver {_fmt(driver.get('version'))}, CUDA driver "
                   f"{_fmt(driver.get('cuda_version'))}"
                   + (f" (cuDriverGetVersion {api})" if api else ""))
    gpus, nics = d.get("gpus", []), d.get("nics", [])
    if gpus:
        rows = []
        for g in gpus:
            nv = g.get("nvlinks") or {}
            cuda = g.get("cuda") or {}
            ipc = ("-" if not cuda else
                   f"VMM {'yes' if cuda.get('vmm') else 'no'}, "
                   f"fd {'yes' if cuda.get('posix_fd') else 'no'}")
            rows.append([f"GPU{g['index']}", _fmt(g.get("name")), _gib(g.get("memory_bytes")),
                         _fmt(g.get("pci_bus_id")), _fmt(g.get("numa_node")),
                         _fmt(g.get("cpu_affinity")),
                         f"{nv.get('up', 0)}/{nv.get('links', 0)}" if nv.get("links") else "none",
                         ipc])
        out.append(_Table("GPUs", ["GPU", "name", "memory", "PCI bus", "NUMA", "CPU affinity",
                                   "NVLinks up", "IPC export"], rows))
        names = [f"GPU{g['index']}" for g in gpus] + [f"NIC{i}" for i in range(len(nics))]
        rows = []
        for a, g in enumerate(gpus):
            row = [f"GPU{g['index']}"] + list(d["links"][a])
            row += [nic["gpu_distance"][a] for nic in nics]
            row += [_fmt(g.get("cpu_affinity")), _fmt(g.get("numa_node"))]
            rows.append(row)
        for i, nic in enumerate(nics):
            row = [f"NIC{i}"] + list(nic["gpu_distance"])
            row += list(nic.get("nic_distance") or ["?"] * len(nics))
            row += ["", _fmt(nic.get("numa_node"))]
            rows.append(row)
        out.append(_Table("Link matrix (nvidia-smi topo -m vocabulary)",
                          [""] + names + ["CPU affinity", "NUMA"], rows))
        p2p = d.get("p2p") or {}
        read, write = p2p.get("read") or [], p2p.get("write") or []
        if read and write:
            rows = []
            for a, g in enumerate(gpus):
                cells = [r if r == w else f"{r}/{w}" for r, w in zip(read[a], write[a])]
                rows.append([f"GPU{g['index']}"] + cells)
            out.append(_Table("P2P read/write",
                              [""] + [f"GPU{g['index']}" for g in gpus], rows))
    if nics:
        rows = []
        for i, nic in enumerate(nics):
            if nic.get("kind") == "rdma":
                ports = "; ".join(
                    f"port {p.get('port')}: {_fmt(p.get('state'))}, {_fmt(p.get('rate'))}, "
                    f"{_fmt(p.get('link_layer'))}" for p in nic.get("ports", [])) or "no ports"
                extra = ", ".join(nic.get("netdevs") or [])
                detail = ports + (f" (net: {extra})" if extra else "")
            else:
                speed = nic.get("speed_mbps")
                detail = (f"{_fmt(nic.get('state'))}"
                          + (f", {speed / 1000:g} Gb/s" if speed else ""))
            rows.append([f"NIC{i}", _fmt(nic.get("name")), _fmt(nic.get("kind")),
                         _fmt(nic.get("pci_bus_id")), _fmt(nic.get("numa_node")), detail])
        out.append(_Table("NICs", ["NIC", "name", "kind", "PCI bus", "NUMA", "ports / state"],
                          rows))
    else:
        out.append("NICs: none on PCI")
    rdma = d.get("gpudirect_rdma") or {}
    if rdma:
        peermem = rdma.get("nvidia_peermem")
        dmabuf = rdma.get("dmabuf_possible")
        dmabuf_text = {True: "possible", False: "not possible", None: "unknown (no driver version)"}
        out.append(
            "GPUDirect RDMA: nvidia_peermem "
            + ("loaded" if peermem else "not loaded")
            + (" (nv_peer_mem loaded)" if rdma.get("nv_peer_mem") else "")
            + f"; dma-buf {dmabuf_text.get(dmabuf, dmabuf)} "
            + f"(rule: {rdma.get('dmabuf_rule', topology.DMABUF_RULE)}; kernel "
            + f"{_fmt(rdma.get('kernel'))}, driver "
            + f"{_fmt((driver or {}).get('version'), 'none')})")
    unavailable = list(d.get("unavailable") or [])
    notes = list(d.get("notes") or [])
    if unavailable or notes:
        out.append("Could not see:")
        out.extend(f"  - {line}" for line in unavailable + notes)
    if gpus:
        out.append("Legend:")
        out.extend(f"  {k:<4} = {v}" for k, v in topology.LINK_LEGEND.items())
        used = {c for row in (d.get('p2p') or {}).get('read', []) for c in row} | {
            c for row in (d.get('p2p') or {}).get('write', []) for c in row}
        p2p_legend = "; ".join(f"{k} = {v}" for k, v in topology.P2P_LEGEND.items() if k in used)
        if p2p_legend:
            out.append(f"P2P: {p2p_legend} (R/W: read R, write W where they differ)")
    return out


# --------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------


def _plain_table(table: _Table) -> str:
    widths = [len(h) for h in table.headers]
    for row in table.rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = [table.title]
    for row in [table.headers] + table.rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines)


def network_line() -> str:
    """Which UCX axon would use across nodes on this machine, and its transports per device."""
    from . import doctor  # noqa: PLC0415 (the UCX helpers live with the check)

    lib = doctor.network_library()
    if not lib or not lib.get("available"):
        why = (lib or {}).get("why_not") or "axon's Python module is not built"
        return f"Network: no UCX ({why}); axon runs on one node"
    tool, env = doctor.ucx_tool_beside(lib)
    devices = doctor.run_text([tool, "-d"], env) if tool else None
    transports = doctor.parse_ucx_transports(devices or "")
    listed = (doctor.describe_transports(transports) if transports
              else "transports not listed (no ucx_info beside it)")
    return f"Network: UCX {lib.get('version')} ({lib.get('path')}); {listed}"


def render(topo: Topology, out: Optional[IO[str]] = None, plain: bool = False,
           network: Optional[str] = None) -> None:
    """Print the report to ``out`` (stdout): rich tables if rich is importable and not ``plain``;
    ``network`` (network_line()) after the first lines when given."""
    out = sys.stdout if out is None else out
    sections = report_sections(topo)
    if network:
        sections.insert(2, network)
    console = None
    if not plain:
        try:
            from rich import box  # noqa: PLC0415 (optional dependency)
            from rich.console import Console  # noqa: PLC0415
            from rich.table import Table  # noqa: PLC0415
            from rich.text import Text  # noqa: PLC0415
        except ImportError:
            console = None
        else:
            isatty = getattr(out, "isatty", lambda: False)()
            console = Console(file=out, force_terminal=isatty, highlight=False,
                              width=None if isatty else 160)
    for section in sections:
        if console is None:
            print(section if isinstance(section, str) else _plain_table(section), file=out)
            if isinstance(section, _Table):
                print(file=out)
            continue
        if isinstance(section, str):
            console.print(section, soft_wrap=True, markup=False)
            continue
        table = Table(title=section.title, box=box.SIMPLE_HEAD, title_justify="left")
        for header in section.headers:
            table.add_column(header, overflow="fold")
        for row in section.rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)


def main(argv: Optional[list] = None) -> int:
    """``python -m axon.tools.topo [--json [FILE]] [--plain]``."""
    parser = argparse.ArgumentParser(prog="axon topo", description=_DESCRIPTION, epilog=_EPILOG)
    _configure(parser)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
