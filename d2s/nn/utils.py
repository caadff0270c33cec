"""`d2s.nn.utils`: gradient clipping; weight normalization.

Written with d2s ops on the parameters' `.grad`, so the same code clips
eagerly and inside a training step traced by `to_static`, where the scaled
gradients become ops and writes of the step's program (core.effects).
"""
from __future__ import annotations

import math

from ..core import effects
from ..core.ops import clip, full, norm, reshape, sqrt, stack, sum as _sum
from ..core.tensor import Tensor

__all__ = ["clip_grad_norm_", "weight_norm", "remove_weight_norm"]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scale the gradients of `parameters` so that their total norm is at most
    `max_norm`; returns the total norm before clipping.

    PyTorch's `torch.nn.utils.clip_grad_norm_`: the total norm is the
    `norm_type` norm (2, 1 or inf) of the per-parameter gradient norms, and
    every gradient is multiplied by `min(max_norm / (total + 1e-6), 1)`.
    Parameters without a gradient are skipped; with none at all the result
    is 0. Gradients are rebound to new Tensors (never written in place).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    overlay = effects.overlay()
    if overlay is not None:  # inside a traced step: the gradients are its Variables
        overlay.activate("clip_grad_norm_()")
        overlay.track_all(parameters)
    owners = [p for p in parameters if p.grad is not None]
    if not owners:
        return full([], 0.0, "float32")
    total = norm(stack([norm(p.grad, norm_type) for p in owners]), norm_type)
    scale = clip(max_norm / (total + 1e-6), max=1.0)
    for p in owners:
        p.grad = p.grad * scale
    return total


# ---- weight normalization ------------------------------------------------------------------
# `weight_norm(layer)` makes `layer.weight` a value computed from two parameters,
# weight_g (the norms) and weight_v (the directions), each time it is read:
# the layer's class becomes a subclass with a property of that name. Reading
# the weight in `forward` then computes it with ops, eagerly (gradients reach
# g and v) and while to_static traces (the ops are in the program, g and v
# its captured parameters); nothing is written to the layer per call.

def _norm_except(v, dim):
    """||v|| over every dim but `dim` (all dims when None), kept for broadcasting."""
    if dim is None:
        return sqrt(_sum(v * v))
    axes = [a for a in range(len(v.shape)) if a != dim]
    return sqrt(_sum(v * v, axis=axes, keepdim=True)) if axes else (v * v) ** 0.5


def _normalized(g, v, dim):
    if dim is None:
        return v * (g / _norm_except(v, None))
    shape = [-1 if a == dim else 1 for a in range(len(v.shape))]
    return v * (reshape(g, shape) / _norm_except(v, dim))


def _weight_norm_class(cls, name, dim):
    def read(self):
        return _normalized(getattr(self, name + "_g"), getattr(self, name + "_v"), dim)

    sub = type(cls.__name__, (cls,), {name: property(read), "__module__": cls.__module__,
                                      "_d2s_weight_norm": (cls, name, dim)})
    sub.__qualname__ = cls.__qualname__
    return sub


def weight_norm(layer, name="weight", dim=0):
    """Reparameterize `layer.<name>` as `g * v / ||v||` (PaddlePaddle's and
    PyTorch's weight normalization): parameters `<name>_g` (the norms over
    every dim but `dim`, shaped `[w.shape[dim]]`; one number when `dim` is
    None) and `<name>_v` (the weight as it was) replace it; the weight is
    computed from them each time it is read. Returns the layer."""
    w = layer._parameters.get(name)
    if not isinstance(w, Tensor):
        raise ValueError(f"weight_norm: {type(layer).__name__} has no parameter {name!r}")
    if getattr(type(layer), "_d2s_weight_norm", None) is not None:
        raise RuntimeError(f"weight_norm: {type(layer).__name__}.{name} is normalized already")
    rank = len(w.shape)
    if dim is not None:
        if not -rank <= dim < rank:
            raise ValueError(f"weight_norm: dim {dim} is out of range for a weight of rank "
                             f"{rank}")
        dim %= rank
    g_value = _norm_except(w.detach(), dim)
    g_value = reshape(g_value, [] if dim is None else [w.shape[dim]])
    del layer._parameters[name]
    object.__delattr__(layer, name)
    layer.add_parameter(name + "_g", Tensor._from_array(g_value.numpy(), stop_gradient=False))
    layer.add_parameter(name + "_v", Tensor._from_array(w.numpy(), stop_gradient=False))
    object.__setattr__(layer, "__class__", _weight_norm_class(type(layer), name, dim))
    return layer


def remove_weight_norm(layer, name="weight"):
    """Undo `weight_norm`: `<name>` is one parameter again, holding the weight
    `g * v / ||v||` computes now. Returns the layer."""
    spec = getattr(type(layer), "_d2s_weight_norm", None)
    if spec is None or spec[1] != name:
        raise ValueError(f"remove_weight_norm: {type(layer).__name__}.{name} is not "
                         f"weight-normalized")
    cls, _, dim = spec
    value = _normalized(layer._parameters[name + "_g"], layer._parameters[name + "_v"], dim)
    for suffix in ("_g", "_v"):
        del layer._parameters[name + suffix]
        object.__delattr__(layer, name + suffix)
    object.__setattr__(layer, "__class__", cls)
    layer.add_parameter(name, Tensor._from_array(value.numpy(), stop_gradient=False))
    return layer

# ---- issue 25 (opsnn): spectral normalization -------------------------------------------------
from .spectral_norm import spectral_norm  # noqa: E402
__all__ += ["spectral_norm"]


# ---- more of Paddle's nn.utils -------------------------------------------------------------
def clip_grad_value_(parameters, clip_value):
    """Clip every gradient of `parameters` elementwise to
    `[-clip_value, clip_value]` (PyTorch's and Paddle's `clip_grad_value_`);
    parameters without a gradient are skipped. Gradients are rebound to new
    Tensors, eagerly and inside a traced step alike."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    clip_value = float(clip_value)
    overlay = effects.overlay()
    if overlay is not None:
        overlay.activate("clip_grad_value_()")
        overlay.track_all(parameters)
    for p in parameters:
        if p.grad is not None:
            p.grad = clip(p.grad, -clip_value, clip_value)


def parameters_to_vector(parameters, name=None):
    """All of `parameters` flattened and concatenated, in order (1-D; a
    gradient path back to each parameter)."""
    from ..core.ops import concat
    parameters = list(parameters)
    if not parameters:
        raise ValueError("parameters_to_vector: no parameters given")
    return concat([reshape(p, [-1]) for p in parameters], axis=0)


def vector_to_parameters(vec, parameters, name=None):
    """Write consecutive slices of the 1-D `vec` into `parameters` (each
    reshaped to its parameter's shape), in place, with no gradient path: the
    inverse of `parameters_to_vector`."""
    parameters = list(parameters)
    if len(vec.shape) != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-D, got shape {list(vec.shape)}")
    sizes = [math.prod(p.shape) for p in parameters]
    if vec.shape[0] != sum(sizes):
        raise ValueError(f"vector_to_parameters: vec has {vec.shape[0]} elements, the "
                         f"parameters {sum(sizes)}")
    start = 0
    for p, n in zip(parameters, sizes):
        p.set_value(reshape(vec[start:start + n], list(p.shape)).detach())
        start += n


__all__ += ["clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]
