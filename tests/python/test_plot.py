"""Tests of `axon plot` (python/axon/tools/plot.py): PNGs from axon bench JSON (a real host-backend
run and a hand-written document) and from gpu_bench JSON (tests/python/data/gpu_bench_sample.json,
the format bench/gpu_bench.cu writes), and the errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from axon.tools import bench, plot

pytest.importorskip("matplotlib")

DATA = Path(__file__).parent / "data"
GPU_SAMPLE = DATA / "gpu_bench_sample.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 20_000  # two panels with lines, not an empty canvas


def _bench_doc(test="latency", limit=True) -> dict:
    results = []
    for i, size in enumerate([8, 64, 512, 4096, 32768, 1 << 20]):
        r = {"test": test, "size": size, "iters": 100, "warmup": 10, "time_us": 0.2 + size / 2e4,
             "bw_gbs": size / (0.2 + size / 2e4) / 1e3, "wrong": 0}
        if limit:
            r["limit"] = {"time_us": 0.01 + size / 4e4, "bw_gbs": size / (0.01 + size / 4e4) / 1e3}
        results.append(r)
    return {"tool": "axon bench", "schema": 1, "test": test, "impl": "axon",
            "label": f"axon {test} H H", "metric": "latency",
            "config": {"placement": "H H", "limit_name": "memcpy between the same mappings" if limit else None},
            "machine": {"hostname": "test"}, "results": results}


@pytest.fixture(scope="module")
def real_bench_json(tmp_path_factory):
    """A real host-backend run of `axon bench pingping` with --json."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AXON_BACKEND", "host")
    mp.setenv("AXON_TIMEOUT", "60")
    mp.delenv("AXON_BENCH_DRIVER", raising=False)
    out = tmp_path_factory.mktemp("bench") / "pingping.json"
    try:
        assert bench.main(["pingping", "-m", "8:64K", "-i", "20", "-x", "2", "--json", str(out)]) == 0
    finally:
        mp.undo()
    return out


def test_series_of_an_axon_bench_document(tmp_path):
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(_bench_doc()))
    series = plot.load_series(path)
    by = {(s.label, s.panel, s.style): s for s in series}
    assert ("axon latency H H", plot.LATENCY, "data") in by
    assert ("axon latency H H", plot.BANDWIDTH, "data") in by
    limit = by[("limit: memcpy between the same mappings (axon latency H H)", plot.LATENCY, "limit")]
    assert [x for x, _ in limit.points] == [8, 64, 512, 4096, 32768, 1 << 20]
    # One colour per implementation: the limit shares its line's group.
    assert len({s.group for s in series}) == 1


def test_series_of_a_gpu_bench_document():
    series = plot.load_series(GPU_SAMPLE)
    labels = {s.label: s for s in series}
    # axon and the baseline are two lines; axon's value is counted once per size even where
    # the test has two baselines.
    assert labels["axon pingpong_rtt"].points == [(8, 4.4)]
    assert labels["raw stores, unordered (pingpong_rtt)"].style == "baseline"
    assert labels["axon stream_put_1way"].panel == plot.BANDWIDTH
    assert len(labels["axon staged_put"].points) == 3
    assert {s.panel for s in series} == {plot.LATENCY, plot.BANDWIDTH}


def test_plot_real_bench_run(real_bench_json, tmp_path):
    out = tmp_path / "fig.png"
    assert plot.main([str(real_bench_json), "-o", str(out)]) == 0
    _assert_png(out)


