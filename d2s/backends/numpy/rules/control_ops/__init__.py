"""The numpy rules of the control ops (`d2s/static/control_ops/`), one
module each: `rule(em, op, indent)` writes the op's Python through `em`,
the code generator (`d2s.backends.numpy.codegen`: idents, lines,
sub-blocks). Names go through `em.ident`, values through `em.constant` or
`em.global_value`: nothing an op holds is written into the source as it is.
Registered on the op's `ControlOpDef` like the other targets' rules."""
from . import cond  # noqa: F401
from . import while_  # noqa: F401
from . import undefined  # noqa: F401
from . import raise_  # noqa: F401
from . import py_layer  # noqa: F401
