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
family) and registers them with `register_lowering(target, op, rule)` when
that package loads; older ops still declare theirs beside the kernel with
`register_op(...).lowering(xla=rule)`. A rule is `rule(ns, *inputs, **attrs)`
and returns the op's output(s) built from the backend's values; `ns` is a
small namespace the backend passes in (for XLA: `ns.jnp`, `ns.lax`,
`ns.promote`, ...), so the core never imports a backend library. An op with
no form on a backend says why with `NotLowerable(reason)` instead of a rule.
"""
from __future__ import annotations

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
        `xla=NotLowerable("why")`); returns the op so it chains on `register_op`."""
        for backend, rule in rules.items():
            if not (callable(rule) or isinstance(rule, NotLowerable)):
                raise TypeError(f"op {self.name!r}: the {backend} lowering must be a "
                                f"callable or NotLowerable(reason), got {rule!r}")
            self.lowerings[backend] = rule
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



def register_lowering(target, op, rule):
    """Declare how `target` ("xla", "onnx", or any registered backend) lowers
    `op` (a registered op's name or its `OpDef`): a rule `rule(ns, *inputs,
    **attrs)` or `NotLowerable(reason)`. Called by the target's own rules
    package, so the core never names a backend library. Returns `rule`, so it
    also serves as a decorator factory's result (see `lowers`)."""
    opdef = OPS.get(op) if isinstance(op, str) else op
    if opdef is None:
        raise KeyError(f"register_lowering({target!r}, {op!r}): no op of that name is registered")
    opdef.lowering(**{target: rule})
    return rule


def lowers(target, *ops):
    """Decorator: `@lowers("xla", "sin", "cos")` registers the decorated rule
    for each named op on `target`."""
    def decorate(rule):
        for op in ops:
            register_lowering(target, op, rule)
        return rule
    return decorate


def describe(op):
    """Where every rule of `op` lives: `{"kernel": "module.qualname", "infer":
    ..., "vjp": ..., "<target>": ...}` (a `NotLowerable` reads as
    "not lowerable: reason"). Only targets whose rules package has loaded are
    listed (a target registers its rules when it is imported)."""
    opdef = OPS[op] if isinstance(op, str) else op

    def where(fn):
        if fn is None:
            return None
        if isinstance(fn, NotLowerable):
            return f"not lowerable: {fn.reason}"
        module = getattr(fn, "__module__", None) or type(fn).__module__
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
        return f"{module}.{name}"
    found = {"kernel": where(opdef.kernel), "infer": where(opdef.infer), "vjp": where(opdef.vjp)}
    for target, rule in sorted(opdef.lowerings.items()):
        found[target] = where(rule)
    return found
