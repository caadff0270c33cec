"""xla rules of `undefined` and `cast_if_defined` (`d2s/static/control_ops/undefined.py`)."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.undefined import CAST_IF_DEFINED, UNDEFINED


def _lower_xla(low, op, env):
    """A zero placeholder whose flag says "undefined" (XLA values always exist)."""
    v = op.outputs[0]
    shape = tuple(0 if d is None else d for d in v.shape)
    env.set(v.name, low.jnp.zeros(shape, v.dtype), flag=True)


def _lower_cast_xla(low, op, env):
    """The cast value, with the input's undefined flag (if it has one)."""
    x, out = op.inputs[0], op.outputs[0]
    env.set(out.name, env.get(x.name).astype(out.dtype), flag=env.flag(x.name))


register_lowering("xla", UNDEFINED, _lower_xla)
register_lowering("xla", CAST_IF_DEFINED, _lower_cast_xla)
