"""What attributes an op may carry: names and value types, checked on load.

A saved program is data from a file. Before any of it reaches a kernel, a
shape rule or the code generator, every attribute of every op is checked
against the op's *schema*: its names (unknown keys are rejected) and the
type and range of each value. The schema is part of the op's one
declaration (`register_op(..., attrs={...})`); where an op declares none it
is derived from the kernel: the names are the kernel's keyword parameters
(numpy ufuncs take none), their types come from `CONVENTIONS` by name
(`dtype`, `shape`, `axes`, ...) or are plain values (`VALUE`: numbers,
text, tuples, lists and dicts of those, arrays of numbers; never a type or
a function). Control-flow ops declare theirs in `static.control_ops`.

A spec is a callable `spec(value) -> None | str`: None when the value is
acceptable, else what is wrong (the loader names the op and attribute).
Sizes are bounded here too (`max_elements`): a shape attribute or a
variable may not promise more elements than `D2S_LOAD_MAX_ELEMENTS`.
"""
from __future__ import annotations

import functools
import inspect
import keyword
import os
import re

import numpy as np

# Limits on what a file may ask for; the environment raises or lowers them.
MAX_DEPTH = 32          # nesting of one attribute value (tuples in tuples ...)
MAX_ITEMS = 1 << 16     # items of one tuple/list/dict attribute
MAX_TEXT = 1 << 16      # characters of one string attribute
MAX_RANK = 64           # dims of a shape, entries of an axes tuple
_DEFAULT_MAX_ELEMENTS = 1 << 28
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


def max_elements():
    """Elements one array or variable of a loaded program may have
    (`D2S_LOAD_MAX_ELEMENTS`, default 2**28)."""
    return env_int("D2S_LOAD_MAX_ELEMENTS", _DEFAULT_MAX_ELEMENTS)


def env_int(name, default):
    """A positive integer limit from the environment (`default` when unset)."""
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be positive")
    return value


def is_safe_name(name):
    """An ASCII identifier, not a keyword, at most 64 characters: what an
    attribute name must be (it becomes a keyword argument in generated code)."""
    return type(name) is str and bool(_NAME.match(name)) and not keyword.iskeyword(name)


class Spec:
    """A named check; `repr` is what error messages show as the expected type."""

    def __init__(self, check, text):
        self._check, self._text = check, text

    def __call__(self, v):
        return self._check(v)

    def __repr__(self):
        return self._text


def _kind(check, text):
    return Spec(lambda v: None if check(v) else f"expected {text}, got {_show(v)}", text)


def _show(v):
    text = repr(v) if not isinstance(v, np.ndarray) else f"an array {v.dtype}{list(v.shape)}"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(v):
    return type(v) is int and -(1 << 63) <= v < (1 << 64)


BOOL = _kind(lambda v: type(v) is bool, "a bool")
INT = _kind(_is_int, "an int")
NUMBER = _kind(lambda v: type(v) in (bool, float) or _is_int(v), "a number")
TEXT = _kind(lambda v: type(v) is str and len(v) <= MAX_TEXT, "a string")
NAME = _kind(is_safe_name, "an identifier")
NONE = _kind(lambda v: v is None, "None")


def optional(spec):
    return Spec(lambda v: None if v is None else spec(v), f"None or {spec!r}")


def int_range(lo=None, hi=None):
    text = f"an int in [{lo}, {hi}]"
    return _kind(lambda v: _is_int(v) and (lo is None or v >= lo) and (hi is None or v <= hi),
                 text)


def one_of(*choices):
    return _kind(lambda v: any(type(v) is type(c) and v == c for c in choices),
                 "one of " + ", ".join(map(repr, choices)))


def sequence_of(spec, max_len=MAX_ITEMS, kinds=(tuple, list)):
    text = f"a tuple or list of {spec!r}"

    def check(v):
        if type(v) not in kinds or len(v) > max_len:
            return f"expected {text} (at most {max_len}), got {_show(v)}"
        for i, x in enumerate(v):
            problem = spec(x)
            if problem:
                return f"item {i}: {problem}"
        return None
    return Spec(check, text)


def any_of(*specs):
    text = " or ".join(map(repr, specs))

    def check(v):
        for s in specs:
            if s(v) is None:
                return None
        return f"expected {text}, got {_show(v)}"
    return Spec(check, text)


_DTYPE_KINDS = "biufc"  # bool, ints, floats, complex: no objects, strings, records


def _dtype_ok(v):
    if isinstance(v, np.dtype):
        return v.kind in _DTYPE_KINDS
    if type(v) is not str or len(v) > 32:
        return False
    try:
        return np.dtype(v).kind in _DTYPE_KINDS
    except TypeError:
        return False


DTYPE = _kind(_dtype_ok, "a numeric dtype name")


def _array_ok(v):
    return type(v) is np.ndarray and v.dtype.kind in _DTYPE_KINDS and v.size <= max_elements()


