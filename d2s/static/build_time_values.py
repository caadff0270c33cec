"""The value a static Variable is sure to have, where it is known while its
program is built: every op it depends on is a deterministic op of constants
(`zeros([1], "int64") + j` with `j` a Python int of an unrolled loop).

Paddle-style code computes small integer indices that way (`index = zero +
j` for `array_write`); asking this instead of refusing them keeps such code
working. Program inputs, parameters and other captured tensors, values of
control-flow ops and random ops are never known here (they change between
runs), so whatever this returns holds on every run.
"""
from __future__ import annotations

import numpy as np

from ..core.registry import OPS

__all__ = ["build_time_value"]

_MAX_OPS = 32          # indices are a few ops deep; beyond that, give up
_MAX_ELEMENTS = 1024   # nor fold big arrays while building


def build_time_value(var):
    """The numpy value of `var` if it depends on constants only, else None."""
    producers = _producers(var.block)
    try:
        return _value(var, producers, {}, [_MAX_OPS])
    except _Unknown:
        return None


class _Unknown(Exception):
    pass


def _producers(block):
    """var name -> the op writing it, in `block` and the blocks enclosing it."""
    found = {}
    while block is not None:
        for op in block.ops:
            for out in op.outputs:
                found.setdefault(out.name, op)
        block = block.parent
    return found


def _value(var, producers, memo, budget):
    if var.name in memo:
        return memo[var.name]
    if var.is_data or var.name in var.block.program.captured:
        raise _Unknown
    op = producers.get(var.name)
    opdef = None if op is None else OPS.get(op.type)
    if opdef is None or opdef.stateful or budget[0] <= 0:
        raise _Unknown   # a control-flow op, a random op, or too deep
    budget[0] -= 1
    args = [_value(v, producers, memo, budget) for v in op.inputs]
    try:
        with np.errstate(all="ignore"):
            result = opdef.kernel(*args, **op.attrs)
    except Exception:
        raise _Unknown from None
    results = [result] if opdef.num_outputs == 1 else list(result)
    for out, value in zip(op.outputs, results):
        value = np.asarray(value)
        if value.size > _MAX_ELEMENTS:
            raise _Unknown
        memo[out.name] = value
    if var.name not in memo:
        raise _Unknown
    return memo[var.name]
