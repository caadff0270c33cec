"""Image-layout functions of `d2s.nn.functional` that ported vision models call:
pixel (un)shuffle, channel shuffle, affine grids and grid sampling, local
response normalization, zero padding, channel-wise dropout, adaptive 3-D
average pooling.

Compositions of registered ops (reshape, transpose, take_along_axis, matmul,
pad, ...): gradients, xla and ONNX come from those ops' rules. Sizes the
program does not know when it is built are read with `shape` while it runs,
so `None` dims work where the arithmetic allows.
"""
from __future__ import annotations

import numpy as np

from ..core.ops import (abs as _abs, cast, constant, floor, matmul, maximum, minimum, reshape,
                        round as _round, take_along_axis, transpose, where)
from ..core.ops._base import lift
from ..core.ops.conv import adaptive_matrix
from .common_functional import _dim_at_run_time, _pad_axis, pad as _pad

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "affine_grid", "grid_sample",
           "local_response_norm", "zeropad2d", "dropout2d", "dropout3d", "alpha_dropout",
           "adaptive_avg_pool3d"]


def _dims(x):
    """Each dim of `x`: an int where known, else a 0-d int64 tensor."""
    return [_dim_at_run_time(x, a) for a in range(len(x.shape))]


def _layout(data_format, where, allowed=("NCHW", "NHWC")):
    if data_format not in allowed:
        raise ValueError(f"{where}: data_format must be one of {list(allowed)}, got "
                         f"{data_format!r}")
    return data_format[-1] == "C"


def _rank(x, n, where):
    if len(x.shape) != n:
        raise ValueError(f"{where}: expects a {n}-D input, got shape {list(x.shape)}")


def _factor(r, where, name):
    r = int(r)
    if r <= 0:
        raise ValueError(f"{where}: {name} must be a positive int, got {r}")
    return r


