"""The one operator registry: each op is declared once, every mode reads it.

An `OpDef` holds, side by side:

* `kernel(*arrays, **attrs)`: the numpy implementation (eager mode runs it
  now; the static executor runs the very same function later);
* `infer(*avals, **attrs)`: the shape/dtype rule used while building a
  program (avals have `.shape` with `None` for unknown dims, and `.dtype`);
* `vjp(g, out, *primals, **attrs)`: the gradient rule, written with d2s ops
  so the same rule differentiates eager Tensors (on the tape) and static
  Variables (appending grad ops to a program). It returns one cotangent per
  primal (None where there is none). For multi-output ops `g` and `out` are
  tuples, and `g[k]` is None when nothing used output k (the rule skips it).

and, optionally, `attrs`: the attributes it takes and their types (see
`core.attr_schema`; by default derived from the kernel's keyword
parameters). A loaded program's attributes are checked against it.

An op with `vjp=None` is not differentiable (comparisons, argmax, ...); an
op whose gradient is needed but has no rule raises a loud error naming it.

Backends that compile whole programs (XLA through JAX) and exporters (ONNX)
read a per-target *lowering* of each op. A target keeps its rules in its own
package (`d2s/backends/xla/rules/`, `d2s/onnx/rules/`, one module per op
family, loaded with the target), declares itself with `declare_target`, and
registers each rule with `register_lowering(target, op, rule)`: the core and
`static` hold each op's meaning only. A rule is `rule(ns, *inputs, **attrs)`
and returns the op's output(s) built from the backend's values; `ns` is a
small namespace the backend passes in (for XLA: `ns.jnp`, `ns.lax`,
`ns.promote`, ...), so the core never imports a backend library. An op with
no form on a backend says why with `NotLowerable(reason)` instead of a rule.
`describe(op)` says where each rule of an op lives.
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

import numpy as np


class Aval(NamedTuple):
    """Abstract value: what the shape rule knows of a value."""
    shape: tuple
    dtype: np.dtype


class Lowerable:
    """What an op declaration with per-backend lowerings (`self.lowerings`, a
    dict, and `self.name`) shares: declaring them."""

    def lowering(self, **rules):
        """Declare lowerings, one keyword per backend (`xla=rule` or
        `xla=NotLowerable("why")`); returns the op. A target's rules package
        calls `register_lowering` instead (tests and probes use this)."""
        for backend, rule in rules.items():
            register_lowering(backend, self, rule)
        return self


@dataclass(eq=False)
class OpDef(Lowerable):
    name: str
    kernel: Callable
    infer: Callable
    vjp: Optional[Callable] = None
    num_outputs: int = 1
    # Ops whose kernel reads the global RNG must never be folded or CSE'd.
    stateful: bool = False
    # The kernel accepts `out=` (an elementwise result written into a given
    # buffer); numpy ufuncs always do. The compiled executor uses it in place.
    writes_out: bool = False
    # Every result is a new array that aliases no input (numpy ufuncs, matmul
    # among them, always; other kernels say so): the in-place pass may hand
    # its results' buffers to later ops.
    fresh: bool = False
    # The kernel may raise on the *values* it is given, not only on their
    # shapes (labels or indices out of range, dims read from tensors): True,
    # or a predicate of the Operator (`lambda op: ...`, e.g. "some dim is a
    # tensor input"). A training step updates parameters in place only while
    # nothing after the first update can raise (d2s.backends.numpy.update_plan).
    checks: object = False
    # Each result element depends on the inputs' elements at the same (broadcast)
    # position only: numpy ufuncs other than matmul always; other kernels say so.
    # A backend may apply such an op to a padded buffer as to any array (the xla
    # backend's tensor arrays: backends/xla/ragged.py).
    elementwise: bool = False
    # The kernel draws from d2s's random generator (host state). A compiling
    # backend runs such an op with values drawn on the host before the call, in
    # program order, by the rule's draw function (`ns.host_draw` on xla): the
    # numbers equal the numpy backend's.
    draws: bool = False
    # backend name -> lowering rule, or NotLowerable(reason) (see module doc)
    lowerings: dict = field(default_factory=dict)
    # The attributes it takes, `{name: spec}` (`core.attr_schema`), checked on
    # every attribute of a loaded program; None: derived from the kernel's
    # keyword parameters (`attr_schema.op_schema`).
    attrs: Optional[dict] = None

    def __post_init__(self):
        ufunc = isinstance(self.kernel, np.ufunc)
        self.writes_out = self.writes_out or ufunc
        self.fresh = self.fresh or ufunc
        self.elementwise = self.elementwise or (ufunc and self.kernel.signature is None)

    def may_fail(self, op):
        """Whether this op's kernel, run as `op` (an Operator), may raise on
        its inputs' values (see `checks`)."""
        checks = self.checks
        return checks(op) if callable(checks) else bool(checks)

    def __repr__(self):
        return f"OpDef({self.name!r})"


