"""Collectives over MPI for the numpy backend, bounded in time.

mpi4py (with a pip-installed MPICH: `pip install "d2s[dist]"`) is imported
on first use, never by `import d2s`. Every collective is non-blocking and
waited for with a deadline (`D2S_COLLECTIVE_TIMEOUT` seconds, 300 by
default): ranks that run different programs — one waits in a collective
another never starts — raise a clear `CollectiveTimeout` instead of hanging
forever (the launcher then stops the others).
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..core.tensor import Tensor
from . import env

_OPS = ("sum", "max", "min", "prod", "avg")


class CollectiveTimeout(TimeoutError):
    """A collective did not complete in time on this rank (see module doc)."""


def mpi():
    """The mpi4py `MPI` module (ImportError with the install hint when missing)."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError('data-parallel over MPI needs mpi4py and an MPI: '
                          'pip install "d2s[dist]"') from e
    return MPI


def world():
    """MPI's world communicator, checked against the world size the launcher set."""
    comm = mpi().COMM_WORLD
    expected = env.get_world_size()
    if comm.Get_size() != expected:
        raise RuntimeError(
            f"MPI sees {comm.Get_size()} process(es) but this process was started as one of "
            f"{expected}: start them with `mpiexec -n {expected} python script.py` or "
            f"`python -m d2s.distributed.launch --nproc_per_node {expected} script.py`")
    return comm


def timeout_seconds():
    return float(os.environ.get("D2S_COLLECTIVE_TIMEOUT", "300"))


def wait_all(requests, what, timeout=None):
    """Wait for MPI requests, raising CollectiveTimeout after `timeout` s."""
    MPI = mpi()
    timeout = timeout_seconds() if timeout is None else timeout
    deadline = time.monotonic() + timeout
    pause = 0.0
    while not MPI.Request.Testall(requests):
        if time.monotonic() > deadline:
            raise CollectiveTimeout(
                f"rank {env.get_rank()}: {what} did not complete within {timeout:g} s: the "
                "ranks are probably running different programs (mismatched collectives) or "
                "one of them stopped (D2S_COLLECTIVE_TIMEOUT sets the bound)")
        time.sleep(pause)
        pause = min(0.002, pause + 1e-5)  # spin first: most allreduces finish in microseconds


def allreduce_arrays(arrays, op="sum", what="allreduce", comm=None):
    """Reduce each array across the ranks (a new array each), all at once."""
    MPI = mpi()
    comm = comm or world()
    mpi_op = {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
              "prod": MPI.PROD}[op]
    sends = [np.ascontiguousarray(a) for a in arrays]
    recvs = [np.empty_like(a) for a in sends]
    requests = [comm.Iallreduce(s, r, op=mpi_op) for s, r in zip(sends, recvs)]
    wait_all(requests, what)
    if op == "avg":
        recvs = [r / comm.Get_size() if r.dtype.kind == "f" else r // comm.Get_size()
                 for r in recvs]
    return recvs


def all_reduce(tensor, op="sum"):
    """PaddlePaddle's `all_reduce`: `tensor` becomes the reduction of every
    rank's value (in place: its array is rebound). One process: unchanged."""
    if op not in _OPS:
        raise ValueError(f"all_reduce: op must be one of {list(_OPS)}, got {op!r}")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"all_reduce: expected a d2s Tensor, got {type(tensor).__name__}")
    if env.get_world_size() == 1:
        return tensor
    (tensor._value,) = allreduce_arrays([tensor._value], op, "all_reduce")
    return tensor


def barrier():
    """Wait until every rank reaches this point (bounded like every collective)."""
    if env.get_world_size() > 1:
        wait_all([world().Ibarrier()], "barrier")
