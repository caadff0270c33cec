"""Per-layer caches updated inside a loop on a tensor through another name
(DESIGN.md §4, issue 25 item 3): a transformer's k/v cache, a dict per
layer in a list, written by the attention function the loop calls
(`cache["k"] = concat([cache["k"], k])`) or by the loop's own Python `for c
in caches:` — growing by a concat each trip, or preallocated and written at
the loop counter (`cache["k"][:, i] = k`). Each case: eager vs `to_static`
on the numpy and xla backends, values and gradients; the caller's objects
hold eager Tensors afterwards (the conftest walk).

Before: the loop carried only the names and targets written in its own
source, so the cache items kept values of the loop body and the first read
after the loop failed ("'concat_7' was computed inside a branch or loop
body"), or a ControlFlowError refused `caches[i]["k"]` for its varying key.
"""
import importlib.util
import warnings

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static
from d2s.static import ControlFlowError
from d2s.static.backend import BackendFallbackWarning

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax is not installed"))]
LAYERS, SLOTS = 2, 6


def _read(x, k):
    """Attention of `x` [2, 3] over the cached keys `k` [2, t, 3]."""
    att = F.softmax((k * x.unsqueeze(1)).sum(-1), axis=-1)
    return d2s.tanh((att.unsqueeze(-1) * k).sum(1) + x)


def attend(x, cache, w):
    """The callee a decoding loop calls per layer: it appends this step's key."""
    k = d2s.matmul(x, w)
    cache["k"] = d2s.concat([cache["k"], k.unsqueeze(1)], axis=1)
    return _read(x, cache["k"])


def attend_into(x, cache, w, i):
    """The same over a preallocated cache, written at the step's slot."""
    cache["k"][:, i] = d2s.matmul(x, w)
    return _read(x, cache["k"])


def _caches(slots):
    return [{"k": d2s.zeros([2, slots, 3])} for _ in range(LAYERS)]


def callee_grows(x, w, n):
    caches = _caches(1)
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            x = attend(x, c, w)
        i += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def callee_preallocated(x, w, n):
    caches = _caches(SLOTS)
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            x = attend_into(x, c, w, i)
        i += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def direct_grows(x, w, n):
    caches = _caches(1)
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            c["k"] = d2s.concat([c["k"], d2s.matmul(x, w).unsqueeze(1)], axis=1)
            x = _read(x, c["k"])
        i += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def direct_preallocated(x, w, n):
    caches = _caches(SLOTS)
    for i in range(n):             # a tensor range: also a loop on a tensor
        for layer in range(LAYERS):
            caches[layer]["k"][:, i] = d2s.matmul(x, w)
            x = _read(x, caches[layer]["k"])
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def under_tensor_if_grows(x, w, n):
    caches = _caches(1)
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            if x.sum() > 0:        # a tensor `if`: both branches write the cache
                x = attend(x, c, w)
            else:
                x = attend(x * 0.5, c, w)
        i += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


def under_tensor_if_preallocated(x, w, n):
    caches = _caches(SLOTS)
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            if x.mean() > 0.05:    # one branch writes the cache, the other keeps it
                x = attend_into(x, c, w, i)
            else:
                x = x * 0.5
        i += 1
    return x + caches[0]["k"].sum(1) + caches[-1]["k"].mean(1)


GROWING = (callee_grows, direct_grows, under_tensor_if_grows)
CASES = [callee_grows, callee_preallocated, direct_grows, direct_preallocated,
         under_tensor_if_grows, under_tensor_if_preallocated]


def _inputs():
    rng = np.random.default_rng(3)
    return (rng.normal(size=(2, 3)).astype("float32") * 0.5,
            rng.normal(size=(3, 3)).astype("float32") * 0.5)


