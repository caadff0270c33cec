"""xla rules of the creation ops (`d2s/core/ops/creation.py`): dims read
from tensors are compile-time values (`ns.static`)."""
from __future__ import annotations

from ....core.ops.creation import _arange_kernel, _numel_kernel
from ....core.ops.shape_args import fill_spec
from ....core.registry import register_lowering


register_lowering("xla", "full", lambda ns, *dims, shape, fill_value, dtype: ns.jnp.full(
        fill_spec(shape, ns.static(dims)), fill_value, dtype))  # dims: compile-time
register_lowering("xla", "assign_value", lambda ns, value: value)  # a numpy constant: the backend embeds it
register_lowering("xla", "full_like", lambda ns, x, fill_value, dtype=None: ns.jnp.full(x.shape, fill_value,
                                                   dtype or x.dtype))
register_lowering("xla", "arange", lambda ns, *bounds, **attrs: _arange_kernel(*ns.static(bounds), **attrs))
register_lowering("xla", "shape", lambda ns, x: ns.shape_of(x))  # a constant, or a tensor array's run-time length
register_lowering("xla", "numel", lambda ns, x, axes=None: _numel_kernel(x, axes))  # static shapes: a constant
