"""The tables ``axon bench`` prints: OSU-style for the one-sided tests, nccl-tests-style for the
collectives, each with the comparison peers' rows and their time ratios to axon."""

from __future__ import annotations

import sys
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
    mine = by_impl(results)["axon"]
    return (collective_head_lines(test, header, "axon") + [collective_row(r) for r in mine]
            + collective_tail_lines(test, header, results, peers))


def collective_tail_lines(test: str, header: dict | None, results: list[dict],
                          peers: list[dict] | None = None) -> list[str]:
    """What follows axon's rows: nccl-tests' summary lines, then each peer's table and the ratios."""
    impls = by_impl(results)
    mine = impls.pop("axon")
    lines = _collective_summary(mine, (header or {}).get("validate", True))
    for impl, rows in impls.items():
        name = IMPL_NAMES.get(impl, impl)
        # The driver times its NCCL rows as axon's (--trials too); the program peers time their own.
        peer_header = header if impl == "nccl" else {**(header or {}), "trials": 1}
        lines += [""] + _one_collective_table(test, peer_header, rows, _impl_title(impl, peers))
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


def _collective_summary(rows: list[dict], validated: bool) -> list[str]:
    """nccl-tests' closing lines: the wrong values counted, and busbw averaged over every size and
    both forms (what scripts that read nccl-tests output grep for)."""
    if not rows:
        return []
    sides = [r.get(side) or {} for r in rows for side in ("out_of_place", "in_place")]
    busbw = [float(d["busbw_gbs"]) for d in sides if d.get("busbw_gbs") is not None]
    lines = []
    if validated:
        wrong = sum(int(d.get("wrong") or 0) for d in sides)
        lines.append(f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}")
    avg = f"{sum(busbw) / len(busbw):.6g}" if busbw else "-"
    # No unit after the number (GB/s, as the columns): scripts take the last field, as of nccl-tests.
    return lines + [f"# Avg bus bandwidth    : {avg}", "#"]


def collective_head_lines(test: str, header: dict | None, impl: str) -> list[str]:
    """The lines above a collective table's rows: what ran, then nccl-tests' three heading lines,
    its columns in its order and axon's extra ones (the algorithm) after them."""
    h = header or {}
    trials = h.get("trials", 1)
    time = "the slowest PE's average per call" + (f", the median of {trials} trials" if trials > 1 else "")
    return [f"# axon bench {test} ({impl}): {COLLECTIVES[test]}",
            f"# {h.get('pes', '?')} PEs, {h.get('backend', '?')} backend, buffers {h.get('placement', '?')}, "
            f"validation {'on' if h.get('validate', True) else 'off'}; time: {time}",
            "#" + " " * 51 + "out-of-place".center(36) + "in-place".center(36),
            "#" + "".join(x.rjust(w) for x, w in _COLLECTIVE_KEYS) + _SIDE_HEAD * 2 + "  algo",
            "#" + "(B)".rjust(11) + "(elements)".rjust(14) + " " * 26 + _SIDE_UNITS * 2]


# nccl-tests' key columns (their widths here), then per form: time, algbw, busbw, #wrong.
_COLLECTIVE_KEYS = (("size", 11), ("count", 14), ("type", 10), ("redop", 8), ("root", 8))
_SIDE_HEAD = "".join(x.rjust(w) for x, w in (("time", 12), ("algbw", 8), ("busbw", 8), ("#wrong", 8)))
_SIDE_UNITS = "".join(x.rjust(w) for x, w in (("(us)", 12), ("(GB/s)", 8), ("(GB/s)", 8), ("", 8)))


def collective_row(r: dict) -> str:
    """One size of a collective table: nccl-tests' columns, then the algorithm."""
    def num(v, spec: str) -> str:
        return "-" if v is None else format(float(v), spec)

    def side(d: dict) -> str:
        wrong = d.get("wrong")
        return (f"{num(d.get('time_us'), '.2f'):>12}{num(d.get('algbw_gbs'), '.3f'):>8}"
                f"{num(d.get('busbw_gbs'), '.3f'):>8}{('-' if wrong is None else str(wrong)):>8}")

    return (f"{r.get('size', '?'):>12}{r.get('count', '?'):>14}{r.get('dtype', '?'):>10}{r.get('redop', '?'):>8}"
            f"{r.get('root', '?'):>8}{side(r.get('out_of_place', {}))}{side(r.get('in_place', {}))}"
            f"  {r.get('algorithm', '?')}{sm_use(r)}")


def sm_use(r: dict) -> str:
    """What a GPU kernel of the call occupies ("  64 SMs = 64 blocks x 512 / 1 an SM"); '' for
    rows without one (host paths, peers)."""
    if not r.get("blocks"):
        return ""
    kernel = f"{r['blocks']} blocks x {r.get('threads_per_block', '?')}"
    if not r.get("blocks_per_sm"):  # CUDA could not say (explain()'s reason has why)
        return f"  {kernel}"
    return f"  {float(r.get('sms') or 0):.3g} SMs = {kernel} / {r['blocks_per_sm']} an SM"


