"""``axon plot FILE.json... -o FIG.png``: latency and bandwidth against message size.

The figure's format comes from the name given to ``-o``: ``.png``, ``.pdf`` or ``.svg``.

Reads the JSON that ``axon bench --json`` writes (see :mod:`axon.tools.bench`), the JSON of
``bench/gpu_bench.cu`` (``{"benchmark": "gpu_bench", "results": [{"test", "bytes", "unit", "axon",
"baseline", "baseline_name", ...}]}``) and that of ``bench/host_put_bench.cpp``
(``{"benchmark": "host_put", ...}``). Draws two log-log panels, latency (us) and bandwidth (GB/s =
1e9 bytes/s) against the message size, one line per implementation and file; a hardware limit
measured in the same run (``limit`` in axon bench results, memcpy in host_put_bench) is a dashed
line of the same colour, a baseline of gpu_bench a dash-dotted one.

matplotlib is imported only when plotting, and only its Agg canvas is used (no pyplot, no
display): ``pip install 'axon-comm[tools]'`` or ``pip install matplotlib``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from . import cli_parser
from .bench.sizes import size_label
from .cli_parser import EXIT_USAGE

__all__ = ["FORMATS", "Series", "add_subcommand", "figure_format", "load_series", "main", "plot", "run_plot"]

_PROG = "axon plot"

LATENCY, BANDWIDTH = "latency", "bandwidth"

#: The formats ``-o`` may name, by suffix (matplotlib picks the canvas that writes each).
FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}


class PlotError(Exception):
    """A file that cannot be plotted or a figure that cannot be written; one line for the user."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Series:
    """One line of the figure."""

    label: str
    panel: str                       # LATENCY (us) or BANDWIDTH (GB/s)
    points: list[tuple[int, float]] = field(default_factory=list)  # (bytes, value), sorted
    style: str = "data"              # "data", "limit" (dashed) or "baseline" (dash-dotted)
    group: str = ""                  # series of one group share a colour

    def add(self, size: object, value: object) -> None:
        try:
            s, v = int(size), float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return
        if s > 0 and v > 0 and math.isfinite(v):
            self.points.append((s, v))


# --------------------------------------------------------------------------
# Reading the files
# --------------------------------------------------------------------------


def _from_axon_bench(doc: dict, name: str) -> list[Series]:
    test = doc.get("test", "?")
    config = doc.get("config") or {}
    placement = config.get("placement", "")
    default_impl = doc.get("impl", "axon")
    limit_name = config.get("limit_name") or "hardware limit"
    # Rows that name their own series (space-put-get: "axon put, UCX") are drawn by it; the
    # others by implementation.
    by_impl: dict[str, list[dict]] = {}
    for r in doc.get("results") or []:
        if isinstance(r, dict):
            by_impl.setdefault(str(r.get("series") or r.get("impl", default_impl)), []).append(r)
    out: list[Series] = []
    for impl, rows in by_impl.items():
        if rows[0].get("series"):
            label = impl
        elif impl == default_impl and doc.get("label"):
            label = doc["label"]
        else:
            label = f"{impl} {test} {placement}".strip()
        group = f"{name}:{label}"
        lat = Series(label, LATENCY, group=group)
        bw = Series(label, BANDWIDTH, group=group)
        lat_lim = Series(f"limit: {limit_name} ({label})", LATENCY, style="limit", group=group)
        bw_lim = Series(f"limit: {limit_name} ({label})", BANDWIDTH, style="limit", group=group)
        for r in rows:
            lat.add(r.get("size"), r.get("time_us"))
            bw.add(r.get("size"), r.get("bw_gbs"))
            limit = r.get("limit")
            if isinstance(limit, dict):
                lat_lim.add(r.get("size"), limit.get("time_us"))
                bw_lim.add(r.get("size"), limit.get("bw_gbs"))
        out += [lat, bw, lat_lim, bw_lim]
    return out


def _from_gpu_bench(doc: dict, name: str) -> list[Series]:
    axon: dict[str, Series] = {}
    baselines: dict[tuple[str, str], Series] = {}
    seen: set[tuple[str, int]] = set()
    for r in doc.get("results") or []:
        if not isinstance(r, dict):
            continue
        test, unit = str(r.get("test", "?")), str(r.get("unit", ""))
        panel = LATENCY if unit == "us" else BANDWIDTH if unit.lower() in ("gb/s", "gbps") else None
        if panel is None:
            continue
        if test not in axon:
            axon[test] = Series(f"axon {test}", panel, group=f"{name}:{test}")
        key = (test, int(r.get("bytes") or 0))
        if key not in seen:  # one axon value per size, whatever the number of baselines
            seen.add(key)
            axon[test].add(r.get("bytes"), r.get("axon"))
        bname = str(r.get("baseline_name") or "baseline")
        if (test, bname) not in baselines:
            baselines[(test, bname)] = Series(f"{bname} ({test})", panel, style="baseline",
                                              group=f"{name}:{test}:{bname}")
        baselines[(test, bname)].add(r.get("bytes"), r.get("baseline"))
    return list(axon.values()) + list(baselines.values())


