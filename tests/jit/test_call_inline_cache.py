"""The inline cache of a converted function's cached calls (jit.inline_cache):
after a few calls of one signature the call is served by generated checks;
each thing that picks another program (a shape, a dtype, stop_gradient, a
Python scalar, train/eval, a rebound global, a read guard, the to_static
switch) must miss it, and the call must compute what eager code computes,
on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn

BACKENDS = ["numpy", "xla"]
SCALE = 2.0  # a global the converted `_scaled` reads (rebound by a test)
CALLS = []   # appended to by the Python function whenever it runs


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def t(value, dtype="float32"):
    return d2s.to_tensor(np.asarray(value, dtype=dtype))


def _affine(x, a):
    CALLS.append(1)
    return x * a + x.sum()


def _scaled(x):
    return x * SCALE


def _warm(sf, *args):
    """Call until the inline cache serves the calls (it is made on a hit)."""
    for _ in range(3):
        sf(*args)
    assert sf._inline is not None, "a repeated call should be served by the inline cache"


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=1e-5, atol=1e-6)


class Moded(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        if self.training:
            return self.fc(x) * 2.0
        return self.fc(x) - 1.0


class Tempered(nn.Layer):
    """A float attribute read in forward: a read guard of its program."""

    def __init__(self):
        super().__init__()
        self.temperature = 2.0

    def forward(self, x):
        return x * self.temperature


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change", ["shape", "dtype", "scalar"])
def test_a_new_argument_signature_misses(backend, change):
    sf = d2s.jit.to_static(_affine, backend=_backend(backend))
    x = t(np.arange(6.0).reshape(2, 3))
    _warm(sf, x, 3.0)
    _close(sf(x, 3.0), x.numpy() * 3.0 + x.numpy().sum())
    a = 3.0
    if change == "shape":
        x = t(np.arange(8.0).reshape(2, 4))
    elif change == "dtype":
        x = t(x.numpy(), "float64")
    else:
        a = 5.0
    for _ in range(3):  # (the miss, then the new inline cache)
        out = sf(x, a)
        assert out.dtype == x.dtype
        _close(out, x.numpy() * a + x.numpy().sum())
    # and back: the first signature's program again
    if change != "scalar":
        y = t(np.arange(6.0).reshape(2, 3))
        _close(sf(y, 3.0), y.numpy() * 3.0 + y.numpy().sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_gradient_change_misses_and_tapes(backend):
    sf = d2s.jit.to_static(_affine, backend=_backend(backend))
    x = t([[1.0, 2.0], [3.0, -1.0]])
    _warm(sf, x, 3.0)
    assert sf(x, 3.0).stop_gradient
    x.stop_gradient = False
    out = sf(x, 3.0)
    assert not out.stop_gradient
    out.sum().backward()
    # d/dx of sum(x * 3 + sum(x)) = 3 + 4 (the sum is added to each of 4 elements)
    np.testing.assert_allclose(np.asarray(x.grad.numpy()), np.full((2, 2), 7.0), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_eval_switch_misses(backend):
    eager = Moded()
    model = Moded()
    model.set_state_dict(eager.state_dict())
    fwd = d2s.jit.to_static(model.forward, backend=_backend(backend))
    x = t(np.linspace(-1, 1, 6).reshape(2, 3))
    with d2s.no_grad():
        _warm(fwd, x)
        for train in (False, True, False):
            model.train() if train else model.eval()
            eager.train() if train else eager.eval()
            for _ in range(3):
                _close(fwd(x), eager(x).numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_rebinding_misses(backend):
    global SCALE
    sf = d2s.jit.to_static(_scaled, backend=_backend(backend))
    x = t([1.0, 2.0, 3.0])
    old = SCALE
    try:
        _warm(sf, x)
        SCALE = 4.0
        for _ in range(3):
            _close(sf(x), x.numpy() * 4.0)
    finally:
        SCALE = old
    _close(sf(x), x.numpy() * old)


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_guard_change_misses(backend):
    model = Tempered()
    fwd = d2s.jit.to_static(model.forward, backend=_backend(backend))
    x = t([1.0, -2.0])
    _warm(fwd, x)
    _close(fwd(x), x.numpy() * 2.0)
    model.temperature = 3.0
    for _ in range(3):
        _close(fwd(x), x.numpy() * 3.0)
    model.temperature = 2.0
    _close(fwd(x), x.numpy() * 2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_to_static_switch_off_runs_the_python_function(backend):
    sf = d2s.jit.to_static(_affine, backend=_backend(backend))
    x = t([1.0, 2.0])
    _warm(sf, x, 1.0)
    before = len(CALLS)
    sf(x, 1.0)
    assert len(CALLS) == before  # served by the program
    d2s.jit.enable_to_static(False)
    try:
        _close(sf(x, 1.0), x.numpy() + 3.0)
        assert len(CALLS) == before + 1  # the Python function ran
    finally:
        d2s.jit.enable_to_static(True)


def test_backend_change_misses():
    pytest.importorskip("jax")
    sf = d2s.jit.to_static(_scaled)
    x = t([1.0, 2.0])
    previous = d2s.backends._STATE["default"]
    _warm(sf, x)
    d2s.jit.set_backend("xla")
    try:
        for _ in range(3):
            _close(sf(x), x.numpy() * SCALE)
        assert "xla" in sf.concrete_program._runners  # (not numpy's inline cache)
    finally:
        d2s.backends._STATE["default"] = previous
    _close(sf(x), x.numpy() * SCALE)


def test_alternating_signatures_stop_replacing_it():
    sf = d2s.jit.to_static(_scaled)
    a, b = t([1.0, 2.0]), t([1.0, 2.0, 3.0])
    for _ in range(40):
        _close(sf(a), a.numpy() * SCALE)
        _close(sf(b), b.numpy() * SCALE)
    from d2s.jit.static_function import INLINE_MISSES
    assert sf._inline_misses > INLINE_MISSES


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_wanting_gradients_are_taped(backend):
    eager = Moded()
    model = Moded()
    model.set_state_dict(eager.state_dict())
    fwd = d2s.jit.to_static(model.forward, backend=_backend(backend))
    x = t(np.linspace(-1, 1, 6).reshape(2, 3))
    _warm(fwd, x)
    out = fwd(x)
    assert not out.stop_gradient
    out.sum().backward()
    eager(x).sum().backward()
    np.testing.assert_allclose(np.asarray(model.fc.weight.grad.numpy()),
                               eager.fc.weight.grad.numpy(), rtol=1e-5)
    # frozen: the same inline cache runs it untaped
    for p in model.parameters():
        p.stop_gradient = True
    assert fwd(x).stop_gradient


@pytest.mark.filterwarnings("ignore:_scaled has built")
def test_the_program_it_serves_is_not_evicted_as_least_recent():
    from d2s.jit import program_cache
    sf = d2s.jit.to_static(_scaled)
    hot, others = t([1.0]), [t(np.ones(n)) for n in range(2, 5)]
    limit = program_cache.cache_limit()
    program_cache.set_cache_limit(2)
    try:
        _warm(sf, hot)
        for x in others:  # each builds a program; the hot one is called between
            sf(x)
            for _ in range(3):
                _close(sf(hot), hot.numpy() * SCALE)
        assert sf._cache.builds == 4  # the hot program was never built again
    finally:
        program_cache.set_cache_limit(limit)


def _take(x, i):
    return d2s.gather(x, i)  # the line a kernel's error names


def test_an_error_in_the_generated_code_names_the_users_line():
    sf = d2s.jit.to_static(_take, backend="numpy")  # (xla clamps, as documented)
    x = t([1.0, 2.0, 3.0])
    good, bad = d2s.to_tensor(np.array([0, 2])), d2s.to_tensor(np.array([0, 7]))
    _warm(sf, x, good)
    _close(sf(x, good), np.array([1.0, 3.0]))
    with pytest.raises(IndexError) as info:
        sf(x, bad)
    assert "'gather'" in str(info.value) and "test_call_inline_cache.py, line" in str(info.value)
