"""`d2s.vision`: Paddle's `paddle.vision` namespace: its `ops` (detection
and RoI ops) and `models` (classification networks). The implementations sit in private
modules (`_yolo`, ...), so the package's public names are its API only."""
from . import models, ops

__all__ = ["ops", "models"]
