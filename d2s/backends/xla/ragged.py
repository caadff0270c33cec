"""Ordinary ops reading a tensor array (`values.TensorArray`): each op's
"tensor_array" variant of its xla rule (`rules/`, registered beside the
op's plain rule with `variant="tensor_array"`; what they share and what
they mean: `rules/_tensor_arrays.py`), or, for an op declared
`elementwise`, its plain rule applied to the buffers. Anything else
reading an array is `Unsupported`: the program runs on numpy.
"""
from __future__ import annotations

from ...core.registry import OPS
from .errors import Unsupported
from .rules._tensor_arrays import _elementwise

VARIANT = "xla:tensor_array"  # the key of those rules in an op's table


def lower_array_op(ns, op, rule, args, attrs):
    """`op`'s result when some of `args` are tensor arrays (see the module
    doc), or `Unsupported`."""
    opdef = OPS[op.type]
    handler = opdef.lowerings.get(VARIANT)
    if handler is None and opdef.elementwise:  # its rule applies to a buffer as is
        handler = _elementwise
    if handler is None:
        raise Unsupported("it reads a tensor array, whose length is a run-time value", op)
    try:
        return handler(ns, rule, *args, **attrs)
    except Unsupported:
        raise
    except Exception as e:  # noqa: BLE001 - e.g. shapes numpy rejects: numpy decides
        raise Unsupported(f"reading a tensor array, it raised {type(e).__name__} ({e})",
                          op) from None
