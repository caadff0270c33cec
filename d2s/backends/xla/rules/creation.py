"""xla rules of the creation ops (`d2s/core/ops/creation.py`): dims read
from tensors are compile-time values (`ns.static`)."""
from __future__ import annotations

import numpy as np

from ....core.ops.creation import _arange_kernel, _numel_kernel
from ....core.ops.shape_args import fill_spec
from ....core.registry import register_lowering


register_lowering("xla", "full", lambda ns, *dims, shape, fill_value, dtype: ns.jnp.full(
    fill_spec(shape, ns.static(dims)), fill_value, dtype))  # dims: compile-time
# a numpy constant: the backend embeds it
register_lowering("xla", "assign_value", lambda ns, value: value)
register_lowering("xla", "full_like", lambda ns, x, fill_value, dtype=None: ns.jnp.full(
    x.shape, fill_value, dtype or x.dtype))
register_lowering("xla", "arange",
                  lambda ns, *bounds, **attrs: _arange_kernel(*ns.static(bounds), **attrs))
# a constant, or a tensor array's run-time length
register_lowering("xla", "shape", lambda ns, x: ns.shape_of(x))
# static shapes: a constant
register_lowering("xla", "numel", lambda ns, x, axes=None: _numel_kernel(x, axes))


# ---- on tensor arrays (`_tensor_arrays`): the "tensor_array" variant -----------------
def _numel(ns, rule, x, axes=None):
    axes = range(x.ndim) if axes is None else axes
    n = np.int64(1)
    for a in axes:
        n = n * (x.length if a == x.axis else np.int64(x.buf.shape[a]))
    return ns.jnp.asarray(n, np.int64)


register_lowering("xla", "numel", _numel, variant="tensor_array")


def _one_hot(ns, x, num_classes):
    jnp = ns.jnp
    # a value outside [0, num_classes) raises IndexError on numpy; here it
    # runs the call again on numpy, which raises it
    ns.check_on_numpy(jnp.all((x >= 0) & (x < num_classes)))
    return (x[..., None] == jnp.arange(num_classes, dtype=x.dtype)).astype(np.float32)


register_lowering("xla", "one_hot", _one_hot)
