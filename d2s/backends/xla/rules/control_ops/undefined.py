"""xla rules of `undefined`, `cast_if_defined` and `zeros_if_defined` (`d2s/static/control_ops/undefined.py`)."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.undefined import CAST_IF_DEFINED, UNDEFINED, ZEROS_IF_DEFINED


def _lower_xla(low, op, env):
    """A zero placeholder whose flag says "undefined" (XLA values always exist)."""
    v = op.outputs[0]
    shape = tuple(0 if d is None else d for d in v.shape)
    env.set(v.name, low.jnp.zeros(shape, v.dtype), flag=True)


def _lower_cast_xla(low, op, env):
    """The cast value, with the input's undefined flag (if it has one)."""
    x, out = op.inputs[0], op.outputs[0]
    env.set(out.name, env.get(x.name).astype(out.dtype), flag=env.flag(x.name))


def _lower_zeros_xla(low, op, env):
    """Zeros like the value (XLA's stand-in for one no path set is zeros of
    its shape already); its undefined flag is not read."""
    env.set(op.outputs[0].name, low.jnp.zeros_like(env.get(op.inputs[0].name)))


register_lowering("xla", UNDEFINED, _lower_xla)
register_lowering("xla", CAST_IF_DEFINED, _lower_cast_xla)
register_lowering("xla", ZEROS_IF_DEFINED, _lower_zeros_xla)
