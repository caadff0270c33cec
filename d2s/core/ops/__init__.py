"""Op families. Importing this package registers every operator once."""
from .creation import (arange, full, full_like, numel, ones, ones_like, shape, zeros,
                       zeros_like)
from .elementwise import (abs, add, cast, clip, divide, equal, erf, exp, floor_divide,
                          greater_equal, greater_than, less_equal, less_than, log,
                          logical_and, logical_not, logical_or, logical_xor, maximum,
                          minimum, multiply, neg, not_equal, pow, relu, remainder, sigmoid,
                          sign, sqrt, subtract, tanh, where)
from .indexing import getitem
from .linalg import matmul
from .manipulation import (concat, detach, expand, flatten, gather, reshape, squeeze, stack,
                           transpose, unsqueeze)
from .nn_ops import cross_entropy, gelu, log_softmax, softmax, softplus
from .norm_ops import batch_normalize
from . import conv, debug_ops, dist_ops, optim_ops  # noqa: F401  (register conv/pool, side-effect, reshard, update ops)
from . import collective_ops  # noqa: F401  (c_allreduce_sum)
from . import conv3d as _conv3d  # noqa: F401,E402  (3-D convolution and pooling ops)
from . import optim_more as _optim_more  # noqa: F401,E402  (Adadelta, Lamb update ops)
from . import optim_adaptive as _optim_adaptive  # noqa: F401,E402  (NAdam, RAdam, Rprop, ASGD)
from . import nextafter as _nextafter  # noqa: F401,E402  (nextafter)
from . import beam_ops as _beam_ops  # noqa: F401,E402  (gather_tree)
from . import yolo_ops as _yolo_ops  # noqa: F401,E402  (yolo_loss_targets)
from . import resize as _resize  # noqa: F401,E402  (resize_weights: interpolate at run-time sizes)
from . import python_draws as _python_draws  # noqa: F401,E402  (np.random / random in converted code)
from .random_ops import normal, rand, randn, uniform
from .reduction import argmax, argmin, max, mean, min, norm, sum
from ._base import constant, lift
# ---- tensor-level op families of issue 27 (math, scan, search, shaping, ...) ----
from .math import *  # noqa: F401,F403
from .scan import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .shaping import *  # noqa: F401,F403
from .reduce_more import *  # noqa: F401,F403
from .creation_more import *  # noqa: F401,F403
from .linalg_more import *  # noqa: F401,F403
from .random_more import *  # noqa: F401,F403
from . import quant  # noqa: F401  (weight_dequantize, gather_dequantize: d2s.quantization)
from .counting import *  # noqa: F401,F403
from .set_item import *  # noqa: F401,F403
# ---- end of issue 27 block ----
from . import detection_ops as _detection_ops  # noqa: F401,E402  (nms_keep, roi_align, roi_pool)
from . import linalg_decomp as _linalg_decomp  # noqa: F401,E402  (det, solve, cholesky, qr, svd, eigh)
from . import fft_ops as _fft_ops  # noqa: F401,E402  (fft_c2c, fft_r2c, fft_c2r, real, imag, complex)
from . import linalg_methods as _linalg_methods  # noqa: F401,E402  (x.cholesky(), x.solve(y), x.real(), ...)
from .compositions import *  # noqa: F401,F403,E402  (Paddle functions made of other ops)
# ---- issue 25: tensor-level functions ported model code calls beyond the list ----
from .products import *  # noqa: F401,F403,E402
from .math_more import *  # noqa: F401,F403,E402
from .reduce_scan_more import *  # noqa: F401,F403,E402
from .index_more import *  # noqa: F401,F403,E402
from .random_extra import *  # noqa: F401,F403,E402
from .joins_scatters import *  # noqa: F401,F403,E402
from .bits_special import *  # noqa: F401,F403,E402
from .windows import *  # noqa: F401,F403,E402
from .bits_special import (and_operator, invert_operator, or_operator,  # noqa: F401,E402
                           xor_operator)  # (`&`, `|`, `^`, `~` of tensors: core.methods)
# ---- end of issue 25 block ----
from . import gamma_grad as _gamma_grad  # noqa: F401,E402  (standard_gamma_grad: d2s.distribution)
