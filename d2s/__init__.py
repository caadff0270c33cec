"""d2s: write eager Python, run it as a static program."""
from .core import (Tensor, disable_static, enable_static, from_dlpack, in_dynamic_mode,
                   no_grad, seed, to_tensor)
from .core.ops import (abs, add, arange, argmax, cast, clip, concat, detach, divide, equal,
                       exp, expand, flatten, floor_divide, full, full_like, gather, greater_equal,
                       greater_than, less_equal, less_than, log, logical_and, logical_not,
                       logical_or, logical_xor, matmul, max, maximum, mean, min, minimum,
                       multiply, norm, not_equal, numel, ones, ones_like, pow, rand, randn,
                       relu, remainder, reshape, shape, sigmoid, sqrt, squeeze, stack,
                       subtract, sum, tanh, transpose, unsqueeze, where, zeros, zeros_like,
                       erf, sign, neg, normal, uniform)
from . import static

__version__ = "0.1.0"
from . import jit, nn, optimizer
# d2s.onnx.export; the onnx package itself is imported only when a model is exported
from . import onnx  # noqa: E402
from .distributed import DataParallel  # noqa: E402  (d2s.DataParallel)

# ---- nn / training API (issue 28, nn helper): ParamAttr, create_parameter,
# regularizer, save/load, metric, io ------------------------------------------------------
from .nn.param_attr import ParamAttr  # noqa: E402
from . import regularizer  # noqa: E402
from . import io, metric  # noqa: E402
from .io import load, save  # noqa: E402
from .io.data import batch  # noqa: E402
from .nn.param_attr import create_parameter  # noqa: E402
from . import device, incubate, utils  # noqa: E402
from .device import (CPUPlace, CUDAPlace, get_flags, is_compiled_with_cuda,  # noqa: E402
                     set_device, set_flags)
# ---- end of the nn / training API block ------------------------------------------------------
