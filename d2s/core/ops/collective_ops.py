"""`c_allreduce_sum` (PaddlePaddle's op name): a value summed over every
process of the data-parallel world, inside a computation.

Ops that need statistics of the global batch (SyncBatchNorm's mean and
variance) are written with it, so eager code, a converted program and its
gradient all see the same sum: each process's output depends on every
process's input with derivative one, so the cotangent is itself summed
across processes (the vjp is the op again), as in Paddle's
`c_allreduce_sum` grad and PyTorch's SyncBatchNorm backward.

The core never imports the collectives' library: `d2s.distributed`
installs the host reduction (`set_process_sum`) when it is loaded. The op
is stateful (a communication: never folded, deduplicated or dropped) and
runs on the host; a compiling backend runs a program holding it on numpy
(its processes reduce through SPMD shardings instead: `reshard`).
"""
from __future__ import annotations

import os

from ..dispatch import bind
from ..registry import register_op
from ._base import lift, same_infer

__all__ = ["c_allreduce_sum", "set_process_sum", "process_count"]

_process_sum = None  # array -> array summed over every process (d2s.distributed)

# the process-count variables the launchers set (d2s.distributed.env reads the same)
_SIZE_VARS = ("D2S_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def process_count():
    """How many processes were started together (1 alone), from the launcher's
    environment, without loading the collectives' library."""
    for name in _SIZE_VARS:
        value = os.environ.get(name)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return 1


def set_process_sum(fn):
    """Install the host all-reduce `fn(array) -> summed array` (d2s.distributed)."""
    global _process_sum
    _process_sum = fn


def _kernel(x):
    if process_count() == 1:  # the sum over one process
        return x.copy()
    if _process_sum is None:
        raise RuntimeError("c_allreduce_sum: no process group to reduce over; start the "
                           "processes with `python -m d2s.distributed.launch` and call "
                           "d2s.distributed.init_parallel_env() first")
    return _process_sum(x)


def _vjp(g, out, x):
    return (bind("c_allreduce_sum", g),)


register_op("c_allreduce_sum", _kernel, same_infer, vjp=_vjp, stateful=True)


def c_allreduce_sum(x):
    """`x` summed over every process (one op of the program when traced)."""
    return bind("c_allreduce_sum", lift(x))
