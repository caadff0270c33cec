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

An op with `vjp=None` is not differentiable (comparisons, argmax, ...); an
op whose gradient is needed but has no rule raises a loud error naming it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

import numpy as np


class Aval(NamedTuple):
    """Abstract value: what the shape rule knows of a value."""
    shape: tuple
    dtype: np.dtype


@dataclass(eq=False)
class OpDef:
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

    def __post_init__(self):
        self.writes_out = self.writes_out or isinstance(self.kernel, np.ufunc)

    def __repr__(self):
        return f"OpDef({self.name!r})"


OPS: dict[str, OpDef] = {}


def register_op(name, kernel, infer, vjp=None, num_outputs=1, stateful=False,
                writes_out=False) -> OpDef:
    if name in OPS:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, kernel, infer, vjp, num_outputs, stateful, writes_out=writes_out)
    OPS[name] = op
    return op

