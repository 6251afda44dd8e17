"""Tests of `axon bench space-*` (python/axon/tools/bench/space.py) and its host driver
(bench/space_client_bench.cpp): real short runs against a server the command starts, the JSON
round trip, the tables' ratios, and one-line usage errors. The GPU tests (space-put-get,
space-reassembly) run on the GPU machine; here only their refusal without a GPU is checked.
"""

from __future__ import annotations

import json
import shutil

import pytest

from axon.tools import bench
from axon.tools.bench.catalog import SPACE_TESTS
from axon.tools.bench.space import space_table_lines
from axon.tools.plot import load_series


@pytest.fixture(autouse=True)
def _bounded(monkeypatch):
    monkeypatch.setenv("AXON_TIMEOUT", "60")
    monkeypatch.setenv("AXON_BACKEND", "host")
    monkeypatch.delenv("AXON_SPACE_ADDR", raising=False)
    monkeypatch.delenv("AXON_SPACE_FILE", raising=False)


def _run(argv, tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = bench.main([*argv, "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(out.read_text()), captured.out


def test_small_puts_batch_and_arrive_whole(tmp_path, capsys):
    doc, stdout = _run(["space-small-puts", "-i", "400", "-m", "4K"], tmp_path, capsys)
    assert doc["tool"] == "axon bench" and doc["test"] == "space-small-puts"
    assert doc["config"]["count"] == 400 and doc["config"]["size"] == 4096
    rows = {r["batching"]: r for r in doc["results"]}
    assert set(rows) == {"off", "on"}
    assert rows["off"]["messages"] == 400
    # 64 KiB batches of 4 KiB puts: 16 a message.
    assert rows["on"]["messages"] == 25
    for r in rows.values():
        assert r["wrong"] == 0 and r["puts"] == 400 and r["seconds"] > 0
    assert "batching on takes" in stdout


def test_workflow_reports_every_rank_and_the_servers_memory(tmp_path, capsys):
    doc, stdout = _run(["space-workflow", "--writers", "1", "--readers", "2", "--slow-ms", "0",
                        "--space-mem", "96M"], tmp_path, capsys)
    roles = sorted((r["role"], r.get("index")) for r in doc["results"])
    assert roles == [("reader", 0), ("reader", 1), ("server", None), ("writer", 0)]
    for r in doc["results"]:
        if r["role"] == "server":
            assert 0 < r["high_water"] <= r["capacity"] == 96 << 20
            continue
        assert r["wrong"] == 0
        assert r["ops"] + r["dropped"] == 10
        assert r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"]
    writer = next(r for r in doc["results"] if r["role"] == "writer")
    assert writer["bytes"] == 10 * 2048 * 2048 * 8
    assert "(within)" in stdout and "aggregate: writers" in stdout


@pytest.mark.parametrize("argv,needle", [
    (["space-put-get", "-d", "H", "H"], "measures GPU data"),
    (["space-small-puts", "-d", "D", "D"], "-d H H"),
    (["space-workflow", "-d", "D", "H"], "D D (GPU memory) or H H"),
    (["space-small-puts", "-m", "12"], "multiple of 8"),
    (["space-workflow", "--writers", "0"], "--writers"),
    (["space-small-puts", "--space-mem", "lots"], "not a size"),
    (["space-put-get", "-m", "1M", "-e", "2M"], "not both"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, needle, capsys):
    assert bench.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("axon bench: error: ") and needle in err[0], err


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU machine runs it for real")
@pytest.mark.parametrize("argv", [
    ["space-put-get", "-m", "8K"],  # -m MAX: from 4 KiB, a valid request
    ["space-reassembly"],
])
def test_gpu_tests_fail_in_words_without_a_gpu(argv, capsys):
    assert bench.main(argv) == 1
    err = capsys.readouterr().err
    assert SPACE_TESTS[argv[0]][1] in err or "CUDA" in err, err  # the missing driver, or CUDA's error


def test_help_lists_the_space_tests(capsys):
    assert bench.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in SPACE_TESTS:
        assert name in out


def _row(op, route, impl, size, us, wrong=0):
    return {"op": op, "route": route, "impl": impl, "series": f"{impl} {op}, {route}", "size": size,
            "time_us": us, "bw_gbs": size / us / 1e3, "wrong": wrong}


def test_put_get_table_gives_axon_over_baseline_ratios():
    rows = [_row("put", "UCX", "host-staged", 4096, 40.0), _row("put", "UCX", "pinned-staged", 4096, 20.0),
            _row("put", "UCX", "axon", 4096, 10.0), _row("put", "UCX", "ucx-device", 4096, 30.0)]
    lines = space_table_lines("space-put-get", {}, rows)
    data = [x for x in lines if x and not x.startswith("#")]
    assert len(data) == 1
    cells = data[0].split()
    # size, four times, axon / host-staged, axon / pinned-staged, axon GB/s, #wrong
    assert cells[0] == "4096" and cells[5:7] == ["0.25", "0.50"] and cells[-1] == "0"


def test_plot_draws_one_line_per_series(tmp_path):
    rows = [_row(op, "mapped", impl, size, us)
            for op in ("put", "get") for impl in ("axon", "host-staged") for size, us in ((4096, 10.0), (8192, 12.0))]
    doc = {"tool": "axon bench", "schema": 1, "test": "space-put-get", "impl": "axon", "label": "axon space-put-get",
           "metric": "bandwidth", "config": {"placement": "D D"}, "results": rows}
    path = tmp_path / "pg.json"
    path.write_text(json.dumps(doc))
    labels = {s.label for s in load_series(path) if s.style == "data"}
    assert labels == {"axon put, mapped", "axon get, mapped", "host-staged put, mapped", "host-staged get, mapped"}