def _from_host_put(doc: dict, name: str) -> list[Series]:
    put_lat = Series("axon put (host_put_bench)", LATENCY, group=f"{name}:put")
    put_bw = Series("axon put (host_put_bench)", BANDWIDTH, group=f"{name}:put")
    mem_lat = Series("limit: memcpy (host_put_bench)", LATENCY, style="limit", group=f"{name}:put")
    mem_bw = Series("limit: memcpy (host_put_bench)", BANDWIDTH, style="limit", group=f"{name}:put")
    rtt = Series("axon put_signal round trip (host_put_bench)", LATENCY, group=f"{name}:rtt")
    for r in doc.get("results") or []:
        if isinstance(r, dict):
            put_lat.add(r.get("bytes"), r.get("put_us"))
            put_bw.add(r.get("bytes"), r.get("put_GBps"))
            mem_lat.add(r.get("bytes"), r.get("memcpy_us"))
            mem_bw.add(r.get("bytes"), r.get("memcpy_GBps"))
            rtt.add(r.get("bytes"), r.get("put_signal_rtt_us"))
    return [put_lat, put_bw, mem_lat, mem_bw, rtt]


def load_series(path: str | Path) -> list[Series]:
    """The lines one JSON file contributes (empty series dropped)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlotError(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from exc
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PlotError(f"{path} is not JSON: {exc}", EXIT_USAGE) from exc
    if not isinstance(doc, dict):
        raise PlotError(f"{path}: not a benchmark result (a JSON object was expected)", EXIT_USAGE)
    name = path.name
    if doc.get("tool") == "axon bench":
        series = _from_axon_bench(doc, name)
    elif doc.get("benchmark") == "gpu_bench":
        series = _from_gpu_bench(doc, name)
    elif doc.get("benchmark") == "host_put":
        series = _from_host_put(doc, name)
    else:
        raise PlotError(f"{path}: not a result of axon bench --json, gpu_bench or host_put_bench "
                        "(no \"tool\": \"axon bench\" nor \"benchmark\" field)", EXIT_USAGE)
    series = [s for s in series if s.points]
    if not series:
        raise PlotError(f"{path}: no results to plot", EXIT_USAGE)
    for s in series:
        s.points.sort()
    return series


# --------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------


def _import_matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator
    except ImportError as exc:
        raise PlotError("axon plot needs matplotlib, which is not installed "
                        "(pip install 'matplotlib>=3.5', or pip install 'axon-comm[tools]')") from exc
    return Figure, FigureCanvasAgg, FuncFormatter, NullFormatter, NullLocator


def _size_ticks(sizes: list[int]) -> tuple[list[int], tuple[float, float]]:
    lo = math.floor(math.log2(min(sizes)))
    hi = math.ceil(math.log2(max(sizes)))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    step = max(1, math.ceil((hi - lo + 1) / 11))
    ticks = [2 ** e for e in range(lo, hi + 1, step)]
    return ticks, (2.0 ** lo / 1.2, 2.0 ** hi * 1.2)


def join_series(series: list[Series]) -> list[Series]:
    """Series of one label and style from several files become one line (a sweep run in parts).
    A size present in several files keeps the first file's value; a limit keeps its line's colour."""
    colour_of = {}  # original group -> the label of its first data series
    for s in series:
        if s.style == "data":
            colour_of.setdefault(s.group, s.label)
    out: dict[tuple[str, str, str], Series] = {}
    for s in series:
        key = (s.label, s.panel, s.style)
        if key not in out:
            out[key] = Series(s.label, s.panel, [], s.style, "joined:" + colour_of.get(s.group, s.label))
        have = {x for x, _ in out[key].points}
        out[key].points = sorted(out[key].points + [(x, y) for x, y in s.points if x not in have])
    return list(out.values())


def parse_reference(text: str) -> tuple[float, str]:
    """``--reference 110:LABEL`` -> (110.0, "LABEL"): a bandwidth from elsewhere, in GB/s."""
    value, sep, label = text.partition(":")
    try:
        v = float(value)
    except ValueError:
        v = float("nan")
    if not sep or not label.strip() or not (v > 0 and math.isfinite(v)):
        raise PlotError(f"--reference {text!r}: give GBPS:LABEL, e.g. 110:'H100, per direction'", EXIT_USAGE)
    return v, label.strip()


def figure_format(output: str | Path) -> str:
    """The format `output`'s suffix names (see FORMATS); PlotError (usage) for any other name."""
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        raise PlotError(f"-o {output}: the name must end in {', '.join(FORMATS)} (the format written)",
                        EXIT_USAGE)
    return fmt


