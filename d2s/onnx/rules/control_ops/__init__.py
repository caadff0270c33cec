"""The ONNX rules of the control ops (`d2s/static/control_ops/`), one module
each: `rule(ex, op, graph, env)`, `ex` the exporter (`onnx.control_flow`),
registered on the op's `ControlOpDef`."""
from . import cond  # noqa: F401
from . import while_  # noqa: F401
from . import undefined  # noqa: F401
from . import raise_  # noqa: F401
from . import py_layer  # noqa: F401
