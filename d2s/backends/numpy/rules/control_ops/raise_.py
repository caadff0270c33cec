"""numpy rule of `raise` (`d2s/static/control_ops/raise_.py`): a `raise`
statement of the exception type and arguments, bound as globals (never
spliced into the source as text)."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.raise_ import RAISE, raised


def _emit(em, op, indent):
    if op.attrs.get("fstring") is not None:  # a message formatted from the op's inputs
        made = em.global_value("r", raised)
        here = em.global_value("o", op)
        values = ", ".join(em.ident(v.name) for v in op.inputs)
        em.emit(f"raise {made}({here}, ({values}{',' if op.inputs else ''}))", indent, op)
        return
    exc = em.global_value("e", op.attrs["exception"])
    args = em.global_value("a", tuple(op.attrs["args"]))
    em.emit(f"raise {exc}(*{args})", indent, op)


register_lowering("numpy", RAISE, _emit)
