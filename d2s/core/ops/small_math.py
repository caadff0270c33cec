"""Small Paddle functions made of other ops: `t` (the transpose of a matrix;
vectors and scalars unchanged), `sinc` (sin(pi x) / (pi x), 1 at 0),
`polar` (abs * (cos angle + i sin angle)), `positive` / `negative`,
`gammaln` (lgamma's other name), `multigammaln`, `reduce_as` (a sum down to
another tensor's shape, as a broadcast's gradient), `shard_index` and
`log_normal`; gradients, static form, xla and ONNX are those ops'."""
from __future__ import annotations

import math

from ._base import lift

__all__ = ["t", "sinc", "polar", "positive", "negative", "gammaln", "multigammaln",
           "reduce_as", "shard_index", "log_normal"]


def _ops():
    from .. import ops
    return ops


def t(input, name=None):
    """`input` transposed when 2-D; 0-D and 1-D returned as they are."""
    x = lift(input)
    if len(x.shape) > 2:
        raise ValueError(f"t: input must be at most 2-D, got shape {list(x.shape)}; use "
                         "transpose(x, perm) for more dims")
    return _ops().transpose(x, [1, 0]) if len(x.shape) == 2 else x


def sinc(x, name=None):
    """sin(pi x) / (pi x), and 1 where x is 0."""
    ops = _ops()
    x = lift(x)
    zero = x == 0
    px = ops.where(zero, ops.full_like(x, 1.0), x) * math.pi
    return ops.where(zero, ops.full_like(x, 1.0), ops.sin(px) / px)


def polar(abs, angle, name=None):
    """The complex numbers of modulus `abs` and argument `angle`."""
    ops = _ops()
    from .fft_ops import complex as _complex
    a, th = lift(abs), lift(angle)
    return _complex(a * ops.cos(th), a * ops.sin(th))


def positive(x, name=None):
    """`x` itself (+x); bool tensors have no sign, an error as in Paddle."""
    x = lift(x)
    if x.dtype.kind == "b":
        raise TypeError("positive: not defined for bool tensors")
    return x


def negative(x, name=None):
    """-x."""
    return _ops().neg(lift(x))


def gammaln(x, name=None):
    """log|Gamma(x)| (`lgamma`)."""
    return _ops().lgamma(x)


def multigammaln(x, p, name=None):
    """The log of the multivariate gamma function of dimension `p`:
    `p (p - 1) / 4 log(pi) + sum_{j=1..p} lgamma(x + (1 - j) / 2)`."""
    ops = _ops()
    x = lift(x)
    p = int(p)
    if p < 1:
        raise ValueError(f"multigammaln: p must be >= 1, got {p}")
    out = ops.lgamma(x)
    for j in range(2, p + 1):
        out = out + ops.lgamma(x + (1 - j) / 2.0)
    return out + p * (p - 1) / 4.0 * math.log(math.pi)


def reduce_as(x, target, name=None):
    """`x` summed down to `target`'s shape (the leading dims `target` lacks,
    and the dims where `target` has 1), as the gradient of a broadcast."""
    ops = _ops()
    x, target = lift(x), lift(target)
    lead = len(x.shape) - len(target.shape)
    if lead < 0:
        raise ValueError(f"reduce_as: target {list(target.shape)} has more dims than x "
                         f"{list(x.shape)}")
    out = ops.sum(x, axis=list(range(lead))) if lead else x
    ones = [a for a, (d, t) in enumerate(zip(out.shape, target.shape)) if t == 1 and d != 1]
    bad = [a for a, (d, t) in enumerate(zip(out.shape, target.shape))
           if t not in (1, d) and None not in (d, t)]
    if bad:
        raise ValueError(f"reduce_as: x {list(x.shape)} does not broadcast from target "
                         f"{list(target.shape)}")
    return ops.sum(out, axis=ones, keepdim=True) if ones else out


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """Indices of the shard `shard_id` of `nshards` equal shards of
    `[0, index_num)`, made local to it; the others become `ignore_value`."""
    ops = _ops()
    x = lift(input)
    if x.dtype.kind not in "iu":
        raise TypeError(f"shard_index: input must be integers, got {x.dtype}")
    if not 0 <= int(shard_id) < int(nshards):
        raise ValueError(f"shard_index: shard_id must be in [0, {nshards}), got {shard_id}")
    size = (int(index_num) + int(nshards) - 1) // int(nshards)
    mine = (x // size) == int(shard_id)
    return ops.where(mine, x % size, ops.full_like(x, int(ignore_value)))


def log_normal(mean=1.0, std=2.0, shape=None, dtype=None, name=None):
    """Samples of exp(N(mean, std)) of `shape` (default dtype: the default
    float dtype)."""
    ops = _ops()
    if shape is None:
        raise TypeError("log_normal: give the shape, e.g. log_normal(shape=[2, 3])")
    from ..dtype_names import get_default_dtype
    from ..dtypes import as_dtype
    dtype = as_dtype(dtype if dtype is not None else get_default_dtype()).name
    return ops.exp(ops.normal(shape, mean=mean, std=std, dtype=dtype))
