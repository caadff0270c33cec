"""xla rule of `array_append` (`d2s/static/tensor_array.py`): a tensor array
(`backends.xla.values.TensorArray`) inside a loop, a concatenation outside."""
from __future__ import annotations

from ....core.registry import register_lowering
from ....static import tensor_array as _tensor_array  # noqa: F401  (declares array_append)


def _append_xla(ns, buf, value):
    """Inside a loop the array is carried with a fixed capacity and its length
    (`ns.is_tensor_array`); a row past the capacity reports the rows needed,
    and the run is repeated with more room. Outside loops it just grows."""
    if not ns.is_tensor_array(buf):
        row = value[None].astype(buf.dtype)
        return row if buf.shape[0] == 0 else ns.jnp.concatenate([buf, row])
    out, rows = buf.append(value)
    ns.needs(rows)
    return out


register_lowering("xla", "array_append", _append_xla)