def test_plot_gpu_bench_and_several_files(tmp_path, capsys):
    doc = tmp_path / "bw.json"
    doc.write_text(json.dumps(_bench_doc("bw", limit=False)))
    out = tmp_path / "fig.png"
    assert plot.main([str(GPU_SAMPLE), str(doc), "-o", str(out), "--title", "two files"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    _assert_png(out)


def test_join_makes_one_line_of_a_sweep_run_in_parts(tmp_path):
    small, large = _bench_doc(), _bench_doc()
    small["results"], large["results"] = small["results"][:3], large["results"][3:]
    paths = []
    for name, doc in (("small.json", small), ("large.json", large)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(doc))
    series = [s for p in paths for s in plot.load_series(p)]
    joined = plot.join_series(series)
    data = [s for s in joined if s.label == "axon latency H H" and s.panel == plot.LATENCY]
    assert len(data) == 1 and [x for x, _ in data[0].points] == [8, 64, 512, 4096, 32768, 1 << 20]
    assert len(joined) == len(series) // 2
    limit = next(s for s in joined if s.style == "limit" and s.panel == plot.LATENCY)
    assert limit.group == data[0].group  # the limit keeps its line's colour
    # A size in both files keeps the first file's value.
    again = plot.join_series(series + [plot.Series("axon latency H H", plot.LATENCY, [(8, 99.0)], "data", "x")])
    line = next(s for s in again if s.label == "axon latency H H" and s.panel == plot.LATENCY)
    assert dict(line.points)[8] == pytest.approx(0.2 + 8 / 2e4)
    out = tmp_path / "fig.png"
    assert plot.main([*map(str, paths), "-o", str(out), "--join", "--reference", "110:H100, per direction",
                      "--reference", "250:A100"]) == 0
    _assert_png(out)


@pytest.mark.parametrize("ref", ["110", "x:label", "-3:label", "110:", "nan:label"])
def test_bad_reference_is_a_usage_error(ref, tmp_path, capsys):
    doc = tmp_path / "lat.json"
    doc.write_text(json.dumps(_bench_doc()))
    assert plot.main([str(doc), "-o", str(tmp_path / "f.png"), f"--reference={ref}"]) == plot.EXIT_USAGE
    assert "GBPS:LABEL" in capsys.readouterr().err


def test_add_subcommand_wires_the_handler(tmp_path):
    parser = argparse.ArgumentParser(prog="axon")
    sub = parser.add_subparsers(dest="subcommand")
    plot.add_subcommand(sub)
    doc = tmp_path / "lat.json"
    doc.write_text(json.dumps(_bench_doc()))
    out = tmp_path / "fig.png"
    args = parser.parse_args(["plot", str(doc), "-o", str(out)])
    assert args.handler is plot.run_plot
    assert args.handler(args) == 0
    _assert_png(out)


@pytest.mark.parametrize("content,needle", [
    (None, "cannot read"),
    ("not json", "is not JSON"),
    ('{"hello": 1}', "not a result of axon bench --json, gpu_bench or host_put_bench"),
    ('{"tool": "axon bench", "results": []}', "no results to plot"),
])
def test_bad_inputs(content, needle, tmp_path, capsys):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    assert plot.main([str(path), "-o", str(tmp_path / "fig.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("axon plot: error: ") and needle in err[0]
    assert not (tmp_path / "fig.png").exists()


def test_missing_output_option(tmp_path, capsys):
    assert plot.main([str(GPU_SAMPLE)]) == 2
    assert "-o/--output" in capsys.readouterr().err


def test_clear_error_without_matplotlib(monkeypatch, tmp_path, capsys):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.ticker", "matplotlib.backends",
                 "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    assert plot.main([str(GPU_SAMPLE), "-o", str(tmp_path / "fig.png")]) == 1
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "pip install" in err


@pytest.mark.parametrize("name,signature", [("fig.pdf", b"%PDF-"), ("fig.svg", b"<?xml"), ("FIG.PNG", PNG_SIGNATURE)])
def test_output_format_follows_the_name(name, signature, tmp_path):
    """`axon plot -o x.pdf` writes a PDF, `-o x.svg` an SVG (the real command, as a user runs it)."""
    doc = tmp_path / "lat.json"
    doc.write_text(json.dumps(_bench_doc()))
    out = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "axon", "plot", str(doc), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"axon plot: wrote {out}"
    data = out.read_bytes()
    assert data.startswith(signature)
    if name.endswith(".svg"):
        assert b"<svg" in data[:2000]


def test_output_name_without_a_known_format_is_refused_first(tmp_path):
    out = tmp_path / "fig.jpg"
    proc = subprocess.run([sys.executable, "-m", "axon", "plot", str(tmp_path / "missing.json"), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    # The name is checked before the (missing) input is read.
    assert proc.stderr.strip() == f"axon plot: error: -o {out}: the name must end in .png, .pdf, .svg (the format written)"
    assert not out.exists()
