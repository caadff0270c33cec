"""Captured parameters on the xla backend: kept on the device between calls,
sent again after an eager update (never stale), written back by training
programs; and DLPack exchange."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn as nn  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s import static  # noqa: E402

from xla_helpers import assert_same, run  # noqa: E402


def _linear_program(layer):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 3], "float32")
        y = d2s.tanh(layer(x))
    return prog, [y]


def test_parameters_stay_on_the_device_and_an_update_is_sent_once(sends):
    d2s.seed(1)
    layer = nn.Linear(3, 2)
    prog, fetch = _linear_program(layer)
    feed = {"x": np.random.default_rng(0).normal(size=(4, 3)).astype("float32")}
    exe = static.Executor(backend="xla")
    exe.run(prog, feed=feed, fetch_list=fetch)
    assert len(sends) == 0  # the first call reads the host arrays ...
    exe.run(prog, feed=feed, fetch_list=fetch)
    assert len(sends) == 2  # ... the second finds them unchanged: weight and bias sent
    exe.run(prog, feed=feed, fetch_list=fetch)
    assert len(sends) == 2  # nothing re-sent
    old_weight = layer.weight.numpy()
    opt = d2s.optimizer.SGD(learning_rate=0.5, parameters=[layer.weight])
    layer(d2s.to_tensor(feed["x"])).sum().backward()
    opt.step()  # an eager update of the weight only
    got = exe.run(prog, feed=feed, fetch_list=fetch)  # the new weight, from the host
    exe.run(prog, feed=feed, fetch_list=fetch)
    assert len(sends) == 3 and sends[-1] is layer.weight.numpy()  # only the new weight
    assert not np.allclose(layer.weight.numpy(), old_weight)
    assert_same(got, run("numpy", prog, feed, fetch))  # never a stale value


def test_an_in_place_write_into_a_sent_array_raises_instead_of_going_stale():
    layer = nn.Linear(3, 2)
    prog, fetch = _linear_program(layer)
    feed = {"x": np.ones((1, 3), np.float32)}
    run("xla", prog, feed, fetch)
    layer.weight.numpy()[0, 0] = 5.0      # read from the host by that call: still writable
    got = run("xla", prog, feed, fetch)   # unchanged object: now copied to the device
    assert_same(got, run("numpy", prog, feed, fetch))   # with the value written
    with pytest.raises(ValueError, match="read-only"):
        layer.weight.numpy()[0, 0] = 6.0


def _training_program(model, opt):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, 4], "float32")
        y = static.data("y", [None], "int64")
        loss = F.cross_entropy(model(x), y)
        opt.minimize(loss)
    return prog, [loss]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_training_steps_write_back_the_same_parameters_as_numpy(optimizer, sends):
    rng = np.random.default_rng(3)
    feed = {"x": rng.normal(size=(8, 4)).astype("float32"),
            "y": rng.integers(0, 3, size=8).astype(np.int64)}
    results = {}
    for backend in ("numpy", "xla"):
        d2s.seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = getattr(d2s.optimizer, optimizer)(learning_rate=0.05,
                                                 parameters=model.parameters())
        prog, fetch = _training_program(model, opt)
        exe = static.Executor(backend=backend)
        before = len(sends)
        losses = [exe.run(prog, feed=feed, fetch_list=fetch)[0] for _ in range(4)]
        if backend == "xla":
            # the first run reads the host arrays; the parameters' new values stay on
            # the device; only what no run writes (the learning rate) is sent, once
            written = {v.name for op in prog.global_block().ops for v in op.outputs}
            assert len(sends) - before == len(set(prog.captured) - written) == 1
        results[backend] = losses, [p.numpy().copy() for p in model.parameters()]
    assert_same(results["xla"][0], results["numpy"][0])
    assert_same(results["xla"][1], results["numpy"][1])


def test_dlpack_exchanges_without_copies():
    a = np.arange(6.0).reshape(2, 3)
    t = d2s.from_dlpack(a)
    assert np.shares_memory(t.numpy(), a) and t.dtype == np.float64
    assert np.shares_memory(np.from_dlpack(t), t.numpy())
    j = jax.dlpack.from_dlpack(d2s.to_tensor(np.array([1.0, 2.0], np.float32)))
    np.testing.assert_array_equal(np.asarray(j), [1.0, 2.0])
    back = d2s.from_dlpack(jax.numpy.arange(3.0))
    np.testing.assert_array_equal((back * 2.0).numpy(), [0.0, 2.0, 4.0])
    assert t.__dlpack_device__() == a.__dlpack_device__()


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = d2s.to_tensor(np.array([[1.0, 2.0]], np.float32))
    pt = torch.from_dlpack(t)
    pt += 1.0  # torch shares the memory
    np.testing.assert_array_equal(t.numpy(), [[2.0, 3.0]])
    back = d2s.from_dlpack(torch.arange(4, dtype=torch.float64))
    np.testing.assert_array_equal(back.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_a_to_tensor_batch_is_read_by_xla_in_place():
    """to_tensor aligns a large array to 64 bytes so that XLA's CPU client reads
    it where it is instead of copying it on every call; numpy's own
    allocation (16-byte aligned) is copied."""
    batch = np.random.default_rng(0).normal(size=(32, 784)).astype(np.float32)
    t = d2s.to_tensor(batch)
    assert jax.device_put(t.numpy()).unsafe_buffer_pointer() == t.numpy().ctypes.data
    misaligned = np.empty(batch.nbytes + 64, np.uint8)
    start = -misaligned.ctypes.data % 64 + 16
    view = misaligned[start:start + batch.nbytes].view(np.float32).reshape(batch.shape)
    assert jax.device_put(view).unsafe_buffer_pointer() != view.ctypes.data