def _one_collective_table(test: str, header: dict | None, results: list[dict], impl: str) -> list[str]:
    return collective_head_lines(test, header, impl) + [collective_row(r) for r in results]


def table_lines(test: str, header: dict | None, results: list[dict],
                peers: list[dict] | None = None) -> list[str]:
    """The OSU-style table: '#' comment lines, then one row per size."""
    if test in COLLECTIVES:
        return collective_table_lines(test, header, results, peers)
    mine = by_impl(results)["axon"]
    has_limit = _has_limit(header, mine)
    return (head_lines(test, header, has_limit) + [row_line(test, r, has_limit) for r in mine]
            + tail_lines(test, header, results, peers))


def _has_limit(header: dict | None, rows: list[dict]) -> bool:
    """Whether the table has the memcpy column: the driver names the limit it measures in its header."""
    return bool((header or {}).get("limit_name")) or any("limit" in r for r in rows)


def _columns(test: str, has_limit: bool) -> tuple[str, list[str], list[int]]:
    """(the field the limit column shows, the headings, their widths) of an OSU-style table."""
    spec = TESTS[test]
    main_field, _ = spec.columns[-1] if spec.metric == "bandwidth" else spec.columns[0]
    heads = [head for _, head in spec.columns]
    if has_limit:
        heads.append(f"memcpy ({'GB/s' if main_field == 'bw_gbs' else 'us'})")
    heads.append("#wrong")
    return main_field, heads, [max(len(x), 12) for x in heads]


def head_lines(test: str, header: dict | None, has_limit: bool) -> list[str]:
    """The lines above axon's rows: what ran, then the column headings."""
    if test in COLLECTIVES:
        return collective_head_lines(test, header, "axon")
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
    _, heads, widths = _columns(test, has_limit)
    lines.append("# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads, widths)))
    return lines


def row_line(test: str, r: dict, has_limit: bool) -> str:
    """One of axon's rows (one size)."""
    if test in COLLECTIVES:
        return collective_row(r)
    spec = TESTS[test]
    main_field, _, widths = _columns(test, has_limit)
    cells = [_fmt(r.get(field)) for field, _ in spec.columns]
    if has_limit:
        cells.append(_fmt((r.get("limit") or {}).get(main_field)))
    wrong = r.get("wrong")
    cells.append("-" if wrong is None else str(wrong))
    return str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths))


def tail_lines(test: str, header: dict | None, results: list[dict],
               peers: list[dict] | None = None) -> list[str]:
    """What follows axon's rows: the peers' tables with their time ratios to axon."""
    if test in COLLECTIVES:
        return collective_tail_lines(test, header, results, peers)
    spec = TESTS[test]
    impls = by_impl(results)
    mine = impls.pop("axon")
    _, heads, widths = _columns(test, _has_limit(header, mine))
    lines: list[str] = []
    by_size = {r.get("size"): r for r in mine}
    for impl, rows in impls.items():
        ratio_head = f"{IMPL_NAMES.get(impl, impl)} / axon time"
        # Wide enough for the heading and two spaces before it (ucx_perftest's tests have long names).
        ratio_width = max(26, len(ratio_head) + 2)
        lines += ["", f"# {_impl_title(impl, peers)}: the same test, sizes and GPUs, same run",
                  "# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads[:len(spec.columns)], widths))
                  + ratio_head.rjust(ratio_width)]
        for r in rows:
            cells = [_fmt(r.get(field)) for field, _ in spec.columns]
            ratio = _ratio((by_size.get(r.get("size")) or {}).get("time_us"), r.get("time_us"))
            lines.append(str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths))
                         + ratio.rjust(ratio_width))
    return lines


class RowPrinter:
    """Prints axon's table as the driver measures it: the headings when its header arrives, each
    row as soon as it is measured, flushed (a piped run shows progress; Ctrl-C keeps what was
    measured); the rest (peers, summary) at the end with :meth:`finish`."""

    def __init__(self, test: str, out=None) -> None:
        self._test = test
        self._out = out  # None: sys.stdout at each write (a progress bar may redirect it meanwhile)
        self._header: dict | None = None
        self._has_limit = False
        self.printed = 0

    def header(self, header: dict) -> None:
        self._header = header
        self._has_limit = _has_limit(header, [])
        self._write(head_lines(self._test, header, self._has_limit))

    def result(self, row: dict) -> None:
        if row.get("impl", "axon") != "axon":
            return  # a peer's row (NCCL in the same program): its table comes after axon's
        if self._header is None:
            self.header({})
        self._write([row_line(self._test, row, self._has_limit)])
        self.printed += 1

    def finish(self, header: dict | None, results: list[dict], peers: list[dict] | None) -> None:
        if self._header is None:
            self.header(header or {})
        self._write(tail_lines(self._test, header or self._header, results, peers))

    def _write(self, lines: list[str]) -> None:
        out = self._out or sys.stdout
        for line in lines:
            print(line, file=out)
        out.flush()
