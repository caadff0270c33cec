"""Input Tensors move to the device as the xla per-call path reads them
(d2s/backends/xla/resident_inputs.py): only while nothing else holds their
host array, and with every result equal to eager's."""
import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s.core.tensor import DeviceTensor  # noqa: E402
from d2s.jit import to_static  # noqa: E402


def scale(x, k):
    return x * 2.0 + k


def _warm(sf, dtype=np.float32):
    """Two calls on a throwaway input: the signature's per-call path exists."""
    for _ in range(2):
        sf(d2s.to_tensor(np.zeros(3, dtype)), d2s.to_tensor(np.ones(3, dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_a_fresh_input_moves_and_keeps_its_values(dtype):
    sf = to_static(scale, backend="xla")
    with d2s.no_grad():
        _warm(sf, dtype)
        values = np.array([1, 2, 3], dtype)
        x, k = d2s.to_tensor(values), d2s.to_tensor(np.full(3, 5, dtype))
        want = scale(x, k).numpy()                    # eager
        got = sf(x, k)
        assert type(x) is DeviceTensor and type(k) is DeviceTensor
        assert x._raw.dtype == np.dtype(dtype)        # 64-bit kept 64-bit
        np.testing.assert_array_equal(got.numpy(), want)
        host = x.numpy()                              # the host copy: a writable copy
        np.testing.assert_array_equal(host, values)
        assert type(x) is not DeviceTensor and host.flags.writeable
        host[0] = 10                                  # the Tensor's own array now
        np.testing.assert_array_equal(sf(x, k).numpy(), scale(x, k).numpy())
        assert sf(x, k).numpy()[0] == 2 * 10 + 5


def _view(t):
    return t.numpy()[:]


def _same(t):
    return t.numpy()


@pytest.mark.parametrize("hold", [_view, _same])
def test_an_input_whose_array_is_held_elsewhere_stays_on_the_host(hold):
    """A write through the other reference must reach the next call, as in eager."""
    sf = to_static(scale, backend="xla")
    with d2s.no_grad():
        _warm(sf)
        x, k = d2s.to_tensor(np.ones(3, np.float32)), d2s.to_tensor(np.zeros(3, np.float32))
        held = hold(x)
        sf(x, k)
        assert type(x) is not DeviceTensor
        held[1] = 4.0
        want = scale(x, k).numpy()
        assert want[1] == 8.0
        np.testing.assert_array_equal(sf(x, k).numpy(), want)


def test_a_training_step_moves_its_batch():
    net = d2s.nn.Linear(4, 2)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    ref = d2s.nn.Linear(4, 2)
    ref.set_state_dict(net.state_dict())
    ref_opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())

    def step(x, model, optim):
        loss = (model(x) ** 2).mean()
        loss.backward()
        optim.step()
        optim.clear_grad()
        return loss

    sf = to_static(lambda x: step(x, net, opt), backend="xla")
    rng = np.random.default_rng(0)
    for i in range(4):
        batch = rng.normal(size=(3, 4)).astype(np.float32)
        x = d2s.to_tensor(batch)
        loss = sf(x)
        want = step(d2s.to_tensor(batch), ref, ref_opt)      # eager
        np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        if i >= 2:  # (the step's per-call path from its second call)
            assert type(x) is DeviceTensor
    np.testing.assert_allclose(net.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)


def test_an_input_reused_while_its_results_live_moves_on_its_first_call():
    """JAX keeps a host array it was fed alive while that call's results live:
    moved before the first call, the Tensor is never fed as a host array."""
    sf = to_static(scale, backend="xla")
    x, k = d2s.to_tensor(np.ones(3, np.float32)), d2s.to_tensor(np.ones(3, np.float32))
    with d2s.no_grad():
        y = sf(x, k)
        assert type(x) is DeviceTensor
        for _ in range(3):
            y = sf(x, k)
            assert type(x) is DeviceTensor
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 3.0])


def test_a_call_that_records_gradients_leaves_its_inputs_on_the_host():
    """The tape reads the inputs on the host: moving them would copy them back."""
    sf = to_static(scale, backend="xla")
    x = d2s.to_tensor(np.ones(3, np.float32), stop_gradient=False)
    k = d2s.to_tensor(np.ones(3, np.float32))
    for _ in range(2):
        y = sf(x, k)
        y.sum().backward()
        assert type(x) is not DeviceTensor
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])  # two backward passes
