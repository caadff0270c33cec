"""The compiled executor against the interpreter (the reference): same results."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static.executor import executor_mode, set_executor_mode


def mlp(x, w1, w2):
    return d2s.matmul(d2s.relu(d2s.matmul(x, w1) + 0.5), w2).sum(axis=1)


def branches(x):
    if x.mean() > 0:
        y = d2s.tanh(x) * 2.0 + 1.0
    else:
        y = d2s.exp(-x) - 1.0
    if y.max() > 1.5:
        y = y / 3.0
    return y


def loop(x):
    n = 0
    while x.sum() < 50.0:
        x = x * 1.5 + 0.25
        n += 1
    return x, n


def rnn(xs, h, w):
    outs = []
    for t in range(len(xs)):
        h = d2s.tanh(xs[t] + d2s.matmul(h, w))
        outs.append(h)
    return d2s.stack(outs), h


def early_return(x):
    for i in range(5):
        x = x * 2.0
        if x.sum() > 10.0:
            return x - i
    return x


def printing(x):
    y = x * 2.0
    print("y =", y)
    return y + 1.0


def random_mix(x):
    return x + d2s.rand(list(x.shape)) * 0.1


def _inputs(rng):
    return {
        mlp: (rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5, 2))),
        branches: (rng.normal(size=(3, 2)),),
        loop: (np.abs(rng.normal(size=(4,))),),
        rnn: (rng.normal(size=(6, 3)), np.zeros(3), rng.normal(size=(3, 3)) * 0.5),
        early_return: (np.abs(rng.normal(size=(3,))),),
        printing: (rng.normal(size=(2,)),),
        random_mix: (rng.normal(size=(3,)),),
    }


def _run(fn, args, mode, grad):
    previous = executor_mode()
    set_executor_mode(mode)
    try:
        d2s.seed(11)
        sf = to_static(fn)
        tensors = [d2s.to_tensor(a, stop_gradient=not grad) for a in args]
        out = sf(*tensors)
        leaves = out if isinstance(out, tuple) else (out,)
        result = [np.asarray(o.numpy() if hasattr(o, "numpy") else o) for o in leaves]
        if grad:
            total = sum(o.sum() for o in leaves if hasattr(o, "numpy") and o.dtype.kind == "f")
            total.backward()
            result += [t.grad.numpy() for t in tensors if t.grad is not None]
        return result
    finally:
        set_executor_mode(previous)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("fn", list(_inputs(np.random.default_rng(0))), ids=lambda f: f.__name__)
def test_compiled_equals_interpreter(fn, grad, capsys):
    args = _inputs(np.random.default_rng(0))[fn]
    compiled = _run(fn, args, "compiled", grad)
    printed_compiled = capsys.readouterr().out
    interpreted = _run(fn, args, "interpreter", grad)
    printed_interpreted = capsys.readouterr().out
    assert len(compiled) == len(interpreted)
    for a, b in zip(compiled, interpreted):
        np.testing.assert_array_equal(a, b)
    assert printed_compiled == printed_interpreted


def test_compiled_source_is_readable_python():
    previous = executor_mode()
    set_executor_mode("compiled")
    try:
        sf = to_static(branches)
        x = d2s.to_tensor(np.ones((3, 2)))
        sf(x)
        src = sf.get_concrete_program(x).lowered_text(backend="numpy")
    finally:
        set_executor_mode(previous)
    assert src.startswith("def forward(x):") and "if " in src and "k_tanh(" in src
    compile(src, "<check>", "exec")


@pytest.mark.parametrize("mode", ["compiled", "interpreter"])
def test_runtime_errors_name_the_op_and_line_in_both_modes(mode):
    def bad(x, m):
        if x.sum() > 0:
            y = d2s.matmul(x, m).sum()   # shapes only clash at run time
        else:
            y = x.sum()
        return y

    previous = executor_mode()
    set_executor_mode(mode)
    try:
        sf = to_static(bad, input_spec=[d2s.jit.InputSpec([None, 3]), d2s.jit.InputSpec([None, 2])])
        with pytest.raises(ValueError, match=r"op 'matmul' built at .*test_compiled_executor.py, "
                                             r"line \d+: y = d2s.matmul\(x, m\).sum\(\)"):
            sf(d2s.to_tensor(np.ones((2, 3), np.float32)), d2s.to_tensor(np.ones((4, 2), np.float32)))
    finally:
        set_executor_mode(previous)


def test_compiled_indexing_matches_interpreter():
    from d2s import static
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [4, 5, 6], "float32")
        i = static.data("i", [], "int64")
        idx = static.data("idx", [2], "int64")
        m = static.data("m", [4], "bool")
        outs = [x[i], x[1:3, None, ::2], x[..., 2], x[:, idx], x[m], x[i:, :i], x[-1, ::-1],
                x[None], x[0:4:2, 1, -2:], x[:, :, i:i + 2]]
    feeds = dict(x=np.random.default_rng(0).random((4, 5, 6)).astype(np.float32),
                 i=np.array(2), idx=np.array([0, 3]), m=np.array([True, False, True, True]))
    results = {}
    previous = executor_mode()
    try:
        for mode in ("compiled", "interpreter"):
            set_executor_mode(mode)
            results[mode] = static.Executor().run(prog, feed=feeds, fetch_list=outs)
    finally:
        set_executor_mode(previous)
    for a, b in zip(results["compiled"], results["interpreter"]):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
