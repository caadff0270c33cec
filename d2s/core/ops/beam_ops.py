"""`gather_tree`: the backtrace of a beam search (Paddle's
`nn.functional.gather_tree`), an op because it is a loop over time whose
every step reads the index the next one produced: the numpy kernel loops,
XLA runs a reverse scan. Integer indices only: it has no gradient."""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op


def _gather_tree_kernel(ids, parents):
    steps = ids.shape[0]
    out = np.empty_like(ids)
    if steps == 0:
        return out
    beam = np.broadcast_to(np.arange(ids.shape[2], dtype=parents.dtype), ids.shape[1:]).copy()
    for t in range(steps - 1, -1, -1):
        out[t] = np.take_along_axis(ids[t], beam, axis=1)
        beam = np.take_along_axis(parents[t], beam, axis=1)
    return out


def _gather_tree_infer(ids, parents):
    if len(ids.shape) != 3 or len(parents.shape) != 3:
        raise ValueError(f"gather_tree: ids and parents must be 3-D [max_time, batch, beam], "
                         f"got {list(ids.shape)} and {list(parents.shape)}")
    for a, b in zip(ids.shape, parents.shape):
        if a is not None and b is not None and a != b:
            raise ValueError(f"gather_tree: ids {list(ids.shape)} and parents "
                             f"{list(parents.shape)} must have the same shape")
    for name, v in (("ids", ids), ("parents", parents)):
        if np.dtype(v.dtype).kind not in "iu":
            raise TypeError(f"gather_tree: {name} must be an integer tensor, got "
                            f"{np.dtype(v.dtype).name}")
    return Aval(tuple(ids.shape), np.dtype(ids.dtype))


register_op("gather_tree", _gather_tree_kernel, _gather_tree_infer)
