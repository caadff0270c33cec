"""Losses against PyTorch (values and gradients, float64), their layers, and
eager vs to_static on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import to_static

RNG = np.random.default_rng(11)
N, C = 5, 4
LOGITS = RNG.standard_normal((N, C))
LABELS = np.array([0, 3, 1, 1, 2])
W = np.array([0.5, 2.0, 1.0, 1.5])
SOFT = RNG.dirichlet(np.ones(C), N)
PROBS = 1 / (1 + np.exp(-RNG.standard_normal((N, C))))
TARGET01 = (RNG.random((N, C)) > 0.5).astype(np.float64)
Y = RNG.standard_normal((N, C))
LOGITS3 = RNG.standard_normal((2, C, 3))
LABELS3 = RNG.integers(0, C, (2, 3))


def _both(torch, d2s_fn, torch_fn, inputs, grad_of=(0,)):
    """Loss value and the gradients w.r.t. `inputs[grad_of]` in d2s and torch."""
    ts = [torch.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(inputs)]
    ds = [d2s.to_tensor(a, stop_gradient=i not in grad_of) for i, a in enumerate(inputs)]
    want, got = torch_fn(*ts), d2s_fn(*ds)
    weights = np.cos(np.arange(int(np.prod(want.shape)))).reshape(tuple(want.shape))
    (want * torch.tensor(weights)).sum().backward()
    (got * d2s.to_tensor(weights.reshape(got.shape))).sum().backward()
    np.testing.assert_allclose(got.numpy().reshape(tuple(want.shape)), want.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    for i in grad_of:
        np.testing.assert_allclose(ds[i].grad.numpy(), ts[i].grad.numpy(), rtol=1e-9,
                                   atol=1e-12)
    return got


CE_CASES = {
    "fused": (lambda x, y: F.cross_entropy(x, y),
              lambda t, x, y: t.nn.functional.cross_entropy(x, y), (LOGITS, LABELS)),
    "labels_n1": (lambda x, y: F.cross_entropy(x, d2s.reshape(y, [N, 1])),
                  lambda t, x, y: t.nn.functional.cross_entropy(x, y), (LOGITS, LABELS)),
    "weight": (lambda x, y: F.cross_entropy(x, y, weight=d2s.to_tensor(W)),
               lambda t, x, y: t.nn.functional.cross_entropy(x, y, weight=t.tensor(W)),
               (LOGITS, LABELS)),
    "ignore_index": (lambda x, y: F.cross_entropy(x, y, ignore_index=1),
                     lambda t, x, y: t.nn.functional.cross_entropy(x, y, ignore_index=1),
                     (LOGITS, LABELS)),
    "weight_ignore_sum": (
        lambda x, y: F.cross_entropy(x, y, weight=d2s.to_tensor(W), ignore_index=3,
                                     reduction="sum"),
        lambda t, x, y: t.nn.functional.cross_entropy(x, y, weight=t.tensor(W), ignore_index=3,
                                                      reduction="sum"), (LOGITS, LABELS)),
    "none": (lambda x, y: F.cross_entropy(x, y, reduction="none"),
             lambda t, x, y: t.nn.functional.cross_entropy(x, y, reduction="none")[:, None],
             (LOGITS, LABELS)),
    "soft": (lambda x, y: F.cross_entropy(x, y, soft_label=True),
             lambda t, x, y: t.nn.functional.cross_entropy(x, y), (LOGITS, SOFT)),
    "smoothing_weight": (
        lambda x, y: F.cross_entropy(x, y, weight=d2s.to_tensor(W), label_smoothing=0.2),
        lambda t, x, y: t.nn.functional.cross_entropy(x, y, weight=t.tensor(W),
                                                      label_smoothing=0.2), (LOGITS, LABELS)),
    "axis1_3d": (lambda x, y: F.cross_entropy(x, y, axis=1),
                 lambda t, x, y: t.nn.functional.cross_entropy(x, y), (LOGITS3, LABELS3)),
    "probabilities": (lambda x, y: F.cross_entropy(x, y, use_softmax=False, reduction="sum"),
                      lambda t, x, y: t.nn.functional.nll_loss(t.log(x), y, reduction="sum"),
                      (PROBS, LABELS)),
}


@pytest.mark.parametrize("case", sorted(CE_CASES))
def test_cross_entropy_matches_torch(case):
    torch = pytest.importorskip("torch")
    fn, ref, inputs = CE_CASES[case]
    _both(torch, fn, lambda *a: ref(torch, *a), inputs)


def test_cross_entropy_layer_and_errors():
    layer = nn.CrossEntropyLoss(weight=d2s.to_tensor(W), reduction="sum")
    got = layer(d2s.to_tensor(LOGITS), d2s.to_tensor(LABELS))
    logp = LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))
    want = -(W[LABELS] * logp[np.arange(N), LABELS]).sum()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        F.cross_entropy(d2s.to_tensor(LOGITS), d2s.to_tensor(np.array([0, 1, 2, 3, 4])))
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(d2s.to_tensor(LOGITS), d2s.to_tensor(SOFT), reduction="sum")
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(d2s.to_tensor(LOGITS), d2s.to_tensor(LABELS), reduction="avg")


def _t(torch):
    return torch.nn.functional


OTHER_CASES = {
    "bce": (lambda p, y: F.binary_cross_entropy(p, y),
            lambda t, p, y: _t(t).binary_cross_entropy(p, y), (PROBS, TARGET01)),
    "bce_weight_none": (
        lambda p, y: F.binary_cross_entropy(p, y, weight=d2s.to_tensor(W), reduction="none"),
        lambda t, p, y: _t(t).binary_cross_entropy(p, y, weight=t.tensor(W), reduction="none"),
        (PROBS, TARGET01)),
    "bce_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y),
                   lambda t, x, y: _t(t).binary_cross_entropy_with_logits(x, y),
                   (Y * 10, TARGET01)),
    "bce_logits_pos_weight": (
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, weight=d2s.to_tensor(W),
                                                        reduction="sum",
                                                        pos_weight=d2s.to_tensor(W[::-1].copy())),
        lambda t, x, y: _t(t).binary_cross_entropy_with_logits(
            x, y, weight=t.tensor(W), reduction="sum", pos_weight=t.tensor(W[::-1].copy())),
        (Y * 10, TARGET01)),
    "mse": (lambda x, y: F.mse_loss(x, y, reduction="sum"),
            lambda t, x, y: _t(t).mse_loss(x, y, reduction="sum"), (LOGITS, Y)),
    "l1": (lambda x, y: F.l1_loss(x, y), lambda t, x, y: _t(t).l1_loss(x, y), (LOGITS, Y)),
    "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y, delta=0.7),
                  lambda t, x, y: _t(t).huber_loss(x, y, delta=0.7), (LOGITS, Y)),
    "nll": (lambda x, y: F.nll_loss(x, y, weight=d2s.to_tensor(W), ignore_index=2),
            lambda t, x, y: _t(t).nll_loss(x, y, weight=t.tensor(W), ignore_index=2),
            (LOGITS, LABELS)),
    "nll_3d_none": (lambda x, y: F.nll_loss(x, y, reduction="none"),
                    lambda t, x, y: _t(t).nll_loss(x, y, reduction="none"), (LOGITS3, LABELS3)),
    "kl_mean": (lambda x, y: F.kl_div(x, y), lambda t, x, y: _t(t).kl_div(x, y),
                (np.log(SOFT[::-1].copy()), np.where(SOFT > 0.2, SOFT, 0.0))),
    "kl_batchmean": (lambda x, y: F.kl_div(x, y, reduction="batchmean"),
                     lambda t, x, y: _t(t).kl_div(x, y, reduction="batchmean"),
                     (np.log(SOFT[::-1].copy()), SOFT)),
    "kl_log_target": (lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True),
                      lambda t, x, y: _t(t).kl_div(x, y, reduction="sum", log_target=True),
                      (np.log(SOFT[::-1].copy()), np.log(SOFT))),
    "margin_ranking": (lambda x, o, y: F.margin_ranking_loss(x, o, y, margin=0.3),
                       lambda t, x, o, y: _t(t).margin_ranking_loss(x, o, y, margin=0.3),
                       (LOGITS[:, 0], Y[:, 0], np.sign(Y[:, 1]))),
    "hinge_embedding": (lambda x, y: F.hinge_embedding_loss(x, y, margin=0.5),
                        lambda t, x, y: _t(t).hinge_embedding_loss(x, y, margin=0.5),
                        (LOGITS, np.sign(Y))),
    "soft_margin": (lambda x, y: F.soft_margin_loss(x, y),
                    lambda t, x, y: _t(t).soft_margin_loss(x, y), (LOGITS * 20, np.sign(Y))),
}


@pytest.mark.filterwarnings("ignore:reduction.*mean.*divides:UserWarning")  # torch's kl_div
@pytest.mark.parametrize("case", sorted(OTHER_CASES))
def test_loss_matches_torch(case):
    torch = pytest.importorskip("torch")
    fn, ref, inputs = OTHER_CASES[case]
    _both(torch, fn, lambda *a: ref(torch, *a), inputs)


def test_square_error_cost_and_loss_layers_match_their_functions():
    x, y = d2s.to_tensor(LOGITS), d2s.to_tensor(Y)
    np.testing.assert_allclose(F.square_error_cost(x, y).numpy(), (LOGITS - Y) ** 2)
    pairs = [(nn.MSELoss("sum"), F.mse_loss(x, y, "sum")), (nn.L1Loss(), F.l1_loss(x, y)),
             (nn.SmoothL1Loss(delta=0.5), F.smooth_l1_loss(x, y, delta=0.5)),
             (nn.BCEWithLogitsLoss(),
              F.binary_cross_entropy_with_logits(x, d2s.to_tensor(TARGET01))),
             (nn.KLDivLoss("batchmean"), F.kl_div(x, d2s.to_tensor(SOFT), "batchmean"))]
    for layer, want in pairs:
        second = d2s.to_tensor(TARGET01) if isinstance(layer, nn.BCEWithLogitsLoss) else (
            d2s.to_tensor(SOFT) if isinstance(layer, nn.KLDivLoss) else y)
        np.testing.assert_allclose(layer(x, second).numpy(), want.numpy(), rtol=1e-12)
    p = d2s.to_tensor(PROBS)
    np.testing.assert_allclose(nn.BCELoss()(p, d2s.to_tensor(TARGET01)).numpy(),
                               F.binary_cross_entropy(p, d2s.to_tensor(TARGET01)).numpy())
    np.testing.assert_allclose(
        nn.NLLLoss(ignore_index=1)(x, d2s.to_tensor(LABELS)).numpy(),
        F.nll_loss(x, d2s.to_tensor(LABELS), ignore_index=1).numpy())
    np.testing.assert_allclose(
        nn.MarginRankingLoss(0.1)(x, y, d2s.to_tensor(np.sign(Y))).numpy(),
        F.margin_ranking_loss(x, y, d2s.to_tensor(np.sign(Y)), 0.1).numpy())


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_losses_converted_equal_eager(backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")

    def total(x, labels, y):
        return (F.cross_entropy(x, labels) + F.cross_entropy(x, labels, ignore_index=1,
                                                             label_smoothing=0.1)
                + F.binary_cross_entropy_with_logits(x, y) + F.smooth_l1_loss(x, y)
                + F.kl_div(F.log_softmax(x), F.softmax(y), reduction="batchmean"))

    args = (LOGITS.astype(np.float32), LABELS, TARGET01.astype(np.float32))

    def run(fn):
        x = d2s.to_tensor(args[0], stop_gradient=False)
        out = fn(x, d2s.to_tensor(args[1]), d2s.to_tensor(args[2]))
        out.backward()
        return out.numpy(), x.grad.numpy()
    want, want_g = run(total)
    got, got_g = run(to_static(total, backend=backend))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-5, atol=1e-6)