ARRAY = _kind(_array_ok, "an array of numbers")


def _shape_check(v):
    if type(v) not in (tuple, list) or len(v) > MAX_RANK:
        return f"expected a shape (a tuple of at most {MAX_RANK} dims), got {_show(v)}"
    size = 1
    for d in v:
        if d is None or d == -1 and _is_int(d):
            continue  # a dim known at run time / inferred by reshape
        if not _is_int(d) or d < 0:
            return f"invalid dim {d!r} in shape {_show(v)}"
        size *= d
    if size > max_elements():
        return (f"shape {_show(v)} has {size} elements, more than D2S_LOAD_MAX_ELEMENTS="
                f"{max_elements()}")
    return None


SHAPE = Spec(_shape_check, "a shape")
AXES = any_of(NONE, INT, sequence_of(INT, MAX_RANK))


def _value_check(v, depth=0):
    t = type(v)
    if v is None or t in (bool, float) or _is_int(v):
        return None
    if t is str:
        return None if len(v) <= MAX_TEXT else f"a string of {len(v)} characters"
    if t is np.ndarray:
        return None if _array_ok(v) else f"expected an array of numbers, got {_show(v)}"
    if isinstance(v, np.dtype):
        return None if v.kind in _DTYPE_KINDS else f"dtype {v} is not numeric"
    if t in (tuple, list, dict):
        if depth >= MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH}"
        if len(v) > MAX_ITEMS:
            return f"more than {MAX_ITEMS} items"
        items = [x for kv in v.items() for x in kv] if t is dict else v
        for x in items:
            problem = _value_check(x, depth + 1)
            if problem:
                return problem
        return None
    return f"expected a plain value (number, string, tuple, list, dict, array), got {_show(v)}"


VALUE = Spec(_value_check, "a plain value")

# Types of derived attributes, by name (an op declaring `attrs=` overrides them).
CONVENTIONS = {
    "dtype": optional(DTYPE),
    "shape": SHAPE,
    "axis": AXES,
    "axes": AXES,
    "perm": AXES,
    "keepdim": BOOL,
    "keepdims": BOOL,
}


def kernel_attr_names(kernel):
    """The keyword parameters of `kernel` (the attributes it can be given), or
    None when it takes any (`**kwargs`). Ufuncs take none: their keywords
    (`out`, `where`, ...) are never op attributes. `out` is a run-time buffer,
    never an attribute."""
    if isinstance(kernel, np.ufunc):
        return ()
    try:
        params = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):
        return None
    names = []
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "out":
            names.append(p.name)
    return tuple(names)


def op_schema(opdef):
    """`{name: spec}` for a core op (`OpDef`), or None when its kernel takes
    any keyword (then any identifier is a name and every value a `VALUE`)."""
    found = getattr(opdef, "_schema", False)
    if found is not False:
        return found
    declared = getattr(opdef, "attrs", None)
    if declared is not None:
        schema = dict(declared)
    else:
        names = kernel_attr_names(opdef.kernel)
        schema = None if names is None else {n: CONVENTIONS.get(n, VALUE) for n in names}
    opdef._schema = schema
    return schema


@functools.lru_cache(maxsize=1024)
def _signature(kernel):
    try:
        return inspect.signature(kernel)
    except (TypeError, ValueError):
        return None


def arity_problem(opdef, n_inputs, attrs):
    """What is wrong with calling `opdef`'s kernel on `n_inputs` arrays and
    `attrs` (None: nothing): a ufunc takes exactly `nin` inputs (an extra one
    would be its `out`, an array written in place), another kernel's
    signature must bind them, never an input as its `out`."""
    kernel = opdef.kernel
    if isinstance(kernel, np.ufunc):
        if n_inputs != kernel.nin:
            return f"takes {kernel.nin} inputs, got {n_inputs}"
        return None
    sig = _signature(kernel)
    if sig is None:
        return None
    extra = {"out": None} if "out" in sig.parameters and "out" not in attrs else {}
    try:
        sig.bind(*([None] * n_inputs), **attrs, **extra)
    except TypeError as e:
        return f"cannot take {n_inputs} inputs and attributes {sorted(attrs)}: {e}"
    return None


def check_attrs(schema, attrs):
    """What is wrong with `attrs` under `schema` (None: nothing): the first
    unknown name or ill-typed value."""
    for k, v in attrs.items():
        if not is_safe_name(k):
            return f"attribute name {_show(k)} is not an identifier"
        spec = VALUE if schema is None else schema.get(k)
        if spec is None:
            known = ", ".join(sorted(schema)) or "none"
            return f"unknown attribute {k!r} (this op takes: {known})"
        try:
            problem = spec(v)
        except Exception as e:  # a spec that could not read the value: refused too
            problem = f"malformed value ({type(e).__name__}: {str(e)[:80]})"
        if problem:
            return f"attribute {k!r}: {problem}"
    return None
