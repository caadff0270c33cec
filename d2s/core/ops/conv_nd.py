"""Convolution and pooling over N spatial dims: one op family whose 2-D
(NCHW) and 3-D (NCDHW) members are registered under their own names.

They are ops (not compositions) because a composition of slices would make
a program with one op per kernel offset, and because every backend has a
native form (XLA's `conv_general_dilated` / `reduce_window`, ONNX's `Conv` /
`MaxPool` / `AveragePool`). 1-D forms run as 2-D ones over a height of 1
(`d2s.nn.functional`).

Each member `M` ("2d", "3d") has the ops `convM`, `convM_grad_input`,
`convM_grad_filter`, `max_poolM`, `max_poolM_grad`, `max_poolM_pick`,
`avg_poolM` and `avg_poolM_grad`. Attributes are normalized before binding:
`stride`, `dilation` and `kernel` have one entry per spatial dim, `padding`
is (low, high) per dim, flattened ((top, bottom, left, right) in 2-D). The
gradient ops' size attributes keep each member's names (`input_hw` /
`kernel_hw`, `input_dhw` / `kernel_dhw`: saved programs hold them), so their
kernels take them as the one extra keyword (`**size`) and the members
declare their attributes (`attrs=`).

Numpy kernels: im2col with one strided copy per kernel offset (never a loop
over pixels), then one batched matmul over the groups. The gradients are
ops too; the convolution gradients are bilinear, so their own vjps are the
other two convolution ops and every order of derivative is exact. Max
pooling's gradient sends each window's cotangent to its first maximum
(row-major), as Paddle and PyTorch do.

Spatial dims unknown when a program is built: the shape rules give None
there; a gradient op is given the forward input itself (`like`) where its
dims were unknown and reads them when it runs (a strided window may leave
trailing rows no window reads, so the output's size does not fix the
input's); a transposed convolution's output is derived from its input's
size when it runs (plus `output_padding`).
"""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np

from ..attr_schema import VALUE
from ..dispatch import bind
from ..registry import Aval, register_op
from ._base import grad_discarded


class Member(NamedTuple):
    """One member of the family: its op-name suffix, layout and size names."""
    suffix: str   # "2d"
    layout: str   # "NCHW"
    size: str     # "hw": the gradient ops' `input_hw` / `kernel_hw`

    @property
    def nd(self):
        return len(self.layout) - 2

    def op(self, base, tail=""):
        return f"{base}{self.suffix}{tail}"


MEMBERS = {2: Member("2d", "NCHW", "hw"), 3: Member("3d", "NCDHW", "dhw")}


# ---- geometry -------------------------------------------------------------------------------
def conv_out_size(size, k, stride, lo, hi, dilation=1, ceil_mode=False):
    """Output length of a window of `k` taps (dilated) sliding over `size` padded
    by `lo` / `hi`; None when `size` is unknown."""
    if size is None or k is None:
        return None
    span = size + lo + hi - (dilation * (k - 1) + 1)
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    # ceil mode's last window must start inside the input or its leading padding
    # (as PyTorch and ONNX Runtime have it): never a window over padding alone
    return out - 1 if (out - 1) * stride >= size + lo else out


def lohi(padding):
    """(low sides, high sides) of a flattened per-dim padding."""
    return tuple(padding[0::2]), tuple(padding[1::2])


def out_shape(spatial, kernel, stride, padding, dilation=None, ceil_mode=False):
    dilation = dilation or (1,) * len(kernel)
    lo, hi = lohi(padding)
    return tuple(conv_out_size(n, k, s, a, b, d, ceil_mode)
                 for n, k, s, a, b, d in zip(spatial, kernel, stride, lo, hi, dilation))


def pool_extents(spatial, kernel, stride, padding, out):
    """`padding` with the high sides grown to what ceil mode's last windows
    reach (they read nothing there)."""
    lo, hi = lohi(padding)
    pads = []
    for n, k, s, a, b, m in zip(spatial, kernel, stride, lo, hi, out):
        pads += [a, b + max((m - 1) * s + k - (n + a + b), 0)]
    return tuple(pads)


