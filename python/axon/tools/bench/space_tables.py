"""The tables of ``axon bench space-*``, printed as the driver measures them.

Each row goes out (flushed) as soon as its result arrives, as the other benchmarks' rows do, so a
piped run shows progress and Ctrl-C keeps what was measured; the summary lines come at the end.
space-put-get's driver sends every way's put and get of one size and route together: that size's
two rows (put, get) are printed once the next size or route begins."""

from __future__ import annotations

import sys

from .catalog import SPACE_TESTS

#: The put-get ways that are not baselines (no "axon / baseline" ratio column).
_NOT_BASELINES = ("axon", "ucx-device")


def _f(v, spec: str = ".2f") -> str:
    return "-" if v is None else format(float(v), spec)


class SpaceRowPrinter:
    """One space test's table: :meth:`header` prints the headings, :meth:`result` each row as it
    is measured, :meth:`finish` what needs every row (ratios, aggregates, the server's memory).
    `out`: a file, a list to append the lines to, or None for sys.stdout at each write."""

    def __init__(self, test: str, out=None) -> None:
        self._test = test
        self._out = out
        self._header: dict | None = None
        self._rows: list[dict] = []  # every result seen, for finish()
        self._group: list[dict] = []  # space-put-get: the results of one size and route, not yet printed
        self._routes_headed: set = set()
        self.printed = 0  # rows printed

    def header(self, header: dict) -> None:
        self._header = header
        h = header
        lines = [f"# axon bench {self._test}: {SPACE_TESTS[self._test][0]}"]
        if h.get("time_label"):
            lines.append(f"# time: {h['time_label']}; GB/s = 1e9 bytes per second")
        if self._test == "space-reassembly":
            lines.append("#" + "box".rjust(31) + "MiB".rjust(9) + "memcpy".rjust(9) + "".join(
                x.rjust(16) for x in ("cpu rows", "memcpy per row", "kernel/piece", "fused"))
                + "fused/cpu".rjust(11) + "#wrong".rjust(8))
            lines.append("#" + " " * 40 + "GB/s".rjust(9) + "GB/s (share)".rjust(16) * 4)
        elif self._test == "space-small-puts":
            lines.append("#" + "batching".rjust(9) + "puts".rjust(8) + "size".rjust(8) + "seconds".rjust(10)
                         + "puts/s".rjust(10) + "messages".rjust(10) + "MB/s".rjust(9) + "#wrong".rjust(8))
        elif self._test == "space-workflow":
            lines.append(f"# {h.get('writers', '?')} writers in row blocks, {h.get('readers', '?')} readers in "
                         f"column blocks, {h.get('versions', '?')} versions of "
                         f"{(h.get('version_bytes') or 0) / 2**20:.0f} MiB, buffers in "
                         f"{'GPU' if h.get('placement') == 'D' else 'host'} memory; the last reader sleeps "
                         f"{h.get('slow_ms', '?')} ms a version")
            lines.append("#" + "rank".rjust(11) + "ops".rjust(6) + "p50 (ms)".rjust(10) + "p99 (ms)".rjust(10)
                         + "GB/s".rjust(8) + "dropped".rjust(9) + "#wrong".rjust(8) + "  path")
        self._write(lines)

    def result(self, r: dict) -> None:
        if self._header is None:
            self.header({})
        self._rows.append(r)
        if self._test == "space-put-get":
            if self._group and (self._group[0].get("route"), self._group[0].get("size")) != (r.get("route"), r.get("size")):
                self._flush_group()
            self._group.append(r)
            return
        if self._test == "space-workflow" and r.get("role") not in ("writer", "reader"):
            return  # the server's memory: a summary line at the end
        self._write([self._row(r)])
        self.printed += 1

    def finish(self, header: dict | None = None) -> None:
        if self._header is None:
            self.header(header or {})
        self._flush_group()
        self._write(self._tail())

    def _row(self, r: dict) -> str:
        if self._test == "space-reassembly":
            methods = {m.get("method"): m for m in r.get("methods") or []}
            cells = "".join(f"{_f(m.get('bw_gbs'), '.1f')} ({_f(m.get('share'))})".rjust(16)
                            for m in (methods.get(k, {}) for k in ("cpu-rows", "row-memcpys", "kernel-per-piece", "fused")))
            wrong = r.get("wrong")
            return (f"{str(r.get('case', '?')):>32}{_f((r.get('size') or 0) / 2**20, '.1f'):>9}"
                    f"{_f(r.get('memcpy_gbs'), '.1f'):>9}{cells}{_f(r.get('fused_vs_cpu'), '.0f') + 'x':>11}"
                    f"{'-' if wrong is None else wrong:>8}")
        if self._test == "space-small-puts":
            return (f"{str(r.get('batching')):>10}{r.get('puts', '?'):>8}{r.get('size', '?'):>8}"
                    f"{_f(r.get('seconds'), '.3f'):>10}{_f(r.get('puts_per_s'), '.0f'):>10}"
                    f"{r.get('messages', '?'):>10}{_f((r.get('bw_gbs') or 0) * 1e3, '.1f'):>9}"
                    f"{r.get('wrong', '-'):>8}")
        name = f"{r['role']} {r.get('index', '?')}" + (" (slow)" if r.get("slow") else "")
        return (f"{name:>16}{r.get('ops', '?'):>6}{_f(r.get('p50_ms')):>10}{_f(r.get('p99_ms')):>10}"
                f"{_f(r.get('gbs')):>8}{r.get('dropped', '?'):>9}{r.get('wrong', '-'):>8}  {r.get('path', '')}")

    def _flush_group(self) -> None:
        """space-put-get: one size of one route, a row for put and one for get; the route's
        headings before its first size."""
        group, self._group = self._group, []
        if not group:
            return
        impls = list(dict.fromkeys(r.get("impl") for r in group))
        route = group[0].get("route")
        lines = []
        if route not in self._routes_headed:
            self._routes_headed.add(route)
            where = "a server on this node (mapped memory)" if route == "mapped" else "through UCX"
            lines += ["", f"# {where}: time (us) per way; axon time / baseline time (target <= 0.5)",
                      "#" + "size".rjust(11) + "op".rjust(5) + "".join(f"{i:>15}" for i in impls)
                      + "".join(f"{'/ ' + b:>17}" for b in impls if b not in _NOT_BASELINES)
                      + "axon GB/s".rjust(11) + "#wrong".rjust(8)]
        for op in ("put", "get"):
            at = {r.get("impl"): r for r in group if r.get("op") == op}
            if not at:
                continue
            mine = (at.get("axon") or {}).get("time_us")
            cells = "".join(f"{_f((at.get(i) or {}).get('time_us'), '.1f'):>15}" for i in impls)
            ratios = ""
            for b in impls:
                if b in _NOT_BASELINES:
                    continue
                base = (at.get(b) or {}).get("time_us")
                ratios += f"{mine / base:17.2f}" if mine and base else f"{'-':>17}"
            wrong = sum((r.get("wrong") or 0) for r in at.values())
            lines.append(f"{group[0].get('size'):>12}{op:>5}{cells}{ratios}"
                         f"{_f((at.get('axon') or {}).get('bw_gbs')):>11}{wrong:>8}")
            self.printed += 1
        self._write(lines)

    def _tail(self) -> list[str]:
        rows = self._rows
        if self._test == "space-reassembly":
            return ["# targets: fused >= 100x the CPU's row copies, and >= 0.7 of memcpy"]
        if self._test == "space-small-puts":
            by = {r.get("batching"): r for r in rows}
            if by.get("on") and by.get("off") and by["off"].get("seconds"):
                return [f"# batching on takes {by['on']['seconds'] / by['off']['seconds']:.2f}x the time of batching off"]
            return []
        if self._test != "space-workflow":
            return []
        agg: dict[str, float] = {}
        for r in rows:
            if r.get("role") in ("writer", "reader"):
                agg[r["role"]] = agg.get(r["role"], 0.0) + (r.get("gbs") or 0.0)
        lines = [f"# aggregate: writers {agg.get('writer', 0):.2f} GB/s, readers {agg.get('reader', 0):.2f} GB/s"]
        for r in rows:
            if r.get("role") == "server":
                hw, cap = r.get("high_water") or 0, r.get("capacity") or 0
                lines.append(f"# server {r.get('address')}: memory high-water {hw / 2**20:.1f} MiB of --mem "
                             f"{cap / 2**20:.1f} MiB ({'within' if hw <= cap else 'OVER'}), "
                             f"{r.get('versions_dropped', '?')} versions dropped")
        return lines

    def _write(self, lines: list[str]) -> None:
        if isinstance(self._out, list):
            self._out.extend(lines)
            return
        out = self._out or sys.stdout
        for line in lines:
            print(line, file=out)
        out.flush()


def space_table_lines(test: str, header: dict, results: list[dict]) -> list[str]:
    """The whole table of one space test at once (what the printer prints over a run)."""
    lines: list[str] = []
    printer = SpaceRowPrinter(test, lines)
    printer.header(header)
    for r in results:
        printer.result(r)
    printer.finish(header)
    return lines
