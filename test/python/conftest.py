"""The chorus.torch tests run under mpirun: every rank runs the same tests in
the same order (each test's collectives pair up across ranks). Chorus starts
once for the session and stops at its end."""
import os

import pytest
import torch

import chorus.torch as hvd

hvd.init()


def pytest_sessionfinish(session, exitstatus):
    hvd.shutdown()


@pytest.fixture
def rank():
    return hvd.rank()


@pytest.fixture
def size():
    return hvd.size()


def rank_tensor(r, shape, dtype, low=-8, high=8, seed=0):
    """Rank r's input: small integers, so that sums and products of a few
    ranks are exact in every dtype (even bfloat16 has 8 bits of mantissa)."""
    g = torch.Generator().manual_seed(1000 * seed + r)
    if dtype == torch.uint8:
        low = 0
    return torch.randint(low, high, shape, generator=g).to(dtype)


def ulp_rtol(dtype):
    """One rounding of an average (a sum divided, or multiplied by 1/n):
    within 2 units in the last place of the result."""
    return 2 * torch.finfo(dtype).eps if dtype.is_floating_point else 0
