"""`weight_dequantize`: the float weight of a matmul rebuilt from int8 or
packed int4 values and per-group scales, and `gather_dequantize`: rows of
an int8 embedding table picked by ids, then rebuilt (weight-only
quantization, `d2s.quantization`).

A weight W of shape [K, N] (a Linear's [in, out]) is stored as

* `q`: int8 [Kp, N] (8 bits, values in [-127, 127]), or uint8 [Kp/2, N]
  (4 bits: two rows per byte, row 2i in the low nibble, row 2i+1 in the
  high one, each value in [-8, 7] stored plus 8);
* `scale`: float [G, N], one per output column and group of `Kp / G`
  consecutive rows (G = 1: per channel);

with K padded to Kp (whole groups; even rows for 4 bits). The op returns
`(q * scale)[:k]` as [K, N], or its transpose with `transpose=True` (a
weight used as `x @ W.T`). It has no gradient: quantized weights are for
inference and are never trained.
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op

__all__ = ["weight_dequantize", "gather_dequantize"]


def _unpack_int4(q):
    lo = (q & 15).astype(np.int8) - 8
    hi = (q >> 4).astype(np.int8) - 8
    return np.stack([lo, hi], axis=1).reshape(2 * q.shape[0], q.shape[1])


def _kernel(q, scale, bits=8, k=1, transpose=False):
    w = _unpack_int4(q) if bits == 4 else q
    groups, n = scale.shape
    w = (w.reshape(groups, -1, n).astype(scale.dtype) * scale[:, None, :]).reshape(-1, n)[:k]
    return np.ascontiguousarray(w.T) if transpose else w


def _infer(q, scale, bits=8, k=1, transpose=False):
    if bits not in (4, 8):
        raise ValueError(f"weight_dequantize: bits must be 4 or 8, got {bits}")
    want = np.dtype(np.uint8 if bits == 4 else np.int8)
    if np.dtype(q.dtype) != want:
        raise TypeError(f"weight_dequantize: {bits}-bit values must be {want.name}, got "
                        f"{np.dtype(q.dtype).name}")
    if len(q.shape) != 2 or len(scale.shape) != 2:
        raise ValueError(f"weight_dequantize: q and scale must be 2-D, got {tuple(q.shape)} "
                         f"and {tuple(scale.shape)}")
    n = scale.shape[1] if scale.shape[1] is not None else q.shape[1]
    if None not in tuple(q.shape) + tuple(scale.shape):   # (a parameter's dims are known)
        rows = q.shape[0] * (2 if bits == 4 else 1)
        g = scale.shape[0]
        if q.shape[1] != n or rows % g or not 0 < k <= rows:
            raise ValueError(f"weight_dequantize: q {tuple(q.shape)} ({bits} bits) does not "
                             f"fit scale {tuple(scale.shape)} and k={k}")
    return Aval((n, k) if transpose else (k, n), np.dtype(scale.dtype))


def _int_spec(lo, hi):
    def spec(v):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            return f"must be an int in [{lo}, {hi}]"
        return None
    return spec


def _bool_spec(v):
    return None if isinstance(v, (bool, np.bool_)) else "must be a bool"


def _bits_spec(v):
    return None if not isinstance(v, bool) and v in (4, 8) else "must be 4 or 8"


register_op("weight_dequantize", _kernel, _infer, None, fresh=True,
            attrs={"bits": _bits_spec, "k": _int_spec(1, 1 << 31),
                   "transpose": _bool_spec})


def weight_dequantize(q, scale, bits=8, k=None, transpose=False):
    """The float weight `(q * scale)[:k]` (see the module docstring)."""
    from ..dispatch import bind
    from ._base import lift
    q, scale = lift(q), lift(scale)
    if k is None:
        k = q.shape[0] * (2 if bits == 4 else 1)
    _infer(q, scale, bits=bits, k=int(k), transpose=bool(transpose))
    return bind("weight_dequantize", q, scale, bits=int(bits), k=int(k),
                transpose=bool(transpose))


# ---- gather_dequantize ----------------------------------------------------------------
# An embedding table E [V, H] is stored as int8 rows `q` [V, H] and one
# float scale per row, `scale` [V, 1] (E ~ q * scale). A lookup gathers the
# int8 rows first and rebuilds only those: a decode step touches batch rows,
# not the whole vocabulary. The product is the one a dequantized table
# holds, so gathering before or after rebuilding gives the same bits.

def _gather_dequantize_kernel(q, scale, index):
    return np.take(q, index, axis=0).astype(scale.dtype) * np.take(scale, index, axis=0)


def _gather_dequantize_infer(q, scale, index):
    if np.dtype(q.dtype) != np.int8:
        raise TypeError(f"gather_dequantize: the table must be int8, got {np.dtype(q.dtype).name}")
    if len(q.shape) != 2 or len(scale.shape) != 2 or scale.shape[1] not in (1, None):
        raise ValueError(f"gather_dequantize: q must be [rows, dim] and scale [rows, 1], got "
                         f"{tuple(q.shape)} and {tuple(scale.shape)}")
    if None not in (q.shape[0], scale.shape[0]) and q.shape[0] != scale.shape[0]:
        raise ValueError(f"gather_dequantize: q has {q.shape[0]} rows but scale {scale.shape[0]}")
    if not np.issubdtype(np.dtype(index.dtype), np.integer):
        raise TypeError(f"gather_dequantize: index must be an integer tensor, got "
                        f"{np.dtype(index.dtype).name}")
    if np.dtype(scale.dtype).kind != "f":
        raise TypeError(f"gather_dequantize: scale must be floating, got "
                        f"{np.dtype(scale.dtype).name}")
    return Aval(tuple(index.shape) + (q.shape[1],), np.dtype(scale.dtype))


register_op("gather_dequantize", _gather_dequantize_kernel, _gather_dequantize_infer, None,
            fresh=True)


def gather_dequantize(q, scale, index):
    """Rows `index` of the table `q * scale` (see above), [*index.shape, dim]."""
    from ..dispatch import bind
    from ._base import lift
    q, scale, index = lift(q), lift(scale), lift(index)
    _gather_dequantize_infer(q, scale, index)
    return bind("gather_dequantize", q, scale, index)