def pool_counts(spatial, kernel, stride, padding, ceil_mode, exclusive):
    """The divisor per output position: the window's elements inside the input
    (exclusive) or inside the padded input (ceil mode's overhang never counts)."""
    out = out_shape(spatial, kernel, stride, padding, None, ceil_mode)
    lo, hi = lohi(padding)
    total = np.ones((), np.int64)
    for n, k, s, a, b, m in zip(spatial, kernel, stride, lo, hi, out):
        start = np.arange(m) * s - a
        stop = start + k
        c = (np.minimum(stop, n) - np.maximum(start, 0)) if exclusive else (
            np.minimum(stop, n + b) - start)
        total = np.multiply.outer(total, c)
    return total


def input_size(size, n_out, k, s, d, lo, hi, extra=0):
    """An input dim for its gradient: `size`, or where it was not given, the
    smallest one whose windows make `n_out` outputs, plus `extra` trailing
    rows no window reads (a transposed convolution's `output_padding`)."""
    if size is not None:
        return size
    if n_out is None:
        return None
    return (n_out - 1) * s + d * (k - 1) + 1 - lo - hi + extra


def given_dims(sizes, like):
    """`sizes` with each dim unknown when the program was built read from the
    `like` input (see `_grad_size`); None where that is unknown too."""
    return tuple(like[0].shape[2 + i] if n is None and like else n
                 for i, n in enumerate(sizes))


def grad_input_dims(sizes, like, out, kernel, stride, dilation, padding, output_padding=None):
    """The spatial dims of a `conv*_grad_input` result: each given in `sizes`,
    else the `like` input's (the forward input, read when the op runs), else
    derived from the cotangent's dims `out` (a transposed convolution over
    dims unknown when built). None where still unknown (in a shape rule)."""
    lo, hi = lohi(padding)
    extra = output_padding or (0,) * len(out)
    return tuple(input_size(n, m, k, s, d, a, b, e) for n, m, k, s, d, a, b, e in
                 zip(given_dims(sizes, like), out, kernel, stride, dilation, lo, hi, extra))


def _grad_size(t):
    """How a gradient op learns the spatial dims of the forward input `t`:
    `(sizes, like)`. Dims known when the program is built are attributes;
    where one is unknown, `t` itself is passed along (`like`, a tuple of 0 or
    1 inputs) and the gradient op reads its dims when it runs."""
    sizes = tuple(t.shape[2:])
    return sizes, ((t,) if None in sizes else ())


