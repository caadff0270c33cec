"""`d2s.nn`: Layer, common layers, initializers, `functional` (as `F`) and `utils`
(gradient clipping)."""
from . import functional, initializer, utils
from .layer import Layer, LayerDict, LayerList, Sequential
from .norm import BatchNorm, BatchNorm1D, BatchNorm2D
from .group_norm import GroupNorm, InstanceNorm1D, InstanceNorm2D, InstanceNorm3D
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh

__all__ = ["functional", "initializer", "utils", "Layer", "LayerList", "LayerDict", "Sequential",
           "Linear", "ReLU", "Tanh", "Sigmoid", "GELU", "LayerNorm", "Embedding", "Dropout",
           "BatchNorm", "BatchNorm1D", "BatchNorm2D", "GroupNorm", "InstanceNorm1D",
           "InstanceNorm2D", "InstanceNorm3D"]

# ---- issue 28 (nn helper): convolution / pooling, activations, losses, recurrent and
# attention layers, containers, ParamAttr, gradient clipping --------------------------------
from . import (activation_layers, clip, common_layers, containers, conv_layers,  # noqa: E402
               loss_layers, param_attr, rnn, transformer)
from .activation_layers import *  # noqa: E402,F401,F403
from .clip import *  # noqa: E402,F401,F403
from .common_layers import Bilinear  # noqa: E402
from .containers import *  # noqa: E402,F401,F403
from .conv_layers import *  # noqa: E402,F401,F403
from .loss_layers import *  # noqa: E402,F401,F403
from .param_attr import ParamAttr  # noqa: E402
from .rnn import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403

__all__ += (activation_layers.__all__ + clip.__all__ + containers.__all__ + conv_layers.__all__
            + loss_layers.__all__ + rnn.__all__ + transformer.__all__ + ["Bilinear", "ParamAttr"])
from .conv3d_layers import (AvgPool3D, Conv3D, Conv3DTranspose,  # noqa: E402
                            MaxPool3D)
from .sync_batch_norm import SyncBatchNorm  # noqa: E402
__all__ += ["Conv3D", "Conv3DTranspose", "MaxPool3D", "AvgPool3D", "SyncBatchNorm"]
# ---- end of the issue 28 block ---------------------------------------------------------------
# ---- issue 25 (opsnn): layers ported models call beyond the first target list ---------------
from . import port_layers  # noqa: E402
from .port_layers import *  # noqa: E402,F401,F403
__all__ += port_layers.__all__
from . import padding_layers  # noqa: E402
from .padding_layers import *  # noqa: E402,F401,F403
__all__ += padding_layers.__all__
from . import more_layers  # noqa: E402
from .more_layers import *  # noqa: E402,F401,F403
__all__ += more_layers.__all__
from .decode import BeamSearchDecoder, dynamic_decode  # noqa: E402
__all__ += ["BeamSearchDecoder", "dynamic_decode"]
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss  # noqa: E402
__all__ += ["AdaptiveLogSoftmaxWithLoss"]
from .hsigmoid import HSigmoidLoss  # noqa: E402
__all__ += ["HSigmoidLoss"]
