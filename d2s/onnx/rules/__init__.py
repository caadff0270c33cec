"""The ONNX exporter's per-op rules, one module per op family (mirroring
`d2s/core/ops/`), registered with `d2s.core.registry.register_lowering("onnx",
op, rule)` when this package loads (the exporter imports it).

A rule is `rule(ns, *inputs, **attrs)`: `ns` is the exporter's graph context
(`ns.node`, `ns.cast`, `ns.scalar`, ...; `onnx.graph.RuleNamespace`), so these
modules never import onnx themselves. Older ops still declare their ONNX rule
beside the kernel in `core/ops`; new ops register here.
"""

from . import conv  # noqa: F401,E402  (convolution and pooling)
from . import optim  # noqa: F401,E402  (Momentum, RMSProp, Adagrad, AdamW updates)
