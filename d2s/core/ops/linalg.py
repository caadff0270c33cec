"""Matrix multiplication."""
from __future__ import annotations

import numpy as np

from ..dispatch import binary_function, bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import cast_like, grad_discarded, lift_pair, unbroadcast


def _matmul_infer(x, y):
    xs, ys = tuple(x.shape), tuple(y.shape)
    if not xs or not ys:
        raise ValueError("matmul: operands must have at least one dimension")
    x2 = (1,) + xs if len(xs) == 1 else xs
    y2 = ys + (1,) if len(ys) == 1 else ys
    k1, k2 = x2[-1], y2[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"matmul: shapes {xs} and {ys} are not aligned ({k1} != {k2})")
    batch = broadcast_shapes(x2[:-2], y2[:-2], opname="matmul")
    out = batch + (x2[-2], y2[-1])
    if len(xs) == 1:
        out = out[:-2] + out[-1:]
    if len(ys) == 1:
        out = out[:-1]
    return Aval(out, np.result_type(np.dtype(x.dtype), np.dtype(y.dtype)))


def _swap_last(t):
    n = len(t.shape)
    perm = tuple(range(n - 2)) + (n - 1, n - 2)
    return bind("transpose", t, perm=perm)


def _matmul_vjp(g, out, x, y):
    # Each half costs as much as the forward product: an eager input that takes
    # no gradient (a batch of data) gets None instead of a product nobody reads.
    want_x, want_y = not grad_discarded(x), not grad_discarded(y)
    xn, yn = len(x.shape), len(y.shape)
    out_x, out_y = x, y
    if np.dtype(x.dtype).kind == "c" or np.dtype(y.dtype).kind == "c":
        # complex: each half reads the other factor's conjugate (PyTorch's convention)
        from .fft_ops import conj
        x, y = conj(x), conj(y)
    if xn == 1 and yn == 1:
        return (cast_like(g * y, out_x) if want_x else None,
                cast_like(g * x, out_y) if want_y else None)
    x2 = bind("unsqueeze", x, axes=(0,)) if xn == 1 else x
    y2 = bind("unsqueeze", y, axes=(1,)) if yn == 1 else y
    g2 = g
    if xn == 1:
        g2 = bind("unsqueeze", g2, axes=(len(g2.shape) - 1,))
    if yn == 1:
        g2 = bind("unsqueeze", g2, axes=(len(g2.shape),))
    gx = gy = None
    if want_x:
        gx = matmul(g2, _swap_last(y2))
        if xn == 1:
            gx = bind("squeeze", gx, axes=(len(gx.shape) - 2,))
        gx = unbroadcast(cast_like(gx, out_x), out_x)
    if want_y:
        gy = matmul(_swap_last(x2), g2)
        if yn == 1:
            gy = bind("squeeze", gy, axes=(len(gy.shape) - 1,))
        gy = unbroadcast(cast_like(gy, out_y), out_y)
    return gx, gy


def _matmul_kernel(x, y):
    """np.matmul, whose results are new arrays (`fresh`: the in-place pass may
    reuse them), kept in the operands' dtype where numpy widens (ml_dtypes'
    bfloat16 products come as float32, which the shape rule does not say)."""
    out = np.matmul(x, y)
    if out.dtype != x.dtype and x.dtype == y.dtype:  # bfloat16: ml_dtypes gives float32
        return out.astype(x.dtype)
    return out


_MATMUL = register_op("matmul", _matmul_kernel, _matmul_infer, _matmul_vjp, fresh=True)


def _matmul(x, y):
    x, y = lift_pair(x, y)
    return bind("matmul", x, y)


matmul = binary_function(
    _MATMUL, _matmul, "Matrix product with NumPy semantics (1-D operands, broadcast batches).")
