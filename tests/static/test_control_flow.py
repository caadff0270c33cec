"""Static cond / while against eager Python on the same inputs, values and gradients."""
import numpy as np
import pytest

import d2s
from d2s import static


def _run(prog, feed, fetch):
    return static.Executor().run(prog, feed=feed, fetch_list=fetch)


def _op_types(prog):
    return [op.type for op in prog.all_ops()]


def _branchy_eager(x, w):
    s = (x * w).sum()
    if s > 0:
        y = d2s.tanh(x * w) * 2.0
    else:
        y = x * x - w
    return (y * y).sum()


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_matches_eager_values_and_grads(sign):
    rng = np.random.default_rng(0)
    xv = sign * np.abs(rng.normal(size=(4, 3)))
    wv = np.abs(rng.normal(size=(3,)))
    w = d2s.to_tensor(wv, stop_gradient=False)

    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 3], "float64")
        s = (x * w).sum()
        y = static.nn.cond(s > 0, lambda: d2s.tanh(x * w) * 2.0, lambda: x * x - w)
        loss = (y * y).sum()
        gx, gw = static.gradients(loss, [x, w])
    assert "cond" in _op_types(prog) and "cond_grad" in _op_types(prog)
    got = _run(prog, {"x": xv}, [loss, gx, gw])

    xe = d2s.to_tensor(xv, stop_gradient=False)
    le = _branchy_eager(xe, w)
    le.backward()
    np.testing.assert_allclose(got[0], le.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], xe.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[2], w.grad.numpy(), rtol=1e-10)


def _collatz_like_eager(x, w):
    i = 0
    h = x
    while h.sum() < 50.0:
        h = d2s.tanh(h) * w + h * 1.5
        i = i + 1
    return i, (h * h).sum()


@pytest.mark.parametrize("scale", [0.1, 1.0, 300.0])
def test_while_data_dependent_trip_count_values_and_grads(scale):
    xv = scale * np.array([0.1, 0.2, 0.3])
    w = d2s.to_tensor(np.array([0.5, 1.0, 2.0]), stop_gradient=False)
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float64")
        i, h = static.nn.while_loop(lambda i, h: h.sum() < 50.0,
                                    lambda i, h: (i + 1, d2s.tanh(h) * w + h * 1.5),
                                    [d2s.zeros([], "int64"), x])
        loss = (h * h).sum()
        gx, gw = static.gradients(loss, [x, w])
    assert "while" in _op_types(prog) and "while_grad" in _op_types(prog)
    got = _run(prog, {"x": xv}, [i, loss, gx, gw])

    xe = d2s.to_tensor(xv, stop_gradient=False)
    w.clear_grad()
    n, le = _collatz_like_eager(xe, w)
    le.backward()
    assert int(got[0]) == n
    if scale == 300.0:
        # zero-trip loop: x's gradient flows straight through, w gets none (zeros)
        assert n == 0 and w.grad is None
        np.testing.assert_array_equal(got[3], np.zeros(3))
    else:
        np.testing.assert_allclose(got[3], w.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[1], le.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[2], xe.grad.numpy(), rtol=1e-10)


def test_cond_inside_while_and_while_inside_cond_grads():
    xv = np.array([0.3, -0.2, 0.5])
    w = d2s.to_tensor(np.array([1.1, 0.9, 1.3]), stop_gradient=False)

    def body(k, h):
        h2 = static.nn.cond(k % 2 == 0, lambda: h * w, lambda: d2s.tanh(h) + w)
        return k + 1, h2

    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float64")
        _, h = static.nn.while_loop(lambda k, h: k < 5, body, [d2s.zeros([], "int64"), x])
        s = h.sum()
        out = static.nn.cond(
            s > 0,
            lambda: static.nn.while_loop(lambda t: t.sum() < 40.0, lambda t: [t * 2.0], [h])[0],
            lambda: -h)
        loss = (out * out).sum()
        gx, gw = static.gradients(loss, [x, w])
    got = _run(prog, {"x": xv}, [loss, gx, gw])

    xe = d2s.to_tensor(xv, stop_gradient=False)
    w.clear_grad()
    h = xe
    for k in range(5):
        h = h * w if k % 2 == 0 else d2s.tanh(h) + w
    if h.sum() > 0:
        while h.sum() < 40.0:
            h = h * 2.0
    else:
        h = -h
    le = (h * h).sum()
    le.backward()
    np.testing.assert_allclose(got[0], le.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], xe.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[2], w.grad.numpy(), rtol=1e-10)


