"""The tables ``axon bench`` prints: OSU-style for the one-sided tests, nccl-tests-style for the
collectives, each with the comparison peers' rows and their time ratios to axon."""

from __future__ import annotations

from typing import Any

from .catalog import COLLECTIVES, TESTS
from .results import by_impl


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    v = float(value)
    if v >= 1 or v == 0:
        return f"{v:.2f}"
    return f"{v:.3g}"


#: How the tables name each implementation a run can carry (the JSON's "impl").
IMPL_NAMES = {"axon": "axon", "nccl": "NCCL", "pytorch-nccl": "PyTorch NCCL",
              "pytorch-symm-mem": "PyTorch symmetric memory", "nvshmem": "NVSHMEM"}


def _impl_title(impl: str, peers: list[dict] | None) -> str:
    version = next((p.get("version") for p in peers or [] if p.get("impl") == impl), None)
    name = IMPL_NAMES.get(impl, impl)
    if not version:
        return name
    return f"{name} {version}" if impl in ("nccl", "nvshmem") else f"{name} ({version})"


def _ratio(axon_us: Any, peer_us: Any) -> str:
    return f"{peer_us / axon_us:.2f}x" if axon_us and peer_us else "-"


def collective_table_lines(test: str, header: dict | None, results: list[dict],
                           peers: list[dict] | None = None) -> list[str]:
    """The nccl-tests table: out-of-place then in-place time, algbw, busbw and #wrong per size;
    with peers beside axon (NCCL, PyTorch), a table for each and the ratio of the times."""
    impls = by_impl(results)
    mine = impls.pop("axon")
    lines = _one_collective_table(test, header, mine, "axon")
    for impl, rows in impls.items():
        name = IMPL_NAMES.get(impl, impl)
        lines += [""] + _one_collective_table(test, header, rows, _impl_title(impl, peers))
        lines += ["", f"# axon vs {name}, same run, same sizes: {name} time / axon time (> 1: axon faster)",
                  "#" + "size (B)".rjust(11) + "out-of-place".rjust(14) + "in-place".rjust(11)]
        by_size = {r.get("size"): r for r in rows}
        for r in mine:
            n = by_size.get(r.get("size"))
            if n:
                ratios = [_ratio(r.get(side, {}).get("time_us"), n.get(side, {}).get("time_us"))
                          for side in ("out_of_place", "in_place")]
                lines.append(f"{r.get('size'):>12}{ratios[0]:>14}{ratios[1]:>11}")
    return lines


def _one_collective_table(test: str, header: dict | None, results: list[dict], impl: str) -> list[str]:
    h = header or {}
    lines = [f"# axon bench {test} ({impl}): {COLLECTIVES[test]}",
             f"# {h.get('pes', '?')} PEs, {h.get('backend', '?')} backend, buffers {h.get('placement', '?')}, "
             f"validation {'on' if h.get('validate', True) else 'off'}; time: the slowest PE's average per call",
             "#" + "".join(x.rjust(w) for x, w in ((" size", 11), ("count", 13), ("type", 10), ("redop", 7),
                                                   ("root", 6), ("algo", 9)))
             + "      " + "out-of-place".rjust(12) + "algbw".rjust(9) + "busbw".rjust(9) + "#wrong".rjust(7)
             + "      " + "in-place".rjust(12) + "algbw".rjust(9) + "busbw".rjust(9) + "#wrong".rjust(7),
             "#" + "(B)".rjust(11) + "(elements)".rjust(13) + " " * 32
             + "      " + "time (us)".rjust(12) + "(GB/s)".rjust(9) + "(GB/s)".rjust(9) + " " * 7
             + "      " + "time (us)".rjust(12) + "(GB/s)".rjust(9) + "(GB/s)".rjust(9)]

    def num(v, spec: str) -> str:
        return "-" if v is None else format(float(v), spec)

    def side(d: dict) -> str:
        wrong = d.get("wrong")
        return (f"{num(d.get('time_us'), '.2f'):>12} {num(d.get('algbw_gbs'), '.3f'):>8}"
                f" {num(d.get('busbw_gbs'), '.3f'):>8}{('-' if wrong is None else str(wrong)):>7}")

    for r in results:
        lines.append(f"{r.get('size', '?'):>12}{r.get('count', '?'):>13}{r.get('dtype', '?'):>10}"
                     f"{r.get('redop', '?'):>7}{r.get('root', '?'):>6}{' ' + str(r.get('algorithm', '?')):>9}"
                     f"      {side(r.get('out_of_place', {}))}      {side(r.get('in_place', {}))}")
    return lines


def table_lines(test: str, header: dict | None, results: list[dict],
                peers: list[dict] | None = None) -> list[str]:
    """The OSU-style table: '#' comment lines, then one row per size."""
    if test in COLLECTIVES:
        return collective_table_lines(test, header, results, peers)
    spec = TESTS[test]
    h = header or {}
    lines = [f"# axon bench {test}: {spec.summary}"]
    backend = h.get("backend", "?")
    why = h.get("gpu_unavailable_reason")
    lines.append(
        f"# {h.get('pes', '?')} PEs (PE 0 and PE 1 measure), {backend} backend"
        + (f" ({why})" if backend == "host" and why else "")
        + f", placement {h.get('placement', '?')} "
        + ("(PE 0's buffers, PE 1's" if test.startswith("p2p-") else "(local source, remote destination")
        + ("; staged through host memory by hand" if h.get("via_host") else "") + "), "
        + f"validation {'on' if h.get('validate', True) else 'off'}")
    lines.append("# times in microseconds; GB/s = 1e9 bytes per second"
                 + (f"; limit: {h['limit_name']}" if h.get("limit_name") else ""))
    impls = by_impl(results)
    results = impls.pop("axon")
    has_limit = any("limit" in r for r in results)
    main_field, main_head = spec.columns[-1] if spec.metric == "bandwidth" else spec.columns[0]
    heads = [head for _, head in spec.columns]
    if has_limit:
        unit = "GB/s" if main_field == "bw_gbs" else "us"
        heads.append(f"memcpy ({unit})")
    heads.append("#wrong")
    widths = [max(len(x), 12) for x in heads]
    lines.append("# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads, widths)))
    for r in results:
        cells = [_fmt(r.get(field)) for field, _ in spec.columns]
        if has_limit:
            cells.append(_fmt((r.get("limit") or {}).get(main_field)))
        wrong = r.get("wrong")
        cells.append("-" if wrong is None else str(wrong))
        lines.append(str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths)))
    for impl, rows in impls.items():
        name = IMPL_NAMES.get(impl, impl)
        lines += ["", f"# {_impl_title(impl, peers)}: the same test, sizes and GPUs, same run",
                  "# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads[:len(spec.columns)], widths))
                  + f"{name + ' / axon time':>26}"]
        by_size = {r.get("size"): r for r in results}
        for r in rows:
            cells = [_fmt(r.get(field)) for field, _ in spec.columns]
            ratio = _ratio((by_size.get(r.get("size")) or {}).get("time_us"), r.get("time_us"))
            lines.append(str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths))
                         + f"{ratio:>26}")
    return lines
