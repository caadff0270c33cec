"""`d2s.vision`: Paddle's `paddle.vision.ops` detection helpers (`yolo_box`)."""
from . import ops  # noqa: F401

__all__ = ["ops"]
