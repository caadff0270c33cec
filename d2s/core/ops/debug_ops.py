"""Side-effect ops of converted code: `print` and `assert` acting at run time."""
from __future__ import annotations

import functools
import sys

import numpy as np

from ..registry import NotLowerable, register_op
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


# Print Python text and tensor values (formatted as eager Tensors print).
register_op("print", _print_kernel, lambda *values, **attrs: (), num_outputs=0,
            stateful=True).lowering(
    xla=lambda ns, *values, parts, sep, end: ns.host_effect(
        functools.partial(_print_kernel, parts=parts, sep=sep, end=end), *values),
    onnx=NotLowerable("it prints at run time; an ONNX model has no output stream"))
# Raise AssertionError(message) unless every element of `cond` is true.
register_op("assert", _assert_kernel, lambda cond, message: (), num_outputs=0,
            stateful=True).lowering(
    xla=lambda ns, cond, message: ns.check(
        ns.jnp.all(cond), functools.partial(_assert_error, message)),
    onnx=NotLowerable("it raises AssertionError at run time; ONNX has no exceptions"))
