"""The ONNX exporter's per-op rules, one module per op family (mirroring
`d2s/core/ops/`), registered with `d2s.core.registry.register_lowering("onnx",
op, rule)` when this package loads (the exporter imports it).

A rule is `rule(ns, *inputs, **attrs)`: `ns` is the exporter's graph context
(`ns.node`, `ns.cast`, `ns.scalar`, ...; `onnx.graph.RuleNamespace`), so these
modules never import onnx themselves. Older ops still declare their ONNX rule
beside the kernel in `core/ops`; new ops register here.
"""
from . import math  # noqa: F401
from . import scan  # noqa: F401
from . import search  # noqa: F401
from . import reduce_more  # noqa: F401
from . import linalg_more  # noqa: F401
from . import conv  # noqa: F401  (convolution and pooling)
from . import optim  # noqa: F401  (Momentum, RMSProp, Adagrad, AdamW updates)
from . import indexing  # noqa: F401  (set_item)
from . import quant  # noqa: F401  (weight_dequantize)
from . import conv3d  # noqa: F401  (3-D convolution and pooling)
from . import optim_more  # noqa: F401  (Adadelta, Lamb updates)
from . import beam  # noqa: F401  (gather_tree)
from . import yolo  # noqa: F401  (yolo_loss_targets)