def _run(fn, x0, w0, n, grads):
    """(result, dx, dw) of fn on fresh leaves; only the result without `grads`
    (eagerly, a preallocated cache written in place after a read that the
    backward needs is an autograd error, as in PyTorch: such caches are for
    inference)."""
    x = d2s.to_tensor(x0, stop_gradient=not grads)
    w = d2s.to_tensor(w0, stop_gradient=not grads)
    out = fn(x, w, d2s.to_tensor(np.array(n)))
    if not grads:
        return (out.numpy(),)
    (out * out).mean().backward()
    return out.numpy(), x.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_a_cache_updated_through_another_name_matches_eager(fn, backend):
    x0, w0 = _inputs()
    static = to_static(fn, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendFallbackWarning)
        for n in (1, 3):       # one program serves every trip count
            want = _run(fn, x0, w0, n, fn in GROWING)
            got = _run(static, x0, w0, n, fn in GROWING)
            for g, e in zip(got, want):
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    fallbacks = [str(w.message) for w in caught if w.category is BackendFallbackWarning]
    if backend == "xla" and fn in GROWING:
        # docs/backends.md: an XLA loop carries one shape; a growing cache runs on numpy
        assert fallbacks and all("changes shape in the loop" in m for m in fallbacks)
    else:
        assert not fallbacks, fallbacks
    assert len(static.program_cache) == 1
    program = static.get_concrete_program(*[d2s.to_tensor(a) for a in _inputs()],
                                          d2s.to_tensor(np.array(2))).main_program
    assert "while" in {op.type for op in program.all_ops()}


def _bump(state, x):
    state["total"] = state["total"] + x.sum()
    state["last"] = x


def bump_if_positive(x, state):
    if x.sum() > 0:
        _bump(state, x)
    else:
        _bump(state, -x)
    return x * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tensor_if_carries_what_a_callee_writes(backend):
    """Outside any loop too: both paths of one program, each as eagerly."""
    static = to_static(bump_if_positive, backend=backend)
    eager_state = {"total": d2s.zeros([]), "last": d2s.zeros([3])}
    static_state = {"total": d2s.zeros([]), "last": d2s.zeros([3])}
    for sign in (1.0, -1.0, 1.0):
        x = d2s.to_tensor(np.array([1.0, 2.0, 0.5], "float32") * sign)
        bump_if_positive(x, eager_state)
        static(x, static_state)
        for key in eager_state:
            np.testing.assert_allclose(static_state[key].numpy(), eager_state[key].numpy(),
                                       rtol=1e-6)
    assert len(static.program_cache) == 1
    assert eager_state["total"].numpy() == pytest.approx(10.5)