class NotLowerable:
    """An explicit "this op has no form on that backend", with the reason a
    program holding it runs elsewhere (the backend names it in its warning)."""
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self):
        return f"NotLowerable({self.reason!r})"


OPS: dict[str, OpDef] = {}


def register_op(name, kernel, infer, vjp=None, num_outputs=1, stateful=False,
                writes_out=False, fresh=False, checks=False, elementwise=False,
                draws=False, attrs=None) -> OpDef:
    if name in OPS:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, kernel, infer, vjp, num_outputs, stateful or draws, writes_out=writes_out,
               fresh=fresh, checks=checks, elementwise=elementwise, draws=draws, attrs=attrs)
    OPS[name] = op
    return op


# target name -> (its rules package, whether it has a rule or a reason for every op)
TARGETS: dict[str, tuple] = {}


def declare_target(name, package, every_op=True):
    """A target's rules package (`package`, its module name) says it exists;
    `every_op`: it declares a rule or `NotLowerable(reason)` for every op
    (the coverage test holds it to that), else ops it has no rule for are
    simply not lowerable there."""
    TARGETS[name] = (package, bool(every_op))


def register_lowering(target, op, rule, variant=None):
    """Declare how `target` ("xla", "onnx", or any registered backend) lowers
    `op` (a registered op's name, its `OpDef`, or a control op's
    `ControlOpDef`): a rule `rule(ns, *inputs, **attrs)` or
    `NotLowerable(reason)`. Called by the target's own rules package, so the
    core never names a backend library. `variant`: a form of the rule for
    values of a kind the target has beside plain arrays (xla's
    "tensor_array": `rule(ns, plain_rule, *inputs, **attrs)`), kept in the
    same table under "target:variant". Returns `rule`, so it also serves as
    a decorator factory's result (see `lowers`)."""
    opdef = OPS.get(op) if isinstance(op, str) else op
    if opdef is None:
        raise KeyError(f"register_lowering({target!r}, {op!r}): no op of that name is registered")
    if not (callable(rule) or isinstance(rule, NotLowerable)):
        raise TypeError(f"op {opdef.name!r}: the {target} lowering must be a "
                        f"callable or NotLowerable(reason), got {rule!r}")
    key = target if variant is None else f"{target}:{variant}"
    opdef.lowerings[key] = rule
    _REGISTERED_AT[(opdef.name, key)] = _caller()
    return rule


# (op name, target) -> "module:line" of the register_lowering call (describe)
_REGISTERED_AT: dict = {}


def _caller():
    """`module:line` of the first frame outside this module (import time only)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return None if frame is None else f"{frame.f_globals.get('__name__')}:{frame.f_lineno}"


def lowers(target, *ops):
    """Decorator: `@lowers("xla", "sin", "cos")` registers the decorated rule
    for each named op on `target`."""
    def decorate(rule):
        for op in ops:
            register_lowering(target, op, rule)
        return rule
    return decorate


def describe(op):
    """Where every rule of `op` (a name, an `OpDef` or a `ControlOpDef`)
    lives, so that one op still reads in one place: `{"kernel":
    "module.qualname:line", "infer": ..., "vjp": ..., "<target>": ...}`
    (`:line` where the function's source is Python; a target's rule made by
    a factory, or registered from another module, adds "(registered at
    module:line)"; a `NotLowerable` reads as "not lowerable: reason"; a control op lists "interpret" and
    "check" in place of "kernel" and "infer", and "emit" where it brings its
    own numpy code; its numpy rule is listed as the "numpy" target's). Only targets whose rules
    package has loaded are listed (a target registers its rules when it is
    imported)."""
    opdef = OPS[op] if isinstance(op, str) else op
    if isinstance(opdef, OpDef):
        found = {"kernel": _where(opdef.kernel), "infer": _where(opdef.infer)}
    else:
        found = {"interpret": _where(opdef.interpret), "check": _where(opdef.check)}
        if opdef.emit is not None:
            found["emit"] = _where(opdef.emit)
    found["vjp"] = _where(opdef.vjp)
    for target, rule in sorted(opdef.lowerings.items()):
        found[target] = _where(rule)
        site = _REGISTERED_AT.get((opdef.name, target))
        if site is not None and not isinstance(rule, NotLowerable) and (
                "<locals>" in found[target] or not found[target].startswith(site.split(":")[0])):
            found[target] += f" (registered at {site})"
    return found


def _where(fn):
    """`module.qualname:line` of a rule (a rule made by a factory names the
    function the factory returned: its module and line are the factory's)."""
    if fn is None:
        return None
    if isinstance(fn, NotLowerable):
        return f"not lowerable: {fn.reason}"
    inner = inspect.unwrap(getattr(fn, "func", fn))  # a functools.partial: its function
    module = getattr(inner, "__module__", None) or type(inner).__module__
    name = getattr(inner, "__qualname__", None) or getattr(inner, "__name__", repr(inner))
    code = getattr(inner, "__code__", None)
    return f"{module}.{name}" + (f":{code.co_firstlineno}" if code is not None else "")
