"""Annotating values with placements: `shard_tensor`, `reshard`, `shard_layer`.

What each means per mode (placements never change the numbers):

* eager Tensors and numpy-backend programs: metadata. The value is the
  whole, unsharded value; `.process_mesh` / `.placements` report the
  annotation.
* xla backend: a fed Tensor's or captured parameter's placements become
  the sharding of that program input; `reshard` (and `shard_tensor` of a
  value inside a program) is a sharding constraint on an intermediate.
  XLA's partitioner inserts the collectives.

`reshard` is an op (`core.ops.dist_ops`), so it is differentiable and is
kept in a program; `shard_tensor` of data is an annotation of a leaf.
"""
from __future__ import annotations

from ..core import dist_attr
from ..core.dispatch import Symbolic
from ..core.ops.dist_ops import reshard_op
from ..core.tensor import Tensor, to_tensor
from ..nn.layer import Layer


def _label(x, default):
    name = getattr(x, "name", None)
    return f"'{name}'" if name else default


def shard_tensor(data, mesh, placements, dtype=None, stop_gradient=None):
    """A Tensor holding `data`, placed on `mesh` by `placements` (one per mesh
    dim: `Shard(dim)`, `Replicate()` or `Partial()`).

    A trainable leaf (a parameter: `stop_gradient=False`) is annotated in
    place and returned itself, so layers and optimizers holding it see the
    placements; a value computed with gradients (or a Variable inside a
    program) goes through `reshard`; other data gives a new Tensor (sharing
    a Tensor's array, never copying it)."""
    if isinstance(data, Symbolic) or (isinstance(data, Tensor) and data._node is not None
                                      and dtype is None):
        return reshard(data, mesh, placements)
    if isinstance(data, Tensor) and not data.stop_gradient and dtype is None \
            and stop_gradient in (None, False):
        attr = dist_attr.checked(mesh, placements, data.shape,
                                 f"shard_tensor of {_label(data, 'a parameter')}")
        return dist_attr.attach(data, attr)
    if isinstance(data, Tensor):
        keep = data.stop_gradient if stop_gradient is None else stop_gradient
        # no copy: d2s never writes into a Tensor's array
        t = Tensor._from_array(data._value, keep) if dtype is None else \
            to_tensor(data, dtype, keep)
        t.name = data.name
    else:
        t = to_tensor(data, dtype, True if stop_gradient is None else stop_gradient)
    attr = dist_attr.checked(mesh, placements, t.shape,
                             f"shard_tensor of {_label(t, f'a tensor of shape {list(t.shape)}')}")
    return dist_attr.attach(t, attr)


def reshard(x, mesh, placements):
    """`x` with new placements: an identity op (differentiable, kept in
    programs), a sharding constraint on the xla backend."""
    if not isinstance(x, (Tensor, Symbolic)):
        raise TypeError(f"reshard: expected a d2s Tensor, got {type(x).__name__}")
    attr = dist_attr.checked(mesh, placements, tuple(x.shape),
                             f"reshard of {_label(x, f'a tensor of shape {list(x.shape)}')}")
    return dist_attr.attach(reshard_op(x, attr), attr)


def shard_layer(layer, process_mesh, shard_fn=None):
    """Place `layer`'s parameters on `process_mesh`: `shard_fn(name, sublayer,
    process_mesh)` is called for the layer and each sublayer (it may
    `shard_tensor` their parameters); every parameter left unannotated is
    replicated on the mesh. Returns the layer."""
    if not isinstance(layer, Layer):
        raise TypeError(f"shard_layer: expected a d2s.nn.Layer, got {type(layer).__name__}")
    if not isinstance(process_mesh, dist_attr.ProcessMesh):
        raise TypeError(f"shard_layer: expected a ProcessMesh, got "
                        f"{type(process_mesh).__name__}")
    if shard_fn is not None:
        for name, sub in layer.named_sublayers(include_self=True):
            shard_fn(name, sub, process_mesh)
    replicate = [dist_attr.Replicate()] * process_mesh.ndim
    for name, p in layer.named_parameters():
        if p is None:
            continue
        attr = dist_attr.get(p)
        if attr is None:
            dist_attr.attach(p, dist_attr.checked(process_mesh, replicate, p.shape, name))
        elif attr.process_mesh != process_mesh:
            raise ValueError(f"shard_layer: parameter '{name}' is placed on "
                             f"{attr.process_mesh!r}, not on {process_mesh!r}")
    return layer
