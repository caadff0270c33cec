"""`d2s.regularizer`: Paddle's module path for the weight-decay classes (they
live in `d2s.optimizer.regularizer`, where the optimizers can reach them)."""
from .optimizer.regularizer import L1Decay, L2Decay, WeightDecayRegularizer  # noqa: F401

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]
