"""The core runtime: dtypes, the op registry, dispatch (`bind`), Tensor, autograd.

Nothing here imports `d2s.static`; static Variables plug in through
`dispatch.Symbolic` and `state.building`.
"""
from . import ops, methods
from .dispatch import Symbolic, bind
from .random import seed
from .registry import OPS, Aval, NotLowerable, OpDef, register_op
from .state import (disable_static, enable_static, in_dynamic_mode, no_grad, enable_grad,
                    grad_enabled)
from .tensor import Tensor, from_dlpack, to_tensor

methods._F = ops
