"""numpy rule of `raise` (`d2s/static/control_ops/raise_.py`): a `raise`
statement of the exception type and arguments, bound as globals (never
spliced into the source as text)."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.raise_ import RAISE


def _emit(em, op, indent):
    exc = em.global_value("e", op.attrs["exception"])
    args = em.global_value("a", tuple(op.attrs["args"]))
    em.emit(f"raise {exc}(*{args})", indent, op)


register_lowering("numpy", RAISE, _emit)
