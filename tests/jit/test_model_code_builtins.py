"""Python builtins that ask a tensor's truth, as model code uses them:
`min(max_norm / norm, 1.0)` in gradient clipping, `max(a, b)` of scalar
tensors, `any(...)`/`all(...)` over per-layer checks.

Found by this file: each raised "bool() of static Variable ... decorate the
function with @d2s.jit.to_static" inside a converted function (the builtin
compared the items while the program was built); they now pick at run time
(`where`, `logical_or`/`logical_and`) and keep Python's behaviour for Python
values.
"""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static

from model_code_helpers import assert_same_run, program_ops, tensor

RNG = np.random.default_rng(3)


def _clip_by_global_norm(g1, g2, max_norm):
    total = d2s.sqrt((g1 * g1).sum() + (g2 * g2).sum())
    coef = min(max_norm / (total + 1e-6), 1.0)
    return g1 * coef, g2 * coef


@pytest.mark.parametrize("max_norm", [0.1, 1.0, 100.0])
def test_gradient_clipping_with_min_of_a_tensor_and_a_number(max_norm):
    g1 = RNG.standard_normal((3, 2)).astype(np.float32)
    g2 = RNG.standard_normal(4).astype(np.float32)
    static = to_static(_clip_by_global_norm)
    assert_same_run(static, _clip_by_global_norm,
                    lambda: (tensor(g1, grad=True), tensor(g2, grad=True), max_norm))


def _scores(x, y):
    best = max(x.sum(), y.sum(), x.mean())
    worst = min([x.max(), y.max()])
    gen = max(r.sum() for r in (x, y))
    return best, worst, gen, best - worst


@pytest.mark.parametrize("shift", [-2.0, 0.0, 2.0])
def test_max_and_min_of_scalar_tensors(shift):
    x0 = RNG.standard_normal(4).astype(np.float32)
    y0 = RNG.standard_normal(4).astype(np.float32) + shift
    static = to_static(_scores)
    assert_same_run(static, _scores, lambda: (tensor(x0, grad=True), tensor(y0, grad=True)))
    assert "where" in program_ops(static, tensor(x0), tensor(y0))


def _ties_go_to_the_first(x):
    a, b = x.sum(), x.sum() * 1.0
    return max(a, b) * 2 + min(b, a) * 3


def test_on_ties_the_first_item_gets_the_gradient():
    x0 = np.array([1.0, 2.0], np.float32)
    assert_same_run(to_static(_ties_go_to_the_first), _ties_go_to_the_first,
                    lambda: (tensor(x0, grad=True),))


def _checks(x, layers):
    outs = [x * w for w in layers]
    if any(o.sum() > 10 for o in outs):
        x = x / 10
    if all([o.min() > -1 for o in outs]):
        x = x + 1
    return x


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0, -10.0])
def test_any_and_all_over_tensor_checks(scale):
    x0 = np.array([0.5, 1.5], np.float32) * scale
    static = to_static(_checks)
    assert_same_run(static, _checks, lambda: (tensor(x0, grad=True), [1.0, 3.0]))
    assert "cond" in program_ops(static, tensor(x0), [1.0, 3.0])


def _python_values(items, key=None):
    out = [max(items), min(*items), max(items, key=key) if key else None,
           max([], default=-1), min((v for v in items), default=0),
           any(v > 2 for v in items), all(items), any([]), all([])]
    return out


def test_python_values_keep_the_builtins_behaviour():
    static = to_static(_python_values)
    for items, key in [([3, 1, 2], None), ([1.5, -4.0], abs), ((0, 5), lambda v: -v)]:
        assert static(items, key) == _python_values(items, key)


def _max_of_nothing(x):
    return max([])


def _max_of_vectors(x):
    return max(x, x * 2)


def _max_of_two_dtypes(x):
    return max(x.sum(), x.astype("int64").sum())


@pytest.mark.parametrize("fn, error", [(_max_of_nothing, ValueError),
                                       (_max_of_vectors, ValueError)])
def test_errors_are_the_eager_ones(fn, error):
    x0 = np.array([1.0, 2.0], np.float32)
    with pytest.raises(error):
        fn(tensor(x0))
    with pytest.raises(error) as info:
        to_static(fn)(tensor(x0))
    assert "test_model_code_builtins.py" in str(info.value)


def test_tensors_of_two_dtypes_are_a_clear_error():
    with pytest.raises(TypeError, match=r"max\(\) of tensors of dtypes float32, int64") as info:
        to_static(_max_of_two_dtypes)(tensor([1.0, 2.0]))
    assert "test_model_code_builtins.py" in str(info.value)
