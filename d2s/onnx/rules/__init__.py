"""The ONNX exporter's per-op rules, one module per op family (mirroring
`d2s/core/ops/`), registered with `d2s.core.registry.register_lowering("onnx",
op, rule)` when this package loads (the exporter imports it).

A rule is `rule(ns, *inputs, **attrs)`: `ns` is the exporter's graph context
(`ns.node`, `ns.cast`, `ns.scalar`, ...; `onnx.graph.RuleNamespace`), so these
modules never import onnx themselves. The control ops' rules (`control_ops/`)
take the exporter itself: `rule(ex, op, graph, env)` (`onnx.control_flow`).
`d2s/core` and `d2s/static` hold no rule of this target
(tests/test_rule_placement.py).
"""
from ...core.registry import declare_target

declare_target("onnx", __name__)  # a rule or a reason for every op

from . import math  # noqa: F401
from . import scan  # noqa: F401
from . import search  # noqa: F401
from . import reduce_more  # noqa: F401
from . import counting  # noqa: F401  (var)
from . import linalg_more  # noqa: F401
from . import conv  # noqa: F401  (convolution and pooling, 2-D and 3-D)
from . import optim  # noqa: F401  (Momentum, RMSProp, Adagrad, AdamW updates)
from . import indexing  # noqa: F401  (getitem, set_item)
from . import creation  # noqa: F401
from . import elementwise  # noqa: F401
from . import reduction  # noqa: F401
from . import manipulation  # noqa: F401
from . import linalg  # noqa: F401
from . import nn  # noqa: F401
from . import norm  # noqa: F401  (batch_normalize)
from . import random  # noqa: F401
from . import debug  # noqa: F401
from . import dist  # noqa: F401
from . import tensor_array  # noqa: F401  (array_append)
from . import control_ops  # noqa: F401  (cond, while, undefined, raise)
from . import quant  # noqa: F401  (weight_dequantize, gather_dequantize)
from . import optim_more  # noqa: F401  (Adadelta, Lamb updates)
from . import optim_adaptive  # noqa: F401  (NAdam, RAdam, Rprop, ASGD updates)
from . import nextafter  # noqa: F401  (nextafter)
from . import beam  # noqa: F401  (gather_tree)
from . import yolo  # noqa: F401  (yolo_loss_targets)
from . import resize  # noqa: F401  (resize_weights)
from . import detection  # noqa: F401  (nms_keep, roi_align, roi_pool)
from . import linalg_decomp  # noqa: F401  (det, slogdet, solve, cholesky, qr, svd, eigh)
from . import fft  # noqa: F401  (fft_c2c, fft_r2c, fft_c2r and adjoints, real, imag, complex)
from . import math_more  # noqa: F401  (issue 25: atan2, special functions, gcd)
from . import bits_special  # noqa: F401  (issue 25: bitwise ops)
from . import reduce_scan_more  # noqa: F401  (issue 25: logcumsumexp, cummax / cummin)
from . import gamma_grad  # noqa: F401  (standard_gamma_grad: NotLowerable)
