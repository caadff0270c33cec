"""`reshard`: a value's placements changed inside a computation.

An identity on the numbers (placements never change them, DESIGN §11): the
numpy kernel hands its input back, and eager and numpy-backend runs compute
exactly the unsharded result. The xla backend lowers it to a sharding
constraint, so XLA's partitioner moves the data (all-gather, all-to-all,
reduce of partial sums) where the placements change; an ONNX export (one
device) keeps the identity. The mesh and
placements are attributes as plain data (`DistAttr.encode`), so a saved
program keeps them.
"""
from __future__ import annotations

from ..dispatch import bind
from ..registry import register_op
from ._base import lift, same_infer


def _reshard_vjp(g, out, x, mesh, placements):
    # The cotangent is laid out like the value (as JAX transposes a sharding
    # constraint): a batch-sharded activation has a batch-sharded gradient.
    return (bind("reshard", g, mesh=mesh, placements=placements),)


# An exported ONNX model runs on one device: there the placements are metadata.
register_op("reshard", lambda x, mesh, placements: x, same_infer, vjp=_reshard_vjp)


def reshard_op(x, attr):
    """`x` constrained to `attr` (a DistAttr): one `reshard` op."""
    mesh, placements = attr.encode()
    return bind("reshard", lift(x), mesh=mesh, placements=placements)
