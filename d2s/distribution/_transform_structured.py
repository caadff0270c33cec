"""Transforms that act on event dims or combine others: ChainTransform,
IndependentTransform, ReshapeTransform, StackTransform, SoftmaxTransform,
StickBreakingTransform (Paddle's names and semantics)."""
from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ._util import as_float, dims, sum_last
from .transform import Transform


class ChainTransform(Transform):
    """transforms[-1](...transforms[0](x)); log-dets add up (each summed to
    the chain's event rank)."""

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"ChainTransform: {t!r} is not a Transform")
        self._domain_rank = max([0] + [t._domain_rank for t in self.transforms])
        self._codomain_rank = max([0] + [t._codomain_rank for t in self.transforms])

    def _forward(self, x):
        for t in self.transforms:
            x = t.forward(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.transforms):
            y = t.inverse(y)
        return y

    def _fldj(self, x):
        total = 0.0
        rank = self._domain_rank
        for t in self.transforms:
            total = total + sum_last(t.forward_log_det_jacobian(x), rank - t._domain_rank)
            rank = rank - t._domain_rank + t._codomain_rank
            x = t.forward(x)
        return total

    def forward_shape(self, shape):
        for t in self.transforms:
            shape = t.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        return shape


class IndependentTransform(Transform):
    """`base` with its last `reinterpreted_batch_rank` batch dims read as event
    dims: the log-det is summed over them."""

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Transform):
            raise TypeError(f"IndependentTransform: {base!r} is not a Transform")
        if int(reinterpreted_batch_rank) <= 0:
            raise ValueError("IndependentTransform: reinterpreted_batch_rank must be positive")
        self.base = base
        self.reinterpreted_batch_rank = int(reinterpreted_batch_rank)
        self._domain_rank = base._domain_rank + self.reinterpreted_batch_rank
        self._codomain_rank = base._codomain_rank + self.reinterpreted_batch_rank

    def _forward(self, x):
        return self.base.forward(x)

    def _inverse(self, y):
        return self.base.inverse(y)

    def _fldj(self, x):
        return sum_last(self.base.forward_log_det_jacobian(x), self.reinterpreted_batch_rank)

    def forward_shape(self, shape):
        return self.base.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base.inverse_shape(shape)


class ReshapeTransform(Transform):
    """The event dims of shape `in_event_shape` reshaped to `out_event_shape`
    (same number of elements); log-det 0."""

    def __init__(self, in_event_shape, out_event_shape):
        self.in_event_shape = tuple(int(d) for d in in_event_shape)
        self.out_event_shape = tuple(int(d) for d in out_event_shape)
        if int(np.prod(self.in_event_shape)) != int(np.prod(self.out_event_shape)):
            raise ValueError(f"ReshapeTransform: {list(self.in_event_shape)} and "
                             f"{list(self.out_event_shape)} hold different numbers of elements")
        self._domain_rank = len(self.in_event_shape)
        self._codomain_rank = len(self.out_event_shape)

    def _move(self, x, src, dst, name):
        n = len(src)
        if tuple(x.shape[len(x.shape) - n:]) != src:
            raise ValueError(f"ReshapeTransform.{name}: expected trailing dims {list(src)}, "
                             f"got shape {list(x.shape)}")
        return _ops.reshape(x, dims(x, 0, len(x.shape) - n) + list(dst))

    def _forward(self, x):
        return self._move(x, self.in_event_shape, self.out_event_shape, "forward")

    def _inverse(self, y):
        return self._move(y, self.out_event_shape, self.in_event_shape, "inverse")

    def _fldj(self, x):
        batch = dims(x, 0, len(x.shape) - len(self.in_event_shape))
        return _ops.zeros(batch, np.dtype(x.dtype).name)

    def forward_shape(self, shape):
        return tuple(shape)[:len(shape) - len(self.in_event_shape)] + self.out_event_shape

    def inverse_shape(self, shape):
        return tuple(shape)[:len(shape) - len(self.out_event_shape)] + self.in_event_shape


class StackTransform(Transform):
    """transforms[i] applied to the i-th slice of x along `axis`."""

    def __init__(self, transforms, axis=0):
        self.transforms = list(transforms)
        if not self.transforms or not all(isinstance(t, Transform) for t in self.transforms):
            raise TypeError("StackTransform: give a non-empty list of Transforms")
        self.axis = int(axis)

    def _map(self, x, method):
        parts = _ops.unbind(x, self.axis)
        if len(parts) != len(self.transforms):
            raise ValueError(f"StackTransform: {len(self.transforms)} transforms for "
                             f"{len(parts)} slices along axis {self.axis}")
        return _ops.stack([getattr(t, method)(p) for t, p in zip(self.transforms, parts)],
                          self.axis)

    def _forward(self, x):
        return self._map(x, "forward")

    def _inverse(self, y):
        return self._map(y, "inverse")

    def _fldj(self, x):
        return self._map(x, "forward_log_det_jacobian")


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dim; inverse log(y) (up to a constant: not
    a bijection, so it has no log-det Jacobian)."""

    _domain_rank = 1
    _codomain_rank = 1

    def _forward(self, x):
        return _ops.softmax(x, -1)

    def _inverse(self, y):
        return _ops.log(y)

    def _fldj(self, x):
        raise NotImplementedError("SoftmaxTransform is not a bijection: it has no log-det "
                                  "Jacobian (use StickBreakingTransform)")


class StickBreakingTransform(Transform):
    """R^K -> the simplex in R^(K+1): z_i = sigmoid(x_i - log(K - i)), and
    y_i = z_i * prod_{j<i} (1 - z_j), the last part what is left."""

    _domain_rank = 1
    _codomain_rank = 1

    def _offset(self, x):
        k = x.shape[-1]
        if k is None:
            raise ValueError("StickBreakingTransform: the last dim must be known while building")
        return as_float(np.log(np.arange(k, 0, -1, dtype=np.float64)), np.dtype(x.dtype))

    def _forward(self, x):
        z = _ops.sigmoid(x - self._offset(x))
        rest = _ops.cumprod(1.0 - z, -1)
        ones = _ops.ones_like(_ops.slice(z, [len(z.shape) - 1], [0], [1]))
        left = _ops.concat([ones, _ops.slice(rest, [len(z.shape) - 1], [0],
                                             [z.shape[-1] - 1])], -1)
        return _ops.concat([z * left, _ops.slice(rest, [len(z.shape) - 1],
                                                 [z.shape[-1] - 1], [z.shape[-1]])], -1)

    def _inverse(self, y):
        k = y.shape[-1] - 1
        head = _ops.slice(y, [len(y.shape) - 1], [0], [k])
        left = 1.0 - _ops.cumsum(head, -1)
        left = _ops.concat([_ops.ones_like(_ops.slice(left, [len(y.shape) - 1], [0], [1])),
                            _ops.slice(left, [len(y.shape) - 1], [0], [k - 1])], -1)
        z = head / left
        return _ops.log(z) - _ops.log1p(-z) + self._offset(head)

    def _fldj(self, x):
        t = x - self._offset(x)
        y = self._forward(x)
        head = _ops.slice(y, [len(y.shape) - 1], [0], [x.shape[-1]])
        # the Jacobian is triangular with diagonal y_i (1 - z_i); log(1 - z) = -softplus(t)
        return _ops.sum(-_ops.softplus(t) + _ops.log(head), -1)

    def forward_shape(self, shape):
        return tuple(shape)[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape)[:-1] + (shape[-1] - 1,)

