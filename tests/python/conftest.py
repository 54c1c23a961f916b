"""pytest setup for the faiss_ext Python tests.

Tests marked `gpu` need a CUDA device and are skipped without one. CTest runs them
as a separate entry with --no-device-exit-code=77: without a device the session
stops at once with status 77, which CTest reports as Skipped (pytest's own status 5
means "no tests collected" and must not stand for that).

Under compute-sanitizer (scripts/sanitize-gpu-suites.sh sets FAISS_EXT_SANITIZE=1) the
GPU tests run smaller: `from conftest import small_under_sanitizer`.
"""

import os
import random

import numpy as np
import pytest

import faiss_ext


def under_sanitizer():
    """Whether the tests run under compute-sanitizer, which slows kernels down tenfold
    or more (tests/TestUtil.h's underSanitizer)."""
    value = os.environ.get("FAISS_EXT_SANITIZE", "")
    return value != "" and value[0] != "0"


def small_under_sanitizer(n, small):
    """A size of a test (vectors, queries, rounds, a parametrization's values): `n`, or
    `small` under compute-sanitizer."""
    return small if under_sanitizer() else n


def pytest_addoption(parser):
    parser.addoption(
        "--no-device-exit-code", type=int, default=None,
        help="exit with this status before running anything when there is no CUDA device")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def pytest_sessionstart(session):
    code = session.config.getoption("--no-device-exit-code")
    if code is not None and faiss_ext.get_num_gpus() == 0:
        pytest.exit("no CUDA device: GPU tests skipped", code)


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") and faiss_ext.get_num_gpus() == 0:
        pytest.skip("no CUDA device")


@pytest.fixture(scope="session")
def res():
    """One GpuResources shared by the GPU tests (small scratch, to exercise paging)."""
    return faiss_ext.GpuResources(device=0, temp_memory_bytes=64 << 20)


@pytest.fixture
def seed(request):
    """A seed per test, printed so that a failure can be replayed
    (FAISS_EXT_TEST_SEED=<seed> pytest ...)."""
    value = int(os.environ.get("FAISS_EXT_TEST_SEED", random.randrange(1 << 31)))
    print(f"{request.node.name}: seed {value}")
    return value


@pytest.fixture
def rng(seed):
    return np.random.default_rng(seed)
