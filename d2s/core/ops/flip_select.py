"""Paddle's `fliplr`, `flipud` (flip of axis 1 / axis 0) and `multiplex`
(row `i` of the output is row `i` of `inputs[index[i]]`): compositions of
`flip`, `stack` and `take_along_axis`, so gradients, static form, xla and
ONNX are those ops'."""
from __future__ import annotations

from ._base import lift

__all__ = ["fliplr", "flipud", "multiplex"]


def _ops():
    from .. import ops
    return ops


def fliplr(x, name=None):
    """`x` reversed along axis 1 (columns); `x` must be at least 2-D."""
    x = lift(x)
    if len(x.shape) < 2:
        raise ValueError(f"fliplr: x must be at least 2-D, got shape {list(x.shape)}")
    return _ops().flip(x, 1)


def flipud(x, name=None):
    """`x` reversed along axis 0 (rows); `x` must be at least 1-D."""
    x = lift(x)
    if len(x.shape) < 1:
        raise ValueError("flipud: x must be at least 1-D, got a 0-D tensor")
    return _ops().flip(x, 0)


def multiplex(inputs, index, name=None):
    """Row `i` of the result is row `i` of `inputs[index[i]]`: `inputs` a
    list of tensors of one shape `(M, ...)`, `index` `(M, 1)` int32/int64."""
    ops = _ops()
    inputs = [lift(t) for t in inputs]
    if len(inputs) < 1:
        raise ValueError("multiplex: inputs is empty")
    shapes = {tuple(t.shape) for t in inputs}
    if len(shapes) != 1:
        raise ValueError(f"multiplex: inputs must share one shape, got {sorted(shapes)}")
    index = lift(index)
    if len(index.shape) != 2 or (index.shape[1] is not None and index.shape[1] != 1) \
            or index.dtype.kind not in "iu":
        raise ValueError(f"multiplex: index must be (M, 1) integers, got "
                         f"{index.dtype}{list(index.shape)}")
    stacked = ops.stack(inputs, axis=0)            # (K, M, ...)
    rank = len(inputs[0].shape)
    idx = ops.reshape(ops.cast(index, "int64"), [1, -1] + [1] * (rank - 1))
    picked = ops.take_along_axis(stacked, idx, 0)  # (1, M, 1, ...) broadcast over the rest
    return ops.squeeze(picked, [0])
