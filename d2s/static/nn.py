"""`d2s.static.nn`: control-flow builders (PaddlePaddle's names)."""
from .control_flow import cond
from .loops import while_loop

__all__ = ["cond", "while_loop"]
