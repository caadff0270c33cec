"""`Bilinear` (Paddle's layer) and its function."""
from __future__ import annotations

import math

from ..core.ops import matmul, sum as _sum, transpose, unsqueeze
from ..core.ops._base import lift
from . import initializer as init
from .layer import Layer
from .layers import _attr

__all__ = ["Bilinear", "bilinear"]


def bilinear(x1, x2, weight, bias=None, name=None):
    """`out[b, o] = x1[b] @ weight[o] @ x2[b] + bias[o]`; weight (out, in1, in2)."""
    x1, x2, weight = lift(x1), lift(x2), lift(weight)
    t = matmul(unsqueeze(x1, 0), weight)               # (out, B, in2)
    out = transpose(_sum(t * unsqueeze(x2, 0), axis=-1), [1, 0])
    return out if bias is None else out + bias


class Bilinear(Layer):
    """Weight (out, in1, in2) and bias (1, out), Uniform(+-1/sqrt(in1)) as Paddle."""

    def __init__(self, in1_features, in2_features, out_features, weight_attr=None,
                 bias_attr=None, name=None):
        super().__init__(name)
        bound = 1.0 / math.sqrt(in1_features)
        u = init.Uniform(-bound, bound)
        self.weight = self.create_parameter([out_features, in1_features, in2_features],
                                            attr=_attr(weight_attr), default_initializer=u)
        self.bias = self.create_parameter([1, out_features], attr=_attr(bias_attr),
                                          is_bias=True, default_initializer=u)

    def forward(self, x1, x2):
        return bilinear(x1, x2, self.weight, self.bias)
