"""Second derivatives (`d2s.grad(..., create_graph=True)`, then `d2s.grad`
again) in converted code through tensor `if`s: the first gradient of an
`if` is then a plain `cond` recomputing the branch (static.control_ops.
recompute), differentiated again like any op. Checked against eager mode
and finite differences on the numpy backend (generated code and
interpreter) and xla. What has no second derivative (a tensor `while`, a
gradient built without create_graph, a to_static call inside an eager
create_graph walk) raises an error naming it, its file and line."""
import numpy as np
import pytest

import d2s
from d2s import static
from d2s.jit import to_static
from d2s.static import executor


def two_branches(x):
    if x.sum() > 0:
        y = x * x * x
    else:
        y = d2s.sin(x) * x
    return y.sum()


def nested(x):
    if x.sum() > 0:
        if x.max() > 1.0:
            y = d2s.exp(x) * x
        else:
            y = x * x * x
    else:
        y = d2s.tanh(x) * x
    return (y * y).sum()


def unrolled_with_conds(x):
    for _ in range(3):
        if x.sum() > 1.0:
            x = d2s.sin(x) * 1.5
        else:
            x = x * x + 0.5
    return x.sum()


def early_return(x):
    for _ in range(2):
        x = x * 1.5 - 0.1
        if x.sum() > 2.0:
            return (x * x * x).sum()
    return d2s.sin(x).sum()


def second(fn):
    def f(x):
        (g,) = d2s.grad(fn(x), [x], create_graph=True)
        (h,) = d2s.grad((g * g).sum(), [x])
        return g, h
    f.__name__ = f"second_{fn.__name__}"
    return f


CASES = {"two_branches_pos": (two_branches, [0.5, 1.0]),
         "two_branches_neg": (two_branches, [-0.5, -1.0]),
         "nested_exp": (nested, [0.5, 1.2]), "nested_cube": (nested, [0.5, 0.2]),
         "nested_tanh": (nested, [-0.5, 0.2]),
         "unrolled_with_conds": (unrolled_with_conds, [0.3, 0.6]),
         "early_return_returns": (early_return, [1.0, 1.2]),
         "early_return_falls_through": (early_return, [0.2, 0.1])}


def _run(f, x0):
    x = d2s.to_tensor(np.asarray(x0, np.float64), stop_gradient=False)
    g, h = f(x)
    return g.numpy(), h.numpy()


def _finite_difference(fn, x0, eps=1e-6):
    """d/dx of sum(g * g), g the eager first gradient."""
    def objective(x):
        t = d2s.to_tensor(x, stop_gradient=False)
        (g,) = d2s.grad(fn(t), [t])
        return float((g.numpy() ** 2).sum())
    x0 = np.asarray(x0, np.float64)
    out = np.zeros_like(x0)
    for i in range(x0.size):
        e = np.zeros_like(x0)
        e[i] = eps
        out[i] = (objective(x0 + e) - objective(x0 - e)) / (2 * eps)
    return out


@pytest.fixture(params=["compiled", "interpreter", "xla"])
def backend(request):
    if request.param == "xla":
        pytest.importorskip("jax")
        yield "xla"
        return
    previous = executor.executor_mode()
    executor.set_executor_mode(request.param)
    yield "numpy"
    executor.set_executor_mode(previous)


@pytest.mark.parametrize("case", sorted(CASES))
def test_second_derivatives_through_tensor_ifs(case, backend):
    fn, x0 = CASES[case]
    want_g, want_h = _run(second(fn), x0)
    np.testing.assert_allclose(want_h, _finite_difference(fn, x0), rtol=1e-5, atol=1e-6)
    sf = to_static(second(fn), backend=backend)
    got_g, got_h = _run(sf, x0)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-10)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-10)
    x = d2s.to_tensor(np.asarray(x0, np.float64), stop_gradient=False)
    types = {op.type for op in sf.get_concrete_program(x).main_program.all_ops()}
    assert "cond" in types


def _loop(x):
    k = 0
    while x.sum() < 4.0:
        x = x * 1.5
        k += 1
    return (x * x).sum()


def test_a_tensor_while_has_no_second_derivative_and_says_so():
    with pytest.raises(RuntimeError, match=r"create_graph=True\) through a tensor `while` "
                                           r"\(op 'while' built at .*test_second_derivatives_"
                                           r"converted\.py, line \d+: while x\.sum\(\) < 4\.0:"
                                           r"\).*Python `range`"):
        _run(to_static(second(_loop)), [0.5, 1.0])


def test_static_gradients_twice_through_a_while_is_a_clear_error():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        x.stop_gradient = False
        (g,) = static.gradients(to_static(_loop)(x), [x])
        with pytest.raises(RuntimeError, match=r"gradient of a tensor `while` \(op .* line \d+:"
                                               r" while x\.sum\(\) < 4\.0:\)"):
            static.gradients((g * g).sum(), [x])


def test_a_first_gradient_without_create_graph_is_a_constant_as_eagerly():
    def f(x):
        (g,) = d2s.grad(two_branches(x), [x])
        (h,) = d2s.grad((g * g).sum(), [x])
        return g, h
    for fn in (f, to_static(f)):
        with pytest.raises(RuntimeError, match="does not require grad|is not used"):
            _run(fn, [0.5, 1.0])


def test_static_gradients_twice_through_an_if_asks_for_create_graph():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        x.stop_gradient = False
        (g,) = static.gradients(to_static(two_branches)(x), [x])
        with pytest.raises(RuntimeError, match=r"tensor `if` \(op .* line \d+: if x\.sum\(\) "
                                               r"> 0:\).*create_graph=True"):
            static.gradients((g * g).sum(), [x])
        (g2,) = static.gradients(to_static(two_branches)(x), [x], create_graph=True)
        (h,) = static.gradients((g2 * g2).sum(), [x])
    x0 = np.array([0.5, 1.0])
    got = static.Executor(backend="numpy").run(prog, feed={"x": x0}, fetch_list=[h])[0]
    np.testing.assert_allclose(got, _finite_difference(two_branches, x0), rtol=1e-5)


def test_create_graph_through_a_converted_call_is_refused_not_missing():
    sf = to_static(two_branches)
    x = d2s.to_tensor(np.array([0.5, 1.0]), stop_gradient=False)
    with pytest.raises(RuntimeError, match="through a call of a to_static function.*inside "
                                           "the converted function"):
        d2s.grad(sf(x), [x], create_graph=True)
    (g,) = d2s.grad(sf(x), [x])  # a first derivative still works
    np.testing.assert_allclose(g.numpy(), 3 * np.array([0.5, 1.0]) ** 2)


def _random_branch(x):
    if x.sum() > 0:
        y = x * d2s.rand([2], "float64")
    else:
        y = x
    return (y * x).sum()


def test_a_branch_drawing_random_numbers_is_refused():
    with pytest.raises(RuntimeError, match="branch draws random numbers"):
        _run(to_static(second(_random_branch)), [0.5, 1.0])