def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r): sub-pixel convolution's
    rearrangement (ESPCN), as PaddlePaddle's and PyTorch's."""
    x = lift(x)
    last = _layout(data_format, "pixel_shuffle")
    _rank(x, 4, "pixel_shuffle")
    r = _factor(upscale_factor, "pixel_shuffle", "upscale_factor")
    c = x.shape[3 if last else 1]
    if c is not None and c % (r * r):
        raise ValueError(f"pixel_shuffle: the {c} channels are not divisible by "
                         f"upscale_factor^2 = {r * r}")
    if last:
        n, h, w, _ = _dims(x)
        y = reshape(x, [n, h, w, -1, r, r])
        y = transpose(y, [0, 1, 4, 2, 5, 3])
        return reshape(y, [n, h * r, w * r, -1])
    n, _, h, w = _dims(x)
    y = reshape(x, [n, -1, r, r, h, w])
    y = transpose(y, [0, 1, 4, 2, 5, 3])
    return reshape(y, [n, -1, h * r, w * r])


def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """The inverse of `pixel_shuffle`: (N, C, H, W) -> (N, C * r^2, H / r, W / r)."""
    x = lift(x)
    last = _layout(data_format, "pixel_unshuffle")
    _rank(x, 4, "pixel_unshuffle")
    r = _factor(downscale_factor, "pixel_unshuffle", "downscale_factor")
    for d in (x.shape[1:3] if last else x.shape[2:]):
        if d is not None and d % r:
            raise ValueError(f"pixel_unshuffle: the spatial dims of {list(x.shape)} are not "
                             f"divisible by downscale_factor {r}")
    if last:
        n, h, w, _ = _dims(x)
        y = reshape(x, [n, h // r, r, w // r, r, -1])
        y = transpose(y, [0, 1, 3, 5, 2, 4])
        return reshape(y, [n, h // r, w // r, -1])
    n, _, h, w = _dims(x)
    y = reshape(x, [n, -1, h // r, r, w // r, r])
    y = transpose(y, [0, 1, 3, 5, 2, 4])
    return reshape(y, [n, -1, h // r, w // r])


def channel_shuffle(x, groups, data_format="NCHW", name=None):
    """ShuffleNet's channel shuffle: the channels, seen as (groups, C / groups),
    transposed to (C / groups, groups)."""
    x = lift(x)
    last = _layout(data_format, "channel_shuffle")
    _rank(x, 4, "channel_shuffle")
    g = _factor(groups, "channel_shuffle", "groups")
    c = x.shape[3 if last else 1]
    if c is not None and c % g:
        raise ValueError(f"channel_shuffle: groups={g} does not divide the {c} channels")
    if last:
        n, h, w, _ = _dims(x)
        y = transpose(reshape(x, [n, h, w, g, -1]), [0, 1, 2, 4, 3])
        return reshape(y, [n, h, w, -1])
    n, _, h, w = _dims(x)
    y = transpose(reshape(x, [n, g, -1, h, w]), [0, 2, 1, 3, 4])
    return reshape(y, [n, -1, h, w])


# ---- affine grids and grid sampling ------------------------------------------------------
def _base_coords(n, align_corners):
    """The normalized [-1, 1] coordinates of `n` pixel centres (align_corners:
    of the corner pixels' centres)."""
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (np.arange(n) * 2.0 + 1.0) / n - 1.0


def affine_grid(theta, out_shape, align_corners=True, name=None):
    """Sampling grid of the affine maps `theta` over an output of `out_shape`:
    (N, 2, 3) over [N, C, H, W] gives (N, H, W, 2), grid[n, h, w] =
    theta[n] @ (x_w, y_h, 1); (N, 3, 4) over [N, C, D, H, W] gives
    (N, D, H, W, 3), grid[n, d, h, w] = theta[n] @ (x_w, y_h, z_d, 1); in
    normalized coordinates (x along W, the last dim)."""
    theta = lift(theta)
    if hasattr(out_shape, "numpy"):
        out_shape = out_shape.numpy().tolist()
    out_shape = list(out_shape)
    if len(out_shape) not in (4, 5):
        raise ValueError(f"affine_grid: out_shape must be [N, C, H, W] or [N, C, D, H, W], "
                         f"got {out_shape}")
    k = len(out_shape) - 2
    # N and C do not shape the grid (theta gives N): `x.shape` of a converted
    # input with an unknown batch is fine; the spatial sizes must be numbers
    try:
        sizes = [int(d) for d in out_shape[2:]]
    except (TypeError, ValueError):
        sizes = [-1]
    if min(sizes) <= 0:
        raise ValueError(f"affine_grid: the spatial sizes of out_shape must be known positive "
                         f"ints when the program is built, got {out_shape}")
    if len(theta.shape) != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"affine_grid: theta must be (N, {k}, {k + 1}) for a {k + 2}-D "
                         f"out_shape, got {list(theta.shape)}")
    # one row (x, y[, z], 1) per output location, W fastest
    axes = [_base_coords(n, align_corners) for n in sizes]          # D?, H, W order
    mesh = np.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in reversed(mesh)]                   # x, y[, z]
    base = np.stack(cols + [np.ones(int(np.prod(sizes)))], axis=1)
    grid = matmul(constant(base.astype(theta.dtype)), transpose(theta, [0, 2, 1]))
    return reshape(grid, [-1] + sizes + [k])


def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1.0) * 0.5 * (size - 1.0)
    return ((g + 1.0) * size - 1.0) * 0.5


def _reflect(v, lo2, hi2):
    """Reflect coordinates into [lo2 / 2, hi2 / 2] (the doubled bounds may be
    tensors); a span of 0 gives 0."""
    mn = lo2 * 0.5
    span = (hi2 - lo2) * 0.5
    safe = where(span > 0, span, span * 0.0 + 1.0)
    a = _abs(v - mn)
    flips = floor(a / safe)
    extra = a - flips * safe
    even = (flips - floor(flips * 0.5) * 2.0) == 0.0
    out = where(even, extra + mn, safe - extra + mn)
    return where(span > 0, out, out * 0.0)


