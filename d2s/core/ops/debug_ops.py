"""Side-effect ops of converted code: `print` and `assert` acting at run time."""
from __future__ import annotations

import re
import string
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
        elif part[0] == "fstring":
            text.append(_format_fstring(values, part[1], part[2]))
        else:
            text.append(format_tensor(np.asarray(values[part[1]]), part[2]))
    sys.stdout.write(sep.join(text) + end)


def _format_fstring(values, template, kinds):
    """An f-string (or a `%` / `str.format` text) printed by converted code,
    formatted when the program runs: `kinds` has one letter per value of
    the op: "n" a Python number the code made of a tensor (`.item()`,
    `float()`, a dynamic dim), "t"/"T" a Tensor that requires / stops
    gradients, "-" a value this text does not hold. The others, in order,
    are `template`'s positional fields, each formatted as eager code formats
    that object (a spec starting with "%" the way `%` does)."""
    from ..tensor import Tensor
    objs = []
    for kind, v in zip(kinds, values):
        if kind == "n":
            objs.append(_Field(np.asarray(v).item()))
        elif kind != "-":
            t = Tensor._from_array(np.asarray(v))
            t.stop_gradient = kind == "T"
            objs.append(_Field(t))
    return template.format(*objs)


class _Field:
    """A value in a print's template: `{0:%.4f}` formats it with `%`, any
    other spec with `format`; `!r`/`!s` convert the value itself."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __format__(self, spec):
        return format_field(self.value, spec)

    def __repr__(self):
        return repr(self.value)

    def __str__(self):
        return str(self.value)


def format_field(value, spec):
    """`format(value, spec)`, or `spec % value` for a `%` spec (the fields
    converted code makes of `"%.4f" % x`)."""
    if spec.startswith("%"):
        return spec % (value,)
    return format(value, spec)


def _assert_kernel(cond, *values, message, fstring=None):
    if not np.all(cond):
        if fstring is not None:  # `assert T <= n, f"too long: {T}"`: formatted now
            message = _format_fstring(values, *fstring)
        raise _assert_error(message)


def _assert_error(message):
    return AssertionError(message) if message else AssertionError()


# On XLA, print runs this very kernel on the host (an ordered callback: same
# text, same order), and a failed assert raises the same error after the run.


def _print_infer(*values, parts, sep, end):
    if any(p[0] == "fstring" and len(p[2]) != len(values) for p in parts):
        raise IndexError(f"print: an f-string part needs one kind per value ({len(values)})")
    for part in parts:
        if part[0] == "value" and part[1] >= len(values):
            raise IndexError(f"print: part {part!r} names value {part[1]} of {len(values)}")
    return ()


def _part_ok(p):
    """("text", str), ("value", index, stop_gradient) or ("fstring", template,
    field kinds), as `side_effects` writes them."""
    return type(p) is tuple and (
        len(p) == 2 and p[0] == "text" and TEXT(p[1]) is None
        or len(p) == 3 and p[0] == "fstring" and _template_ok(p[1], p[2])
        or len(p) == 3 and p[0] == "value" and type(p[1]) is int and 0 <= p[1] < 1 << 16
        and type(p[2]) is bool)


_PART = Spec(lambda p: None if _part_ok(p) else f"malformed print part {p!r}"[:200],
             "a print part")

# Print Python text and tensor values (formatted as eager Tensors print).
register_op("print", _print_kernel, _print_infer, num_outputs=0, stateful=True,
            attrs={"parts": sequence_of(_PART, kinds=(tuple,)), "sep": TEXT,
                   "end": TEXT})
def _fstring_ok(v):
    return type(v) is tuple and len(v) == 2 and _template_ok(v[0], v[1])


_SPEC_NUMBER_LIMIT = 1000  # widths and precisions a message or print may ask for


def _template_ok(template, kinds):
    """Whether `template` is a text `side_effects._fstring_part` can have
    written for `kinds`: each field a plain position below the number of
    values it formats, `!r`/`!s`/`!a` at most, a spec with no nested field
    and no width or precision past `_SPEC_NUMBER_LIMIT`. A loaded program's
    template is data: it never reaches an attribute or item of the values
    (`{0.__class__...}`, `{0[k]}`) nor asks for a gigabyte of padding."""
    if TEXT(template) is not None or type(kinds) is not str or not set(kinds) <= set("ntT-"):
        return False
    fields = len(kinds) - kinds.count("-")
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return False
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not (name.isdigit() and int(name) < fields) or conversion not in (None, "r", "s", "a"):
            return False
        if "{" in spec or "}" in spec or any(
                int(n) > _SPEC_NUMBER_LIMIT for n in re.findall(r"\d+", spec)):
            return False
    return True


_FSTRING = Spec(lambda v: None if _fstring_ok(v) else f"malformed message {v!r}"[:200],
                "a (template, value kinds) pair")

# Raise AssertionError(message) unless every element of `cond` is true; with
# `fstring` (template, kinds: see `_format_fstring`) the message is that
# f-string formatted with the op's other inputs when it fails.
register_op("assert", _assert_kernel, lambda cond, *values, message, fstring=None: (),
            num_outputs=0, stateful=True,
            attrs={"message": optional(TEXT), "fstring": optional(_FSTRING)})
