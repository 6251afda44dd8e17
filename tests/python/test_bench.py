"""Tests of `axon bench` (python/axon/tools/bench/) and its driver (bench/axon_bench.cpp).

They run on the host backend (conftest sets AXON_BACKEND=host): option validation, a real short
run of every test on 2 PEs with the JSON round trip, and the clear error for placements that need
a GPU. Nothing here initializes axon in the pytest process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from axon.tools import bench
from axon.tools.bench import peers as bench_peers
from first_rows import interrupt_after_first_row

SHORT = ["-m", "8:4096", "-i", "20", "-x", "2"]
SHORT_SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


@pytest.fixture(autouse=True)
def _bounded(monkeypatch):
    # Every wait of the driver is bounded by AXON_TIMEOUT; keep a hang from stalling the suite.
    monkeypatch.setenv("AXON_TIMEOUT", "60")
    monkeypatch.setenv("AXON_BACKEND", "host")
    monkeypatch.delenv("AXON_BENCH_DRIVER", raising=False)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("axon bench: error: "), err
    return lines[0]


# --------------------------------------------------------------------------
# Sizes and option validation (no driver run)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text,value", [("8", 8), ("64K", 65536), ("1M", 1 << 20), ("2g", 2 << 30),
                                        ("4KiB", 4096)])
def test_parse_size(text, value):
    assert bench.parse_size(text) == value


@pytest.mark.parametrize("text,lo,hi", [("8:4096", 8, 4096), ("1K:1M", 1024, 1 << 20),
                                        ("64", 1, 64), ("8:", 8, 4 << 20), ("2:2", 2, 2)])
def test_parse_range(text, lo, hi):
    assert bench.parse_range(text) == (lo, hi)


def test_size_label():
    assert bench.size_label(8) == "8 B"
    assert bench.size_label(4096) == "4 KiB"
    assert bench.size_label(3 << 20) == "3 MiB"
    assert bench.size_label(1 << 30) == "1 GiB"


@pytest.mark.parametrize("argv,needle", [
    (["latency", "-m", "8:4"], "MIN (8) is larger than MAX (4)"),
    (["latency", "-m", "0:8"], "sizes start at 1 byte"),
    (["latency", "-m", "x:8"], "'x' is not a size"),
    (["latency", "-m", "8:lots"], "'lots' is not a size"),
    (["latency", "--message-size=-3:8"], "'-3' is not a size"),
    (["nope"], "unknown test 'nope' (tests: latency, bw, bibw, pingping"),
    (["latency", "-i", "0"], "-i must be an integer >= 1, got '0'"),
    (["latency", "-i", "ten"], "-i must be an integer >= 1"),
    (["latency", "-x", "-1"], "-x must be an integer >= 0"),
    (["latency", "-f", "1"], "-f must be an integer >= 2"),
    (["latency", "-b", "64", "-e", "8"], "-b 64 is larger than -e 8"),
    (["latency", "-m", "8:64", "-b", "8"], "with -m MIN:MAX or with -b/-e, not both"),
    (["latency", "-d", "H", "X"], "-d takes two of D (GPU memory) and H (host memory)"),
    (["latency", "--pes", "1"], "--pes must be an integer >= 2"),
    (["latency", "--settle-ms", "-5"], "--settle-ms must be an integer >= 0"),
    (["allreduce", "--trials", "0"], "--trials must be an integer >= 1"),
    (["latency", "--trials", "3"], "--trials is an option of the collectives"),
    (["latency", "--bogus"], "unrecognized arguments: --bogus"),
    (["allreduce", "--dtype", "complex64"], "--dtype 'complex64' is not one of int8"),
    (["allreduce", "--op", "mean"], "--op 'mean' is not one of sum, prod, min, max"),
    (["broadcast", "--root", "2"], "--root 2 is not one of the 2 PEs"),
    (["allgather", "-d", "H", "D"], "a collective's buffers are all in one place"),
    (["latency", "--via-host"], "--via-host is an option of pingping and p2p-pingping only"),
    (["p2p-bw", "--via-host"], "--via-host is an option of pingping and p2p-pingping only"),
    (["p2p-pingping", "--via-host", "-d", "H", "H"], "--via-host stages GPU data through the host: it takes -d D D"),
    (["pingping", "--via-host", "-d", "H", "H"], "--via-host stages GPU data through the host: it takes -d D D"),
    (["latency", "--emulate-nodes", "3"], "--pes 2 does not divide over --emulate-nodes 3"),
    (["latency", "--emulate-nodes", "0"], "--emulate-nodes must be an integer >= 1"),
    (["latency", "--pes", "4", "--emulate-nodes", "2", "--compare"],
     "--pes must equal --emulate-nodes (got --pes 4, --emulate-nodes 2)"),
    (["latency", "--emulate-nodes", "2", "--compare", "-d", "D", "D"], "runs ucx_perftest and Open MPI on host buffers: -d H H"),
    ([], "the following arguments are required: TEST"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, needle, capsys):
    assert bench.main(argv) == 2
    line = _one_line_error(capsys)
    assert needle in line


# --------------------------------------------------------------------------
# The spellings of nccl-tests and OSU
# --------------------------------------------------------------------------


def _request(*argv: str):
    return bench.validate(bench.build_parser().parse_args(list(argv)))


def test_nccl_tests_spellings_mean_what_they_mean_there():
    req = _request("allreduce", "-b", "8", "-e", "64", "-n", "7", "-w", "3", "-c", "0", "-o", "max",
                   "-d", "float", "-g", "4", "-r", "1")
    assert (req.iters, req.warmup, req.validate, req.op, req.dtype, req.pes, req.root) == \
        (7, 3, False, "max", "float32", 4, 1)
    assert req.placement is None  # -d float named the datatype, not the buffers
    long = _request("allreduce", "--iters", "7", "--warmup_iters", "3", "--check", "1", "--datatype", "half",
                    "--ngpus", "3")
    assert (long.iters, long.warmup, long.validate, long.dtype, long.pes) == (7, 3, True, "float16", 3)
    assert _request("allreduce", "--dtype", "double").dtype == "float64"


@pytest.mark.parametrize("argv,placement", [
    (["latency", "-d", "H", "D"], ("H", "D")),            # axon's own
    (["latency", "-d", "cuda", "D", "H"], ("D", "H")),    # OSU
    (["latency", "-d", "cuda"], ("D", "D")),              # OSU, GPU buffers on both sides
    (["-d", "h", "h", "latency"], ("H", "H")),            # the test after -d, as before
    (["allreduce", "-d", "D"], ("D", "D")),               # a collective's buffers are in one place
])
def test_d_takes_axon_and_osu_placements(argv, placement):
    req = _request(*argv)
    assert req.placement == placement and req.test == argv[argv.index("-d") - 1 if argv[0] != "-d" else -1]


@pytest.mark.parametrize("argv,needle", [
    (["latency", "-d", "float"], "-d float is a datatype (nccl-tests' -d), which only the collectives take; "
                                 "latency's -d is the buffers' places, e.g. -d D D"),
    (["latency", "-d", "rocm", "D", "D"], "-d rocm: axon bench runs on CUDA GPUs; for GPU buffers type -d D D"),
    (["allreduce", "-d", "complex"], "-d takes two of D (GPU memory) and H (host memory), e.g. -d H D "
                                     "(OSU's -d cuda D D too); or a datatype, as nccl-tests: -d float"),
    (["allreduce", "-t", "4"], "-t 4: axon bench has no threads per process (nccl-tests' -t); it runs one PE "
                               "per GPU: for 4 GPUs type --pes 4"),
    (["allreduce", "-c", "yes"], "-c takes 0 (do not check the data, as --no-validate) or 1 (check it), got 'yes'"),
    (["allreduce", "-g", "4", "--pes", "2"], "-g 4 (nccl-tests' GPUs, one PE each) and --pes 2 disagree"),
    (["allreduce", "-d", "float", "--dtype", "int32"], "-d float and --dtype int32 name two datatypes"),
    (["allreduce", "-o", "avg"], "--op 'avg' is not one of sum, prod, min, max"),
    (["latency", "--dtype", "float"], "--dtype and --op (-o) are options of the collectives; latency moves bytes"),
    (["latency", "--json", "/no/such/dir/out.json"], "--json /no/such/dir/out.json: cannot write it: No such file"),
])
def test_foreign_spellings_that_cannot_be_taken_say_what_to_type(argv, needle, capsys):
    assert bench.main(argv) == 2
    assert needle in _one_line_error(capsys)


def test_bad_json_path_is_refused_before_the_sweep(tmp_path):
    """The real command: refused at once (no driver started), nothing created."""
    target = tmp_path / "missing" / "out.json"
    proc = subprocess.run([sys.executable, "-m", "axon", "bench", "latency", "-b", "8", "-e", "64",
                           "--json", str(target)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"axon bench: error: --json {target}: cannot write it: "
                                   "No such file or directory")
    assert not target.parent.exists()
    # A path that can be written is left as it was until the results are written.
    existing = tmp_path / "keep.json"
    existing.write_text("old")
    bench.document.check_writable(str(existing))
    assert existing.read_text() == "old"
    bench.document.check_writable(str(tmp_path / "new.json"))
    assert not (tmp_path / "new.json").exists()


def test_rows_are_printed_as_measured_and_ctrl_c_keeps_them():
    """A piped run shows each row as soon as it is measured; SIGINT stops the sweep and what was
    measured stays printed."""
    lines, out, err, returncode = interrupt_after_first_row(
        ["bench", "latency", "-b", "8", "-e", "64M", "-i", "20000", "-x", "1", "--settle-ms", "0"], timeout=30)
    assert lines[0].startswith("# axon bench latency:")
    assert lines[-1].split()[0] == "8"  # printed while the sweep goes on
    assert returncode == 130
    rows = [x for x in lines + out.splitlines() if x and not x.startswith("#")]
    assert rows[0].split()[0] == "8" and len(rows) < 24  # the sweep was cut short
    assert "axon bench: interrupted after" in err and "the rows above were measured" in err


def test_peer_ratio_heading_fits_long_peer_names():
    """ucx_perftest's rows carry the test in their name: the ratio heading must not run into the
    latency column."""
    header = {"pes": 2, "backend": "host", "placement": "H H", "validate": True}
    rows = [{"size": 8, "time_us": 2.0, "wrong": 0},
            {"impl": "ucx_perftest ucp_put_multi_lat", "size": 8, "time_us": 3.0}]
    lines = bench.table_lines("latency", header, rows)
    head = next(x for x in lines if "ucx_perftest ucp_put_multi_lat / axon time" in x)
    row = lines[lines.index(head) + 1]
    assert head.split()[:4] == ["#", "Size", "Latency", "(us)"]
    assert "  ucx_perftest ucp_put_multi_lat / axon time" in head
    assert len(row) == len(head) and row.split() == ["8", "3.00", "1.50x"]


@pytest.mark.parametrize("placement,which", [("H D", "the remote buffer"), ("D H", "the local buffer"),
                                             ("D D", "both buffers")])
def test_gpu_placement_on_host_backend_names_the_reason(placement, which, capsys):
    rc = bench.main(["bw", "-m", "8:8", "-d", *placement.split()])
    assert rc == 2
    line = _one_line_error(capsys)
    assert f"placement {placement} needs GPU memory for {which}" in line
    # The reason comes from axon::gpuUnavailableReason() in the driver.
    assert "the GPU backend is off: AXON_BACKEND=host" in line


def test_add_subcommand_wires_the_handler():
    parser = argparse.ArgumentParser(prog="axon")
    sub = parser.add_subparsers(dest="subcommand")
    bench.add_subcommand(sub)
    args = parser.parse_args(["bench", "pingping", "-m", "8:64", "-i", "5", "-x", "1", "-d", "h", "h",
                              "--json", "out.json", "--compare", "--no-validate", "--settle-ms", "0"])
    assert args.handler is bench.run_bench
    req = bench.validate(args)
    assert req.test == "pingping" and req.sizes() == [8, 16, 32, 64]
    assert req.placement == ("H", "H") and not req.validate
    assert req.driver_args() == ["pingping", "-b", "8", "-e", "64", "-f", "2", "-i", "5", "-x", "1",
                                 "-d", "H", "H", "--no-validate", "--settle-ms", "0"]


def test_emulated_nodes_reach_the_launcher():
    req = bench.validate(bench.build_parser().parse_args(["latency", "--pes", "4", "--emulate-nodes", "2"]))
    assert req.emulate_nodes == 2
    cmd = bench.launch_command(Path("/b/axon_bench"), req)
    assert cmd[cmd.index("run"):cmd.index("--no-prefix")] == ["run", "-n", "4", "--emulate-nodes", "2"]
    plain = bench.launch_command(Path("/b/axon_bench"), bench.validate(bench.build_parser().parse_args(["latency"])))
    assert "--emulate-nodes" not in plain


def test_nccl_tests_style_sizes():
    parser = bench.build_parser()
    req = bench.validate(parser.parse_args(["bw", "-b", "8", "-e", "4K", "-f", "8"]))
    assert req.sizes() == [8, 64, 512, 4096]


def test_driver_is_found():
    path = bench.find_driver()
    assert path.name == "axon_bench" and path.is_file()


def test_bad_driver_override(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AXON_BENCH_DRIVER", str(tmp_path / "missing"))
    assert bench.main(["latency"]) == 1
    assert "is not an executable file" in capsys.readouterr().err


@pytest.mark.parametrize("test", ["allreduce", "p2p-latency", "latency"])
def test_driver_failing_at_init_says_why_and_does_not_abort(test):
    """An error thrown by init (here a bad AXON_COLL_BUFFER) is the driver's one error line and exit
    status 1, for the collective and two-sided tests too (they aborted with SIGABRT before)."""
    env = dict(os.environ, AXON_COLL_BUFFER="1", AXON_BACKEND="host")
    proc = subprocess.run([str(bench.find_driver()), test, "-m", "8:8"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "terminate called" not in proc.stderr
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["type"] == "error" and "AXON_COLL_BUFFER='1' is below the minimum of 4K" in record["message"]


def test_driver_reports_usage_errors_as_json():
    # The driver alone (no launcher): a bad request is one JSON error line and exit status 2.
    proc = subprocess.run([str(bench.find_driver()), "latency", "-m", "8:4"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2
    record = json.loads(proc.stdout.strip())
    assert record["type"] == "error" and record["usage"] is True
    assert "larger than the largest" in record["message"]


def test_table_lines():
    header = {"pes": 2, "backend": "host", "gpu_unavailable_reason": "AXON_BACKEND=host",
              "placement": "H H", "validate": True, "limit_name": "memcpy between the same mappings"}
    rows = [{"size": 8, "time_us": 0.12, "bw_gbs": 0.066, "wrong": 0,
             "limit": {"time_us": 0.003, "bw_gbs": 2.4}},
            {"size": 4096, "time_us": 1.5, "bw_gbs": 2.7, "wrong": 3}]
    lines = bench.table_lines("latency", header, rows)
    assert lines[0].startswith("# axon bench latency: put_signal ping-pong, ONE-WAY latency")
    head = next(x for x in lines if x.startswith("# Size"))
    assert "Latency (us)" in head and "memcpy (us)" in head and head.rstrip().endswith("#wrong")
    assert lines[-2].split() == ["8", "0.12", "0.003", "0"]
    assert lines[-1].split() == ["4096", "1.50", "-", "3"]
    rtt = bench.table_lines("put_signal_rtt", header, rows[:1])
    assert any("Round trip (us)" in x for x in rtt)


def test_compare_notes_without_and_with_gpu():
    peers = [{"peer": "NCCL", "found": True, "where": "/x/libnccl.so.2", "what": "libnccl.so"},
             {"peer": "NVSHMEM", "found": False, "where": None, "what": "libnvshmem_host.so"}]
    notes = bench.compare_notes(peers, have_gpu=False)
    assert [n["note"] for n in notes] == ["NCCL: skipped, needs GPUs (libnccl.so found)",
                                          "NVSHMEM: skipped, needs GPUs (libnvshmem_host.so not found)"]
    notes = bench.compare_notes(peers, have_gpu=True, test="latency")
    assert notes[0]["status"] == "not_run" and "compared on allgather, allreduce" in notes[0]["note"]
    assert notes[1]["status"] == "skipped"
    notes = bench.compare_notes(peers, have_gpu=True, test="allreduce", gpu_buffers=False)
    assert notes[0]["note"] == "NCCL: not run, it is compared on GPU buffers (-d D D) only"
    built = [{**peers[1], "found": True, "where": "/x/libnvshmem_host.so.3", "runner": "/b/axon_nvshmem_peer"}]
    notes = bench.compare_notes(built, have_gpu=True, test="reduce")
    assert notes[0]["status"] == "not_run" and "compared on allgather, allreduce, alltoall, bibw" in notes[0]["note"]
    assert " reduce," not in notes[0]["note"]  # NVSHMEM has no rooted reduce
    notes = bench.compare_notes(built, have_gpu=True, ran=frozenset({"NVSHMEM"}), test="pingping")
    assert notes[0]["status"] == "run" and "stream-ordered host API" in notes[0]["note"]
    unbuilt = [{**built[0], "runner": None, "unavailable": "axon was built without axon_nvshmem_peer (x)"}]
    notes = bench.compare_notes(unbuilt, have_gpu=True, test="allreduce")
    assert notes[0]["status"] == "not_run"
    assert notes[0]["note"].startswith("NVSHMEM: not run, axon was built without axon_nvshmem_peer (x)")
    notes = bench.compare_notes(peers, have_gpu=True, ran=frozenset({"NCCL"}))
    assert notes[0]["status"] == "run" and "/x/libnccl.so.2" in notes[0]["note"]
    detected = bench.detect_peers()
    assert [p["peer"] for p in detected] == ["NCCL", "PyTorch NCCL", "NVSHMEM", "ucx_perftest", "Open MPI"]
    nvshmem = detected[2]
    assert ("unavailable" in nvshmem) == (nvshmem["found"] and nvshmem["runner"] is None)


def test_compare_notes_across_emulated_nodes():
    perftest = {"peer": "ucx_perftest", "found": True, "where": "/u/bin/ucx_perftest", "what": "ucx_perftest",
                "network": True, "runner": "/u/bin/ucx_perftest"}
    nccl = {"peer": "NCCL", "found": True, "where": "/x/libnccl.so.2", "what": "libnccl.so"}
    one_node = bench.compare_notes([nccl, perftest], have_gpu=False, test="latency", gpu_buffers=False)
    assert one_node[1]["note"] == "ucx_perftest: not run, it is compared across emulated nodes only (--emulate-nodes)"
    nodes = bench.compare_notes([nccl, perftest], have_gpu=False, ran=frozenset({"ucx_perftest"}), test="latency",
                                gpu_buffers=False, nodes=True)
    assert nodes[0]["note"] == "NCCL: not run, it is compared on one node (without --emulate-nodes)"
    assert nodes[1]["status"] == "run" and "between the same two emulated nodes" in nodes[1]["note"]
    other = bench.compare_notes([perftest], have_gpu=False, test="pingping", gpu_buffers=False, nodes=True)
    assert other[0]["status"] == "not_run" and "compared on atomic_lat, bw, get_lat, latency, put_bw only" in other[0]["note"]


def test_ucx_perftest_final_line_and_iterations():
    from axon.tools.bench import ucx_perftest_peer as peer
    out = ("+--------------+\n"
           "|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |\n"
           "Final:                 20000     18.657    18.883    19.250        0.40       0.40       52957       52957\n")
    assert peer.parse_final(out) == 19.25  # the overall average
    assert peer.parse_final("connect failed") is None
    assert peer.iterations(8, None, None) == (10000, 100)
    assert peer.iterations(1 << 20, None, None) == (1000, 10)
    assert peer.iterations(1 << 20, 5, 0) == (5, 0)


def test_detect_peers_says_why_nvshmem_cannot_run_without_its_program(monkeypatch):
    monkeypatch.setattr(bench_peers, "_pip_library", lambda package, pattern: f"/x/{package}/lib/lib.so.3")
    monkeypatch.setattr(bench_peers, "find_tool", lambda name: None)
    nvshmem = bench.detect_peers()[2]
    assert nvshmem["found"] and nvshmem["runner"] is None
    assert "built without axon_nvshmem_peer" in nvshmem["unavailable"]
    assert "NVSHMEM_HOME" in nvshmem["unavailable"]
    monkeypatch.setattr(bench_peers, "find_tool", lambda name: f"/b/{name}")
    nvshmem = bench.detect_peers()[2]
    assert nvshmem["runner"] == "/b/axon_nvshmem_peer" and "unavailable" not in nvshmem


# --------------------------------------------------------------------------
# Real runs on the host backend
# --------------------------------------------------------------------------


def _run(test: str, tmp_path, capsys, extra=()) -> tuple[dict, str]:
    out = tmp_path / f"{test}.json"
    rc = bench.main([test, *SHORT, "--json", str(out), *extra])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(out.read_text()), captured.out


def test_atomic_latency_is_one_checked_word(tmp_path, capsys):
    doc, stdout = _run("atomic_lat", tmp_path, capsys)
    assert [r["size"] for r in doc["results"]] == [8]  # whatever -m says
    r = doc["results"][0]
    assert r["wrong"] == 0 and r["iters"] == 20 and r["time_us"] > 0
    assert "fetch_add" in stdout.splitlines()[0]


@pytest.mark.parametrize("test", [t for t in bench.TESTS if t not in bench.COLLECTIVES and t != "atomic_lat"])
def test_real_run_json_round_trip(test, tmp_path, capsys):
    doc, stdout = _run(test, tmp_path, capsys)
    assert doc["tool"] == "axon bench" and doc["schema"] == 1
    assert doc["test"] == test and doc["impl"] == "axon"
    assert doc["label"] == f"axon {test} H H"
    assert doc["metric"] == bench.TESTS[test].metric
    config = doc["config"]
    assert config["placement"] == "H H" and config["backend"] == "host" and config["pes"] == 2
    assert config["validate"] is True and config["iters"] == 20 and config["warmup"] == 2
    assert config["settle_ms"] == 200
    assert config["limit_name"].startswith("memcpy between")
    assert config["sizes"] == SHORT_SIZES
    assert doc["machine"]["hostname"] and doc["machine"]["cpus"] >= 1
    assert [r["size"] for r in doc["results"]] == SHORT_SIZES
    for r in doc["results"]:
        assert r["test"] == test and r["iters"] == 20 and r["warmup"] == 2
        assert r["wrong"] == 0
        for value in (r["time_us"], r["bw_gbs"], r["limit"]["time_us"], r["limit"]["bw_gbs"]):
            assert isinstance(value, (int, float)) and value > 0
    # The OSU-style table: comment lines, a heading with #wrong, one row per size.
    lines = stdout.splitlines()
    assert lines[0].startswith(f"# axon bench {test}:")
    assert any(x.startswith("# Size") and x.rstrip().endswith("#wrong") for x in lines)
    rows = [x for x in lines if not x.startswith("#")]
    assert [int(x.split()[0]) for x in rows] == SHORT_SIZES
    assert all(x.split()[-1] == "0" for x in rows)
    assert "━" not in stdout  # no progress bar when stdout is not a terminal


def test_bandwidth_units_are_consistent(tmp_path, capsys):
    doc, _ = _run("put_bw", tmp_path, capsys)
    for r in doc["results"]:
        # GB/s = 1e9 bytes/s: bytes per microsecond / 1e3.
        assert r["bw_gbs"] == pytest.approx(r["size"] / r["time_us"] / 1e3, rel=1e-3)
    doc, _ = _run("latency", tmp_path, capsys)
    r = doc["results"][0]
    assert r["bw_gbs"] == pytest.approx(r["size"] / r["time_us"] / 1e3, rel=1e-3)


def test_no_validate_and_three_pes(tmp_path, capsys):
    out = tmp_path / "lat.json"
    rc = bench.main(["latency", "-m", "8:64", "-i", "10", "-x", "1", "--pes", "3", "--no-validate",
                     "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    doc = json.loads(out.read_text())
    assert doc["config"]["pes"] == 3 and doc["config"]["validate"] is False
    assert all(r["wrong"] is None and r["time_us"] > 0 for r in doc["results"])
    assert "validation off" in captured.out


def test_compare_skips_every_peer_without_gpu(tmp_path, capsys):
    out = tmp_path / "bw.json"
    rc = bench.main(["bw", "-m", "8:8", "-i", "5", "-x", "1", "--compare", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    for peer, what in (("NCCL", "libnccl.so"), ("PyTorch NCCL", "torch"), ("NVSHMEM", "libnvshmem_host.so")):
        assert any(line.startswith(f"# {peer}: skipped, needs GPUs ({what} ")
                   for line in captured.out.splitlines()), captured.out
    assert "# --compare: peers on this machine" in captured.out
    doc = json.loads(out.read_text())
    # ucx_perftest: across nodes; Open MPI: the two-sided tests only (or not installed)
    assert [c["status"] for c in doc["compare"]][:4] == ["skipped"] * 3 + ["not_run"]
    assert doc["compare"][4]["peer"] == "Open MPI" and doc["compare"][4]["status"] in ("skipped", "not_run")
    assert "# ucx_perftest: not run, it is compared across emulated nodes only (--emulate-nodes)" in captured.out


def test_peers_selects_the_compare_peers(tmp_path, capsys):
    assert bench.parse_peers(None) is None
    assert bench.parse_peers("nccl, NVSHMEM") == frozenset({"NCCL", "NVSHMEM"})
    assert bench.parse_peers("pytorch") == frozenset({"PyTorch NCCL"})
    for bad in ("mpi", "nccl,,x", ","):
        assert bench.main(["bw", "-m", "8:8", "--peers", bad]) == bench.EXIT_USAGE
        assert "--peers takes a comma-separated list of nccl, pytorch, nvshmem, ucx_perftest" in capsys.readouterr().err
    # --peers implies --compare; the peers left out say so, the others as without --peers.
    out = tmp_path / "bw.json"
    rc = bench.main(["bw", "-m", "8:8", "-i", "5", "-x", "1", "--peers", "nccl", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.splitlines()
    assert any(x.startswith("# NCCL: skipped, needs GPUs") for x in lines), captured.out
    for peer in ("PyTorch NCCL", "NVSHMEM"):
        assert any(x.startswith(f"# {peer}: not run, not in --peers (") for x in lines), captured.out
    doc = json.loads(out.read_text())
    assert [c["status"] for c in doc["compare"]] == ["skipped", "not_run", "not_run", "not_run", "not_run"]
    assert bench.parse_peers("ucx_perftest") == frozenset({"ucx_perftest"})


def test_collective_table_with_nccl_prints_both_and_the_ratio():
    header = {"pes": 2, "backend": "gpu", "placement": "D", "validate": True}
    side = lambda t: {"time_us": t, "algbw_gbs": 1.0, "busbw_gbs": 1.0, "wrong": 0}
    rows = [{"impl": "axon", "size": 8, "count": 2, "dtype": "float32", "redop": "sum", "root": 0,
             "algorithm": "oneshot", "out_of_place": side(4.0), "in_place": side(5.0)},
            {"impl": "nccl", "size": 8, "count": 2, "dtype": "float32", "redop": "sum", "root": 0,
             "algorithm": "nccl", "out_of_place": side(10.0), "in_place": side(10.0)}]
    lines = bench.table_lines("allreduce", header, rows, [{"impl": "nccl", "version": "2.28.3"}])
    assert any("(axon)" in x for x in lines) and any("(NCCL 2.28.3)" in x for x in lines)
    assert any(x.split() == ["8", "2.50x", "2.00x"] for x in lines), lines


def test_trials_are_claimed_for_the_rows_the_driver_times_only():
    header = {"pes": 2, "backend": "gpu", "placement": "D", "validate": True, "trials": 5}
    side = lambda t: {"time_us": t, "algbw_gbs": 1.0, "busbw_gbs": 1.0, "wrong": 0}
    row = lambda impl: {"impl": impl, "size": 8, "count": 2, "dtype": "float32", "redop": "sum", "root": 0,
                        "algorithm": impl, "out_of_place": side(4.0), "in_place": side(5.0)}
    lines = bench.table_lines("allreduce", header, [row("axon"), row("nccl"), row("pytorch-nccl")],
                              [{"impl": "nccl", "version": "2.28.3"}])
    heads = [x for x in lines if x.startswith("# 2 PEs")]
    assert len(heads) == 3, lines
    # axon's and the driver's NCCL rows are medians of the trials; PyTorch times its own way.
    assert [x.endswith("the median of 5 trials") for x in heads] == [True, True, False], heads


def test_trials_run_every_size_that_many_times(tmp_path, capsys):
    doc, out = _run("allreduce", tmp_path, capsys, ("--trials", "3", "-m", "8:64"))
    assert doc["config"]["trials"] == 3
    assert [r["size"] for r in doc["results"]] == [8, 16, 32, 64]
    assert all(r["wrong"] == 0 and r["out_of_place"]["time_us"] > 0 for r in doc["results"])
    assert "time: the slowest PE's average per call, the median of 3 trials" in out


def test_collective_row_says_what_the_kernel_occupies():
    side = {"time_us": 4.0, "algbw_gbs": 1.0, "busbw_gbs": 1.0, "wrong": 0}
    row = {"impl": "axon", "size": 1 << 20, "count": 1 << 18, "dtype": "float32", "redop": "sum", "root": 0,
           "algorithm": "oneshot", "out_of_place": side, "in_place": side, "blocks": 16,
           "threads_per_block": 128, "blocks_per_sm": 4, "sms": 4.0, "device_sms": 132}
    assert bench.table_lines("allreduce", None, [row])[5].split()[13:] == \
        ["oneshot", "4", "SMs", "=", "16", "blocks", "x", "128", "/", "4", "an", "SM"]
    # CUDA could not say how many an SM holds: the kernel's shape alone.
    unknown = dict(row, blocks_per_sm=0, sms=0.0)
    assert bench.table_lines("allreduce", None, [unknown])[5].split()[13:] == ["oneshot", "16", "blocks", "x", "128"]
    # The host paths and the peers run no kernel of axon's: nothing after the algorithm.
    host = {k: v for k, v in row.items() if k not in ("blocks", "threads_per_block", "blocks_per_sm", "sms")}
    assert bench.table_lines("allreduce", None, [host])[5].split()[13:] == ["oneshot"]


def test_collective_table_with_pytorch_shows_missing_forms_as_dashes():
    header = {"pes": 4, "backend": "gpu", "placement": "D", "validate": True}
    side = lambda t: {"time_us": t, "algbw_gbs": 1.0, "busbw_gbs": 1.5, "wrong": 0}
    none = {"time_us": None, "algbw_gbs": None, "busbw_gbs": None, "wrong": None}
    rows = [{"impl": "axon", "size": 64, "count": 16, "dtype": "float32", "redop": "sum", "root": 0,
             "algorithm": "oneshot", "out_of_place": side(4.0), "in_place": side(5.0)},
            {"impl": "pytorch-nccl", "size": 64, "count": 16, "dtype": "float32", "redop": "sum", "root": 0,
             "algorithm": "pytorch-nccl", "out_of_place": none, "in_place": side(40.0)},
            {"impl": "pytorch-symm-mem", "size": 64, "count": 16, "dtype": "float32", "redop": "sum",
             "root": 0, "algorithm": "pytorch-symm-mem", "out_of_place": side(12.0), "in_place": side(20.0)}]
    peers = [{"impl": "pytorch-nccl", "version": "torch 2.11, NCCL 2.28.3"}]
    lines = bench.table_lines("allreduce", header, rows, peers)
    assert any("(PyTorch NCCL (torch 2.11, NCCL 2.28.3))" in x for x in lines), lines
    assert any("(PyTorch symmetric memory)" in x for x in lines)
    torch_row = next(x for x in lines if "pytorch-nccl" in x)
    # nccl-tests' columns: size count type redop root, out-of-place (5:9), in-place (9:13), then algo.
    assert torch_row.split()[5:9] == ["-", "-", "-", "-"]  # no out-of-place all_reduce in PyTorch
    assert torch_row.split()[13] == "pytorch-nccl"
    ratios = [x.split() for x in lines if x.split()[:1] == ["64"] and x.split()[-1].endswith("x")]
    assert ratios == [["64", "-", "8.00x"], ["64", "3.00x", "4.00x"]]


def test_point_to_point_table_with_a_peer_prints_its_rows_and_the_ratio():
    header = {"pes": 2, "backend": "gpu", "placement": "D D", "validate": True}
    rows = [{"size": 8, "time_us": 2.0, "bw_gbs": 0.004, "wrong": 0},
            {"impl": "pytorch-nccl", "size": 8, "time_us": 30.0, "bw_gbs": 0.0003, "wrong": 0}]
    lines = bench.table_lines("latency", header, rows, [{"impl": "pytorch-nccl", "version": "torch 2.11"}])
    axon_rows = [x for x in lines if not x.startswith("#") and x.strip()]
    assert axon_rows[0].split() == ["8", "2.00", "0"]
    assert axon_rows[1].split() == ["8", "30.00", "15.00x"]
    assert any(x.startswith("# PyTorch NCCL (torch 2.11): the same test") for x in lines)


def test_torch_peer_command_carries_the_request():
    args = bench.build_parser().parse_args(["allgather", "-m", "8:64", "-i", "7", "-x", "1", "--pes", "4",
                                            "--dtype", "int32", "--op", "max", "--no-validate"])
    req = bench.validate(args)
    cmd = bench.torch_peer_command(req, [8, 64], 12345)
    assert cmd[cmd.index("-n") + 1] == "4"
    tail = cmd[cmd.index("axon.tools.bench.torch_peer") + 1:]
    assert tail == ["allgather", "--sizes", "8,64", "--port", "12345", "-i", "7", "-x", "1",
                    "--dtype", "int32", "--op", "max", "--root", "0", "--no-validate"]
    from axon.tools.bench import torch_peer
    parsed = torch_peer.parse(tail)
    assert parsed.sizes == [8, 64] and parsed.iters == 7 and parsed.validate is False


def test_nvshmem_peer_command_carries_the_request():
    args = bench.build_parser().parse_args(["reduce_scatter", "-m", "8:64", "-i", "7", "--pes", "4",
                                            "--dtype", "bfloat16", "--op", "min"])
    cmd = bench.nvshmem_peer_command(bench.validate(args), [8, 64], "/b/axon_nvshmem_peer")
    assert cmd[cmd.index("-n") + 1] == "4"
    assert cmd[cmd.index("/b/axon_nvshmem_peer") + 1:] == [
        "reduce_scatter", "--sizes", "8,64", "-i", "7", "--dtype", "bfloat16", "--op", "min", "--root", "0"]
    args = bench.build_parser().parse_args(["bibw", "-m", "1K", "--no-validate"])
    cmd = bench.nvshmem_peer_command(bench.validate(args), [1, 2], "/b/p")
    assert cmd[cmd.index("/b/p") + 1:] == ["bibw", "--sizes", "1,2", "--no-validate"]


def test_via_host_reaches_the_driver_and_the_label():
    req = bench.validate(bench.build_parser().parse_args(["pingping", "--via-host"]))
    assert req.via_host and "--via-host" in req.driver_args()
    doc = bench.bench_document(req, {"placement": "D D"}, [], ["cmd"], None)
    assert doc["label"] == "axon pingping D D via host"


@pytest.mark.parametrize("test", list(bench.COLLECTIVES))
def test_collectives_nccl_tests_format(test, tmp_path, capsys):
    out = tmp_path / f"{test}.json"
    rc = bench.main([test, "-m", "64:64K", "-f", "32", "-i", "5", "-x", "1", "--pes", "3", "--dtype", "int32",
                     "--op", "max", "--root", "2", "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    doc = json.loads(out.read_text())
    assert doc["test"] == test and doc["config"]["pes"] == 3 and doc["config"]["kind"] == "collective"
    factor = {"allreduce": 4 / 3, "broadcast": 1, "reduce": 1}.get(test, 2 / 3)
    assert doc["config"]["bus_factor"] == pytest.approx(factor, rel=1e-5)
    assert len(doc["results"]) == 3
    for r in doc["results"]:
        assert r["dtype"] == "int32" and r["redop"] == "max" and r["root"] == 2 and r["wrong"] == 0
        assert r["count"] * 4 == r["size"] and r["algorithm"]
        for side in (r["out_of_place"], r["in_place"]):
            assert side["wrong"] == 0 and side["time_us"] > 0
            assert side["algbw_gbs"] == pytest.approx(r["size"] / side["time_us"] / 1e3, rel=1e-3)
            assert side["busbw_gbs"] == pytest.approx(side["algbw_gbs"] * factor, rel=1e-3)
    lines = captured.out.splitlines()
    assert lines[0].startswith(f"# axon bench {test} (axon):")
    rows = [x for x in lines if not x.startswith("#")]
    assert [int(x.split()[0]) for x in rows] == [r["size"] for r in doc["results"]]
    assert all(x.split()[-2] == "0" and x.split()[-6] == "0" for x in rows)  # #wrong, both sides
    assert all(x.split()[-1] for x in rows)  # the algorithm, after nccl-tests' columns
    assert lines[-3:-1] == ["# Out of bounds values : 0 OK", lines[-2]] and lines[-1] == "#"
    avg = [float(s) for r in doc["results"] for s in (r["out_of_place"]["busbw_gbs"], r["in_place"]["busbw_gbs"])]
    assert lines[-2].startswith("# Avg bus bandwidth    : ")
    assert float(lines[-2].split()[-1]) == pytest.approx(sum(avg) / len(avg), rel=1e-4)


_NVSHMEM_PEER = bench.find_tool(bench.NVSHMEM_PEER)
needs_nvshmem_peer = pytest.mark.skipif(_NVSHMEM_PEER is None,
                                        reason="axon_nvshmem_peer not built (NVSHMEM not found at build time)")


def _lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.startswith("{")]


@needs_nvshmem_peer
@pytest.mark.parametrize("argv, message", [
    ([], "no test given"),
    (["reduce", "--sizes", "8"], "test 'reduce' is not one NVSHMEM is compared on"),
    (["allreduce"], "--sizes needs at least one size"),
    (["allreduce", "--sizes", "8,x"], "--sizes: 'x' is not a size"),
    (["allreduce", "--sizes", "8", "--dtype", "complex"], "--dtype 'complex' is not one of int8"),
    (["bw", "--sizes", "8", "--window", "3"], "unknown option --window"),
])
def test_nvshmem_peer_rejects_bad_requests_in_one_line(argv, message):
    res = subprocess.run([str(_NVSHMEM_PEER), *argv], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res.stderr
    (line,) = _lines(res.stdout)
    assert line["type"] == "error" and line["usage"] is True and message in line["message"], line


@needs_nvshmem_peer
def test_nvshmem_peer_without_gpus_says_so_on_every_pe():
    # The host backend stands for a machine without GPUs: the peer stops before NVSHMEM starts.
    res = subprocess.run([sys.executable, "-m", "axon", "run", "-n", "2", "--no-prefix", str(_NVSHMEM_PEER),
                          "allreduce", "--sizes", "8"], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert res.returncode != 0
    (line,) = _lines(res.stdout)
    assert line["type"] == "error" and line["usage"] is False
    assert line["message"].startswith("NVSHMEM peer: it needs GPUs: ") and "AXON_BACKEND=host" in line["message"]
