"""`d2s.nn`: Layer, common layers, initializers, `functional` (as `F`) and `utils`
(gradient clipping)."""
from . import functional, initializer, utils
from .layer import Layer, LayerList, Sequential
from .norm import BatchNorm, BatchNorm1D, BatchNorm2D
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh

__all__ = ["functional", "initializer", "utils", "Layer", "LayerList", "Sequential", "Linear", "ReLU",
           "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout", "BatchNorm",
           "BatchNorm1D", "BatchNorm2D"]
