"""Common layers, each a thin Layer around `d2s.nn.functional`."""
from __future__ import annotations

from . import functional as F
from . import initializer as init
from .layer import Layer

__all__ = ["Linear", "ReLU", "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout"]


def _attr(attr):
    """A layer's `weight_attr` / `bias_attr` as `create_parameter`'s `attr` (True: the
    default, as None)."""
    return None if attr is True else attr


class Linear(Layer):
    """`y = x @ weight + bias`, weight of shape (in_features, out_features),
    Xavier-uniform; bias zeros (`bias_attr=False`: no bias)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__(name)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter(
            [in_features, out_features], attr=_attr(weight_attr),
            default_initializer=init.XavierUniform())
        self.bias = self.create_parameter([out_features], attr=_attr(bias_attr), is_bias=True,
                                          default_initializer=init.Constant(0.0))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}"
                + ("" if self.bias is not None else ", bias=False"))


class ReLU(Layer):
    def forward(self, x):
        return F.relu(x)


class Tanh(Layer):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Layer):
    def forward(self, x):
        return F.sigmoid(x)


class GELU(Layer):
    def __init__(self, approximate=False):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)


class LayerNorm(Layer):
    """Layer normalization over the trailing `normalized_shape` dims, with a
    learned scale (ones) and shift (zeros) unless their attr is False."""

    def __init__(self, normalized_shape, epsilon=1e-5, weight_attr=None, bias_attr=None,
                 name=None):
        super().__init__(name)
        if isinstance(normalized_shape, int):
            normalized_shape = [normalized_shape]
        self.normalized_shape = [int(d) for d in normalized_shape]
        self.epsilon = epsilon
        self.weight = self.create_parameter(self.normalized_shape, attr=_attr(weight_attr),
                                            default_initializer=init.Constant(1.0))
        self.bias = self.create_parameter(self.normalized_shape, attr=_attr(bias_attr),
                                          is_bias=True, default_initializer=init.Constant(0.0))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.epsilon)

    def extra_repr(self):
        return f"normalized_shape={self.normalized_shape}, epsilon={self.epsilon}"


class Embedding(Layer):
    """Lookup table of shape (num_embeddings, embedding_dim), Xavier-uniform;
    PaddlePaddle's signature (`padding_idx` ids give zeros, see F.embedding)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False,
                 weight_attr=None, name=None):
        super().__init__(name)
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx, self.sparse = padding_idx, sparse
        self.weight = self.create_parameter(
            [num_embeddings, embedding_dim], attr=_attr(weight_attr),
            default_initializer=init.XavierUniform())

    def forward(self, x):
        return F.embedding(x, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Layer):
    """Paddle's Dropout layer: `F.dropout` with the layer's training flag (inverted
    dropout by default; `mode`, `axis` as `F.dropout`)."""

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__(name)
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = float(p)
        self.axis, self.mode = axis, mode

    def forward(self, x):
        return F.dropout(x, self.p, axis=self.axis, training=self.training, mode=self.mode)

    def extra_repr(self):
        return f"p={self.p}"
