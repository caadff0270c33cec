"""An in-place write to a converted function's own input Tensor changes the
caller's Tensor, as eagerly (DESIGN §4, "State that outlives the call").

Every test runs the eager function and the converted one on equal inputs and
compares the results and the caller's Tensors after each call, on the numpy
and xla backends."""
from __future__ import annotations

import numpy as np
import pytest

import d2s
from d2s.core.tensor import is_resident
from d2s.static import InputSpec

BACKENDS = ["numpy", "xla"]


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


def _t(a):
    return d2s.to_tensor(np.array(a, "float32"))


# ---- the family of writes -------------------------------------------------------------
def slice_write(x, cache):
    cache[:, 0] = x
    return cache.sum()


def add_(x, y):
    x.add_(y)
    return x * 2.0


def scale_(x, y):
    x.scale_(2.0, 1.0)
    return x + y


def zero_(x, y):
    x.zero_()
    return y + 1.0


def fill_(x, y):
    x.fill_(3.0)
    return x * y


def through_a_view(x, y):
    row = x[0]
    row[1] = 5.0
    return x.sum() + y.sum()


def _triple_first(t):
    t[0] = t[0] * 3.0


def in_a_callee(x, y):
    _triple_first(x)
    return x - y


def in_a_tensor_if(x, y):
    if x.sum() > 0:
        x.scale_(3.0)
    else:
        x.zero_()
    return x.mean() + y.mean()


def in_a_tensor_while(x, n):
    i = d2s.zeros([], "int64")
    while i < n:
        x[i] = x[i] * 2.0
        i += 1
    return i


def nested_in_a_list_and_a_dict(xs, d):
    xs[0].add_(1.0)
    d["k"][0, 0] = 7.0
    return xs[1] * 1.0


def nested_under_a_tensor_if(xs, d):
    if xs[1].sum() > 0:
        d["k"].add_(1.0)
        xs[0][0] = 9.0
    return xs[1] * 1.0


def nested_in_a_tensor_while(xs, d):
    i = d2s.zeros([], "int64")
    while i < 2:
        xs[0][i] = xs[0][i] * 2.0
        d["k"][i, 0] = 7.0
        i += 1
    return xs[1] * 1.0


def star_args(*args):
    args[1].add_(args[0])
    return args[0] * 1.0


def _rng_args(kind, seed):
    r = np.random.default_rng(seed)

    def a(*shape):
        return _t(r.standard_normal(shape))
    if kind == "slice":
        return (a(3), a(3, 2))
    if kind == "while":
        return (a(4), d2s.to_tensor(np.array(seed % 3 + 1)))
    if kind == "nested":
        return ([a(2), a(2)], {"k": a(2, 2)})
    if kind == "view":
        return (a(2, 3), a(2))
    return (a(2, 3), a(2, 3))


CASES = [(slice_write, "slice"), (add_, "pair"), (scale_, "pair"), (zero_, "pair"),
         (fill_, "pair"), (through_a_view, "view"), (in_a_callee, "pair"),
         (in_a_tensor_if, "pair"), (in_a_tensor_while, "while"),
         (nested_in_a_list_and_a_dict, "nested"), (nested_under_a_tensor_if, "nested"),
         (nested_in_a_tensor_while, "nested"),
         (star_args, "pair")]


def _leaves(args):
    out = []
    for a in args:
        if isinstance(a, list):
            out += a
        elif isinstance(a, dict):
            out += list(a.values())
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, kind", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_callers_tensors_change_as_eagerly(fn, kind, backend):
    static = d2s.jit.to_static(fn, backend=_backend(backend))
    # several calls, each with Tensors of its own (and the signs of a tensor
    # `if` both ways): each call writes its own arguments
    changed = False
    for seed in (0, 1, 2, 3):
        eager_args, static_args = _rng_args(kind, seed), _rng_args(kind, seed)
        held = _leaves(static_args)
        want = fn(*eager_args)
        got = static(*static_args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        after = _leaves(static_args)
        assert all(a is b for a, b in zip(after, held))  # the same Tensor objects
        for e, s in zip(_leaves(eager_args), after):
            np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-6)
        changed = changed or any(not np.array_equal(e.numpy(), f.numpy()) for e, f in
                                 zip(_leaves(eager_args), _leaves(_rng_args(kind, seed))))
    assert changed  # (the writes did reach the caller's tensors)


