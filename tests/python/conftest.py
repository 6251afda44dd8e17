"""Shared set-up of the Python tests.

The tests that are not marked `gpu` exercise the host backend, also on a machine with a GPU:
AXON_BACKEND=host is the default for this process and every PE it starts. The GPU tests
(test_gpu.py) set AXON_BACKEND=gpu explicitly where they need the GPU backend.
"""

import os

import pytest

os.environ.setdefault("AXON_BACKEND", "host")

# Variables through which a launcher (torchrun, Slurm, Open MPI, MPICH, axon run) names the PE.
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                 "AXON_STORE_ADDR")


@pytest.fixture
def single_pe(monkeypatch):
    """Environment for axon.init() as a world of one in this process, whatever launcher
    variables the test runner has. Yields monkeypatch (to set AXON_BACKEND, ...) and finalizes
    axon after the test if it is still initialised."""
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AXON_RANK", "0")
    monkeypatch.setenv("AXON_WORLD_SIZE", "1")
    monkeypatch.setenv("AXON_TIMEOUT", "5")
    yield monkeypatch
    import axon  # here, not at the top: the launcher tests must run without the extension

    if axon.is_initialized():
        axon.finalize()


def pytest_collection_modifyitems(session, config, items):
    """Runs the tests of the never-initialised state first.

    A process is "before init" only until its first axon.init(): afterwards calls fail with
    "after finalize()" instead. Several files initialise axon in this process (a world of one),
    so the tests that check the "before init" errors must not depend on the order of the files.
    """
    items.sort(key=lambda item: 0 if item.name.startswith("test_calls_before_init") else 1)
