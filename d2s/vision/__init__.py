"""`d2s.vision`: Paddle's `paddle.vision` namespace; today its `ops` (detection
and RoI ops). The implementations sit in private modules (`_yolo`, ...), so
the package's public names are its API only."""
from . import ops

__all__ = ["ops"]
