"""`d2s.optimizer`: SGD and Adam, for eager `step()` and static `minimize()`."""
from .optimizer import SGD, Adam, Optimizer

__all__ = ["Optimizer", "SGD", "Adam"]
