"""Side-effect ops of converted code: `print` and `assert` acting at run time."""
from __future__ import annotations

import sys

import numpy as np

from ..attr_schema import TEXT, Spec, optional, sequence_of
from ..registry import register_op
from ..tensor import format_tensor


def _print_kernel(*values, parts, sep, end):
    text = []
    for part in parts:
        if part[0] == "text":
            text.append(part[1])
        else:
            text.append(format_tensor(np.asarray(values[part[1]]), part[2]))
    sys.stdout.write(sep.join(text) + end)


def _assert_kernel(cond, message):
    if not np.all(cond):
        raise _assert_error(message)


def _assert_error(message):
    return AssertionError(message) if message else AssertionError()


# On XLA, print runs this very kernel on the host (an ordered callback: same
# text, same order), and a failed assert raises the same error after the run.


def _print_infer(*values, parts, sep, end):
    for part in parts:
        if part[0] == "value" and part[1] >= len(values):
            raise IndexError(f"print: part {part!r} names value {part[1]} of {len(values)}")
    return ()


def _part_ok(p):
    """("text", str) or ("value", index, stop_gradient), as `side_effects` writes them."""
    return type(p) is tuple and (
        len(p) == 2 and p[0] == "text" and TEXT(p[1]) is None
        or len(p) == 3 and p[0] == "value" and type(p[1]) is int and 0 <= p[1] < 1 << 16
        and type(p[2]) is bool)


_PART = Spec(lambda p: None if _part_ok(p) else f"malformed print part {p!r}"[:200],
             "a print part")

# Print Python text and tensor values (formatted as eager Tensors print).
register_op("print", _print_kernel, _print_infer, num_outputs=0, stateful=True,
            attrs={"parts": sequence_of(_PART, kinds=(tuple,)), "sep": TEXT,
                   "end": TEXT})
# Raise AssertionError(message) unless every element of `cond` is true.
register_op("assert", _assert_kernel, lambda cond, message: (), num_outputs=0,
            stateful=True, attrs={"message": optional(TEXT)})