def decode(x, caches, n):
    """The caches are the caller's: they keep what the loop wrote."""
    i = d2s.zeros([], "int64")
    while i < n:
        for c in caches:
            x = attend(x, c, c["w"])
        i += 1
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_callers_caches_hold_what_the_eager_loop_leaves(backend):
    x0, w0 = _inputs()

    def caches():
        return [{"k": d2s.to_tensor(np.full((2, 1, 3), float(j), "float32")),
                 "w": d2s.to_tensor(w0 * (j + 1))} for j in range(LAYERS)]

    eager, converted = caches(), caches()
    static = to_static(decode, backend=backend)
    n = d2s.to_tensor(np.array(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendFallbackWarning)
        for _ in range(2):  # the second call continues from the first call's caches
            want = decode(d2s.to_tensor(x0), eager, n).numpy()
            got = static(d2s.to_tensor(x0), converted, n).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for e, c in zip(eager, converted):
        assert type(c["k"]) is type(e["k"]) and tuple(c["k"].shape) == tuple(e["k"].shape) == (2, 5, 3)
        np.testing.assert_allclose(c["k"].numpy(), e["k"].numpy(), rtol=1e-5, atol=1e-6)
        assert tuple(c["w"].shape) == (3, 3)


class Attention(nn.Layer):
    """Keeps its keys as an attribute, as layers with an internal cache do."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.keys = None

    def forward(self, x):
        self.keys = d2s.concat([self.keys, self.proj(x).unsqueeze(1)], axis=1)
        return _read(x, self.keys)


class Decoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.layers = nn.LayerList([Attention() for _ in range(LAYERS)])

    def forward(self, x, n):
        for layer in self.layers:
            layer.keys = d2s.zeros([2, 1, 3])
        i = d2s.zeros([], "int64")
        while i < n:
            for layer in self.layers:
                x = layer(x)
            i += 1
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sublayer_updating_its_own_cache_attribute_in_the_loop(backend):
    d2s.seed(5)
    eager = Decoder()
    converted = Decoder()
    converted.set_state_dict(eager.state_dict())
    static = to_static(converted.forward, backend=backend)
    x0, _ = _inputs()
    n = d2s.to_tensor(np.array(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendFallbackWarning)
        got = static(d2s.to_tensor(x0), n)
    want = eager(d2s.to_tensor(x0), n)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    for e, c in zip(eager.layers, converted.layers):
        assert tuple(c.keys.shape) == tuple(e.keys.shape) == (2, 4, 3)
        np.testing.assert_allclose(c.keys.numpy(), e.keys.numpy(), rtol=1e-5, atol=1e-6)


class BufferedAttention(nn.Layer):
    """A preallocated cache registered as a buffer, written at the step."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.register_buffer("keys", d2s.zeros([2, SLOTS, 3]), persistable=False)

    def forward(self, x, i):
        self.keys[:, i] = self.proj(x)
        return _read(x, self.keys)


class BufferedDecoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.layers = nn.LayerList([BufferedAttention() for _ in range(LAYERS)])

    def forward(self, x, n):
        i = d2s.zeros([], "int64")
        while i < n:
            for layer in self.layers:
                x = layer(x, i)
            i += 1
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sublayer_writing_its_preallocated_buffer_at_the_step(backend):
    """The buffer keeps its Tensor and gets each run's value in place; the
    second call starts from what the first left, as eagerly."""
    d2s.seed(6)
    eager, converted = BufferedDecoder(), BufferedDecoder()
    converted.set_state_dict(eager.state_dict())
    buffers = [layer.keys for layer in converted.layers]
    static = to_static(converted.forward, backend=backend)
    x0, _ = _inputs()
    with d2s.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        for n in (2, 4):
            want = eager(d2s.to_tensor(x0), d2s.to_tensor(np.array(n)))
            got = static(d2s.to_tensor(x0), d2s.to_tensor(np.array(n)))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    for e, c, buf in zip(eager.layers, converted.layers, buffers):
        assert c.keys is buf
        np.testing.assert_allclose(c.keys.numpy(), e.keys.numpy(), rtol=1e-5, atol=1e-6)
        assert np.abs(e.keys.numpy()[:, :4]).sum() > 0 and not e.keys.numpy()[:, 4:].any()


def _log(h, history):
    history.append(h)


def appended_by_a_callee(x, n):
    history = [x]
    i = d2s.zeros([], "int64")
    while i < n:
        x = x * 2.0
        _log(x, history)
        i += 1
    return d2s.stack(history)


def keyed_by_the_counter(x, n):
    steps = {}
    i = d2s.zeros([], "int64")
    while i < n:
        steps[i] = x * 2.0
        i += 1
    return x


@pytest.mark.parametrize("fn, target, line_of", [
    (appended_by_a_callee, "history", "history.append(h)"),
    (keyed_by_the_counter, "steps[i]", "while i < n:"),
])
def test_what_a_static_loop_cannot_carry_is_a_clear_error(fn, target, line_of):
    x = d2s.to_tensor(np.ones((2, 3), "float32"))
    with pytest.raises(ControlFlowError) as info:
        to_static(fn)(x, d2s.to_tensor(np.array(3)))
    message = str(info.value)
    assert f"'{target}'" in message and "on a tensor" in message, message
    assert __file__ in message and line_of in message, message
    assert "dimension" not in message
