"""`d2s.flops` (Paddle's `paddle.flops`): the floating-point operations of
one forward pass of a network on `randn(input_size)`, counted per leaf
layer by Paddle's rules (a multiply-add counts once):

* convolutions (and transposed): output elements x (input channels /
  groups x kernel elements + 1 if biased);
* Linear: input features x output elements;
* BatchNorm / BatchNorm2D: 2 x input elements (inference);
* LeakyReLU: input elements; AvgPool1D-3D: output elements;
  AdaptiveAvgPool1D-3D: (window elements + 1) x output elements;
* ReLU, ReLU6, Dropout and every other layer: 0, unless `custom_ops`
  maps its class to `fn(layer, inputs, output)` adding to `layer.total_ops`.

Prints `Total Flops: ...     Total Params: ...` (and a per-layer table
with `print_detail`) and returns the total."""
from __future__ import annotations

import numpy as np

from . import nn
from .core.ops import randn
from .core.state import no_grad

__all__ = ["flops"]


def _numel(t):
    return int(np.prod(t.shape))


def _conv(m, x, y):
    x = x[0]
    kernel = int(np.prod(m.weight.shape[2:]))
    groups = getattr(m, "_groups", None) or getattr(m, "groups", 1) or 1
    bias = 1 if getattr(m, "bias", None) is not None else 0
    m.total_ops += abs(int(_numel(y) * (x.shape[1] / groups * kernel + bias)))


def _linear(m, x, y):
    m.total_ops += abs(int(m.weight.shape[0] * _numel(y)))


def _bn(m, x, y):
    m.total_ops += abs(int(2 * _numel(x[0])))


def _leaky_relu(m, x, y):
    m.total_ops += int(_numel(x[0]))


def _avgpool(m, x, y):
    m.total_ops += int(_numel(y))


def _adaptive_avgpool(m, x, y):
    window = np.array(x[0].shape[2:]) // np.array(y.shape[2:])
    m.total_ops += abs(int((int(np.prod(window)) + 1) * _numel(y)))


def _zero(m, x, y):
    pass


RULES = {
    nn.Conv1D: _conv, nn.Conv2D: _conv, nn.Conv3D: _conv, nn.Conv1DTranspose: _conv,
    nn.Conv2DTranspose: _conv, nn.Conv3DTranspose: _conv, nn.BatchNorm2D: _bn,
    nn.BatchNorm: _bn, nn.ReLU: _zero, nn.ReLU6: _zero, nn.LeakyReLU: _leaky_relu,
    nn.Linear: _linear, nn.Dropout: _zero, nn.AvgPool1D: _avgpool, nn.AvgPool2D: _avgpool,
    nn.AvgPool3D: _avgpool, nn.AdaptiveAvgPool1D: _adaptive_avgpool,
    nn.AdaptiveAvgPool2D: _adaptive_avgpool, nn.AdaptiveAvgPool3D: _adaptive_avgpool,
}


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Total FLOPs of `net(randn(input_size))` (see the module)."""
    if not isinstance(net, nn.Layer):
        raise TypeError(f"flops: net must be a d2s.nn.Layer, got {type(net).__name__} "
                        "(static Programs are not counted)")
    custom_ops = dict(custom_ops or {})
    leaves = [m for m in net.sublayers(include_self=True) if not m.sublayers()]
    handles, shapes, seen = [], {}, set()

    def record(m, x, y):
        shapes[id(m)] = (list(x[0].shape), list((y[0] if isinstance(y, (list, tuple))
                                                 else y).shape))

    for m in leaves:
        kind = type(m)
        fn = custom_ops.get(kind) or RULES.get(kind)
        if kind not in seen:
            seen.add(kind)
            if fn is None:
                print(f"Cannot find suitable count function for {kind.__name__}. Treat it as "
                      "zero FLOPs.")
        object.__setattr__(m, "total_ops", 0)
        if fn is not None:
            handles.append(m.register_forward_post_hook(fn))
        handles.append(m.register_forward_post_hook(record))
    training = net.training
    net.eval()
    try:
        with no_grad():
            net(randn(list(input_size)))
    finally:
        for h in handles:
            h.remove()
        if training:
            net.train()
    rows, total_ops, total_params = [], 0, 0
    for m in leaves:
        ops = int(m.__dict__.pop("total_ops", 0))
        if id(m) not in shapes:
            continue  # not called by this forward
        n = int(sum(_numel(p) for p in m.parameters()))
        total_ops += ops
        total_params += n
        rows.append((m.full_name(), *shapes[id(m)], n, ops))
    if print_detail:
        head = ("Layer Name", "Input Shape", "Output Shape", "Params", "Flops")
        widths = [max(len(str(r[i])) for r in rows + [head]) + 2 for i in range(5)]
        line = "+" + "+".join("-" * w for w in widths) + "+"
        print(line)
        for r in [head] + rows:
            print("|" + "|".join(str(v).center(w) for v, w in zip(r, widths)) + "|")
            if r is head:
                print(line)
        print(line)
    print(f"Total Flops: {total_ops}     Total Params: {total_params}")
    return total_ops
