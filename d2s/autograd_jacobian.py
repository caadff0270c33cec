"""`d2s.autograd.jacobian` / `hessian` / `backward` (Paddle's
`paddle.autograd` functions), built on `d2s.autograd.grad`: a Jacobian is one
`grad` per output element (the output weighted by a one-hot cotangent), so it
works eagerly and in converted code alike, and with `create_graph` the rows
stay differentiable (a Hessian is the Jacobian of the gradient).

Shapes follow Paddle: with `batch_axis=None`, `ys` and `xs` are 0-D or 1-D
and the Jacobian is `[M, N]` (0-D sides dropped); with `batch_axis=0` they
are `[B]` or `[B, M]` / `[B, N]` with independent samples, and the Jacobian
is `[B, M, N]`. The result is computed when asked for and indexed as a
Tensor (`J[:]`, `J[0, :]`), as Paddle's lazily evaluated `Jacobian`.
"""
from __future__ import annotations

import numpy as np

from .autograd import grad
from .core.ops import cast, ones_like, stack, zeros_like
from .core.tensor import Tensor, to_tensor

__all__ = ["Jacobian", "Hessian", "jacobian", "hessian", "backward"]


def _check(t, what, batch_axis):
    ndim = len(t.shape)
    ok = (0, 1) if batch_axis is None else (1, 2)
    if ndim not in ok:
        raise ValueError(f"jacobian: {what} must be {' or '.join(f'{k}-D' for k in ok)} with "
                         f"batch_axis={batch_axis}, got shape {list(t.shape)}; reshape it "
                         "(e.g. x.reshape([-1])) first")
    return ndim


def _jacobian(y, x, batch_axis, create_graph=True):
    y_nd, _ = _check(y, "ys", batch_axis), _check(x, "xs", batch_axis)
    outer = 0 if batch_axis is None else 1  # dims of y before its element axis
    if y_nd == outer:  # one output per sample: its gradient is the row
        rows = [ones_like(y)]
    else:
        m = int(y.shape[-1])
        if m < 0:
            raise ValueError("jacobian: the element axis of ys must have a known size")
        rows = [ones_like(y) * cast(to_tensor(np.eye(m)[k]), y.dtype) for k in range(m)]
    out = []
    for go in rows:
        (g,) = grad([y], [x], [go], retain_graph=True, create_graph=create_graph,
                    allow_unused=True)
        out.append(zeros_like(x) if g is None else g)
    if y_nd == outer:
        return out[0]
    return stack(out, axis=outer)


class Jacobian:
    """The Jacobian of `ys` with respect to `xs` (see the module); evaluated
    on first use, then indexed as a Tensor."""

    def __init__(self, ys, xs, batch_axis=None, _create_graph=True):
        if batch_axis not in (None, 0):
            raise ValueError(f"jacobian: batch_axis must be None or 0, got {batch_axis!r}")
        _check(xs, "xs", batch_axis)  # wrong shapes fail here, not when first indexed
        if not isinstance(self, Hessian):
            _check(ys, "ys", batch_axis)
        self._args = (ys, xs, batch_axis, _create_graph)
        self._value = None

    def _full(self):
        if self._value is None:
            self._value = _jacobian(*self._args)
        return self._value

    @property
    def shape(self):
        return list(self._full().shape)

    def __getitem__(self, index):
        return self._full()[index]

    def numpy(self):
        return self._full().numpy()

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape})"


class Hessian(Jacobian):
    """The Hessian of a scalar (per sample with `batch_axis=0`) `ys`: the
    Jacobian of its gradient with respect to `xs`."""

    def __init__(self, ys, xs, batch_axis=None):
        super().__init__(ys, xs, batch_axis)
        if len(ys.shape) != (0 if batch_axis is None else 1):
            raise ValueError(f"hessian: ys must be {'0-D' if batch_axis is None else '[B]'} "
                             f"with batch_axis={batch_axis}, got shape {list(ys.shape)}")

    def _full(self):
        if self._value is None:
            ys, xs, batch_axis, _ = self._args
            (g,) = grad([ys], [xs], create_graph=True, allow_unused=True)
            if g is None:
                g = zeros_like(xs)
            self._value = _jacobian(g, xs, batch_axis)
        return self._value


def _nest(cls, ys, xs, batch_axis):
    if isinstance(ys, (list, tuple)):
        return tuple(_nest(cls, y, xs, batch_axis) for y in ys)
    if isinstance(xs, (list, tuple)):
        return tuple(cls(ys, x, batch_axis) for x in xs)
    return cls(ys, xs, batch_axis)


def jacobian(ys, xs, batch_axis=None):
    """Jacobian of `ys` (a Tensor or a tuple of them) with respect to `xs`
    (likewise): a `Jacobian`, a tuple of them per x, or a tuple per y of
    tuples per x. Index it (`J[:]`) for the Tensor."""
    return _nest(Jacobian, ys, xs, batch_axis)


def hessian(ys, xs, batch_axis=None):
    """Hessian of the scalar `ys` with respect to `xs` (a Tensor, or a tuple:
    then a tuple of tuples of blocks `d2 ys / dxi dxj`)."""
    if isinstance(ys, (list, tuple)):
        raise TypeError("hessian: ys must be one Tensor (a scalar, or [B] with batch_axis=0)")
    if isinstance(xs, (list, tuple)):
        grads = grad([ys], list(xs), create_graph=True, allow_unused=True)
        grads = [zeros_like(x) if g is None else g for g, x in zip(grads, xs)]
        return tuple(tuple(Jacobian(g, x, batch_axis) for x in xs) for g in grads)
    return Hessian(ys, xs, batch_axis)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulate into the leaves' `.grad` the gradients of every tensor of
    `tensors`, each weighted by its entry of `grad_tensors` (None: ones)."""
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    grad_tensors = list(grad_tensors) if isinstance(grad_tensors, (list, tuple)) \
        else [grad_tensors]
    if len(grad_tensors) != len(tensors):
        raise ValueError(f"backward: {len(grad_tensors)} grad_tensors for {len(tensors)} "
                         "tensors")
    for t, g in zip(tensors, grad_tensors):
        if not isinstance(t, Tensor) and not hasattr(t, "backward"):
            raise TypeError(f"backward: expected Tensors, got {type(t).__name__}")
        t.backward(g, retain_graph=True)
