"""More random ops, each composed from `uniform` (whose draws the xla backend
makes on the host, as numpy's): randint, randperm, multinomial, bernoulli. No new
primitive: the numbers on every backend are the numpy backend's."""
from __future__ import annotations

import numpy as np

from ..dtypes import as_dtype
from ._base import is_value, lift

__all__ = ["randint", "randperm", "multinomial", "top_p_sampling", "bernoulli"]


def _int(v, opname, what):
    if is_value(v):
        from ..tensor import Tensor
        if isinstance(v, Tensor) and v.size == 1:
            return int(v.item())
        raise TypeError(f"{opname}: {what} must be known while building (an int)")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{opname}: {what} must be an int, got {v!r}")
    return int(v)


def randint(low=0, high=None, shape=(1,), dtype=None, name=None):
    """Integers drawn uniformly from [low, high) (from [0, low) when high is
    None), int64 unless `dtype`: floor(low + u * (high - low)) for float64
    uniform u in [0, 1)."""
    from .elementwise import cast, minimum
    from .math import floor
    from .random_ops import uniform
    if high is None:
        low, high = 0, low
    low, high = _int(low, "randint", "low"), _int(high, "randint", "high")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    u = uniform(shape, "float64", 0.0, 1.0)
    drawn = minimum(floor(u * float(high - low)), float(high - low - 1)) + float(low)
    return cast(drawn, as_dtype("int64" if dtype is None else dtype))


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0..n-1: the order that sorts n uniform draws."""
    from .elementwise import cast
    from .random_ops import uniform
    from .search import argsort
    from ..tensor import Tensor
    if is_value(n) and not isinstance(n, Tensor) and tuple(n.shape) in ((), (1,)):
        # a size known when the program runs (`randperm(x.shape[0])` with a None
        # batch, mixup's shuffle): uniform takes it as a run-time dim
        return cast(argsort(uniform([n.reshape([])], "float64", 0.0, 1.0)), as_dtype(dtype))
    n = _int(n, "randperm", "n")
    if n < 0:
        raise ValueError(f"randperm: n must be >= 0, got {n}")
    return cast(argsort(uniform([n], "float64", 0.0, 1.0)), as_dtype(dtype))


def multinomial(x, num_samples=1, replacement=False, name=None):
    """int64 category indices drawn from the (unnormalized, non-negative)
    weights in the last dim of `x` (1-D or 2-D), `num_samples` per row.
    With replacement: the inverse of the cumulative distribution at uniform
    draws; without: the `num_samples` largest of log(p) plus Gumbel noise
    (the Gumbel-top-k draw, whose law is sampling without replacement)."""
    from .elementwise import cast, less_equal, log, minimum, neg
    from .manipulation import unsqueeze
    from .random_ops import uniform
    from .reduction import sum as _sum
    from .scan import cumsum
    from .search import _dim, topk
    x = lift(x)
    if len(x.shape) not in (1, 2):
        raise ValueError(f"multinomial: x must be 1-D or 2-D, got {tuple(x.shape)}")
    num_samples = _int(num_samples, "multinomial", "num_samples")
    n = x.shape[-1]
    if num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be positive, got {num_samples}")
    if not replacement and n is not None and num_samples > n:
        raise ValueError(f"multinomial: {num_samples} samples without replacement from {n} "
                         "categories")
    from ..tensor import Tensor
    if isinstance(x, Tensor) and x.size and (x.numpy() < 0).any():
        raise ValueError("multinomial: the weights must be non-negative")
    p = cast(x, "float64")
    lead = [] if len(x.shape) == 1 else [_dim(x, 0)]
    if replacement:
        cdf = cumsum(p, -1)
        cdf = cdf / unsqueeze(_sum(p, -1), -1)
        u = uniform(lead + [num_samples], "float64", 0.0, 1.0)
        below = less_equal(unsqueeze(cdf, -2), unsqueeze(u, -1))  # (..., samples, n)
        count = _sum(below, -1)
        return minimum(count, _dim(x, -1) - 1) if n is None else minimum(count, n - 1)
    from .creation import full_like
    from .elementwise import greater_than, where
    u = uniform(lead + [_dim(x, -1)], "float64", 0.0, 1.0)
    gumbel = neg(log(neg(log(u))))
    # log(0) is -inf (never drawn) without numpy's divide-by-zero warning: a
    # filtered distribution (top-k, top-p) has zeros in every row
    positive = greater_than(p, 0.0)
    log_p = where(positive, log(where(positive, p, full_like(p, 1.0))), full_like(p, -np.inf))
    return topk(log_p + gumbel, num_samples, axis=-1)[1]


def top_p_sampling(x, ps, threshold=None, topp_seed=None, seed=-1, k=0, mode="truncated",
                   return_top=False, name=None):
    """Nucleus sampling (Paddle's `tensor.top_p_sampling`): per row of the
    probabilities `x` (batch, vocab), keep the most probable tokens whose
    cumulative probability before them is below `ps[row]` (the first always;
    only the `k` first when k > 0; none under `threshold`), and draw one of
    them in proportion to its probability. Returns (scores, ids), each
    (batch, 1): the drawn tokens' probabilities and int64 indices. Draws come
    from d2s's generator (`d2s.seed`); `topp_seed` and `seed` are not used."""
    from .creation import arange
    from .elementwise import (cast, greater_equal, less_than, logical_and, logical_or, minimum,
                              where, zeros_like_)
    from .manipulation import reshape, unsqueeze
    from .random_ops import uniform
    from .reduction import sum as _sum
    from .scan import cumsum
    from .search import _dim, argsort, take_along_axis
    if mode != "truncated":
        raise ValueError(f"top_p_sampling: mode={mode!r} is not supported (use 'truncated')")
    if return_top:
        raise ValueError("top_p_sampling: return_top=True is not supported")
    x = lift(x)
    if len(x.shape) != 2:
        raise ValueError(f"top_p_sampling: x must be (batch, vocab), got {tuple(x.shape)}")
    ps = reshape(cast(lift(ps), x.dtype), [-1, 1])
    order = argsort(x, -1, descending=True)
    p = take_along_axis(x, order, 1)
    before = cumsum(p, -1) - p
    keep = less_than(before, ps)
    rank = unsqueeze(arange(_dim(x, 1)), 0)
    if k and int(k) > 0:
        keep = logical_and(keep, less_than(rank, int(k)))
    if threshold is not None:
        keep = logical_and(keep, greater_equal(p, reshape(cast(lift(threshold), x.dtype),
                                                          [-1, 1])))
    keep = logical_or(keep, rank == 0)  # the most probable token always stays
    kept = cast(where(keep, p, zeros_like_(p)), "float64")
    cdf = cumsum(kept, -1)
    u = uniform([_dim(x, 0), 1], "float64", 0.0, 1.0) * cdf[:, -1:]
    j = _sum(cast(cdf <= u, "int64"), -1, keepdim=True)
    j = minimum(j, _dim(x, 1) - 1) if x.shape[1] is None else minimum(j, x.shape[1] - 1)
    ids = take_along_axis(order, j, 1)
    return take_along_axis(x, ids, 1), ids


def bernoulli(x, name=None):
    """0/1 samples (in `x`'s float dtype), 1 with probability `x` elementwise
    (PaddlePaddle's `bernoulli`; stochastic depth's keep mask in timm-style
    `drop_path`): a uniform draw below `x`. No gradient flows to `x`."""
    from .creation import shape as shape_of
    from .elementwise import cast, less_than
    from .manipulation import detach
    from .random_ops import rand
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        raise TypeError(f"bernoulli: x must be a float tensor of probabilities, got "
                        f"{np.dtype(x.dtype).name}")
    dims = list(x.shape) if None not in x.shape else shape_of(x)
    return cast(less_than(rand(dims, x.dtype), detach(x)), x.dtype)
