"""SyncBatchNorm (one process: BatchNorm; convert_sync_batchnorm), and the
functional temporal_shift and gather_tree against loop-based numpy
references of Paddle's documented rules, eager and converted on the numpy
and xla backends."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

RNG = np.random.default_rng(13)


def _t(a, grad=False):
    return d2s.to_tensor(a, stop_gradient=not grad)


def _backend(name):
    if name == "xla":
        pytest.importorskip("jax")
    return name


# ---- SyncBatchNorm ---------------------------------------------------------------------------
def test_sync_batch_norm_is_batch_norm_in_one_process():
    x = RNG.standard_normal((4, 3, 5, 5)).astype(np.float32)
    d2s.seed(0)
    bn = nn.BatchNorm2D(3)
    sbn = nn.SyncBatchNorm(3)
    sbn.weight.set_value(RNG.standard_normal(3).astype(np.float32))
    bn.weight.set_value(sbn.weight.numpy())
    for _ in range(2):
        np.testing.assert_array_equal(sbn(_t(x)).numpy(), bn(_t(x)).numpy())
    np.testing.assert_array_equal(sbn._mean.numpy(), bn._mean.numpy())
    np.testing.assert_array_equal(sbn._variance.numpy(), bn._variance.numpy())
    sbn.eval(), bn.eval()
    np.testing.assert_array_equal(sbn(_t(x)).numpy(), bn(_t(x)).numpy())
    assert sorted(sbn.state_dict()) == sorted(bn.state_dict())


def test_convert_sync_batchnorm_keeps_parameters_and_statistics():
    net = nn.Sequential(nn.Conv2D(2, 3, 3), nn.BatchNorm2D(3), nn.ReLU(),
                        nn.Sequential(nn.BatchNorm2D(3, bias_attr=False)))
    x = _t(RNG.standard_normal((2, 2, 5, 5)).astype(np.float32))
    net(x)  # running statistics move away from their start
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    net.eval()
    want = net(x).numpy()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net
    assert type(net[1]) is nn.SyncBatchNorm and type(net[3][0]) is nn.SyncBatchNorm
    assert net[3][0].bias is None
    after = {k: v.numpy() for k, v in net.state_dict().items()}
    assert sorted(after) == sorted(before)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    np.testing.assert_array_equal(net(x).numpy(), want)


def test_sync_batch_norm_across_processes_needs_the_process_group(monkeypatch):
    """(The two-process run: tests/distributed/test_sync_batch_norm.py.)"""
    from d2s.core.ops import collective_ops
    monkeypatch.setenv("D2S_WORLD_SIZE", "2")
    monkeypatch.setattr(collective_ops, "_process_sum", None)
    sbn = nn.SyncBatchNorm(3)
    with pytest.raises(RuntimeError, match="init_parallel_env"):
        sbn(_t(np.zeros((2, 3, 2, 2), np.float32)))
    sbn.eval()
    sbn(_t(np.zeros((2, 3, 2, 2), np.float32)))  # inference needs no batch statistics


# ---- temporal_shift ------------------------------------------------------------------------
def _temporal_shift_ref(x, seg, ratio, nhwc):
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    nt, c, h, w = x.shape
    v = x.reshape(nt // seg, seg, c, h, w)
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out = np.zeros_like(v)
    for t in range(seg):
        for ch in range(c):
            src = t - 1 if ch < c1 else t + 1 if ch < c2 else t
            if 0 <= src < seg:
                out[:, t, ch] = v[:, src, ch]
    out = out.reshape(nt, c, h, w)
    return out.transpose(0, 2, 3, 1) if nhwc else out


@pytest.mark.parametrize("seg,ratio,shape,fmt", [
    (3, 0.25, (6, 8, 2, 3), "NCHW"),
    (2, 0.2, (4, 5, 3, 2), "NCHW"),
    (4, 0.5, (4, 4, 2, 2), "NCHW"),
    (1, 0.25, (2, 4, 2, 2), "NCHW"),
    (3, 0.125, (6, 3, 2, 8), "NHWC"),
])
def test_temporal_shift_matches_reference_with_gradient(seg, ratio, shape, fmt):
    x = RNG.standard_normal(shape)
    xt = _t(x, grad=True)
    out = F.temporal_shift(xt, seg, ratio, data_format=fmt)
    np.testing.assert_array_equal(out.numpy(), _temporal_shift_ref(x, seg, ratio, fmt == "NHWC"))
    g = RNG.standard_normal(shape)
    (out * _t(g)).sum().backward()
    # the shift is a 0/1 linear map: its gradient is the same map transposed,
    # i.e. <shift(x), g> = <x, grad>
    np.testing.assert_allclose(np.sum(_temporal_shift_ref(x, seg, ratio, fmt == "NHWC") * g),
                               np.sum(x * xt.grad.numpy()), rtol=1e-12)
    e = np.zeros(shape)
    e[(0,) * 4] = 1.0
    want = np.sum(_temporal_shift_ref(e, seg, ratio, fmt == "NHWC") * g)
    assert xt.grad.numpy()[(0,) * 4] == pytest.approx(want)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_temporal_shift_and_gather_tree_converted(backend):
    x = RNG.standard_normal((6, 4, 2, 2)).astype(np.float32)
    fn = to_static(lambda v: F.temporal_shift(v, 3, 0.25), backend=_backend(backend))
    np.testing.assert_array_equal(fn(_t(x)).numpy(), _temporal_shift_ref(x, 3, 0.25, False))
    ids, parents = _random_beams(5, 3, 4)
    gt = to_static(F.gather_tree, backend=backend)
    np.testing.assert_array_equal(gt(_t(ids), _t(parents)).numpy(),
                                  _gather_tree_ref(ids, parents))


# ---- gather_tree ---------------------------------------------------------------------------
def _gather_tree_ref(ids, parents):
    steps, batch, beam = ids.shape
    out = np.zeros_like(ids)
    for b in range(batch):
        for k in range(beam):
            p = k
            for t in range(steps - 1, -1, -1):
                out[t, b, k] = ids[t, b, p]
                p = parents[t, b, p]
    return out


def _random_beams(steps, batch, beam):
    ids = RNG.integers(0, 50, (steps, batch, beam)).astype(np.int64)
    parents = RNG.integers(0, beam, (steps, batch, beam)).astype(np.int64)
    return ids, parents


def test_gather_tree_matches_reference():
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
    parents = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
    got = F.gather_tree(_t(ids), _t(parents)).numpy()
    np.testing.assert_array_equal(got, [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]])
    for shape in ((1, 2, 3), (6, 2, 5)):
        ids, parents = _random_beams(*shape)
        np.testing.assert_array_equal(F.gather_tree(_t(ids), _t(parents)).numpy(),
                                      _gather_tree_ref(ids, parents))
    with pytest.raises(ValueError, match="same shape"):
        F.gather_tree(_t(ids), _t(parents[:, :1]))
    with pytest.raises(TypeError, match="integer"):
        F.gather_tree(_t(ids.astype(np.float32)), _t(parents))
