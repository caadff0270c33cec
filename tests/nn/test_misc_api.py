"""Smaller pieces of the nn / training surface: containers, Bilinear, swiglu,
FusedLinear, flash_attention, CyclicLR, the stateful metrics, map_structure,
the CPU device shims."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.optimizer import lr as sched

RNG = np.random.default_rng(4)


def test_containers_register_their_members():
    d = nn.LayerDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
    d["c"] = nn.Linear(3, 1)
    assert list(d.keys()) == ["a", "b", "c"] and "b" in d and len(d) == 3
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    d.pop("a")
    assert [n for n, _ in d.named_parameters()] == ["c.weight", "c.bias"]
    plist = nn.ParameterList([d2s.create_parameter([2], "float32") for _ in range(3)])
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"] and len(plist) == 3


def test_bilinear_matches_torch():
    torch = pytest.importorskip("torch")
    x1, x2 = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 5))
    w, b = RNG.standard_normal((2, 3, 5)), RNG.standard_normal(2)
    want = torch.nn.functional.bilinear(*(torch.tensor(a) for a in (x1, x2, w, b)))
    got = F.bilinear(*(d2s.to_tensor(a) for a in (x1, x2, w, b)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    layer = nn.Bilinear(3, 5, 2)
    assert layer.weight.shape == (2, 3, 5) and layer.bias.shape == (1, 2)
    assert layer(d2s.to_tensor(x1.astype("float32")),
                 d2s.to_tensor(x2.astype("float32"))).shape == (4, 2)


def test_swiglu_fused_linear_and_flash_attention():
    x = RNG.standard_normal((2, 6))
    a, b = x[:, :3], x[:, 3:]
    want = a / (1 + np.exp(-a)) * b
    np.testing.assert_allclose(d2s.incubate.nn.functional.swiglu(d2s.to_tensor(x)).numpy(),
                               want, rtol=1e-12)
    d2s.seed(0)
    plain = nn.Linear(3, 2)
    d2s.seed(0)
    fused = d2s.incubate.nn.FusedLinear(3, 2, transpose_weight=True)
    assert fused.weight.shape == (2, 3)
    np.testing.assert_array_equal(fused.weight.numpy(), plain.weight.numpy().T)
    v = d2s.to_tensor(RNG.standard_normal((1, 3)).astype("float32"))
    np.testing.assert_allclose(fused(v).numpy(), plain(v).numpy(), rtol=1e-6)
    q = d2s.to_tensor(RNG.standard_normal((1, 4, 2, 3)))
    out, sm = F.flash_attention.flash_attention(q, q, q, causal=True)
    assert sm is None
    np.testing.assert_array_equal(
        out.numpy(), F.scaled_dot_product_attention(q, q, q, is_causal=True).numpy())


def test_cyclic_lr_matches_torch():
    torch = pytest.importorskip("torch")
    for mode in ("triangular", "triangular2", "exp_range"):
        p = torch.zeros(1, requires_grad=True)
        topt = torch.optim.SGD([p], lr=0.1)
        ts = torch.optim.lr_scheduler.CyclicLR(topt, 0.1, 1.0, 3, 2, mode=mode, gamma=0.9,
                                               cycle_momentum=False)
        ours = sched.CyclicLR(0.1, 1.0, 3, 2, mode=mode, exp_gamma=0.9)
        for _ in range(12):
            np.testing.assert_allclose(ours(), topt.param_groups[0]["lr"], rtol=1e-10)
            topt.step()
            ts.step()
            ours.step()


def test_stateful_metrics():
    acc = d2s.metric.Accuracy(topk=(1, 2))
    pred = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.3, 0.5]])
    label = np.array([[2], [0], [1]])
    acc.update(acc.compute(d2s.to_tensor(pred), d2s.to_tensor(label)))
    assert acc.accumulate() == [1 / 3, 1.0]
    acc.reset()
    assert acc.count == 0
    auc = d2s.metric.Auc(num_thresholds=1000)
    scores = RNG.random(200)
    labels = (RNG.random(200) < scores).astype(np.int64)
    auc.update(np.stack([1 - scores, scores], 1), labels)
    pos, neg = scores[labels == 1], scores[labels == 0]
    exact = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (
        pos.size * neg.size)
    assert abs(auc.accumulate() - exact) < 2e-3


def test_map_structure_and_device_shims():
    out = d2s.utils.map_structure(lambda a, b: a * b, {"x": [1, 2], "y": (3,)},
                                  {"x": [4, 5], "y": (6,)})
    assert out == {"x": [4, 10], "y": (18,)}
    assert d2s.is_compiled_with_cuda() is False and d2s.device.get_device() == "cpu"
    assert d2s.set_device("cpu") == d2s.CPUPlace()
    with pytest.raises(ValueError, match="runs on the CPU"):
        d2s.set_device("gpu:0")
    with pytest.raises(RuntimeError, match="CPUPlace"):
        d2s.CUDAPlace(0)
    d2s.set_flags({"FLAGS_cudnn_deterministic": True})
    assert d2s.get_flags("FLAGS_cudnn_deterministic") == {"FLAGS_cudnn_deterministic": True}
