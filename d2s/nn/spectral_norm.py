"""Spectral normalization: `nn.utils.spectral_norm(layer)` and the layer
`nn.SpectralNorm` (PaddlePaddle's names; PyTorch's semantics, which
PaddlePaddle's `utils.spectral_norm` follows).

The weight is divided by its largest singular value, estimated by power
iteration. The iteration's vectors `u` and `v` are buffers (`<name>_u`,
`<name>_v`): each forward in training mode runs `n_power_iterations` steps
from them and stores the new vectors (in a function converted by `to_static`
the store is a write that outlives the call, replayed after each run: DESIGN
§4), so the estimate sharpens over training as it does eagerly; in eval mode
the stored vectors are used as they are. The vectors are constants of the
gradient (detached); sigma = u^T W v carries W's gradient.

`spectral_norm(layer)` makes `layer.<name>` a value computed from the
parameter `<name>_orig` each time it is read (the layer's class becomes a
subclass with a property of that name, as `weight_norm` does): a forward that
reads the weight once runs the power iteration once.
"""
from __future__ import annotations

import numpy as np

from ..core.ops import matmul, maximum, reshape, sqrt, sum as _sum, transpose
from ..core.tensor import Tensor
from .layer import Layer

__all__ = ["spectral_norm", "SpectralNorm"]


def _normalize(v, eps):
    return v / maximum(sqrt(_sum(v * v)), v.detach() * 0.0 + eps)


def _as_matrix(w, dim):
    """`w` with `dim` first, flattened to (w.shape[dim], -1)."""
    if dim != 0:
        order = [dim] + [a for a in range(len(w.shape)) if a != dim]
        w = transpose(w, order)
    return reshape(w, [w.shape[0], -1])


def _store(owner, name, value):
    """The buffer `owner.<name>` holds `value` from now on: in place eagerly;
    while `to_static` traces, an attribute write the program replays."""
    buf = owner._buffers.get(name)
    if isinstance(value, Tensor) and isinstance(buf, Tensor):
        buf._value = value._value
    else:
        setattr(owner, name, value)


def _normalized_weight(owner, w, prefix, dim, iterations, eps):
    """w / sigma(w), the power iteration run from (and stored into) the
    buffers `<prefix>_u` / `<prefix>_v` of `owner` in training mode."""
    mat = _as_matrix(w, dim)
    u, v = getattr(owner, prefix + "_u"), getattr(owner, prefix + "_v")
    if owner.training and iterations > 0:
        mat_d = mat.detach()
        for _ in range(iterations):
            v = _normalize(matmul(u, mat_d), eps)          # W^T u
            u = _normalize(matmul(mat_d, v), eps)          # W v
        u, v = u.detach(), v.detach()
        _store(owner, prefix + "_u", u)
        _store(owner, prefix + "_v", v)
    sigma = _sum(u * matmul(mat, v))
    return w / sigma


def _initial_vectors(shape, dim, eps, dtype, rng=np.random):
    h = shape[dim]
    w = int(np.prod(shape)) // h
    u, v = rng.standard_normal(h), rng.standard_normal(w)
    return ((u / max(np.linalg.norm(u), eps)).astype(dtype),
            (v / max(np.linalg.norm(v), eps)).astype(dtype))


def _spectral_class(cls, name, dim, iterations, eps):
    def read(self):
        return _normalized_weight(self, getattr(self, name + "_orig"), name, dim, iterations,
                                  eps)

    sub = type(cls.__name__, (cls,), {name: property(read), "__module__": cls.__module__,
                                      "_d2s_spectral_norm": (cls, name)})
    sub.__qualname__ = cls.__qualname__
    return sub


def spectral_norm(layer, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparameterize `layer.<name>` as W / sigma(W) (see the module doc):
    parameter `<name>_orig` (the weight as it was) and buffers `<name>_u`,
    `<name>_v` replace it. `dim` is the output dim (default 0; 1 for
    transposed convolutions and `Linear`, as PaddlePaddle's). Returns the layer."""
    w = layer._parameters.get(name)
    if not isinstance(w, Tensor):
        raise ValueError(f"spectral_norm: {type(layer).__name__} has no parameter {name!r}")
    if getattr(type(layer), "_d2s_spectral_norm", None) is not None:
        raise RuntimeError(f"spectral_norm: {type(layer).__name__}.{name} is normalized "
                           "already")
    if int(n_power_iterations) < 0:
        raise ValueError(f"spectral_norm: n_power_iterations must be >= 0, got "
                         f"{n_power_iterations}")
    if dim is None:  # the output dim: 1 for transposed convolutions and for Linear,
        from .layers import Linear  # whose weight is (in_features, out_features) here
        dim = 1 if "Transpose" in type(layer).__name__ or isinstance(layer, Linear) else 0
    rank = len(w.shape)
    if not -rank <= dim < rank:
        raise ValueError(f"spectral_norm: dim {dim} is out of range for a weight of rank "
                         f"{rank}")
    dim %= rank
    u, v = _initial_vectors(tuple(w.shape), dim, eps, np.dtype(w.dtype))
    del layer._parameters[name]
    object.__delattr__(layer, name)
    layer.add_parameter(name + "_orig", w)
    layer.register_buffer(name + "_u", Tensor._from_array(u))
    layer.register_buffer(name + "_v", Tensor._from_array(v))
    object.__setattr__(layer, "__class__",
                       _spectral_class(type(layer), name, dim, int(n_power_iterations), eps))
    return layer


class SpectralNorm(Layer):
    """PaddlePaddle's `nn.SpectralNorm(weight_shape, dim, power_iters, epsilon)`:
    `forward(weight)` returns weight / sigma(weight), its power-iteration
    vectors the buffers `weight_u` / `weight_v` (updated in training mode)."""

    def __init__(self, weight_shape, dim=0, power_iters=1, epsilon=1e-12, dtype="float32"):
        super().__init__(dtype=dtype)
        self._shape = [int(d) for d in weight_shape]
        rank = len(self._shape)
        if not -rank <= dim < rank:
            raise ValueError(f"SpectralNorm: dim {dim} is out of range for weight_shape "
                             f"{self._shape}")
        self._dim = dim % rank
        self._power_iters = int(power_iters)
        self._epsilon = float(epsilon)
        u, v = _initial_vectors(tuple(self._shape), self._dim, self._epsilon,
                                np.dtype(self._dtype))
        self.register_buffer("weight_u", Tensor._from_array(u))
        self.register_buffer("weight_v", Tensor._from_array(v))

    def forward(self, weight):
        if list(weight.shape) != self._shape and None not in weight.shape:
            raise ValueError(f"SpectralNorm: weight of shape {list(weight.shape)}, built for "
                             f"{self._shape}")
        return _normalized_weight(self, weight, "weight", self._dim, self._power_iters,
                                  self._epsilon)
