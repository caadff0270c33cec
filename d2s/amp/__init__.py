"""`d2s.amp`: automatic mixed precision (Paddle's `paddle.amp`):
`auto_cast` chooses each op's compute dtype, `GradScaler` scales the loss
and skips steps whose gradients overflowed, `decorate` casts a model for O2."""
from .auto_cast import (amp_guard, auto_cast, black_list, decorate, is_bfloat16_supported,
                        is_float16_supported, white_list)
from .grad_scaler import AmpScaler, GradScaler

__all__ = ["auto_cast", "amp_guard", "decorate", "GradScaler", "AmpScaler", "white_list",
           "black_list", "is_float16_supported", "is_bfloat16_supported"]
