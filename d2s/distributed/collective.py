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

from ..core.ops.collective_ops import set_process_sum
from ..core.tensor import Tensor
from . import env

_OPS = ("sum", "max", "min", "prod", "avg")


class ReduceOp:
    """PaddlePaddle's reduction names for `all_reduce` (the strings "sum",
    "max", "min", "prod", "avg" are accepted too)."""
    SUM, MAX, MIN, PROD, AVG = 0, 1, 2, 3, 4


_OP_NAMES = dict(zip((ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.AVG),
                     _OPS))


def _op_name(op, what):
    name = op if isinstance(op, str) else _OP_NAMES.get(op) if not isinstance(op, bool) else None
    if name not in _OPS:
        raise ValueError(f"{what}: op must be a ReduceOp (SUM, MAX, MIN, PROD, AVG) or one of "
                         f"{list(_OPS)}, got {op!r}")
    return name


def _check_tensor(tensor, what):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what}: expected a d2s Tensor, got {type(tensor).__name__}")


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


def _process_sum(array):
    """The host reduction behind the `c_allreduce_sum` op (SyncBatchNorm)."""
    return allreduce_arrays([array], "sum", "c_allreduce_sum")[0]


set_process_sum(_process_sum)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """PaddlePaddle's `all_reduce`: `tensor` becomes the reduction of every
    rank's value (in place: its array is rebound). One process: unchanged.
    `group` must be None (the whole world); `sync_op` is accepted: the call
    always completes before it returns."""
    op = _op_name(op, "all_reduce")
    _check_tensor(tensor, "all_reduce")
    _whole_world(group, "all_reduce")
    if env.get_world_size() == 1:
        return tensor
    (tensor._value,) = allreduce_arrays([tensor._value], op, "all_reduce")
    return tensor


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """PaddlePaddle's `all_gather`: `tensor_list` (a list, emptied first)
    receives every rank's `tensor`, in rank order. Every rank's tensor must
    have the same shape and dtype (checked: a clear error, not garbage)."""
    _check_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather: tensor_list must be a list, got "
                        f"{type(tensor_list).__name__}")
    _whole_world(group, "all_gather")
    value = np.ascontiguousarray(tensor._value)
    if env.get_world_size() == 1:
        gathered = [value]
    else:
        comm = world()
        layouts = comm.allgather((value.shape, value.dtype.str))
        if any(layout != layouts[0] for layout in layouts):
            raise ValueError(f"all_gather: the ranks' tensors differ in shape or dtype: "
                             f"{[(list(s), d) for s, d in layouts]}")
        out = np.empty((comm.Get_size(),) + value.shape, value.dtype)
        wait_all([comm.Iallgather(value, out)], "all_gather")
        gathered = list(out)
    tensor_list.clear()
    tensor_list.extend(Tensor._from_array(np.array(v), True) for v in gathered)
    return tensor_list


def broadcast(tensor, src, group=None, sync_op=True):
    """PaddlePaddle's `broadcast`: every rank's `tensor` becomes rank `src`'s
    value (in place: its array is rebound)."""
    _check_tensor(tensor, "broadcast")
    _whole_world(group, "broadcast")
    size = env.get_world_size()
    if isinstance(src, bool) or not isinstance(src, (int, np.integer)) or not 0 <= src < size:
        raise ValueError(f"broadcast: src must be a rank in [0, {size}), got {src!r}")
    if size == 1:
        return tensor
    value = np.ascontiguousarray(tensor._value)
    buf = value.copy() if env.get_rank() == src else np.empty_like(value)
    wait_all([world().Ibcast(buf, root=int(src))], "broadcast")
    tensor._value = buf
    return tensor


def _whole_world(group, what):
    if group is not None:
        raise NotImplementedError(f"{what}: group={group!r}: collectives run over the whole "
                                  f"world (group=None); sub-groups are not built")


def barrier():
    """Wait until every rank reaches this point (bounded like every collective)."""
    if env.get_world_size() > 1:
        wait_all([world().Ibarrier()], "barrier")
