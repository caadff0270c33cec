"""`d2s.nn`: Layer, common layers, initializers, `functional` (as `F`) and `utils`
(gradient clipping)."""
from . import functional, initializer, utils
from .layer import Layer, LayerList, Sequential
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from . import activation_layers, conv_layers, loss_layers
from .activation_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from .loss_layers import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from . import rnn, transformer
from .transformer import *  # noqa: F401,F403
from .common_layers import Bilinear
from .containers import LayerDict, ParameterList
from .param_attr import ParamAttr
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = ["functional", "initializer", "utils", "Layer", "LayerList", "Sequential", "Linear", "ReLU",
           "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout"]
__all__ += activation_layers.__all__ + conv_layers.__all__ + loss_layers.__all__ + rnn.__all__ + transformer.__all__ + ["ParamAttr", "Bilinear", "LayerDict", "ParameterList", "ClipGradByGlobalNorm",
                                                                              "ClipGradByNorm", "ClipGradByValue"]
