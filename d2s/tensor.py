"""`d2s.tensor`: Paddle's `paddle.tensor` namespace for the names model code
reaches through it (the ops live in d2s.core.ops)."""
from .core.ops import full as _full
from .core.ops import top_p_sampling  # noqa: F401
from .tensor_arrays import array_length, array_read, array_write, create_array  # noqa: F401,E402


def fill_constant(shape, dtype, value, force_cpu=False, out=None, name=None):
    """A tensor of `shape` filled with `value` (PaddlePaddle's older name for
    `full`, which its dygraph-to-static models still call: `value` may be a
    one-element tensor, a loop counter in converted code). `out`, an eager
    Tensor, receives the values, as `assign(..., output=out)` does."""
    result = _full(shape, value, dtype)
    if out is not None:
        from .core.ops import assign
        return assign(result, output=out)
    return result