def _source(g, size, padding_mode, align_corners):
    """Unnormalized source coordinate along one axis, after `padding_mode`."""
    v = _unnormalize(g, size, align_corners)
    if padding_mode == "border":
        v = minimum(maximum(v, v * 0.0), v * 0.0 + (size - 1.0))
    elif padding_mode == "reflection":
        if align_corners:
            v = _reflect(v, 0.0, (size - 1.0) * 2.0)
        else:
            v = _reflect(v, -1.0, size * 2.0 - 1.0)
        v = minimum(maximum(v, v * 0.0), v * 0.0 + (size - 1.0))
    return v


_GRID_MODES = ("bilinear", "nearest")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True,
                name=None):
    """Sample `x` at the normalized locations of `grid`: NCHW `x` with an
    (N, Hg, Wg, 2) grid of (x, y) -> (N, C, Hg, Wg); NCDHW `x` with an
    (N, Dg, Hg, Wg, 3) grid of (x, y, z) -> (N, C, Dg, Hg, Wg). 'bilinear'
    interpolates between the 2 (4-D) or 2^3 (5-D: trilinear) neighbours,
    'nearest' reads the nearest one, rounding a location exactly halfway to
    the even one, as PyTorch; locations outside read zeros, the border, or
    the image reflected. Differentiable in `x` and (bilinear) in `grid`."""
    x, grid = lift(x), lift(grid)
    if mode not in _GRID_MODES:
        raise ValueError(f"grid_sample: mode must be one of {list(_GRID_MODES)}, got {mode!r}")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {list(_GRID_PADDINGS)}, "
                         f"got {padding_mode!r}")
    if len(x.shape) not in (4, 5):
        raise ValueError(f"grid_sample: expects a 4-D (NCHW) or 5-D (NCDHW) input, got shape "
                         f"{list(x.shape)}")
    k = len(x.shape) - 2
    if len(grid.shape) != k + 2 or grid.shape[-1] not in (k, None):
        want = "(N, H, W, 2)" if k == 2 else "(N, D, H, W, 3)"
        raise ValueError(f"grid_sample: grid must be {want} for a {k + 2}-D input, got "
                         f"{list(grid.shape)}")
    if np.dtype(grid.dtype) != np.dtype(x.dtype):
        grid = cast(grid, x.dtype)
    sizes = _dims(x)[2:]                                              # (D,) H, W
    fsizes = [n if isinstance(n, int) else cast(n, x.dtype) for n in sizes]
    lead = (slice(None),) * (k + 1)
    # source coordinates per spatial axis, (D,) H, W order; grid's last dim is x, y(, z)
    src = [_source(grid[lead + (k - 1 - a,)], fsizes[a], padding_mode, align_corners)
           for a in range(k)]
    flat = reshape(x, [0, 0, -1])                                     # (N, C, prod)
    gdims = _dims(src[0])                                             # N, (Dg,) Hg, Wg
    ng, out = gdims[0], gdims[1:]

    def read(pos):
        """x at the integer locations `pos` (float tensors per axis), 0 outside."""
        inside, idx = None, None
        for p, n, nf in zip(pos, sizes, fsizes):
            ok = (p >= 0.0) & (p <= nf - 1.0)
            inside = ok if inside is None else inside & ok
            c = cast(minimum(maximum(p, p * 0.0), p * 0.0 + (nf - 1.0)), "int64")
            idx = c if idx is None else idx * n + c
        got = take_along_axis(flat, reshape(idx, [ng, 1, -1]), axis=2)
        got = reshape(got, [ng, -1] + out)
        return where(reshape(inside, [ng, 1] + out), got, got * 0.0)

    if mode == "nearest":
        return read([_round(p) for p in src])
    lo = [floor(p) for p in src]
    frac = [p - f for p, f in zip(src, lo)]
    total = None
    for corner in np.ndindex(*(2,) * k):      # each neighbour: low or high per axis
        pos, weight = [], None
        for a, hi in enumerate(corner):
            pos.append(lo[a] + 1.0 if hi else lo[a])
            w = frac[a] if hi else 1.0 - frac[a]
            weight = w if weight is None else weight * w
        term = read(pos) * reshape(weight, [ng, 1] + out)
        total = term if total is None else total + term
    return total


