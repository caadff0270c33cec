"""Side-effect ops of converted code: `print` and `assert` acting at run time."""
from __future__ import annotations

import sys

import numpy as np

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
        raise AssertionError(message) if message else AssertionError()


# Print Python text and tensor values (formatted as eager Tensors print).
register_op("print", _print_kernel, lambda *values, **attrs: (), num_outputs=0, stateful=True)
# Raise AssertionError(message) unless every element of `cond` is true.
register_op("assert", _assert_kernel, lambda cond, message: (), num_outputs=0, stateful=True)
