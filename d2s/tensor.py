"""`d2s.tensor`: Paddle's `paddle.tensor` namespace for the names model code
reaches through it (the ops live in d2s.core.ops)."""
from .core.ops import top_p_sampling  # noqa: F401
from .tensor_arrays import array_length, array_read, array_write, create_array  # noqa: F401,E402
