"""Reductions in the numpy in-place pass: `mean` and a `sum_to_like` that
sums (shapes known and different) make new arrays, so the values they read
can still be overwritten after them (batch norm's backward: the cotangent
summed for the bias, then scaled in place); a `sum_to_like` that may hand
back its input never is. Results stay eager's, bit for bit."""
from types import SimpleNamespace

import numpy as np
import pytest

import d2s
from d2s import static
from d2s.backends.numpy import inplace
from d2s.backends.numpy.passes import optimize
from d2s.jit import to_static
from d2s.static.passes import ProgramView

RNG = np.random.default_rng(4)


def _norm_grads(x, b):
    y = x * 1.5 + b
    centered = y - y.mean(axis=[0, 2, 3], keepdim=True)
    loss = (centered * y).sum() + y.sum() * 2.0  # (a bias gradient far from 0)
    return d2s.grad([loss], [x, b])


def _program(x_shape, b_shape):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", x_shape, "float32")
        b = static.data("b", b_shape, "float32")
        x.stop_gradient = b.stop_gradient = False
        gx, gb = _norm_grads(x, b)
    return prog, x, b, gx, gb


def _op(type, *shapes):
    return SimpleNamespace(type=type, inputs=[SimpleNamespace(shape=s) for s in shapes])


def test_which_reductions_are_fresh():
    assert inplace._fresh(_op("mean", (4, 3, 5, 5)))
    assert inplace._fresh(_op("sum_to_like", (4, 3, 5, 5), (1, 3, 1, 1)))   # sums
    assert not inplace._fresh(_op("sum_to_like", (4, 3), (4, 3)))   # hands back its input
    # the batch may be 1 at run time: then nothing is summed
    assert not inplace._fresh(_op("sum_to_like", (None, 3), (1, 3)))


def test_summed_cotangent_is_overwritten_after_its_sum():
    prog, x, b, gx, gb = _program([4, 3, 5, 5], [1, 3, 1, 1])
    view = optimize(ProgramView(prog, prog.global_block().ops, [gx.name, gb.name],
                                [x.name, b.name]))
    ops = view.blocks[0]
    buffer = {}
    for op in ops:
        for v in op.outputs:
            buffer[v.name] = view.inplace.get(id(op), v.name)
    overwritten = []
    for i, op in enumerate(ops):
        if op.type != "sum_to_like":
            continue
        summed = op.inputs[0].name
        overwritten += [later for later in ops[i + 1:] if summed in
                        [v.name for v in later.inputs]
                        and view.inplace.get(id(later)) == buffer[summed]]
    # the bias gradient's sum, then the scaling of the same cotangent, in its buffer
    assert overwritten


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_gradients_equal_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    x_np = RNG.normal(size=(4, 3, 5, 5)).astype(np.float32)
    b_np = RNG.normal(size=(1, 3, 1, 1)).astype(np.float32)

    def grads(x, b):
        return _norm_grads(x, b)

    def fresh():
        return (d2s.to_tensor(x_np, stop_gradient=False),
                d2s.to_tensor(b_np, stop_gradient=False))

    want = [g.numpy() for g in grads(*fresh())]
    fn = to_static(grads, backend=backend)
    for _ in range(3):  # interpreter first, generated code after
        got = [g.numpy() for g in fn(*fresh())]
        for g, w in zip(got, want):
            if backend == "numpy":
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
