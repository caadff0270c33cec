"""`d2s.nn`: Layer, common layers, initializers and `functional` (as `F`)."""
from . import functional, initializer
from .layer import Layer, LayerList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh

__all__ = ["functional", "initializer", "Layer", "LayerList", "Sequential", "Linear", "ReLU",
           "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout"]
