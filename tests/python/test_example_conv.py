"""examples/halo_conv, the spatially parallel convolution, run through the launcher as a user runs it.

Every run passes --check, so the program itself demands that its gathered image is bit-identical to a
serial convolution of the whole image on one PE (every mode accumulates the taps in one order with
explicit fused multiply-adds). The .npy it writes is compared here with an independent NumPy
convolution of the same problem in float64: NumPy has no float32 fused multiply-add, so that
comparison is to a tolerance (1e-5 on values in [0, 1)), and bit identity rests on --check. The
host-backend modes run on 1 to 3 PEs with heights that do not divide evenly; the GPU modes (marked
gpu) where the GPU backend can start.

    PYTHONPATH=python python -m pytest tests/python/test_example_conv.py
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from test_examples import example, launch
from test_gpu import _GPU_OK, _GPU_WHY_NOT


def initial_image(height: int, width: int) -> np.ndarray:
    """initialPixel of conv_problem.hpp: a uint32 hash of (row, col), its top 24 bits over 2^24."""
    r, c = np.meshgrid(np.arange(height, dtype=np.uint32), np.arange(width, dtype=np.uint32), indexing="ij")
    h = (r * np.uint32(0x9E3779B1)) ^ (c * np.uint32(0x85EBCA77))
    h ^= h >> np.uint32(15)
    h *= np.uint32(0x2C1B3C6D)
    h ^= h >> np.uint32(12)
    h *= np.uint32(0x297A2D39)
    h ^= h >> np.uint32(15)
    return (h >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)


def binomial_filter(k: int) -> np.ndarray:
    b = np.array([1.0])
    for _ in range(k - 1):
        b = np.convolve(b, [1.0, 1.0])
    return np.outer(b, b) / 4.0 ** (k - 1)


def conv_reference(height: int, width: int, k: int, layers: int) -> np.ndarray:
    """The problem of examples/halo_conv in float64: `layers` convolutions with the binomial
    filter, zero padding outside the image."""
    w, r = binomial_filter(k), k // 2
    img = initial_image(height, width).astype(np.float64)
    for _ in range(layers):
        padded = np.pad(img, r)
        img = sum(w[i, j] * padded[i:i + height, j:j + width] for i in range(k) for j in range(k))
    return img


def run_conv(tmp_path, npes: int, mode: str, height: int, width: int, k: int, layers: int, *extra: str,
             env: dict | None = None) -> np.ndarray:
    out = tmp_path / f"conv_{mode}_{npes}_{k}.npy"
    res = launch(npes, str(example("halo_conv")), "--height", str(height), "--width", str(width), "--filter", str(k),
                 "--layers", str(layers), "--mode", mode, "--out", str(out), "--check", "--json", *extra, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"identical (0 of {height * width} values differ" in res.stdout, res.stdout
    assert (f"mode {mode}, {height} x {width} image, {k}x{k} filter, {layers} layers on {npes} PEs"
            in res.stdout), res.stdout
    line = next(ln for ln in res.stdout.splitlines() if '"app": "halo_conv"' in ln)
    result = json.loads(line.split("] ", 1)[1])
    assert result["wrong"] == 0 and result["pes"] == npes and result["sec_per_layer"] > 0
    got = np.load(out)
    assert got.shape == (height, width) and got.dtype == np.float32
    assert result["image_sum"] == pytest.approx(float(got.astype(np.float64).sum()), rel=1e-12)
    return got


@pytest.mark.parametrize("mode", ["host", "twosided"])
@pytest.mark.parametrize("npes", [1, 2, 3])
def test_conv_host_modes_match_numpy(tmp_path, mode, npes):
    height, width, k, layers = 29, 23, 5, 7  # 29 rows: slabs of 15, 14 and of 10, 10, 9
    got = run_conv(tmp_path, npes, mode, height, width, k, layers)
    np.testing.assert_allclose(got, conv_reference(height, width, k, layers), rtol=0, atol=1e-5)
    assert 0 < got.min() and got.max() < 1 and got[0, 0] < got[height // 2, width // 2]  # the padding darkens


def test_conv_widest_filter_on_the_thinnest_slabs(tmp_path):
    # 22 rows on 3 PEs: slabs of 8, 7, 7; a 15x15 filter needs all 7 rows of a neighbour.
    got = run_conv(tmp_path, 3, "host", 22, 19, 15, 3)
    np.testing.assert_allclose(got, conv_reference(22, 19, 15, 3), rtol=0, atol=1e-5)


def test_conv_one_by_one_filter_keeps_the_image(tmp_path):
    got = run_conv(tmp_path, 4, "twosided", 9, 31, 1, 4)
    assert np.array_equal(got, initial_image(9, 31))  # weight 1.0: every layer copies, exactly


@pytest.mark.parametrize("args, message", [
    (["--mode", "fast"], "unknown --mode 'fast'"),
    (["--filter", "4"], "--filter takes an odd size from 1 to 15, not 4"),
    (["--filter", "17"], "--filter takes an odd size from 1 to 15, not 17"),
    (["--height", "0"], "--height takes a positive integer, not '0'"),
    (["--layers"], "--layers needs a value"),
    (["--bogus"], "unknown argument '--bogus'"),
    (["--check"], "--check would convolve 1.68e+11 multiply-adds"),
])
def test_conv_bad_arguments_are_refused(args, message):
    res = launch(2, str(example("halo_conv")), *args)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr
    assert "usage: halo_conv" in res.stdout + res.stderr


def test_conv_refuses_slabs_thinner_than_the_halo():
    res = launch(3, str(example("halo_conv")), "--height", "20", "--width", "8", "--filter", "15", "--mode", "host")
    assert res.returncode != 0
    assert ("a 20-row image over 3 PEs gives slabs of 6 rows, thinner than the 7 halo rows a 15x15 filter needs"
            in res.stdout + res.stderr)


def test_conv_refuses_an_image_too_large_to_address():
    res = launch(1, str(example("halo_conv")), "--height", "1", "--width", "4611686018427387904", "--filter", "1",
                 "--mode", "host", env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert "image is too large: at most 1073741824 rows and columns" in res.stdout + res.stderr


def test_conv_refuses_more_pes_than_rows():
    res = launch(3, str(example("halo_conv")), "--height", "2", "--width", "8", "--filter", "1", "--mode", "host")
    assert res.returncode != 0
    assert "halo_conv: error: a 2-row image cannot be split over 3 PEs" in res.stdout + res.stderr


def test_conv_device_mode_names_the_missing_gpu_on_the_host_backend():
    res = launch(2, str(example("halo_conv")), "--mode", "device", "--height", "16", "--width", "8", "--layers", "2",
                 env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert "--mode device needs the GPU backend, which is off here: " in res.stdout + res.stderr


def test_conv_defaults_to_host_mode_on_the_host_backend():
    res = launch(2, str(example("halo_conv")), "--height", "12", "--width", "8", "--layers", "2",
                 env={"AXON_BACKEND": "host"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "halo_conv: mode host, 12 x 8 image, 5x5 filter, 2 layers on 2 PEs" in res.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("mode, extra", [("device", ()), ("device", ("--no-graph",)), ("twosided", ())])
@pytest.mark.parametrize("npes", [1, 2, 3])
def test_conv_gpu_modes_match_numpy(tmp_path, mode, extra, npes):
    # 300 columns: two column tiles of the kernel; 50 rows (slabs of 50 / 25, 25 / 17, 17, 16, in
    # bands of 16 rows): a last band of 2 rows on 1 PE and of 1 row on 3, shorter than R = 3, so
    # that the band before it reads the ghost rows below too and must wait for them; an odd layer
    # count: the graph's last layer is launched alone.
    height, width, k, layers = 50, 300, 7, 5
    got = run_conv(tmp_path, npes, mode, height, width, k, layers, *extra, env={"AXON_BACKEND": "auto"})
    np.testing.assert_allclose(got, conv_reference(height, width, k, layers), rtol=0, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("k", [1, 3, 15])
def test_conv_device_mode_every_filter_size_class(tmp_path, k):
    got = run_conv(tmp_path, 2, "device", 40, 70, k, 4, env={"AXON_BACKEND": "auto"})
    np.testing.assert_allclose(got, conv_reference(40, 70, k, 4), rtol=0, atol=1e-5)
