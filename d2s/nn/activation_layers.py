"""Activation layers (Paddle's classes), each a thin Layer around its function."""
from __future__ import annotations

from . import activation_functional as AF
from . import initializer as _init
from .layer import Layer
from .layers import _attr
from ..core.ops import log_softmax, softmax

__all__ = ["Silu", "Swish", "Hardswish", "Hardsigmoid", "Hardtanh", "LeakyReLU", "ELU", "SELU",
           "CELU", "Softplus", "Softsign", "Mish", "ReLU6", "PReLU", "LogSigmoid", "Tanhshrink",
           "Softshrink", "Hardshrink", "ThresholdedReLU", "Softmax", "LogSoftmax"]


def _simple(fn, doc, *names):
    """A Layer class calling `fn(x, **its constructor arguments)`."""
    def __init__(self, *args, name=None, **kwargs):
        Layer.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{fn.__name__}: too many arguments {args}")
        self._kw = dict(zip(names, args), **kwargs)

    def forward(self, x):
        return fn(x, **self._kw)

    def extra_repr(self):
        return ", ".join(f"{k}={v}" for k, v in self._kw.items())
    return {"__init__": __init__, "forward": forward, "extra_repr": extra_repr, "__doc__": doc}


Silu = type("Silu", (Layer,), _simple(AF.silu, "x * sigmoid(x)"))
Swish = type("Swish", (Layer,), _simple(AF.swish, "x * sigmoid(x)"))
Hardswish = type("Hardswish", (Layer,), _simple(AF.hardswish, "x * relu6(x + 3) / 6"))
Hardsigmoid = type("Hardsigmoid", (Layer,), _simple(AF.hardsigmoid, "clip(x / 6 + 0.5, 0, 1)",
                                                    "slope", "offset"))
Hardtanh = type("Hardtanh", (Layer,), _simple(AF.hardtanh, "clip(x, min, max)", "min", "max"))
LeakyReLU = type("LeakyReLU", (Layer,), _simple(AF.leaky_relu, "x, or slope * x below 0",
                                                "negative_slope"))
ELU = type("ELU", (Layer,), _simple(AF.elu, "x, or alpha * (exp(x) - 1) below 0", "alpha"))
SELU = type("SELU", (Layer,), _simple(AF.selu, "scaled ELU", "scale", "alpha"))
CELU = type("CELU", (Layer,), _simple(AF.celu, "continuously differentiable ELU", "alpha"))
Softplus = type("Softplus", (Layer,), _simple(AF.softplus, "log(1 + exp(beta x)) / beta",
                                              "beta", "threshold"))
Softsign = type("Softsign", (Layer,), _simple(AF.softsign, "x / (1 + |x|)"))
Mish = type("Mish", (Layer,), _simple(AF.mish, "x * tanh(softplus(x))"))
ReLU6 = type("ReLU6", (Layer,), _simple(AF.relu6, "clip(x, 0, 6)"))
LogSigmoid = type("LogSigmoid", (Layer,), _simple(AF.log_sigmoid, "log(sigmoid(x))"))
Tanhshrink = type("Tanhshrink", (Layer,), _simple(AF.tanhshrink, "x - tanh(x)"))
Softshrink = type("Softshrink", (Layer,), _simple(AF.softshrink, "soft shrinkage",
                                                  "threshold"))
Hardshrink = type("Hardshrink", (Layer,), _simple(AF.hardshrink, "hard shrinkage",
                                                  "threshold"))
ThresholdedReLU = type("ThresholdedReLU", (Layer,), _simple(AF.thresholded_relu,
                                                            "x above threshold, else 0",
                                                            "threshold"))
Softmax = type("Softmax", (Layer,), _simple(softmax, "softmax over `axis`", "axis"))
LogSoftmax = type("LogSoftmax", (Layer,), _simple(log_softmax, "log-softmax over `axis`",
                                                  "axis"))
for _cls in (Silu, Swish, Hardswish, Hardsigmoid, Hardtanh, LeakyReLU, ELU, SELU, CELU,
             Softplus, Softsign, Mish, ReLU6, LogSigmoid, Tanhshrink, Softshrink, Hardshrink,
             ThresholdedReLU, Softmax, LogSoftmax):
    _cls.__module__ = __name__


class PReLU(Layer):
    """`x` where positive, `weight * x` elsewhere; `num_parameters` slopes (1, or
    one per channel), initialised to `init`."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW",
                 name=None):
        super().__init__(name)
        self._num_parameters, self._data_format = int(num_parameters), data_format
        self.weight = self.create_parameter([self._num_parameters], attr=_attr(weight_attr),
                                            default_initializer=_init.Constant(init))

    def forward(self, x):
        return AF.prelu(x, self.weight, self._data_format)

    def extra_repr(self):
        return f"num_parameters={self._num_parameters}"