def test_on_xla_the_written_value_stays_on_the_device():
    pytest.importorskip("jax")
    static = d2s.jit.to_static(slice_write, backend="xla")
    x, cache = _t([1.0, 2.0, 3.0]), d2s.zeros([3, 2])
    static(x, cache)
    assert is_resident(cache)  # no host copy made for the write-back
    np.testing.assert_array_equal(cache.numpy()[:, 0], [1.0, 2.0, 3.0])


# ---- the same Tensor passed twice ------------------------------------------------------
def write_one_read_other(x, y):
    x.add_(1.0)
    return y * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_tensor_passed_twice_is_one_tensor_as_eagerly(backend):
    static = d2s.jit.to_static(write_one_read_other, backend=_backend(backend))
    ea, eb = _t([1.0, 1.0]), _t([1.0, 1.0])
    sa, sb = _t([1.0, 1.0]), _t([1.0, 1.0])
    for first, second, eager_first, eager_second in (
            (sa, sb, ea, eb), (sa, sa, ea, ea), (sa, sb, ea, eb), (sa, sa, ea, ea)):
        want = write_one_read_other(eager_first, eager_second)
        got = static(first, second)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(sa.numpy(), ea.numpy())
        np.testing.assert_array_equal(sb.numpy(), eb.numpy())
    assert sa.numpy().tolist() == [5.0, 5.0]


# ---- the transaction rule ---------------------------------------------------------------
def write_then_check(x):
    x.add_(1.0)
    if x.sum() > 100.0:
        raise ValueError("too big")
    return x * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_that_raises_writes_nothing(backend):
    static = d2s.jit.to_static(write_then_check, backend=_backend(backend))
    ok = _t([1.0, 2.0])
    static(ok)
    assert ok.numpy().tolist() == [2.0, 3.0]
    big = _t([100.0, 200.0])
    with pytest.raises(ValueError, match="too big"):
        static(big)
    assert big.numpy().tolist() == [100.0, 200.0]  # (eagerly the write came first)


# ---- the paths a call takes ---------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_many_calls_through_the_call_caches_each_write_their_own_tensor(backend):
    static = d2s.jit.to_static(add_, backend=_backend(backend))
    for i in range(40):  # past the first calls: the fast and inline paths
        x, y = _t([float(i), 1.0]), _t([2.0, float(i)])
        got = static(x, y)
        assert x.numpy().tolist() == [i + 2.0, i + 1.0]
        np.testing.assert_array_equal(got.numpy(), 2.0 * x.numpy())
        assert y.numpy().tolist() == [2.0, float(i)]
    assert static._inline is not None  # (the inline cache served the later calls)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_step_writes_its_inputs_as_eagerly(backend):
    _backend(backend)
    results = []
    for convert in (False, True):
        d2s.seed(0)
        lin = d2s.nn.Linear(2, 1)
        opt = d2s.optimizer.SGD(0.1, parameters=lin.parameters())

        def step(x, count, last):
            loss = lin(x).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            count.add_(1.0)
            last[0] = loss
            return loss
        fn = d2s.jit.to_static(step, backend=backend) if convert else step
        count, last, losses = d2s.zeros([1]), d2s.zeros([2]), []
        for i in range(4):
            losses.append(float(fn(_t(np.full((3, 2), i / 2.0)), count, last)))
        results.append((losses, count.numpy(), last.numpy(), lin.weight.numpy()))
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert results[1][1].tolist() == [4.0]


