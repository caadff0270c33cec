"""xla rule of `raise` (`d2s/static/control_ops/raise_.py`): an error site
the host raises after the call."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.raise_ import RAISE
from .....static.scope import relocate
from ...errors import RaisesOnNumpy


def _lower_xla(low, op, env):
    """An error site set where its block runs (raised by the host after the call)."""
    if op.attrs.get("fstring") is not None:
        # its message is formatted from values of the run: the failing call
        # runs again on numpy, which raises it
        low.fail_if(True, RaisesOnNumpy)
        return
    exc, args = op.attrs["exception"], tuple(op.attrs["args"])
    low.fail_if(True, lambda: relocate(exc(*args), op))


register_lowering("xla", RAISE, _lower_xla)
