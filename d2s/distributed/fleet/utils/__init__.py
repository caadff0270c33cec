"""`fleet.utils`: Paddle's helpers for large-model training."""
from .recompute import recompute

__all__ = ["recompute"]
