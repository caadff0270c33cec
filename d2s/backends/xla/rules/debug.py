"""xla rules of `print` and `assert` (`d2s/core/ops/debug_ops.py`): host effects and
checks of the compiled program."""
from __future__ import annotations

import functools

from ....core.ops.debug_ops import _assert_error, _print_kernel
from ....core.registry import register_lowering


register_lowering("xla", "print", lambda ns, *values, parts, sep, end: ns.host_effect(
    functools.partial(_print_kernel, parts=parts, sep=sep, end=end), *values))
def _assert(ns, cond, *values, message, fstring=None):
    if fstring is None:
        ns.check(ns.jnp.all(cond), functools.partial(_assert_error, message))
    else:
        # a message formatted with the run's values: the failing call runs
        # again on numpy, whose kernel formats it
        ns.check_on_numpy(ns.jnp.all(cond))


register_lowering("xla", "assert", _assert)