def plot(paths: Sequence[str | Path], output: str | Path, title: str | None = None, join: bool = False,
         references: Sequence[tuple[float, str]] = ()) -> Path:
    """Draws the files' series into `output`, in the format its suffix names (.png, .pdf, .svg);
    returns its path. `join`: one line per label across files; `references`: (GB/s, label) drawn
    as dotted lines on the bandwidth panel."""
    # Checked before the files are read: a wrong name should not cost the reading.
    fmt = figure_format(output)
    series: list[Series] = []
    for p in paths:
        series += load_series(p)
    if join:
        series = join_series(series)
    if references and not any(s.panel == BANDWIDTH for s in series):
        print(f"{_PROG}: note: --reference is a bandwidth and these files have no bandwidth panel",
              file=sys.stderr)
    Figure, FigureCanvasAgg, FuncFormatter, NullFormatter, NullLocator = _import_matplotlib()

    panels = [p for p in (LATENCY, BANDWIDTH) if any(s.panel == p for s in series)]
    fig = Figure(figsize=(6.4 * len(panels), 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    colours: dict[str, str] = {}
    palette = [f"C{i}" for i in range(10)]
    styles = {"data": dict(linestyle="-", marker="o", markersize=3.5, linewidth=1.6),
              "limit": dict(linestyle="--", marker=None, linewidth=1.3),
              "baseline": dict(linestyle="-.", marker="s", markersize=3.5, linewidth=1.3)}
    for i, panel in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        mine = [s for s in series if s.panel == panel]
        for s in mine:
            colour = colours.setdefault(s.group, palette[len(colours) % len(palette)])
            xs, ys = zip(*s.points)
            ax.plot(xs, ys, color=colour, label=s.label, **styles[s.style])
        if panel == BANDWIDTH:
            for k, (value, label) in enumerate(references):
                ax.axhline(value, color=f"C{(len(colours) + k) % 10}", linestyle=":", linewidth=1.4,
                           label=f"reference: {label}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks, xlim = _size_ticks([x for s in mine for x, _ in s.points])
        ax.set_xticks(ticks)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
        ax.set_xlim(*xlim)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ys = [y for s in mine for _, y in s.points] + ([v for v, _ in references] if panel == BANDWIDTH else [])
        powers_of_ten = math.floor(math.log10(max(ys))) - math.ceil(math.log10(min(ys))) + 1
        # Less than two decades: label the minor ticks too, or the axis may have no label at all.
        ax.yaxis.set_minor_formatter(
            FuncFormatter(lambda v, _pos: f"{v:g}") if powers_of_ten < 2 else NullFormatter())
        for label in ax.get_xticklabels():
            label.set_rotation(45)
            label.set_horizontalalignment("right")
        ax.set_xlabel("message size")
        ax.set_ylabel("latency (us)" if panel == LATENCY else "bandwidth (GB/s = 1e9 B/s)")
        ax.set_title("Latency" if panel == LATENCY else "Bandwidth")
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", axis="y", alpha=0.1)
        ax.legend(fontsize="x-small", loc="best")
    fig.suptitle(title or ", ".join(Path(p).name for p in paths), fontsize="medium")
    out = Path(output)
    try:
        fig.savefig(out, dpi=120, format=fmt)
    except OSError as exc:
        raise PlotError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return out


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Plot latency and bandwidth against message size (log-log) from the JSON of "
        "'axon bench --json', bench/gpu_bench and bench/host_put_bench: one line per "
        "implementation and file; hardware limits dashed.")
    parser.add_argument("files", nargs="+", metavar="FILE.json", help="results to plot")
    parser.add_argument("-o", "--output", required=True, metavar="FIG.png",
                        help="the figure to write; its suffix picks the format: .png, .pdf or .svg")
    parser.add_argument("--title", help="figure title (default: the file names)")
    parser.add_argument("--join", action="store_true",
                        help="one line per label across the files (a sweep run in parts)")
    parser.add_argument("--reference", action="append", default=[], metavar="GBPS:LABEL",
                        help="a bandwidth from elsewhere (GB/s), drawn as a dotted line; repeatable")
    parser.set_defaults(handler=run_plot)


def add_subcommand(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``plot`` to the ``axon`` command line (handler: :func:`run_plot`)."""
    parser = subparsers.add_parser("plot", help="plot benchmark JSON: latency and bandwidth vs size")
    _configure(parser)
    return parser


def run_plot(args: argparse.Namespace) -> int:
    """The handler of ``axon plot``; returns the exit code."""
    try:
        refs = [parse_reference(r) for r in getattr(args, "reference", None) or []]
        out = plot(args.files, args.output, args.title, getattr(args, "join", False), refs)
    except PlotError as exc:
        prefix = f"{_PROG}: error: " if exc.code == EXIT_USAGE else f"{_PROG}: "
        print(prefix + str(exc), file=sys.stderr)
        return exc.code
    print(f"{_PROG}: wrote {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``axon plot`` on its own (tests, ``python -m axon.tools.plot``); returns the exit code."""
    parser = cli_parser.Parser(prog=_PROG)
    _configure(parser)
    return cli_parser.run(parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
