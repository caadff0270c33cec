"""Gradients where some value gets no cotangent from a path: backward gives
it a real zero while it is built (`control_ops.undefined.zero_cotangent`),
so the generated numpy code, the interpreter and xla all run such programs
and agree with eager mode and with finite differences.

The cases: a returned value one path never sets (an early return), a name
a tensor loop assigns first, a branch that does not use a value it could
read, an output that does not depend on the differentiated input, unused
outputs of a multi-output op (`topk`, `split`)."""
import numpy as np
import pytest

import d2s
from d2s import static
from d2s.jit import InputSpec, to_static
from d2s.static import executor
from d2s.backends.numpy.codegen import compile_program


def early_return(x):
    for _ in range(3):
        x = x * 1.5 - 0.1
        if x.sum() > 3.0:
            return x * x
    return -x


def first_assigned_in_loop(x):
    k = d2s.zeros([], "int64")
    h = x
    while k < 3:
        y = d2s.tanh(h) * 2.0   # first assigned here: undefined before the loop
        h = h * 1.2 + 0.1
        k = k + 1
    return (y * h).sum()


def branch_not_using_a_value(x):
    w = x * 3.0
    if x.sum() > 0:
        out = x * x
    else:
        out = w + 1.0
    return out.sum()


def output_not_depending_on_input(x):
    c = d2s.ones([2], "float64")
    return (x * x).sum() + c.sum() * 0.0, c * 2.0


def unused_multi_outputs(x):
    values, _ = d2s.topk(x, k=2)
    first, _, third = d2s.split(x, 3)
    return values.sum() * 2.0 + (first * third).sum()


CASES = {
    "early_return_low": (early_return, np.array([0.1, 0.2])),
    "early_return_high": (early_return, np.array([1.5, 1.2])),
    "first_assigned_in_loop": (first_assigned_in_loop, np.array([0.3, -0.4])),
    "branch_true": (branch_not_using_a_value, np.array([0.5, 0.25])),
    "branch_false": (branch_not_using_a_value, np.array([-0.5, 0.25])),
    "output_not_depending": (output_not_depending_on_input, np.array([0.3, 0.7])),
    "unused_multi_outputs": (unused_multi_outputs, np.array([0.3, -0.2, 0.9, 0.1, 0.5, 0.8])),
}


def _loss(out):
    out = out[0] if isinstance(out, tuple) else out
    return (out * out).sum() if out.shape else out


def _grad(fn, x0):
    x = d2s.to_tensor(x0, stop_gradient=False)
    loss = _loss(fn(x))
    loss.backward()
    return loss.numpy(), x.grad.numpy()


def _numeric(fn, x0, eps=1e-6):
    g = np.zeros_like(x0)
    for i in range(x0.size):
        e = np.zeros_like(x0)
        e[i] = eps
        plus = _loss(fn(d2s.to_tensor(x0 + e))).numpy()
        minus = _loss(fn(d2s.to_tensor(x0 - e))).numpy()
        g[i] = (plus - minus) / (2 * eps)
    return g


@pytest.fixture(params=["compiled", "interpreter", "xla"])
def mode(request):
    if request.param == "xla":
        pytest.importorskip("jax")
        yield "xla"
        return
    previous = executor.executor_mode()
    executor.set_executor_mode(request.param)
    yield request.param
    executor.set_executor_mode(previous)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_equal_eager_and_finite_differences(case, mode):
    fn, x0 = CASES[case]
    want_loss, want = _grad(fn, x0)
    np.testing.assert_allclose(want, _numeric(fn, x0), rtol=1e-5, atol=1e-7)
    sf = to_static(fn, backend="xla" if mode == "xla" else "numpy")
    got_loss, got = _grad(sf, x0)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _grad_program(fn, shape):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", shape, "float64")
        loss = _loss(to_static(fn)(x))
        (gx,) = static.gradients(loss, [x])
    return prog, loss, gx


@pytest.mark.parametrize("case", ["early_return_low", "first_assigned_in_loop"])
@pytest.mark.parametrize("dims", ["known", "unknown"])
def test_programs_with_values_a_path_leaves_undefined_compile(case, dims):
    """The generated code runs these gradients (it declined them before); a
    value that may be undefined with an unknown dim gets `zeros_if_defined`,
    one of known shape a `full`."""
    fn, x0 = CASES[case]
    prog, loss, gx = _grad_program(fn, [2] if dims == "known" else [None])
    types = {op.type for op in prog.all_ops()}
    assert ("zeros_if_defined" in types) == (dims == "unknown")
    gb = prog.global_block()
    compiled = compile_program(prog, gb.ops, ["x"], [loss.name, gx.name])
    got = compiled(x0)
    _, want = _grad(fn, x0)
    np.testing.assert_allclose(got[1], want, rtol=1e-12)
    ran = static.Executor(backend="numpy").run(prog, feed={"x": x0}, fetch_list=[loss, gx])
    np.testing.assert_allclose(ran[1], want, rtol=1e-12)


def test_unknown_dims_through_to_static_on_every_executor(mode):
    fn, x0 = CASES["early_return_high"]
    spec = [InputSpec([None], "float64")]
    sf = to_static(fn, input_spec=spec, backend="xla" if mode == "xla" else "numpy")
    _, want = _grad(fn, x0)
    _, got = _grad(sf, x0)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_gradient_op_reading_a_name_no_path_set_raises_name_error():
    """No gradient op gives a value no path set a meaning of its own any more:
    one that reads it (here a hand-built program) raises like any op."""
    prog = static.Program()
    with static.program_guard(prog):
        from d2s.static.control_ops.undefined import append_undefined
        from d2s.static.backward import grad_ops
        gb = prog.global_block()
        u = gb.create_var([2], "float64", prefix="u")
        append_undefined(gb, u, "y")
        with grad_ops(prog):
            out = u * 2.0
    with pytest.raises(NameError, match="name 'y' is not defined"):
        static.Executor(backend="numpy").run(prog, feed={}, fetch_list=[out])