def test_a_saved_program_loaded_writes_its_inputs_too(tmp_path):
    static = d2s.jit.to_static(slice_write)
    spec = [InputSpec([3], "float32", "x"), InputSpec([3, 2], "float32", "cache")]
    d2s.jit.save(static, str(tmp_path / "m"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "m"))
    for seed in (0, 1):
        eager_args, args = _rng_args("slice", seed), _rng_args("slice", seed)
        want = slice_write(*eager_args)
        got = loaded(*args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        np.testing.assert_allclose(args[1].numpy(), eager_args[1].numpy(), rtol=1e-6)


def test_a_loaded_program_refuses_one_tensor_for_two_written_inputs(tmp_path):
    """Saved for distinct Tensors, it cannot be traced again for the aliasing."""
    static = d2s.jit.to_static(write_one_read_other)
    spec = [InputSpec([2], "float32", "x"), InputSpec([2], "float32", "y")]
    d2s.jit.save(static, str(tmp_path / "a"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "a"))
    a = _t([1.0, 2.0])
    with pytest.raises(ValueError, match="the input 'x'.*one Tensor for several.*clone"):
        loaded(a, a)
    assert a.numpy().tolist() == [1.0, 2.0]


def test_onnx_export_gives_the_written_value_as_an_output_named_for_the_input(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import d2s.onnx
    spec = [InputSpec([3], "float32", "x"), InputSpec([3, 2], "float32", "cache")]
    path = d2s.onnx.export(d2s.jit.to_static(slice_write), str(tmp_path / "m.onnx"),
                           input_spec=spec)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [o.name for o in sess.get_outputs()] == ["output_0", "cache_written"]
    x, cache = _rng_args("slice", 5)
    total, written = sess.run(None, {"x": x.numpy(), "cache": cache.numpy()})
    want = slice_write(x, cache)
    np.testing.assert_allclose(total, want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(written, cache.numpy(), rtol=1e-6)


# ---- autograd ---------------------------------------------------------------------------
def triple_first(y):
    y[0] = y[0] * 3.0
    return y.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_written_non_leaf_keeps_the_gradient_path_eager_gives_it(backend):
    static = d2s.jit.to_static(triple_first, backend=_backend(backend))
    found = []
    for fn in (triple_first, static):
        w = _t([1.0, 2.0])
        w.stop_gradient = False
        y = w * 2.0
        out = fn(y)
        ((y * y).sum() + out).backward()
        found.append((out.numpy(), y.numpy(), w.grad.numpy()))
    for want, got in zip(*found):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    torch = pytest.importorskip("torch")
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tw * 2.0
    ty[0] = ty[0] * 3.0
    ((ty * ty).sum() + ty.sum()).backward()
    np.testing.assert_allclose(found[1][2], tw.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_leaf_that_requires_grad_is_refused_as_eagerly(backend):
    static = d2s.jit.to_static(star_args, backend=_backend(backend))
    for fn in (star_args, static):
        w = _t([1.0, 2.0])
        w.stop_gradient = False
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad") as e:
            fn(_t([1.0, 1.0]), w)
        assert w.numpy().tolist() == [1.0, 2.0]
    assert "'args[1]'" in str(e.value)  # named as written, not `args_1`
    with d2s.no_grad():  # as eagerly: allowed without gradients
        w = _t([1.0, 2.0])
        w.stop_gradient = False
        static(_t([1.0, 1.0]), w)
    assert w.numpy().tolist() == [2.0, 3.0]


def _zero_at(t, i):
    t[i] = 0.0


def written_by_a_callee_in_a_loop(*args):
    i = d2s.zeros([], "int64")
    while i < 2:
        _zero_at(args[1], i)
        i += 1
    return i


def test_a_loop_that_cannot_carry_an_input_write_names_it_as_written():
    from d2s.static import ControlFlowError
    y = d2s.ones([3])
    with pytest.raises(ControlFlowError, match=r"'args\[1\]' written in place.*y = helper\(y\)"):
        d2s.jit.to_static(written_by_a_callee_in_a_loop)(d2s.ones([2]), y)
    assert y.numpy().tolist() == [1.0, 1.0, 1.0]  # (a trace that fails writes nothing)


def write_and_return_it(x, y):
    x.add_(y)
    return x, {"sum": x.sum(), "x": x}


@pytest.mark.parametrize("backend", BACKENDS)
def test_returning_the_written_input_returns_the_callers_tensor(backend):
    static = d2s.jit.to_static(write_and_return_it, backend=_backend(backend))
    for fn in (write_and_return_it, static, static):
        x, y = _t([1.0, 2.0]), _t([3.0, 4.0])
        first, d = fn(x, y)
        assert first is x and d["x"] is x  # as eagerly: the same Tensor, written
        assert x.numpy().tolist() == [4.0, 6.0]
        assert float(d["sum"]) == 10.0
