"""`d2s.nn`: Layer, common layers, initializers, `functional` (as `F`) and `utils`
(gradient clipping)."""
from . import functional, initializer, utils
from .layer import Layer, LayerDict, LayerList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh

__all__ = ["functional", "initializer", "utils", "Layer", "LayerList", "LayerDict", "Sequential", "Linear", "ReLU",
           "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout"]
