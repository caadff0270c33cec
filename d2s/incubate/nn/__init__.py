"""`d2s.incubate.nn`: `FusedLinear` (a Linear: d2s fuses nothing by hand) and
`functional`."""
from ...core.tensor import Tensor
from ...nn.layers import Linear
from . import functional  # noqa: F401

__all__ = ["FusedLinear", "functional"]


class FusedLinear(Linear):
    """Paddle's FusedLinear: `Linear`, with `transpose_weight=True` storing the
    weight as (out_features, in_features)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None,
                 transpose_weight=False, name=None):
        super().__init__(in_features, out_features, weight_attr, bias_attr, name)
        self.transpose_weight = bool(transpose_weight)
        if self.transpose_weight:  # the same draw, stored transposed, under the same name
            value = self.weight.numpy().T.copy()
            self.weight = self.create_parameter(
                [out_features, in_features], name=self.weight.name,
                initializer=lambda shape, dtype: Tensor(value.astype(dtype)))

    def forward(self, x):
        from ...nn.functional import linear
        from ...core.ops import transpose
        w = transpose(self.weight, [1, 0]) if self.transpose_weight else self.weight
        return linear(x, w, self.bias)
