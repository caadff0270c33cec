"""What the vjp rules of `cond` and `while` share.

Both differentiate their blocks with the same reverse walk as block 0
(`backward.backward_block`, passed in as `differentiate`), inside new
gradient blocks that read cotangent placeholders, and record on the forward
op which of its run-time values those gradient blocks read (its
`saves.keep`), so that the executors save only those.
"""
from __future__ import annotations

import numpy as np

from ...core.dtypes import is_floating
from ..scope import op_location
from .registry import CONTROL_OPS, names_read


class GradientError(RuntimeError):
    pass


def is_float(v):
    return is_floating(v.dtype)


def ct_placeholder(block, like):
    """A cotangent input of a gradient block, typed like the value `like`."""
    return block.create_var(like.shape, like.dtype, prefix="ct")


def resolve(block, name):
    var = block.lookup(name)
    if var is None:
        raise GradientError(f"variable {name!r} not found from block {block.idx}")
    return var


def saved_var_for(op, prefix):
    """The name of the variable `op` saves its run-time values in (made once,
    in the op's own block: `saves.var`)."""
    key = CONTROL_OPS[op.type].saves.var
    if not op.attrs.get(key):
        op.attrs[key] = op.block.create_var((), np.dtype(object), prefix=prefix).name
    return op.attrs[key]


def keep_for_backward(op, grad_blocks):
    """Record on the forward op which of its scope's values its gradient blocks
    read: the executors save only those, not the whole scope."""
    key = CONTROL_OPS[op.type].saves.keep
    names = set(op.attrs.get(key, ()))
    for block in grad_blocks:
        names |= names_read(block.ops)
    op.attrs[key] = sorted(names)


def second_derivative_error(op):
    """A gradient walk reached a `cond_grad` / `while_grad`: a gradient of a
    tensor `if` / `while` built to be run, not differentiated. Never a
    silently missing term: say what to write."""
    if op.type == "cond_grad":
        what = ("build the first gradient with create_graph=True (`d2s.grad(..., "
                "create_graph=True)`, `static.gradients(..., create_graph=True)`): its "
                "gradient of the `if` is then built from ops that are differentiated again")
        construct = "tensor `if`"
    else:
        what = ("a tensor `while` has no second derivative in converted code: compute it "
                "eagerly (call the function without to_static), or loop over a Python "
                "`range` of fixed length (unrolled: differentiable again)")
        construct = "tensor `while`"
    return GradientError(f"a second derivative through the gradient of a {construct}"
                         f"{op_location(op)}: {what}")