def transposed_geometry(where, spatial, kernel, stride, dilation, padding, output_size,
                        output_padding, normalize_pads):
    """A transposed convolution's `(pads, sizes, extra)` for `conv*_grad_input`:
    its padding (`normalize_pads(padding)` unless 'SAME'), its output dims
    (`(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
    output_padding`; None where the input's dim is unknown when the program
    is built: the op derives it when it runs) and the `output_padding` per
    dim (`output_size` picks it instead)."""
    nd = len(stride)
    keff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    extra = [0] * nd
    if isinstance(padding, str) and padding.upper() == "SAME":
        pads = []
        for i, (k, s) in enumerate(zip(keff, stride)):
            total = k - s
            pads += [max(total, 0) // 2, max(total, 0) - max(total, 0) // 2]
            extra[i] = max(-total, 0)
        pads = tuple(pads)
    else:
        pads = normalize_pads(padding)
    base = [None if n is None else (n - 1) * s + k - lo - hi for n, s, k, lo, hi in
            zip(spatial, stride, keff, pads[0::2], pads[1::2])]
    if output_size is not None:
        size = [int(v) for v in ([output_size] * nd if isinstance(output_size, int)
                                 else output_size)][-nd:]
        if None in base:
            raise ValueError(f"{where}: output_size={output_size} needs the input's spatial "
                             f"dims known, got {list(spatial)}: give them in the input_spec, "
                             "or give output_padding instead of output_size")
        extra = [o - b for o, b in zip(size, base)]
    elif output_padding:
        extra = ([int(output_padding)] * nd if isinstance(output_padding, int)
                 else [int(v) for v in output_padding][-nd:])
    for e, s in zip(extra, stride):
        if not 0 <= e < s:
            raise ValueError(f"{where}: output_padding {extra} must lie in [0, stride "
                             f"{list(stride)}) (output_size {output_size})")
    return pads, tuple(None if b is None else b + e for b, e in zip(base, extra)), tuple(extra)


def transposed_conv_attrs(sizes, extra):
    """The size attributes of a transposed convolution: `output_padding` only
    where some output dim is derived when the op runs."""
    return {"output_padding": tuple(extra)} if None in sizes else {}


# ---- numpy helpers --------------------------------------------------------------------------
_NC = (slice(None), slice(None))


def _inner(lo, spatial):
    return _NC + tuple(slice(a, a + n) for a, n in zip(lo, spatial))


def _pad(x, padding, value=0.0):
    if not any(padding):
        return x
    lo, hi = lohi(padding)
    shape = tuple(x.shape[:2]) + tuple(n + a + b for n, a, b in zip(x.shape[2:], lo, hi))
    out = np.full(shape, value, x.dtype) if value else np.zeros(shape, x.dtype)
    out[_inner(lo, x.shape[2:])] = x
    return out


def _unpad(xp, padding, spatial):
    if not any(padding):
        return xp
    return np.ascontiguousarray(xp[_inner(padding[0::2], spatial)])


def taps(kernel, dilation):
    """(kernel index, offset) per kernel tap, row-major (a tuple, made once
    per geometry: every convolution and pooling call of a program walks it)."""
    return _taps(tuple(kernel), tuple(dilation))


@functools.lru_cache(maxsize=256)
def _taps(kernel, dilation):
    return tuple((idx, tuple(i * d for i, d in zip(idx, dilation)))
                 for idx in itertools.product(*(range(k) for k in kernel)))


def window(offset, stride, out):
    """The index of the strided view of a padded input at one kernel offset."""
    return _window(tuple(offset), tuple(stride), tuple(out))


@functools.lru_cache(maxsize=1024)
def _window(offset, stride, out):
    return _NC + tuple(slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(offset, stride, out))


def _im2col(xp, kernel, stride, dilation, out, groups):
    """(N, G, C/G * prod(kernel), prod(out)), batch-major: one strided copy per
    kernel offset, and the products need no transposed copies (their results
    are NC... as they come)."""
    n, c = xp.shape[:2]
    cols = np.empty((n, c) + tuple(kernel) + tuple(out), xp.dtype)
    for idx, off in taps(kernel, dilation):
        cols[_NC + idx] = xp[window(off, stride, out)]
    return cols.reshape(n, groups, (c // groups) * int(np.prod(kernel)), int(np.prod(out)))


def low(dtype):
    """The padding value of max pooling: below every value of `dtype`."""
    return -np.inf if dtype.kind == "f" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _one(size):
    """The member's one size attribute (`input_hw=...`, `kernel_dhw=...`)."""
    (value,) = size.values()
    return tuple(value)


def _conv_attrs(stride, padding, dilation, groups):
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


_CONV_ATTRS = ("stride", "padding", "dilation", "groups")
_POOL_ATTRS = ("kernel", "stride", "padding", "ceil_mode")


def _schema(*names):
    return {n: VALUE for n in names}


# ---- convolution ----------------------------------------------------------------------------
def _conv_kernel(x, w, stride, padding, dilation, groups):
    dtype = np.result_type(x.dtype, w.dtype)
    n, o = x.shape[0], w.shape[0]
    out = out_shape(x.shape[2:], w.shape[2:], stride, padding, dilation)
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), w.shape[2:], stride, dilation,
                   out, groups)
    wg = w.astype(dtype, copy=False).reshape(groups, o // groups, -1)
    y = np.matmul(wg, cols).reshape((n, o) + out)  # (N, G, O/G, P): NC... already
    return y if y.dtype == dtype else y.astype(dtype)  # bfloat16 products come as float32


def _grad_input_kernel(g, w, *like, stride, padding, dilation, groups, output_padding=None,
                       **size):
    """The input's cotangent (a transposed convolution): col2im of `w^T @ g`
    (one strided add per kernel offset)."""
    dtype = np.result_type(g.dtype, w.dtype)
    n, o = g.shape[:2]
    out = tuple(g.shape[2:])
    kernel = tuple(w.shape[2:])
    c = w.shape[1] * groups
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, int(np.prod(out)))
    wt = w.astype(dtype, copy=False).reshape(groups, o // groups, -1)
    spatial = grad_input_dims(_one(size), like, out, kernel, stride, dilation, padding,
                              output_padding)
    if _flat_rows_apply(out, spatial, kernel, stride, padding, dilation) and \
            np.isfinite(wt).all():
        return _grad_input_flat_rows(gg, wt, (c,) + tuple(spatial), kernel, padding, dilation)
    dcols = np.matmul(wt.transpose(0, 2, 1), gg)
    if dcols.dtype != dtype:
        dcols = dcols.astype(dtype)
    dcols = dcols.reshape((n, c) + kernel + out)
    lo, hi = lohi(padding)
    gxp = np.zeros((n, c) + tuple(s + a + b for s, a, b in zip(spatial, lo, hi)), dtype)
    for idx, off in taps(kernel, dilation):
        win = gxp[window(off, stride, out)]
        np.add(win, dcols[_NC + idx], out=win)
    return _unpad(gxp, padding, spatial)


def _flat_rows_apply(out, spatial, kernel, stride, padding, dilation):
    """Whether `_grad_input_flat_rows` serves: 2-D, stride 1, and the output
    covering the whole padded input (no rows a window never reads)."""
    if len(kernel) != 2 or tuple(stride) != (1, 1):
        return False
    lo, hi = lohi(padding)
    return all(o == n + a + b - d * (k - 1) for o, n, a, b, d, k in
               zip(out, spatial, lo, hi, dilation, kernel))


def _grad_input_flat_rows(gg, wt, chw, kernel, padding, dilation):
    """The 2-D input cotangent at stride 1. The cotangent is widened to the
    padded input's width with zero columns, so every kernel offset's products
    land on one contiguous run of the flattened padded input: col2im becomes
    one long add per offset instead of one short add per output row. The
    widened columns add exact zeros (their products are 0 * finite weights;
    the caller checks the weights are finite)."""
    n, groups, og = gg.shape[:3]
    c, h, wd = chw
    kh, kw = kernel
    t, b, l, r = padding
    hp, wp = h + t + b, wd + l + r
    oh, ow = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
    run = oh * wp
    wide = np.zeros((n, groups, og, oh, wp), np.result_type(gg.dtype, wt.dtype))
    wide[..., :ow] = gg.reshape(n, groups, og, oh, ow)
    dcols = np.matmul(wt.transpose(0, 2, 1), wide.reshape(n, groups, og, run))
    dcols = dcols.astype(wide.dtype, copy=False).reshape(n, c, kh * kw, run)
    # the last offset's run ends dilation * (kw - 1) past the padded image
    gxp = np.zeros((n, c, hp * wp + dilation[1] * (kw - 1)), wide.dtype)
    for tap, (_, (di, dj)) in enumerate(taps(kernel, dilation)):
        win = gxp[:, :, di * wp + dj:di * wp + dj + run]
        np.add(win, dcols[:, :, tap], out=win)
    image = gxp[:, :, :hp * wp].reshape(n, c, hp, wp)
    return np.ascontiguousarray(image[:, :, t:t + h, l:l + wd])


# Patches (C * prod(kernel)) at least this long take `_grad_filter_one_product`;
# shorter ones (a first layer over RGB) the per-sample products, whose
# cotangent needs no transposed copy.
_LONG_PATCH = 64


def _grad_filter_one_product(x, g, kernel, stride, padding, dilation):
    """The filter cotangent (groups 1) as one matrix product over the batch
    and positions together, `cols (C*K, N*P) @ g (N*P, O)`: the columns are
    copied batch-inside (the same strided copies as `_im2col`) and the
    cotangent channels-last, the operand layout BLAS runs fastest, instead
    of N per-sample products summed afterwards."""
    n, c = x.shape[:2]
    o = g.shape[1]
    out = tuple(g.shape[2:])
    xp = _pad(x, padding)
    cols = np.empty((c,) + tuple(kernel) + (n,) + out, xp.dtype)
    for idx, off in taps(kernel, dilation):
        cols[(slice(None),) + idx] = xp[window(off, stride, out)].swapaxes(0, 1)
    positions = n * int(np.prod(out))
    g_last = np.moveaxis(g, 1, -1).reshape(positions, o)   # (a copy)
    dw_t = np.matmul(cols.reshape(c * int(np.prod(kernel)), positions), g_last)
    return np.ascontiguousarray(dw_t.T).reshape((o, c) + tuple(kernel))


def _grad_filter_kernel(x, g, stride, padding, dilation, groups, **size):
    kernel = _one(size)
    dtype = np.result_type(x.dtype, g.dtype)
    if groups == 1 and x.shape[1] * int(np.prod(kernel)) >= _LONG_PATCH:
        dw = _grad_filter_one_product(x.astype(dtype, copy=False), g.astype(dtype, copy=False),
                                      kernel, stride, padding, dilation)
        return dw.astype(dtype, copy=False)
    n, o = g.shape[:2]
    out = tuple(g.shape[2:])
    cols = _im2col(_pad(x.astype(dtype, copy=False), padding), kernel, stride, dilation,
                   out, groups)
    gg = g.astype(dtype, copy=False).reshape(n, groups, o // groups, int(np.prod(out)))
    dw = np.add.reduce(np.matmul(gg, cols.transpose(0, 1, 3, 2)), axis=0)  # per sample, summed
    return dw.astype(dtype, copy=False).reshape((o, x.shape[1] // groups) + kernel)


def _register_conv(m):
    conv, grad_input, grad_filter = m.op("conv"), m.op("conv", "_grad_input"), \
        m.op("conv", "_grad_filter")
    input_attr, kernel_attr = f"input_{m.size}", f"kernel_{m.size}"
    letters = ", ".join("k" + c.lower() for c in m.layout[2:])

    def check_input(x, where):
        if len(x.shape) != m.nd + 2:
            raise ValueError(f"{where}: expects a {m.nd + 2}-D {m.layout} input, got shape "
                             f"{list(x.shape)}")

    def infer(x, w, stride, padding, dilation, groups):
        check_input(x, conv)
        if len(w.shape) != m.nd + 2:
            raise ValueError(f"{conv}: the weight must be {m.nd + 2}-D (out, in/groups, "
                             f"{letters}), got {list(w.shape)}")
        c, o = x.shape[1], w.shape[0]
        if o is not None and o % groups:
            raise ValueError(f"{conv}: out_channels {o} is not divisible by groups {groups}")
        if c is not None and w.shape[1] is not None and c != w.shape[1] * groups:
            raise ValueError(f"{conv}: the input has {c} channels but the weight "
                             f"{list(w.shape)} with groups={groups} expects "
                             f"{w.shape[1] * groups}")
        out = out_shape(x.shape[2:], w.shape[2:], stride, padding, dilation)
        if 0 in out:
            raise ValueError(f"{conv}: the kernel {list(w.shape[2:])} (dilation "
                             f"{list(dilation)}) is larger than the padded input "
                             f"{list(x.shape[2:])}")
        return Aval((x.shape[0], o) + out, np.result_type(np.dtype(x.dtype), np.dtype(w.dtype)))

    def vjp(g, out, x, w, stride, padding, dilation, groups):
        attrs = _conv_attrs(stride, padding, dilation, groups)
        gx = gw = None
        if not grad_discarded(x):
            sizes, like = _grad_size(x)
            gx = bind(grad_input, g, w, *like, **{input_attr: sizes}, **attrs)
        if not grad_discarded(w):
            gw = bind(grad_filter, x, g, **{kernel_attr: tuple(w.shape[2:])}, **attrs)
        return gx, gw

    def grad_input_infer(g, w, *like, stride, padding, dilation, groups, output_padding=None,
                         **size):
        dims = grad_input_dims(_one(size), like, tuple(g.shape[2:]), tuple(w.shape[2:]),
                               stride, dilation, padding, output_padding)
        return Aval((g.shape[0], None if w.shape[1] is None else w.shape[1] * groups) + dims,
                    np.result_type(np.dtype(g.dtype), np.dtype(w.dtype)))

    def grad_input_vjp(gg, out, g, w, *like, stride, padding, dilation, groups,
                       output_padding=None, **size):
        # out = A_w^T g is linear in g and in w: <gg, A_w^T g> = <conv(gg, w), g>
        attrs = _conv_attrs(stride, padding, dilation, groups)
        return (bind(conv, gg, w, **attrs),
                bind(grad_filter, gg, g, **{kernel_attr: tuple(w.shape[2:])}, **attrs)) \
            + (None,) * len(like)

    def grad_filter_infer(x, g, stride, padding, dilation, groups, **size):
        return Aval((g.shape[1], None if x.shape[1] is None else x.shape[1] // groups)
                    + _one(size), np.result_type(np.dtype(x.dtype), np.dtype(g.dtype)))

    def grad_filter_vjp(gw, out, x, g, stride, padding, dilation, groups, **size):
        # out = B_x^T g, linear in x and in g: <gw, B_x^T g> = <conv(x, gw), g>
        attrs = _conv_attrs(stride, padding, dilation, groups)
        sizes, like = _grad_size(x)
        return (bind(grad_input, g, gw, *like, **{input_attr: sizes}, **attrs),
                bind(conv, x, gw, **attrs))

    register_op(conv, _conv_kernel, infer, vjp, fresh=True)
    register_op(grad_input, _grad_input_kernel, grad_input_infer, grad_input_vjp, fresh=True,
                attrs=_schema(input_attr, "output_padding", *_CONV_ATTRS))
    register_op(grad_filter, _grad_filter_kernel, grad_filter_infer, grad_filter_vjp,
                fresh=True, attrs=_schema(kernel_attr, *_CONV_ATTRS))
    return check_input, infer


# ---- pooling --------------------------------------------------------------------------------
def _max_pool_kernel(x, kernel, stride, padding, ceil_mode):
    out = out_shape(x.shape[2:], kernel, stride, padding, None, ceil_mode)
    xp = _pad(x, pool_extents(x.shape[2:], kernel, stride, padding, out), low(x.dtype))
    best = None
    for _, off in taps(kernel, (1,) * len(kernel)):
        win = xp[window(off, stride, out)]
        best = win.copy() if best is None else np.maximum(best, win, out=best)
    return best


def _max_pool_grad_kernel(g, x, best, kernel, stride, padding, ceil_mode):
    """The cotangent goes to the first maximum of each window (row-major), as
    Paddle's and PyTorch's argmax masks do; `best` is the forward's output."""
    out = tuple(g.shape[2:])
    ext = pool_extents(x.shape[2:], kernel, stride, padding, out)
    if (len(kernel) == 2 and not any(ext) and tuple(stride) == tuple(kernel)
            and kernel[1] == 2 and x.shape[2] == out[0] * kernel[0]
            and x.shape[3] == 2 * out[1] and g.dtype in _PLAIN_FLOATS
            and x.dtype == g.dtype and np.little_endian):
        return _tiled_pairs_pool_grad(g, x, best, kernel[0])
    xp = _pad(x, ext, low(x.dtype))
    free = np.ones(best.shape, bool)
    hit = np.empty(best.shape, bool)
    gxp = np.zeros(xp.shape, g.dtype)
    # windows that do not overlap write each element once: a masked copy
    disjoint = all(s >= k for s, k in zip(stride, kernel))
    for _, off in taps(kernel, (1,) * len(kernel)):
        idx = window(off, stride, out)
        np.equal(xp[idx], best, out=hit)
        hit &= free
        free ^= hit
        win = gxp[idx]
        if disjoint:
            np.copyto(win, g, where=hit)
        else:
            np.add(win, g, out=win, where=hit)
    return _unpad(gxp, ext, x.shape[2:])


_PLAIN_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _tiled_pairs_pool_grad(g, x, best, kh):
    """The 2-D max-pool cotangent for windows that tile the input exactly and
    are 2 wide (the common 2x2 stride-2 pooling). Per-tap strided views make
    numpy loop over rows `ow` long with a stride of 2; here every pass runs
    over whole input rows: `best` and `g` are repeated along the width
    (`_pairs`), the comparison marks each window's maxima, and the first
    maximum in row-major order is kept by viewing each window row's two flags
    as one uint16: the right flag is cleared where the left is set (one pass
    over all rows at once), then a later row is cleared where an earlier row
    has one."""
    n, c, oh, ow = g.shape
    hit = x.reshape(n, c, oh, kh, 2 * ow) == _pairs(best)[:, :, :, None, :]
    rows = hit.view(np.uint16)               # (n, c, oh, kh, ow): a window row each
    shifted = np.left_shift(rows, 8)         # the left flag moved onto the right one
    np.invert(shifted, out=shifted)
    rows &= shifted
    if kh > 1:
        free = rows[:, :, :, 0] == 0         # windows with no maximum yet
        for i in range(1, kh):
            r = rows[:, :, :, i]
            r *= free
            if i < kh - 1:
                free &= r == 0
    out = np.multiply(hit, _pairs(g)[:, :, :, None, :], dtype=g.dtype)
    return out.reshape(x.shape)


# (element size: the unsigned type of one element, of two, and the multiplier
# that copies the low half onto the high one)
_PAIR_TYPES = {2: (np.uint16, np.uint32, 0x10001), 4: (np.uint32, np.uint64, 0x100000001)}


def _pairs(a):
    """`a` with each element repeated twice along its last axis (as
    `np.repeat(a, 2, axis=-1)`, bit for bit). For 2- and 4-byte elements each
    one is widened into an integer twice its size holding its bits in both
    halves: two passes over contiguous memory instead of np.repeat's copy of
    one element at a time."""
    spec = _PAIR_TYPES.get(a.dtype.itemsize)
    if spec is None or not a.flags.c_contiguous:
        return np.repeat(a, 2, axis=-1)
    narrow, wide, mul = spec
    w = a.view(narrow).astype(wide)
    w *= wide(mul)
    return w.view(a.dtype)


def _max_pool_pick_kernel(v, x, kernel, stride, padding, ceil_mode):
    """`v` (shaped as x) read at each window's first maximum of `x`."""
    out = out_shape(x.shape[2:], kernel, stride, padding, None, ceil_mode)
    ext = pool_extents(x.shape[2:], kernel, stride, padding, out)
    xp, vp = _pad(x, ext, low(x.dtype)), _pad(v, ext, 0)
    best = _max_pool_kernel(x, kernel, stride, padding, ceil_mode)
    free = np.ones(best.shape, bool)
    picked = np.zeros(best.shape, v.dtype)
    for _, off in taps(kernel, (1,) * len(kernel)):
        idx = window(off, stride, out)
        hit = xp[idx] == best
        hit &= free
        free &= ~hit
        picked += np.where(hit, vp[idx], 0)
    return picked


def _avg_pool_kernel(x, kernel, stride, padding, ceil_mode, exclusive):
    out = out_shape(x.shape[2:], kernel, stride, padding, None, ceil_mode)
    xp = _pad(x, pool_extents(x.shape[2:], kernel, stride, padding, out))
    acc = None
    for _, off in taps(kernel, (1,) * len(kernel)):
        win = xp[window(off, stride, out)]
        acc = win.copy() if acc is None else np.add(acc, win, out=acc)
    counts = pool_counts(x.shape[2:], kernel, stride, padding, ceil_mode, exclusive)
    return np.divide(acc, counts.astype(x.dtype), out=acc)


def _avg_pool_grad_kernel(g, *like, kernel, stride, padding, ceil_mode, exclusive, **size):
    spatial = given_dims(_one(size), like)
    out = tuple(g.shape[2:])
    ext = pool_extents(spatial, kernel, stride, padding, out)
    share = g / pool_counts(spatial, kernel, stride, padding, ceil_mode,
                            exclusive).astype(g.dtype)
    lo, hi = lohi(ext)
    gxp = np.zeros(tuple(g.shape[:2]) + tuple(n + a + b for n, a, b in zip(spatial, lo, hi)),
                   g.dtype)
    for _, off in taps(kernel, (1,) * len(kernel)):
        win = gxp[window(off, stride, out)]
        np.add(win, share, out=win)
    return _unpad(gxp, ext, spatial)


def _register_pools(m, check_input):
    max_pool, avg_pool = m.op("max_pool"), m.op("avg_pool")
    max_grad, max_pick = m.op("max_pool", "_grad"), m.op("max_pool", "_pick")
    avg_grad = m.op("avg_pool", "_grad")
    input_attr = f"input_{m.size}"
    where = m.op("pool")

    def infer(x, kernel, stride, padding, ceil_mode, **_):
        check_input(x, where)
        lo, hi = lohi(padding)
        for k, a, b in zip(kernel, lo, hi):
            if max(a, b) > k:
                raise ValueError(f"{where}: padding {list(padding)} exceeds the kernel "
                                 f"{list(kernel)}")
        out = out_shape(x.shape[2:], kernel, stride, padding, None, ceil_mode)
        if 0 in out:
            raise ValueError(f"{where}: the kernel {list(kernel)} is larger than the padded "
                             f"input {list(x.shape[2:])}")
        return Aval(tuple(x.shape[:2]) + out, x.dtype)

    def max_vjp(g, out, x, kernel, stride, padding, ceil_mode):
        return (bind(max_grad, g, x, out, kernel=kernel, stride=stride, padding=padding,
                     ceil_mode=ceil_mode),)

    def max_grad_vjp(gg, out, g, x, best, kernel, stride, padding, ceil_mode):
        # linear in g: the windows' argmax picks gg's elements; nothing flows to x
        return bind(max_pick, gg, x, kernel=kernel, stride=stride, padding=padding,
                    ceil_mode=ceil_mode), None, None

    def max_pick_vjp(gp, out, v, x, kernel, stride, padding, ceil_mode):
        attrs = dict(kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode)
        return bind(max_grad, gp, x, bind(max_pool, x, **attrs), **attrs), None

    def avg_vjp(g, out, x, kernel, stride, padding, ceil_mode, exclusive):
        sizes, like = _grad_size(x)
        return (bind(avg_grad, g, *like, **{input_attr: sizes}, kernel=kernel, stride=stride,
                     padding=padding, ceil_mode=ceil_mode, exclusive=exclusive),)

    def avg_grad_vjp(gg, out, g, *like, kernel, stride, padding, ceil_mode, exclusive, **size):
        return (bind(avg_pool, gg, kernel=kernel, stride=stride, padding=padding,
                     ceil_mode=ceil_mode, exclusive=exclusive),) + (None,) * len(like)

    register_op(max_pool, _max_pool_kernel, infer, max_vjp, fresh=True)
    register_op(max_grad, _max_pool_grad_kernel,
                lambda g, x, best, **_: Aval(tuple(x.shape), g.dtype), max_grad_vjp,
                fresh=True)
    register_op(max_pick, _max_pool_pick_kernel,
                lambda v, x, **a: Aval(infer(x, **a).shape, v.dtype), max_pick_vjp, fresh=True)
    register_op(avg_pool, _avg_pool_kernel, infer, avg_vjp, fresh=True)
    register_op(avg_grad, _avg_pool_grad_kernel,
                lambda g, *like, **a: Aval(tuple(g.shape[:2])
                                           + given_dims(a[input_attr], like), g.dtype),
                avg_grad_vjp, fresh=True,
                attrs=_schema(input_attr, "exclusive", *_POOL_ATTRS))
    return infer


CHECKS = {}  # nd -> (conv shape rule, pool shape rule): the public wrappers check eagerly
for _nd, _member in MEMBERS.items():
    _check, _conv_infer = _register_conv(_member)
    CHECKS[_nd] = (_conv_infer, _register_pools(_member, _check))


def conv(x, weight, stride, padding, dilation, groups):
    """Convolution (cross-correlation) of an NC... input, normalized attributes."""
    attrs = dict(stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation),
                 groups=int(groups))
    nd = len(attrs["stride"])
    CHECKS[nd][0](x, weight, **attrs)  # eager calls check their shapes too
    return bind(MEMBERS[nd].op("conv"), x, weight, **attrs)


def pool(kind, x, kernel, stride, padding, ceil_mode=False, **extra):
    """`kind` ("max_pool" / "avg_pool") pooling, normalized attributes."""
    attrs = dict(kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 ceil_mode=bool(ceil_mode))
    nd = len(attrs["kernel"])
    CHECKS[nd][1](x, **attrs)
    return bind(MEMBERS[nd].op(kind), x, **attrs, **extra)
