"""ONNX rules of the convolution and pooling family (`d2s/core/ops/conv_nd.py`),
one rule per op for every member (2-D and 3-D): `Conv`, `MaxPool`,
`AveragePool`, and `ConvTranspose` for the input-gradient op (which the
transposed convolution layers use). The other gradient ops only appear in
training programs, which an ONNX model (constant weights) does not hold."""
from __future__ import annotations

from ...core.ops.conv_nd import MEMBERS, lohi
from ...core.registry import NotLowerable, register_lowering


def _pads(padding):
    lo, hi = lohi(padding)
    return [int(v) for v in lo + hi]  # ONNX: all begins, then all ends


def _conv(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    return ns.node("Conv", x, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups))


def _max_pool(ns, x, kernel, stride, padding, ceil_mode):
    return ns.node("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode))


def _avg_pool(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    return ns.node("AveragePool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode),
                   count_include_pad=0 if exclusive else 1)


def _conv_transpose(ns, g, w, *like, stride, padding, dilation, groups, output_padding=None,
                    **size):
    """The input's gradient is a transposed convolution: ONNX's ConvTranspose,
    the rows past the padded output as output_padding (ConvTranspose computes
    the output's size from its input's when it runs, so dims unknown when
    exported stay dynamic)."""
    g, w = ns.promote(g, w)
    if like:
        raise ns.Unsupported("the input gradient of a convolution (a training program's op; "
                             "export the layer, not a training step)")
    nd = len(stride)
    if None in tuple(w.shape or (None,) * (nd + 2))[2:]:
        raise ns.Unsupported("a transposed convolution whose kernel size is not known")
    (sizes,) = size.values()
    spatial = (None,) * nd if g.shape is None else g.shape[2:]
    extra = []
    for n, n_in, k, s, d, lo, hi, e in zip(sizes, spatial, w.shape[2:], stride, dilation,
                                           *lohi(padding), output_padding or (0,) * nd):
        if n is None:  # unknown when built: derived from the input's size when it runs
            extra.append(int(e))
            continue
        if n_in is None:
            raise ns.Unsupported("a transposed convolution with a fixed output size over an "
                                 "input whose spatial dims are not known")
        extra.append(int(n - ((n_in - 1) * s + d * (k - 1) + 1 - lo - hi)))
    return ns.node("ConvTranspose", g, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups), output_padding=extra)


_GRAD = NotLowerable("a gradient op of training programs; an ONNX model holds the forward "
                     "pass only (export the layer, not a training step)")
for _m in MEMBERS.values():
    register_lowering("onnx", _m.op("conv"), _conv)
    register_lowering("onnx", _m.op("max_pool"), _max_pool)
    register_lowering("onnx", _m.op("avg_pool"), _avg_pool)
    register_lowering("onnx", _m.op("conv", "_grad_input"), _conv_transpose)
    for _op in (_m.op("conv", "_grad_filter"), _m.op("max_pool", "_grad"),
                _m.op("max_pool", "_pick"), _m.op("avg_pool", "_grad")):
        register_lowering("onnx", _op, _GRAD)
