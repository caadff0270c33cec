"""ONNX rules of the convolution and pooling ops (`d2s/core/ops/conv.py`):
`Conv`, `MaxPool`, `AveragePool`, and `ConvTranspose` for the input-gradient
op (which `conv2d_transpose` layers use). The other gradient ops only appear
in training programs, which an ONNX model (constant weights) does not hold."""
from __future__ import annotations

from ...core.registry import NotLowerable, lowers, register_lowering


def _pads(padding):
    t, b, l, r = padding
    return [int(t), int(l), int(b), int(r)]  # ONNX: all begins, then all ends


@lowers("onnx", "conv2d")
def _conv2d(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    return ns.node("Conv", x, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups))


@lowers("onnx", "max_pool2d")
def _max_pool2d(ns, x, kernel, stride, padding, ceil_mode):
    return ns.node("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode))


@lowers("onnx", "avg_pool2d")
def _avg_pool2d(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    return ns.node("AveragePool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode),
                   count_include_pad=0 if exclusive else 1)


@lowers("onnx", "conv2d_grad_input")
def _conv2d_transpose(ns, g, w, *like, input_hw, stride, padding, dilation, groups,
                      output_padding=(0, 0)):
    """The input's gradient is a transposed convolution (`conv2d_transpose`):
    ONNX's ConvTranspose, the rows past the padded output as output_padding
    (ConvTranspose computes the output's size from its input's when it runs,
    so dims unknown when exported stay dynamic)."""
    g, w = ns.promote(g, w)
    if like:
        raise ns.Unsupported("the input gradient of a convolution (a training program's op; "
                             "export the layer, not a training step)")
    if None in tuple(w.shape or (None,))[2:]:
        raise ns.Unsupported("a transposed convolution whose kernel size is not known")
    spatial = (None, None) if g.shape is None else g.shape[2:]
    t, b, l, r = padding
    extra = []
    for size, n_in, k, s, d, lo, hi, e in zip(input_hw, spatial, w.shape[2:], stride, dilation,
                                              (t, l), (b, r), output_padding):
        if size is None:  # unknown when built: derived from the input's size when it runs
            extra.append(int(e))
            continue
        if n_in is None:
            raise ns.Unsupported("a transposed convolution with a fixed output size over an "
                                 "input whose spatial dims are not known")
        extra.append(int(size - ((n_in - 1) * s + d * (k - 1) + 1 - lo - hi)))
    return ns.node("ConvTranspose", g, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups), output_padding=extra)


_GRAD = NotLowerable("a gradient op of training programs; an ONNX model holds the forward "
                     "pass only (export the layer, not a training step)")
for _op in ("conv2d_grad_filter", "max_pool2d_grad", "max_pool2d_pick",
            "avg_pool2d_grad"):
    register_lowering("onnx", _op, _GRAD)
