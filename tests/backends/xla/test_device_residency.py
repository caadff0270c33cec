"""Device-resident Tensors (issue 29 item 1): an xla program's results and
the parameters an xla step writes stay device arrays; the host copy is made
once, when host code reads the value, and counted here by
`d2s.core.tensor.materializations`."""
import sys
import pathlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s.core import tensor as core_tensor  # noqa: E402
from d2s.core.tensor import is_resident  # noqa: E402
from d2s.jit import to_static  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "jit"))
from train_step_helpers import (MLP, batch, eager_mode, make, same,  # noqa: E402
                                snapshot, standard_step)
from xla_helpers import state_tensors  # noqa: E402


@pytest.fixture(autouse=True)
def on_xla():
    """(`same` compares to the xla tolerance when xla is the global backend)"""
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend("xla")
    yield
    d2s.jit.set_backend(saved)


def copies():
    return core_tensor.materializations[0]


def affine(x, y):
    return d2s.tanh(x) * 2.0 + y, (x * y).sum()


def _inputs():
    rng = np.random.default_rng(0)
    return (d2s.to_tensor(rng.standard_normal((3, 4)).astype(np.float32)),
            d2s.to_tensor(rng.standard_normal((3, 4)).astype(np.float32)))


def test_results_stay_on_the_device_and_feed_the_next_call_without_a_host_copy(strict):
    f = to_static(affine, backend="xla")
    ref = to_static(affine, backend="numpy")
    x, y = _inputs()
    with d2s.no_grad():
        for _ in range(3):  # built, first run, then the per-call path
            a, s = f(x, y)
        start = copies()
        b, t = f(a, y)      # a device-resident input, read as it is held
        c, u = f(b, a)
        assert copies() == start
        assert all(is_resident(v) for v in (a, s, b, t, c, u))
        assert b.shape == [3, 4] or tuple(b.shape) == (3, 4)
        assert b.dtype == np.float32
        ra, _ = ref(x, y)
        rb, rt = ref(ra, y)
        rc, ru = ref(rb, ra)
    np.testing.assert_allclose(c.numpy(), rc.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(u.numpy(), ru.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.item(), rt.item(), rtol=1e-5)


@pytest.mark.parametrize("read", ["numpy", "asarray", "item", "repr", "eager_op", "float"])
def test_the_host_copy_is_made_once_on_the_first_host_read_and_kept(read):
    f = to_static(affine, backend="xla")
    x, y = _inputs()
    with d2s.no_grad():
        f(x, y)
        a, s = f(x, y)
    v = s if read in ("item", "float") else a
    want = np.asarray(jax.device_get(v._raw))
    start = copies()
    first = {"numpy": lambda: v.numpy(), "asarray": lambda: np.asarray(v),
             "item": lambda: v.item(), "repr": lambda: repr(v),
             "eager_op": lambda: (v + 1.0).numpy(), "float": lambda: float(v)}[read]()
    assert copies() == start + 1 and not is_resident(v)
    held = v.numpy()
    assert v.numpy() is held and np.asarray(v) is held
    repr(v), (v * 2.0).numpy()
    assert copies() == start + 1  # kept: made once
    np.testing.assert_array_equal(held, want)
    if read == "eager_op":  # eager keeps eager's meaning: numpy kernels on the host copy
        np.testing.assert_allclose(first, want + 1.0, rtol=1e-6)


def test_a_host_write_into_a_result_cannot_corrupt_a_later_call(strict):
    f = to_static(affine, backend="xla")
    ref = to_static(affine, backend="numpy")
    x, y = _inputs()
    with d2s.no_grad():
        f(x, y)
        a, _ = f(x, y)
        device = a._raw
        before = np.asarray(device).copy()
        a.numpy()[0] = 100.0  # the Tensor's own (writable, as numpy results are) copy
        assert np.array_equal(np.asarray(device), before)  # the device array is untouched
        got, _ = f(a, y)      # reads the written value, as the numpy backend does
        host_a = d2s.to_tensor(a.numpy())
        want, _ = ref(host_a, y)
    assert a.numpy()[0, 0] == 100.0
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_written_parameters_host_copy_is_read_only_so_the_device_copy_never_goes_stale():
    model, opt = make(MLP, "sgd")
    step = to_static(standard_step(model, opt), backend="xla")
    step(*batch(0))
    step(*batch(1))
    weight = model.parameters()[0]
    assert is_resident(weight)
    held = weight.numpy()
    with pytest.raises(ValueError, match="read-only"):
        held[0] = 1.0


def test_parameters_stay_on_the_device_across_steps_and_read_back_as_eager(sends):
    model, opt = make(MLP, "adam")
    step = to_static(standard_step(model, opt), backend="xla")
    losses = [step(*batch(i)) for i in range(2)]
    state = state_tensors(model, opt)
    sent, start = len(sends), copies()
    for i in range(2, 6):
        losses.append(step(*batch(i)))
        assert all(is_resident(t) for t in state)
    # nothing copied to the device or to the host while training went on
    assert len(sends) == sent and copies() == start
    eager_model, eager_opt = make(MLP, "adam")
    eager_step = standard_step(eager_model, eager_opt)
    with eager_mode():
        eager_losses = [float(eager_step(*batch(i)).numpy()) for i in range(6)]
    np.testing.assert_allclose([float(v.numpy()) for v in losses], eager_losses, rtol=1e-5)
    assert same(snapshot(model, opt), snapshot(eager_model, eager_opt))
    # reading them (host copies) does not make the next step send them again
    sent = len(sends)
    step(*batch(6))
    assert len(sends) == sent


def test_dlpack_round_trip_keeps_the_device_array():
    jnp = jax.numpy
    source = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    t = d2s.from_dlpack(source)
    assert is_resident(t) and t._raw is source and tuple(t.shape) == (2, 3)
    back = jnp.from_dlpack(t)  # Tensor.__dlpack__: the device array's
    np.testing.assert_array_equal(np.asarray(back), np.asarray(source))
    start = copies()
    host = np.from_dlpack(t)   # a consumer on the host reads the same memory
    np.testing.assert_array_equal(host, np.asarray(source))
    assert copies() == start and is_resident(t)
    assert t.to_dlpack() is not None
    # and a resident Tensor feeds an xla program as it is
    f = to_static(lambda a: a * 3.0, backend="xla")
    with d2s.no_grad():
        out = f(t)
    np.testing.assert_allclose(out.numpy(), np.asarray(source) * 3.0)


def test_dlpack_with_torch_both_ways():
    torch = pytest.importorskip("torch")
    f = to_static(affine, backend="xla")
    x, y = _inputs()
    with d2s.no_grad():
        f(x, y)
        a, _ = f(x, y)
    want = np.asarray(jax.device_get(a._raw))
    as_torch = torch.from_dlpack(a)
    np.testing.assert_array_equal(as_torch.numpy(), want)
    back = d2s.from_dlpack(torch.arange(4, dtype=torch.float32))
    np.testing.assert_array_equal(back.numpy(), np.arange(4, dtype=np.float32))
