"""Helpers as model code calls them: decorated functions, annotated locals,
`super().forward`, class and static methods, partials, `*args`/`**kwargs`.

Found by this file (each failed before its fix):
* a helper decorated with a `functools.wraps` wrapper ran WITHOUT the
  wrapper in static mode (a silent wrong answer): `inspect.getsourcelines`
  follows `__wrapped__`, so the wrapped function's source was converted in
  the wrapper's place. The wrapper's own `def` is converted now.
* `y: Tensor = ...` inside a tensor `if` or loop raised "SyntaxError:
  annotated name 'y' can't be nonlocal" from the generated code (no user
  line); local annotations are dropped before conversion (PEP 526: they are
  never evaluated).
"""
import functools

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

from model_code_helpers import assert_same_run, program_ops, tensor

RNG = np.random.default_rng(11)
V = RNG.standard_normal(4).astype(np.float32)


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2
    return wrapper


def logged(calls):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x):
            calls.append(fn.__name__)
            if x.sum() > 100:   # a tensor `if` in the wrapper itself
                x = x / 100
            return fn(x)
        return wrapper
    return decorate


@doubled
def _abs_doubled(x):
    if x.sum() > 0:
        return x
    return -x


CALLS = []


@logged(CALLS)
@doubled
def _relu_logged(x):
    return F.relu(x) + 1


def _calls_decorated(x):
    return _abs_doubled(x) + _relu_logged(x)


@pytest.mark.parametrize("sign", [1.0, -1.0, 300.0])
def test_a_decorated_helper_runs_its_wrapper(sign):
    x0 = V * sign
    static = to_static(_calls_decorated)
    assert_same_run(static, _calls_decorated, lambda: (tensor(x0, grad=True),))
    assert "cond" in program_ops(static, tensor(x0))


def test_to_static_of_a_decorated_function_converts_the_wrapper():
    static = to_static(_abs_doubled)
    for sign in (1.0, -1.0):
        assert_same_run(static, _abs_doubled, lambda: (tensor(V * sign, grad=True),))


def _annotated_branch(x):
    if x.sum() > 0:
        y: d2s.Tensor = x * 2
    else:
        y: d2s.Tensor = x - 1
    z: float = 1.5
    return y * z


def _annotated_loop(x, n):
    acc: d2s.Tensor = x * 0
    i: int
    i = 0
    while i < n:
        acc: d2s.Tensor = acc + x * i
        i += 1
    return acc


@pytest.mark.parametrize("fn, extra", [(_annotated_branch, ()), (_annotated_loop, (3,))])
def test_annotated_locals_in_tensor_branches_and_loops(fn, extra):
    static = to_static(fn)
    for sign in (1.0, -1.0):
        args = lambda: (tensor(V * sign, grad=True),) + tuple(tensor(e) for e in extra)
        assert_same_run(static, fn, args)
    ops = program_ops(static, tensor(V), *(tensor(e) for e in extra))
    assert ("while" if extra else "cond") in ops


def test_annotated_locals_keep_python_semantics():
    static = to_static(_annotated_loop)
    assert static(2.0, 3) == _annotated_loop(2.0, 3) == 6.0


class _Annotated(nn.Layer):
    scale: float = 2.0    # a class annotation stays (it is evaluated and stored)

    def forward(self, x):
        out: d2s.Tensor = x
        if x.mean() > 0:
            out: d2s.Tensor = x * self.scale
        return out


def test_class_annotations_stay():
    layer = _Annotated()
    static = to_static(layer.forward)
    assert_same_run(static, layer.forward, lambda: (tensor(V + 5, grad=True),))
    assert _Annotated.__annotations__ == {"scale": float}


class _Base(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = F.relu(y)
        return y


class _Child(_Base):
    factor = 3.0

    def forward(self, x, **kwargs):
        y = super().forward(x)
        return self.scaled(y, **kwargs) + self._mean(x)

    @classmethod
    def scaled(cls, y, extra=0.0):
        return y * cls.factor + extra

    @staticmethod
    def _mean(t):
        return t.mean()


@pytest.mark.parametrize("kwargs", [{}, {"extra": 1.5}])
def test_super_forward_classmethod_and_staticmethod(kwargs):
    d2s.seed(0)
    layer = _Child()
    static = to_static(layer.forward)
    for sign in (1.0, -1.0):
        assert_same_run(lambda x: static(x, **kwargs), lambda x: layer.forward(x, **kwargs),
                        lambda: (tensor(V * sign, grad=True),), grad_of=layer.parameters())
