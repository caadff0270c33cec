"""A StaticFunction called eagerly joins the tape: gradients equal eager ones."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static.executor import executor_mode, set_executor_mode, set_interpreted_calls


def loop_until(x, w):
    h = x
    while (h * h).sum() < 20.0:
        h = d2s.tanh(h * w) + h
    return h.sum()


def branch_and_break(x, w):
    acc = x * 0.0
    for i in range(6):
        acc = acc + x * w * (i + 1)
        if acc.sum() > 5.0:
            break
    if acc.mean() > 1.0:
        return (acc * acc).sum()
    return acc.sum() * 3.0


def early_return_in_loop(x, w):
    h = x
    k = 0
    while k < 10:
        h = h * w + 0.1
        if h.sum() > 3.0:
            return h.max() * 2.0
        k += 1
    return h.min()


@pytest.mark.parametrize("fn", [loop_until, branch_and_break, early_return_in_loop])
@pytest.mark.parametrize("scale", [0.2, 1.0, 2.5])
def test_gradients_match_eager(fn, scale):
    rng = np.random.default_rng(3)
    xv = (scale * rng.uniform(0.1, 1.0, size=(4,))).astype(np.float64)
    wv = rng.uniform(0.8, 1.3, size=(4,))
    sf = to_static(fn)
    grads = []
    for use_static in (True, False):
        d2s.jit.enable_to_static(use_static)
        try:
            x = d2s.to_tensor(xv, stop_gradient=False)
            w = d2s.to_tensor(wv, stop_gradient=False)
            out = sf(x, w)
            out.backward()
            grads.append((out.numpy(), x.grad.numpy(), w.grad.numpy()))
        finally:
            d2s.jit.enable_to_static(True)
    (o_s, gx_s, gw_s), (o_e, gx_e, gw_e) = grads
    np.testing.assert_allclose(o_s, o_e, rtol=1e-12)
    np.testing.assert_allclose(gx_s, gx_e, rtol=1e-5)
    np.testing.assert_allclose(gw_s, gw_e, rtol=1e-5)
    ops = {op.type for op in sf.get_concrete_program(
        d2s.to_tensor(xv, stop_gradient=False), d2s.to_tensor(wv, stop_gradient=False)
    ).main_program.all_ops()}
    assert ops & {"while", "cond"}


@pytest.mark.parametrize("mode", ["compiled", "interpreter"])
def test_tape_keeps_only_values_the_backward_reads(mode):
    def f(x):
        a = d2s.exp(x)        # needed by exp's vjp
        b = a * 3.0
        c = d2s.tanh(b)       # tanh's vjp reads its output only
        d = c + 1.0           # add's vjp reads nothing
        return d.sum()

    previous = executor_mode()
    set_executor_mode(mode)
    previous_calls = set_interpreted_calls(0)  # the first call's values, compiled
    try:
        sf = to_static(f, backend="numpy")  # inspects what the numpy backend keeps
        x = d2s.to_tensor(np.array([0.1, 0.2]), stop_gradient=False)
        out = sf(x)
        exe, saved = out._node.attrs["_saved"]  # (the executable, what it saved)
        concrete = sf.get_concrete_program(x)
        if mode == "interpreter":
            kept = set(saved.vars)
        else:
            fwd = concrete.executable("numpy")._grad_forward_fn.fn
            kept = set(fwd.output_names[len(concrete.outputs):])
            assert len(saved) == len(kept)
        n_values = len(concrete.main_program.global_block().vars)
        assert 0 < len(kept) < n_values
        assert kept <= concrete._backward.reads
        out.backward()
    finally:
        set_interpreted_calls(previous_calls)
        set_executor_mode(previous)
    ref = 3.0 * np.exp([0.1, 0.2]) * (1 - np.tanh(3.0 * np.exp([0.1, 0.2])) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-10)


def test_no_grad_calls_record_nothing():
    sf = to_static(lambda_free_square)
    x = d2s.to_tensor([2.0], stop_gradient=False)
    with d2s.no_grad():
        y = sf(x)
    assert y.stop_gradient and y._node is None


def lambda_free_square(x):
    return x * x


class MLP(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = d2s.nn.Linear(6, 16)
        self.fc2 = d2s.nn.Linear(16, 3)

    def forward(self, x):
        h = d2s.nn.functional.relu(self.fc1(x))
        if h.mean() > 10.0:       # a tensor branch inside the trained model
            h = h * 0.5
        return self.fc2(h)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_one_switch_training_gives_the_same_losses(opt_name):
    rng = np.random.default_rng(0)
    x = d2s.to_tensor(rng.normal(size=(8, 6)).astype(np.float32))
    y = d2s.to_tensor(rng.integers(0, 3, size=(8,)))
    losses = {}
    for mode in ("eager", "static"):
        d2s.seed(7)
        model = MLP()
        if mode == "static":
            model = to_static(model)
        opt_cls = getattr(d2s.optimizer, opt_name)
        opt = opt_cls(learning_rate=0.05, parameters=model.parameters())
        run = []
        for _ in range(15):
            loss = d2s.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            run.append(loss.item())
        losses[mode] = run
        if mode == "static":
            # eager optimizer updates were seen without rebuilding the program
            assert len(model.forward.program_cache) == 1
    np.testing.assert_allclose(losses["static"], losses["eager"], rtol=1e-5)
    assert losses["static"][-1] < losses["static"][0]


def test_saved_loop_steps_keep_only_what_the_gradient_block_reads():
    def f(x, w):
        h = x
        while h.sum() < 30.0:
            a = h * w          # read by multiply's rule (needs h and w)
            b = d2s.exp(a)     # exp's rule reads b
            c = b + 1.0        # nothing read back
            h = c * 0.5 + h
        return h.sum()

    previous = executor_mode()
    set_executor_mode("interpreter")
    try:
        sf = to_static(f, backend="numpy")  # inspects what the numpy backend keeps
        x = d2s.to_tensor(np.array([0.1, 0.2]), stop_gradient=False)
        w = d2s.to_tensor(np.array([0.5, 0.7]), stop_gradient=False)
        out = sf(x, w)
        _, scope = out._node.attrs["_saved"]  # (the executable, what it saved)
        steps = next(v for v in scope.vars.values() if isinstance(v, list))
        program = sf.get_concrete_program(x, w)._backward.program  # forward + backward
        loop = next(op for op in program.global_block().ops if op.type == "while")
        body = program.blocks[loop.attrs["body_block"]]
        assert len(steps) >= 2
        for step in steps:
            assert set(step.vars) <= set(loop.attrs["save_steps_keep"])
            assert len(step.vars) < len(body.vars) + len(loop.attrs["loop_vars"])
        out.backward()
        gx, gw = x.grad.numpy(), w.grad.numpy()
    finally:
        set_executor_mode(previous)
    d2s.jit.enable_to_static(False)
    try:
        xe = d2s.to_tensor(np.array([0.1, 0.2]), stop_gradient=False)
        we = d2s.to_tensor(np.array([0.5, 0.7]), stop_gradient=False)
        sf(xe, we).backward()
    finally:
        d2s.jit.enable_to_static(True)
    np.testing.assert_allclose(gx, xe.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw, we.grad.numpy(), rtol=1e-12)
