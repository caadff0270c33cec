"""Paddle's high-level API: `d2s.Model` and `d2s.callbacks`."""
from . import callbacks
from .model import Model

__all__ = ["Model", "callbacks"]
