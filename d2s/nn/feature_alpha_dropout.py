"""Paddle's `F.feature_alpha_dropout`: `alpha_dropout` that drops whole
channels (one draw per sample and channel, as `dropout2d` does for plain
dropout), for SELU networks on feature maps. A composite of `rand` and
arithmetic: gradients, xla and ONNX come with them."""
from __future__ import annotations

from ..core.ops import cast, rand
from ..core.ops._base import lift
from .vision_functional import _SELU_ALPHA_P, _dims

__all__ = ["feature_alpha_dropout"]


def feature_alpha_dropout(x, p=0.5, training=True, name=None):
    """Per (sample, channel) of an (N, C, ...) input: kept (times `a`, plus
    `b`) or set to SELU's saturation value (times `a`, plus `b`), with `a`,
    `b` chosen to keep zero mean and unit variance. Identity when not
    training."""
    x = lift(x)
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"feature_alpha_dropout: p must be in [0, 1], got {p}")
    if len(x.shape) < 2:
        raise ValueError(f"feature_alpha_dropout: expects (N, C, ...) input, got shape "
                         f"{list(x.shape)}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    a = ((1.0 - p) * (1.0 + p * _SELU_ALPHA_P ** 2)) ** -0.5
    b = -a * _SELU_ALPHA_P * p
    dims = _dims(x)
    keep = cast(rand(dims[:2] + [1] * (len(dims) - 2), x.dtype) >= p, x.dtype)
    return (x * keep + (1.0 - keep) * _SELU_ALPHA_P) * a + b
