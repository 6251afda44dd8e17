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
from axon.tools.bench.space_tables import SpaceRowPrinter, space_table_lines
from axon.tools.plot import load_series
from first_rows import interrupt_after_first_row


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
    # size, op, four times, axon / host-staged, axon / pinned-staged, axon GB/s, #wrong
    assert cells[:2] == ["4096", "put"] and cells[6:8] == ["0.25", "0.50"] and cells[-1] == "0"


def test_plot_draws_one_line_per_series(tmp_path):
    rows = [_row(op, "mapped", impl, size, us)
            for op in ("put", "get") for impl in ("axon", "host-staged") for size, us in ((4096, 10.0), (8192, 12.0))]
    doc = {"tool": "axon bench", "schema": 1, "test": "space-put-get", "impl": "axon", "label": "axon space-put-get",
           "metric": "bandwidth", "config": {"placement": "D D"}, "results": rows}
    path = tmp_path / "pg.json"
    path.write_text(json.dumps(doc))
    labels = {s.label for s in load_series(path) if s.style == "data"}
    assert labels == {"axon put, mapped", "axon get, mapped", "host-staged put, mapped", "host-staged get, mapped"}


def test_put_get_rows_go_out_per_size_as_measured():
    """The printer prints a size's put and get rows once the driver has sent every way of that
    size (the next size or route begins), not at the end; each route gets its headings once."""
    lines: list[str] = []
    printer = SpaceRowPrinter("space-put-get", lines)
    printer.header({"time_label": "one blocking put or get"})
    head = len(lines)
    ways = (("host-staged", 40.0), ("pinned-staged", 20.0), ("axon", 10.0))
    for impl, us in ways:
        for op in ("put", "get"):
            printer.result(_row(op, "mapped", impl, 4096, us))
    assert len(lines) == head  # 4096 may still get more ways
    printer.result(_row("put", "mapped", "host-staged", 16384, 80.0))
    rows = [x for x in lines if x and not x.startswith("#")]
    assert [r.split()[:2] for r in rows] == [["4096", "put"], ["4096", "get"]]
    assert sum("a server on this node" in x for x in lines) == 1
    for impl, us in ways[1:]:
        printer.result(_row("put", "mapped", impl, 16384, us))
    printer.result(_row("put", "UCX", "axon", 4096, 12.0))
    printer.finish()
    rows = [x.split()[:2] for x in lines if x and not x.startswith("#")]
    assert rows == [["4096", "put"], ["4096", "get"], ["16384", "put"], ["4096", "put"]]
    assert sum("through UCX" in x for x in lines) == 1 and printer.printed == 4


def test_small_puts_rows_before_the_summary():
    lines: list[str] = []
    printer = SpaceRowPrinter("space-small-puts", lines)
    printer.header({})
    printer.result({"batching": "off", "puts": 10, "size": 4096, "seconds": 0.2, "puts_per_s": 50,
                    "messages": 10, "bw_gbs": 0.2, "wrong": 0})
    assert lines[-1].split()[:2] == ["off", "10"]  # printed at once
    printer.result({"batching": "on", "puts": 10, "size": 4096, "seconds": 0.1, "puts_per_s": 100,
                    "messages": 1, "bw_gbs": 0.4, "wrong": 0})
    printer.finish()
    assert lines[-2].split()[:2] == ["on", "10"]
    assert lines[-1] == "# batching on takes 0.50x the time of batching off"


def test_workflow_rows_are_printed_as_each_process_ends_and_ctrl_c_keeps_them():
    """The real command, piped: a fast process's row arrives while the slow reader still sleeps
    (2 s a version, 10 versions); SIGINT then stops the run and the row stays printed."""
    lines, out, err, returncode = interrupt_after_first_row(
        ["bench", "space-workflow", "--writers", "1", "--readers", "2", "--slow-ms", "2000", "--space-mem", "96M"])
    assert lines[0].startswith("# axon bench space-workflow:")
    assert lines[-1].split()[0] in ("writer", "reader")
    assert returncode == 130, err
    assert "(slow)" not in "\n".join(lines + out.splitlines())  # cut short before the slow reader ended
    assert "axon bench: interrupted after" in err and "the rows above were measured" in err
