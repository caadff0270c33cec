"""`DataParallel`: one model per process, gradients averaged over MPI.

Each process feeds its own shard of the batch. When a backward pass runs
through the wrapped layer's outputs, it ends (every gradient accumulated,
see `core.autograd.queue_callback`) with the gradients of the layer's
trainable parameters averaged across the processes — so `optimizer.step()`
sees, on every process, the gradient of the whole batch's mean loss, and
the replicas stay identical.

The averaging is bucketed: gradients are packed, by dtype, into flat
buffers of up to `comm_buffer_size` MB, each reduced by one MPI allreduce,
all in flight at once. A first, small allreduce checks that the processes
agree on the parameters (a clear error otherwise) and tells which
parameters have a gradient on any process (a parameter no process
differentiated keeps `grad = None`, as in a single process; one that only
some did gets zeros elsewhere). With one process it is a no-op.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..core import autograd, state
from ..core.dispatch import Symbolic
from ..core.registry import OpDef
from ..core.tensor import Tensor
from ..nn.layer import Layer
from . import collective, env


class DataParallel(Layer):
    """PaddlePaddle's `DataParallel(layers, comm_buffer_size=25, ...)`: call it
    as the wrapped layer; its `state_dict` and parameters are the layer's.

    `last_comm_buffer_size` and `find_unused_parameters` are accepted for
    PaddlePaddle's signature; there is no overlap of communication with the
    backward pass to tune, and unused parameters are found by the check
    described in the module docstring."""

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: expected a d2s.nn.Layer, got {type(layers).__name__}")
        if comm_buffer_size <= 0:
            raise ValueError(f"DataParallel: comm_buffer_size must be > 0 MB, "
                             f"got {comm_buffer_size}")
        self._layers = layers
        self._bucket_bytes = int(comm_buffer_size * 2 ** 20)
        self._world = env.get_world_size()
        self._comm = collective.world() if self._world > 1 else None
        self._sync_op = OpDef("data_parallel_sync", lambda x: x, None, vjp=self._sync_vjp)
        self.syncs = 0  # gradient averagings done (what tests and users can check)

    # ---- calling ---------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        outputs = self._layers(*inputs, **kwargs)
        if self._world == 1 or not state._tls.grad_enabled:
            return outputs
        return _map_tensors(outputs, self._mark)

    def _mark(self, t):
        """`t` through an identity node whose gradient rule queues the averaging."""
        if isinstance(t, Symbolic):
            # A backward inside a program would never average: refuse, rather
            # than train the replicas apart.
            raise RuntimeError(
                "DataParallel: the wrapped layer is being traced into a program (to_static "
                "of the DataParallel wrapper or of a whole training step); gradients would "
                "not be averaged across processes. Convert the inner layer instead "
                "(DataParallel(d2s.jit.to_static(layer))) and keep backward and the "
                "optimizer step eager")
        if not isinstance(t, Tensor) or t.stop_gradient:
            return t
        out = Tensor._from_array(t._value, stop_gradient=False)
        autograd.record(self._sync_op, [t], {}, [out], [t._value])
        return out

    def _sync_vjp(self, g, out, x):
        autograd.queue_callback(self.average_gradients)
        return (g,)

    # ---- averaging -------------------------------------------------------------------
    def average_gradients(self):
        """Average the trainable parameters' gradients across the processes
        (done automatically at the end of each backward pass through this layer)."""
        if self._world == 1:
            return
        params = [p for p in self._layers.parameters() if not p.stop_gradient]
        has_grad = self._agree(params)
        live = [p for p, h in zip(params, has_grad) if h]
        for p in live:
            if p.grad is None:
                p.grad = Tensor._from_array(np.zeros(p.shape, p.dtype))
        buckets = _buckets(live, self._bucket_bytes)
        flats = [np.concatenate([p.grad._value.astype(p.dtype, copy=False).reshape(-1)
                                 for p in bucket]) for bucket in buckets]
        sums = collective.allreduce_arrays(flats, "sum", f"gradient allreduce ({len(flats)} "
                                           f"bucket(s))", self._comm)
        for bucket, total in zip(buckets, sums):
            total = total / self._world
            at = 0
            for p in bucket:
                n = p.size
                p.grad = Tensor._from_array(total[at:at + n].reshape(p.shape).copy())
                at += n
        self.syncs += 1

    def _agree(self, params):
        """Which parameters have a gradient on any process; a clear error when
        the processes hold different parameters (different programs)."""
        layout = ";".join(f"{p.dtype.str}{list(p.shape)}" for p in params)
        sig = zlib.crc32(layout.encode())
        n = len(params)
        # The max over ranks of (n, -n, sig, -sig) is that only where all agree;
        # the has-gradient flags (n of them) follow once their count is agreed.
        mine = np.array([n, -n, sig, -sig], np.int64)
        (agreed,) = collective.allreduce_arrays([mine], "max", "DataParallel parameter check",
                                                self._comm)
        if not np.array_equal(agreed, mine):
            raise RuntimeError(
                f"DataParallel: rank {env.get_rank()} holds {n} trainable parameters "
                f"({layout[:200]}), another rank holds others: every process must build the "
                "same model")
        flags = np.array([p.grad is not None for p in params], np.int8)
        (anywhere,) = collective.allreduce_arrays([flags], "max", "DataParallel gradient check",
                                                  self._comm)
        return anywhere.astype(bool)

    # ---- the wrapped layer's state ------------------------------------------------------
    def state_dict(self):
        return self._layers.state_dict()

    def set_state_dict(self, state_dict, strict=True):
        return self._layers.set_state_dict(state_dict, strict)


def _buckets(params, limit):
    """Parameters in reverse order (the order backward finishes them), grouped
    by dtype into buckets of at most `limit` bytes (a larger one alone)."""
    buckets, current, size, dtype = [], [], 0, None
    for p in sorted(reversed(params), key=lambda p: p.dtype.str):
        nbytes = p.size * p.dtype.itemsize
        if current and (p.dtype != dtype or size + nbytes > limit):
            buckets.append(current)
            current, size = [], 0
        current.append(p)
        size += nbytes
        dtype = p.dtype
    if current:
        buckets.append(current)
    return buckets


def _map_tensors(value, fn):
    if isinstance(value, (Tensor, Symbolic)):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return value