# ---- normalization, padding, dropout -----------------------------------------------------
def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta
    (AlexNet's LRN; the window is centred, size // 2 channels before)."""
    x = lift(x)
    rank = len(x.shape)
    if rank < 3:
        raise ValueError(f"local_response_norm: expects a 3-D or higher input, got shape "
                         f"{list(x.shape)}")
    last = data_format[-1] == "C" and data_format not in ("NC",)
    axis = rank - 1 if last else 1
    size = int(size)
    sq = _pad_axis(x * x, axis, size // 2, (size - 1) // 2, "constant", 0.0,
                   "local_response_norm")
    total = None
    for i in range(size):
        index = [slice(None)] * rank
        index[axis] = slice(i, i - size + 1 if i - size + 1 < 0 else None)
        part = sq[tuple(index)]
        total = part if total is None else total + part
    return x / (total * (alpha / size) + k) ** beta


def zeropad2d(x, padding, data_format="NCHW", name=None):
    """Zero padding of the spatial dims by [left, right, top, bottom] (or one int)."""
    if isinstance(padding, int):
        padding = [padding] * 4
    return _pad(x, list(padding), mode="constant", value=0.0, data_format=data_format)


def _channel_dropout(x, p, training, data_format, where, layouts):
    from .functional import dropout
    x = lift(x)
    if data_format not in layouts:
        raise ValueError(f"{where}: data_format must be one of {list(layouts)}, got "
                         f"{data_format!r}")
    _rank(x, len(layouts[0]), where)
    channel = len(x.shape) - 1 if data_format[-1] == "C" else 1
    return dropout(x, p, axis=[0, channel], training=training)


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    """Zero whole channels (each (n, c) plane) with probability `p`, scaling
    the kept ones by 1 / (1 - p) while training."""
    return _channel_dropout(x, p, training, data_format, "dropout2d", ("NCHW", "NHWC"))


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    """`dropout2d` over 5-D inputs (each (n, c) volume)."""
    return _channel_dropout(x, p, training, data_format, "dropout3d", ("NCDHW", "NDHWC"))


_SELU_ALPHA_P = -1.6732632423543772 * 1.0507009873554805  # -scale * alpha of SELU


def alpha_dropout(x, p=0.5, training=True, name=None):
    """SELU's dropout: dropped elements get SELU's negative saturation value,
    then an affine map restores zero mean and unit variance."""
    from ..core.ops import rand
    x = lift(x)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"alpha_dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    a = ((1.0 - p) * (1.0 + p * _SELU_ALPHA_P ** 2)) ** -0.5
    b = -a * _SELU_ALPHA_P * p
    keep = cast(rand(_dims(x), x.dtype) >= p, x.dtype)
    return (x * keep + (1.0 - keep) * _SELU_ALPHA_P) * a + b


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    """Average over PaddlePaddle's adaptive bins along D, H and W (separable:
    three products with constant averaging matrices)."""
    x = lift(x)
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"adaptive_avg_pool3d: data_format must be 'NCDHW' or 'NDHWC', got "
                         f"{data_format!r}")
    _rank(x, 5, "adaptive_avg_pool3d")
    last = data_format == "NDHWC"
    if last:
        x = transpose(x, [0, 4, 1, 2, 3])
    sizes = [output_size] * 3 if isinstance(output_size, int) else list(output_size)
    d, h, w = x.shape[2:]
    if None in (d, h, w):
        raise ValueError("adaptive_avg_pool3d: the input's D, H and W must be known when the "
                         "program is built (the bins depend on them)")
    od, oh, ow = [n if o is None else int(o) for n, o in zip((d, h, w), sizes)]
    dt = np.dtype(x.dtype)
    out = matmul(x, constant(adaptive_matrix(w, ow, dt).T.copy()))      # (N, C, D, H, ow)
    out = matmul(constant(adaptive_matrix(h, oh, dt)), out)             # (N, C, D, oh, ow)
    out = reshape(out, [0, 0, d, oh * ow])
    out = matmul(constant(adaptive_matrix(d, od, dt)), out)             # (N, C, od, oh*ow)
    out = reshape(out, [0, 0, od, oh, ow])
    return transpose(out, [0, 2, 3, 4, 1]) if last else out
