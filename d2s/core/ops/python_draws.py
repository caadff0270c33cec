"""`python_draw`: a number drawn by Python's `random` or numpy's global
random generator inside converted code, drawn again on every run.

Eagerly `lam = np.random.beta(a, a)` (mixup), `if random.random() < p`
(an augmentation, epsilon-greedy) give a new number per call. Traced as
plain Python the number would be drawn once and every run of the program
would reuse it: a silent difference. Converted code (convert.runtime.
python_random) makes such a call this op: its kernel calls the same bound
method with the same arguments each time the program runs, in program
order, so the generator's stream advances as eager calls advance it. On
xla the draw is made on the host before the run (`ns.host_draw`), as for
d2s's own sampling ops. A program holding it cannot be saved to a file
(the draw is a Python call) nor exported to ONNX.
"""
from __future__ import annotations

import numpy as np

from ..attr_schema import DTYPE, SHAPE, Spec
from ..dispatch import bind
from ..registry import Aval, register_op


class PythonDraw:
    """The call an op draws with (an attribute, live in this process)."""

    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __call__(self):
        return self.fn(*self.args, **self.kwargs)

    def __repr__(self):
        return f"<python draw {_name(self.fn)}>"

    def not_saved_because(self):
        return (f"cannot save a program that draws with {_name(self.fn)}(...) (Python's or "
                "numpy's random generator, called on every run): draw with d2s's own ops "
                "(d2s.rand, d2s.randn, d2s.randint, ...), or pass the number as an argument")


def _name(fn):
    owner = getattr(fn, "__self__", None)
    module = "random" if type(owner).__module__ == "random" else "np.random"
    return f"{module}.{getattr(fn, '__name__', 'draw')}"


def _kernel(*, call, shape, dtype):
    return np.asarray(call(), dtype=dtype).reshape(shape)


def _infer(*, call, shape, dtype):
    return Aval(tuple(shape), np.dtype(dtype))


_CALL = Spec(lambda v: None if isinstance(v, PythonDraw) else
             "a Python random draw exists only in the process that traced it", "a draw")

register_op("python_draw", _kernel, _infer, draws=True,
            attrs={"call": _CALL, "shape": SHAPE, "dtype": DTYPE})


def python_draw(fn, args, kwargs, example):
    """The op drawing `fn(*args, **kwargs)` on every run; `example` (one
    result, drawn with the generator's state put back after) gives its shape
    and dtype."""
    value = np.asarray(example)
    return bind("python_draw", call=PythonDraw(fn, args, kwargs), shape=tuple(value.shape),
                dtype=value.dtype.name)


__all__ = []