def test_eager_values_keep_python_semantics():
    # No Variable involved: cond / while_loop are plain Python.
    calls = []
    r = static.nn.cond(True, lambda: calls.append("t") or 1, lambda: calls.append("f") or 2)
    assert r == 1 and calls == ["t"]
    out = static.nn.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), [0, 0])
    assert out == [4, 6]
    t = d2s.to_tensor(3.0)
    assert float(static.nn.cond(t > 2, lambda: t * 2, lambda: t)) == 6.0


def test_cond_promotes_python_scalars_weakly():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float32")
        y = static.nn.cond(x.sum() > 0, lambda: x, lambda: 0)
        n = static.nn.cond(x.sum() > 0, lambda: 1, lambda: 2)
    assert y.dtype == np.float32 and n.dtype == np.int64
    got = _run(prog, {"x": np.array([-1, -2], np.float32)}, [y, n])
    np.testing.assert_array_equal(got[0], [0, 0])
    assert got[1] == 2


@pytest.mark.parametrize("true_fn, false_fn, message", [
    (lambda x: x, lambda x: d2s.cast(x, "float64"), "dtype float32 and float64"),
    (lambda x: x, lambda x: x.sum(), "rank 1 and 0"),
    (lambda x: x, lambda x: d2s.concat([x, x]), "shape [3] and [6]"),
    (lambda x: x, lambda x: None, "'y' is a tensor in one branch and None in the other"),
    (lambda x: (x, x), lambda x: x, "is a tuple of 2 in one branch and a tensor in the other"),
])
def test_cond_mismatched_outputs_raise_and_leave_no_state(true_fn, false_fn, message):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float32")
        y = x * 2.0
        before = (len(prog.blocks), len(prog.global_block().ops), set(prog.global_block().vars))
        with pytest.raises(static.ControlFlowError, match=message.replace("[", r"\[").replace("]", r"\]")):
            static.nn.cond(y.sum() > 0, lambda: true_fn(y), lambda: false_fn(y), names=["y"])
        after = (len(prog.blocks), len(prog.global_block().ops), set(prog.global_block().vars))
        # only the predicate ops built before the cond remain
        assert after[0] == before[0]
        z = static.nn.cond(y.sum() > 0, lambda: y, lambda: -y)
    (got,) = _run(prog, {"x": np.array([1, 2, 3], np.float32)}, [z])
    np.testing.assert_array_equal(got, [2, 4, 6])


def test_while_dtype_change_is_an_error_naming_the_variable():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [], "float32")
        with pytest.raises(static.ControlFlowError, match="'i' changes dtype from int64 to float"):
            static.nn.while_loop(lambda i, x: x < 10.0, lambda i, x: (i + 0.5, x + 1.0),
                                 [d2s.zeros([], "int64"), x], names=["i", "x"])
        assert len(prog.blocks) == 1
        # A Python number carried by the loop may change type, as in Python.
        i, _ = static.nn.while_loop(lambda i, x: x < 10.0, lambda i, x: (i + 0.5, x + 1.0),
                                    [0, x], names=["i", "x"])
    assert i.dtype == np.float64
    (got,) = _run(prog, {"x": np.float32(7.0)}, [i])
    assert got == 1.5


def test_while_relaxes_growing_shapes():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [1], "float64")
        (acc,) = static.nn.while_loop(lambda a: a.sum() < 20.0,
                                      lambda a: [d2s.concat([a, a * 2.0])], [x])
        assert acc.shape == (None,)
    (got,) = _run(prog, {"x": np.array([1.0])}, [acc])
    eager = np.array([1.0])
    while eager.sum() < 20.0:
        eager = np.concatenate([eager, eager * 2.0])
    np.testing.assert_array_equal(got, eager)


def test_nested_sub_blocks_print_indented():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float32")
        static.nn.cond(x.sum() > 0, lambda: x + 1.0, lambda: x - 1.0)
    lines = str(prog).splitlines()
    assert lines[0] == "program {" and lines[-1] == "}"
    assert lines[1] == "  data x: float32[2]"
    cond_line = next(i for i, l in enumerate(lines) if "= cond(" in l)
    assert lines[cond_line + 1].strip() == "true_block (block 1):"
    assert lines[cond_line + 2].startswith("      ") and "= add(x, " in lines[cond_line + 3]


def test_scalar_branch_takes_shape_of_tensor_computed_in_other_branch():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float32")
        y = static.nn.cond(x.sum() > 0, lambda: x * 3.0, lambda: 1)
    assert y.shape == (2,) and y.dtype == np.float32
    assert _run(prog, {"x": np.array([-1, -2], np.float32)}, [y])[0].tolist() == [1, 1]
    assert _run(prog, {"x": np.array([1, 2], np.float32)}, [y])[0].tolist() == [3, 6]
