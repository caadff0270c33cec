"""ONNX rules of the 3-D convolution and pooling ops (`d2s/core/ops/conv3d.py`):
`Conv`, `MaxPool`, `AveragePool`, and `ConvTranspose` for the input-gradient
op (which `conv3d_transpose` uses). The other gradient ops only appear in
training programs, which an ONNX model does not hold."""
from __future__ import annotations

from ...core.registry import NotLowerable, lowers, register_lowering


def _pads(padding):
    return [int(v) for v in padding[0::2]] + [int(v) for v in padding[1::2]]


@lowers("onnx", "conv3d")
def _conv3d(ns, x, w, stride, padding, dilation, groups):
    x, w = ns.promote(x, w)
    return ns.node("Conv", x, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups))


@lowers("onnx", "max_pool3d")
def _max_pool3d(ns, x, kernel, stride, padding, ceil_mode):
    return ns.node("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode))


@lowers("onnx", "avg_pool3d")
def _avg_pool3d(ns, x, kernel, stride, padding, ceil_mode, exclusive):
    return ns.node("AveragePool", x, kernel_shape=list(kernel), strides=list(stride),
                   pads=_pads(padding), ceil_mode=int(ceil_mode),
                   count_include_pad=0 if exclusive else 1)


@lowers("onnx", "conv3d_grad_input")
def _conv3d_transpose(ns, g, w, input_dhw, stride, padding, dilation, groups):
    """ConvTranspose, the rows past the padded output as output_padding."""
    g, w = ns.promote(g, w)
    spatial = None if g.shape is None else g.shape[2:]
    if spatial is None or None in spatial or None in tuple(w.shape or (None,))[2:]:
        raise ns.Unsupported("a transposed convolution whose input's spatial dims are not "
                             "known (give them in the input_spec)")
    extra = []
    for size, n_in, k, s, d, lo, hi in zip(input_dhw, spatial, w.shape[2:], stride, dilation,
                                           padding[0::2], padding[1::2]):
        extra.append(0 if size is None else int(size - ((n_in - 1) * s + d * (k - 1) + 1
                                                        - lo - hi)))
    return ns.node("ConvTranspose", g, w, strides=list(stride), pads=_pads(padding),
                   dilations=list(dilation), group=int(groups), output_padding=extra)


_GRAD = NotLowerable("a gradient op of training programs; an ONNX model holds the forward "
                     "pass only (export the layer, not a training step)")
for _op in ("conv3d_grad_filter", "max_pool3d_grad", "avg_pool3d_grad"):
    register_lowering("onnx", _op, _GRAD)
