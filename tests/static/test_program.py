"""Programs, feeds, modes and capture-by-reference."""
import threading

import numpy as np
import pytest

import d2s
from d2s import static


def _mlp_program():
    prog = static.Program()
    w = d2s.to_tensor(np.arange(6, dtype=np.float32).reshape(3, 2), stop_gradient=False)
    with static.program_guard(prog):
        x = static.data("x", [None, 3], "float32")
        y = d2s.relu(d2s.matmul(x, w) - 4.0)
    return prog, x, y, w


def test_static_matches_numpy_for_any_batch_size():
    prog, x, y, w = _mlp_program()
    assert y.shape == (None, 2) and y.dtype == np.float32
    exe = static.Executor()
    for n in (1, 5):
        xv = np.random.default_rng(n).normal(size=(n, 3)).astype(np.float32)
        (got,) = exe.run(prog, feed={"x": xv}, fetch_list=[y])
        np.testing.assert_allclose(got, np.maximum(xv @ w.numpy() - 4.0, 0), rtol=1e-6)


def test_program_text_is_one_op_per_line():
    prog, x, y, w = _mlp_program()
    text = str(prog)
    body = [l.strip() for l in text.splitlines()[1:-1]]
    assert body[0] == "data x: float32[?, 3]"
    assert body[1].startswith("param ") and body[1].endswith("float32[3, 2]")
    assert [l.split(" = ")[1].split("(")[0] for l in body[2:]] == [
        "matmul", "full", "subtract", "relu"]


@pytest.mark.parametrize("feed, message", [
    ({"x": np.zeros((2, 3), np.float64)}, "feed 'x': expected dtype float32, got float64"),
    ({"x": np.zeros((2, 3, 1), np.float32)}, "feed 'x': expected rank 2"),
    ({"x": np.zeros((2, 4), np.float32)}, r"feed 'x': expected shape \[None, 3\], got \[2, 4\]"),
    ({"x": np.zeros((2, 3), np.float32), "z": 1}, "no data variable named 'z'"),
    ({}, "data variable 'x' is needed by the program but was not fed"),
    ({"x": [["a", "b", "c"]]}, "feed 'x': cannot convert"),
])
def test_bad_feeds_raise_value_error_naming_the_variable(feed, message):
    prog, x, y, w = _mlp_program()
    exe = static.Executor()
    with pytest.raises(ValueError, match=message):
        exe.run(prog, feed=feed, fetch_list=[y])
    # no state left behind: the next valid run works
    (got,) = exe.run(prog, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y])
    np.testing.assert_allclose(got, np.maximum(np.ones((2, 3)) @ w.numpy() - 4, 0))


def test_python_lists_are_fed_with_the_declared_dtype():
    prog, x, y, w = _mlp_program()
    (got,) = static.Executor().run(prog, feed={"x": [[1, 2, 3]]}, fetch_list=[y])
    np.testing.assert_allclose(got, np.maximum(np.array([[1, 2, 3.]]) @ w.numpy() - 4, 0))


def test_bool_of_variable_raises_type_error_with_advice():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [1], "float32")
        with pytest.raises(TypeError, match=r"d2s\.jit\.to_static.*d2s\.static\.nn\.cond"):
            if x > 0:
                pass


def test_parameters_are_captured_by_reference():
    prog, x, y, w = _mlp_program()
    exe = static.Executor()
    xv = np.ones((1, 3), np.float32)
    (before,) = exe.run(prog, feed={"x": xv}, fetch_list=[y])
    w._value = w.numpy() * 2.0  # an eager update, as an optimizer would make
    (after,) = exe.run(prog, feed={"x": xv}, fetch_list=[y])
    np.testing.assert_allclose(after, np.maximum(xv @ w.numpy() - 4, 0))
    assert not np.allclose(before, after)


def test_enable_static_builds_into_default_program():
    assert d2s.in_dynamic_mode()
    d2s.enable_static()
    try:
        assert not d2s.in_dynamic_mode()
        prog = static.default_main_program()
        n_ops = len(prog.global_block().ops)
        x = static.data("x_enable_static", [2], "float32")
        t = d2s.to_tensor([1.0, 2.0])  # eager Tensor used in static mode: captured
        y = x * t
        assert isinstance(y, static.Variable)
        assert len(prog.global_block().ops) == n_ops + 1
        (got,) = static.Executor().run(feed={"x_enable_static": np.array([3, 4], np.float32)},
                                       fetch_list=[y])
        np.testing.assert_array_equal(got, [3, 8])
    finally:
        d2s.disable_static()
    assert d2s.in_dynamic_mode()
    assert isinstance(d2s.to_tensor([1.0]) * 2, d2s.Tensor)


def test_gradients_through_plain_ops_match_eager():
    prog, x, y, w = _mlp_program()
    with static.program_guard(prog):
        loss = (y * y).mean()
        (gw,) = static.gradients(loss, [w])
    xv = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32) * 3
    (got,) = static.Executor().run(prog, feed={"x": xv}, fetch_list=[gw])
    xe = d2s.to_tensor(xv)
    ye = d2s.relu(d2s.matmul(xe, w) - 4.0)
    (ye * ye).mean().backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-6)


def test_threads_build_programs_independently():
    results, errors = {}, []

    def work(k):
        try:
            prog = static.Program()
            with static.program_guard(prog):
                x = static.data("x", [3], "float64")
                (y,) = static.nn.while_loop(lambda v: v.sum() < 100.0 * k,
                                            lambda v: [v * 2.0], [x])
            for _ in range(20):
                (got,) = static.Executor().run(prog, feed={"x": np.ones(3)}, fetch_list=[y])
            results[k] = (got, [op.type for op in prog.global_block().ops])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, (got, ops) in results.items():
        v = np.ones(3)
        while v.sum() < 100.0 * k:
            v = v * 2.0
        np.testing.assert_array_equal(got, v)
        assert ops == ["while"]
    assert d2s.in_dynamic_mode()


def test_kernel_error_names_the_op_and_user_line():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 3], "float32")
        m = static.data("m", [None, None], "float32")
        y = d2s.matmul(x, m)  # this line
    line = test_kernel_error_names_the_op_and_user_line.__code__.co_firstlineno + 5
    with pytest.raises(ValueError, match=rf"op 'matmul' built at .*test_program.py, line {line}"):
        static.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32),
                                          "m": np.ones((4, 2), np.float32)}, fetch_list=[y])
