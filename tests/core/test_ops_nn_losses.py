"""Activations and losses ported models call (d2s/nn/activation_more.py,
loss_more.py, ctc.py): values against PyTorch or numpy, gradients by finite
differences of the reference, to_static on numpy and xla, unknown dims, ONNX
Runtime; ctc_loss's value and exact gradient against
torch.nn.functional.ctc_loss; the random ones (rrelu, gumbel_softmax) by
their structure."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn
from ops_check import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
R = np.random.default_rng(3)


def t(a):
    return torch.tensor(a)


def rn(*s):
    return R.standard_normal(s)


X, Y, Z = rn(3, 4), rn(3, 4), rn(3, 4)
W4 = R.uniform(0.5, 1.5, 4)
BITS = (R.random((3, 4)) > 0.5).astype(np.float64)
COUNTS = R.integers(0, 5, (3, 4)).astype(np.float32)  # (no gradient: Stirling jumps at 1)
VAR = R.uniform(0.5, 1.5, (3, 4))
CLS = np.array([1, 0, 3])


def _focal_ref(x, y, normalizer=None, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-x))
    ce = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    p_t = p * y + (1 - p) * (1 - y)
    loss = ce * (1 - p_t) ** gamma * ((alpha * y + (1 - alpha) * (1 - y)) if alpha else 1.0)
    return np.sum(loss / (normalizer if normalizer is not None else 1.0))


def _dice_ref(x, label, eps=1e-5):
    hot = np.eye(x.shape[-1])[label[..., 0]]
    axes = tuple(range(1, x.ndim))
    inter = np.sum(x * hot, axes)
    return np.mean(1 - inter * 2 / (np.sum(x, axes) + np.sum(hot, axes) + eps))


def _npair_ref(a, p, labels, l2_reg=0.1):
    """N-pair loss as PaddlePaddle documents it (and TensorFlow's npairs_loss)."""
    same = (labels[:, None] == labels[None, :]).astype(np.float64)
    target = same / same.sum(1, keepdims=True)
    logits = a @ p.T
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    l2 = np.mean(np.sum(a ** 2, 1)) + np.mean(np.sum(p ** 2, 1))
    return l2 * 0.25 * l2_reg + np.mean(-np.sum(target * logp, 1))


CASES = [
    ("glu", lambda x: F.glu(x), [X], lambda x: TF.glu(t(x)).numpy()),
    ("glu_axis0", lambda x: F.glu(x, axis=0), [rn(4, 3)], lambda x: TF.glu(t(x), 0).numpy()),
    ("softmin", lambda x: F.softmin(x, 0), [X], lambda x: TF.softmin(t(x), 0).numpy()),
    ("maxout", lambda x: F.maxout(x, 2), [rn(1, 4, 2, 3)],
     lambda x: x.reshape(1, 2, 2, 2, 3).max(2)),
    ("maxout_last", lambda x: F.maxout(x, 3, axis=-1), [rn(1, 2, 2, 6)],
     lambda x: x.reshape(1, 2, 2, 2, 3).max(4)),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3, training=False), [X],
     lambda x: TF.rrelu(t(x), 0.1, 0.3, training=False).numpy()),
    ("pairwise_distance", lambda x, y: F.pairwise_distance(x, y), [X, Y],
     lambda x, y: TF.pairwise_distance(t(x), t(y)).numpy()),
    ("pairwise_distance_p1_keepdim", lambda x, y: F.pairwise_distance(x, y, 1.0, keepdim=True),
     [X, Y], lambda x, y: TF.pairwise_distance(t(x), t(y), 1.0, keepdim=True).numpy()),
    ("pairwise_distance_p3_inf_0", lambda x, y: (F.pairwise_distance(x, y, 3),
                                                 F.pairwise_distance(x, y, float("inf")),
                                                 F.pairwise_distance(x, y, 0.0, 0.0)),
     [X, Y], lambda x, y: tuple(TF.pairwise_distance(t(x), t(y), p, eps=e).numpy()
                                for p, e in ((3, 1e-6), (float("inf"), 1e-6), (0.0, 0.0)))),
    ("cosine_embedding_loss", lambda x, y, l: F.cosine_embedding_loss(x, y, l, 0.1),
     [X, Y, np.array([1, -1, 1])],
     lambda x, y, l: TF.cosine_embedding_loss(t(x), t(y), t(l), 0.1).numpy()),
    ("triplet_margin_loss_swap", lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True,
                                                                       reduction="none"),
     [X, Y, Z], lambda a, p, n: TF.triplet_margin_loss(t(a), t(p), t(n), swap=True,
                                                       reduction="none").numpy()),
    ("multi_label_soft_margin_loss", lambda x, y, w: F.multi_label_soft_margin_loss(x, y, w),
     [X, BITS, W4], None),
    ("poisson_nll_loss_full", lambda x, y: F.poisson_nll_loss(x, y, full=True), [X, COUNTS],
     lambda x, y: TF.poisson_nll_loss(t(x), t(y), full=True).numpy()),
    ("poisson_nll_loss_rates", lambda x, y: F.poisson_nll_loss(x, y, log_input=False,
                                                               reduction="sum"),
     [VAR, COUNTS],
     lambda x, y: TF.poisson_nll_loss(t(x), t(y), log_input=False, reduction="sum").numpy()),
    ("gaussian_nll_loss_full", lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True),
     [X, Y, VAR], lambda x, y, v: TF.gaussian_nll_loss(t(x), t(y), t(v), full=True).numpy()),
    ("gaussian_nll_loss_one_var", lambda x, y, v: F.gaussian_nll_loss(x, y, v, reduction="none"),
     [X, Y, VAR[:, :1]],
     lambda x, y, v: TF.gaussian_nll_loss(t(x), t(y), t(v), reduction="none").numpy()),
    ("sigmoid_focal_loss", lambda x, y: F.sigmoid_focal_loss(x, y), [X, BITS], _focal_ref),
    ("sigmoid_focal_loss_normalizer", lambda x, y, n: F.sigmoid_focal_loss(x, y, n),
     [X, BITS, np.array([3.0])], lambda x, y, n: _focal_ref(x, y, n)),
    ("sigmoid_focal_loss_no_alpha", lambda x, y: F.sigmoid_focal_loss(x, y, alpha=0.0,
                                                                      gamma=1.5),
     [X, BITS], lambda x, y: _focal_ref(x, y, alpha=0.0, gamma=1.5)),
    ("dice_loss", lambda x, l: F.dice_loss(x, l),
     [R.uniform(0.1, 1.0, (2, 3, 4)), R.integers(0, 4, (2, 3, 1))], _dice_ref),
    ("triplet_margin_with_distance_loss", lambda a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1.0 - F.cosine_similarity(u, v, axis=-1),
        margin=0.3, swap=True), [X, Y, Z],
     lambda a, p, n: TF.triplet_margin_with_distance_loss(
        t(a), t(p), t(n), distance_function=lambda u, v: 1.0 - TF.cosine_similarity(u, v),
        margin=0.3, swap=True).numpy()),
    ("npair_loss", lambda a, p, l: F.npair_loss(a, p, l, l2_reg=0.1), [X, Y,
                                                                        np.array([1, 2, 1])],
     _npair_ref),
    ("multi_margin_loss", lambda x, c: F.multi_margin_loss(x, c), [X, CLS],
     lambda x, c: TF.multi_margin_loss(t(x), t(c)).numpy()),
    ("multi_margin_loss_p2_weight", lambda x, c, w: F.multi_margin_loss(
        x, c, p=2, margin=0.5, weight=w, reduction="none"), [X, CLS, W4],
     lambda x, c, w: TF.multi_margin_loss(t(x), t(c), p=2, margin=0.5, weight=t(w),
                                          reduction="none").numpy()),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_or_activation(case):
    name, fn, arrays, ref = case
    if ref is None:  # multi_label_soft_margin_loss: torch's name differs
        def ref(x, y, w):
            return TF.multilabel_soft_margin_loss(t(x), t(y), t(w)).numpy()
    check(fn, arrays, ref)


def test_gaussian_nll_loss_clamps_the_value_only_as_torch():
    v = np.array([[1e-9, 0.5], [2.0, 1e-8]])
    vd, vt = d2s.to_tensor(v, stop_gradient=False), torch.tensor(v, requires_grad=True)
    got = F.gaussian_nll_loss(d2s.to_tensor(X[:2, :2]), d2s.to_tensor(Y[:2, :2]), vd)
    want = TF.gaussian_nll_loss(t(X[:2, :2]), t(Y[:2, :2]), vt)
    got.backward()
    want.backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(vd.grad.numpy(), vt.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(d2s.to_tensor(X), d2s.to_tensor(Y), d2s.to_tensor(-VAR))


# ---- ctc_loss -------------------------------------------------------------------------------
LABELS = np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]], np.int32)
IN_LENS = np.array([6, 5, 4], np.int64)
LABEL_LENS = np.array([3, 2, 1], np.int64)


def _torch_ctc(x, reduction, blank=0, labels=LABELS):
    xt = torch.tensor(x, requires_grad=True)
    loss = TF.ctc_loss(torch.log_softmax(xt, 2), torch.tensor(labels).long(),
                       torch.tensor(IN_LENS), torch.tensor(LABEL_LENS), blank, reduction)
    (loss * torch.tensor(1.0 if reduction != "none" else [1.0, 2.0, 3.0])).sum().backward()
    return loss.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_value_and_exact_gradient_match_torch(reduction):
    x = rn(6, 3, 5)
    want, want_grad = _torch_ctc(x, reduction)
    xd = d2s.to_tensor(x, stop_gradient=False)
    loss = F.ctc_loss(xd, d2s.to_tensor(LABELS), d2s.to_tensor(IN_LENS),
                      d2s.to_tensor(LABEL_LENS), reduction=reduction)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-10)
    (loss * d2s.to_tensor(1.0 if reduction != "none" else np.array([1.0, 2.0, 3.0]))
     ).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), want_grad, rtol=1e-8, atol=1e-12)


def test_ctc_loss_blank_last_and_static_backends():
    x = rn(6, 3, 5)
    labels = np.where(LABELS == 4, 0, LABELS)  # blank=4: labels use 0..3
    want, _ = _torch_ctc(x, "mean", blank=4, labels=labels)

    def fn(x, labels, il, ll):
        return F.ctc_loss(x, labels, il, ll, blank=4)
    check(fn, [x, labels, IN_LENS, LABEL_LENS], lambda *a: np.asarray(want), grad=False,
          unknown_dims=False)
    from d2s import static  # the batch dim unknown (the time dim must be known)
    prog = static.Program()
    with static.program_guard(prog):
        out = fn(static.data("x", [6, None, 5], "float64"), static.data("l", [None, 3], "int32"),
                 static.data("a", [None], "int64"), static.data("b", [None], "int64"))
    got, = static.Executor().run(prog, feed={"x": x, "l": labels, "a": IN_LENS,
                                              "b": LABEL_LENS}, fetch_list=[out])
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_loss_norm_by_times_scales_each_sequence_gradient_only():
    x = rn(6, 3, 5)
    grads, losses = [], []
    for norm in (False, True):
        xd = d2s.to_tensor(x, stop_gradient=False)
        loss = F.ctc_loss(xd, d2s.to_tensor(LABELS), d2s.to_tensor(IN_LENS),
                          d2s.to_tensor(LABEL_LENS), reduction="sum", norm_by_times=norm)
        loss.backward()
        grads.append(xd.grad.numpy())
        losses.append(loss.numpy())
    np.testing.assert_allclose(losses[1], losses[0])
    np.testing.assert_allclose(grads[1], grads[0] / IN_LENS[None, :, None], rtol=1e-12)


def test_ctc_loss_infeasible_target_is_inf_and_layer():
    x = rn(4, 2, 3)
    loss = nn.CTCLoss(reduction="none")(d2s.to_tensor(x), d2s.to_tensor(
        np.array([[1, 1, 1], [1, 2, 1]], np.int32)), d2s.to_tensor(np.array([2, 4])),
        d2s.to_tensor(np.array([3, 3])))
    want = TF.ctc_loss(torch.log_softmax(t(x), 2), torch.tensor([[1, 1, 1], [1, 2, 1]]),
                       torch.tensor([2, 4]), torch.tensor([3, 3]), reduction="none").numpy()
    assert np.isinf(loss.numpy()[0]) and np.isinf(want[0])
    np.testing.assert_allclose(loss.numpy()[1], want[1])


class _CTCModel(d2s.nn.Layer):
    """Scores from a linear layer, then CTC: converted with the time dim unknown."""

    def __init__(self):
        super().__init__()
        self.fc = d2s.nn.Linear(4, 5)

    def forward(self, feats, labels, il, ll):
        return F.ctc_loss(self.fc(feats), labels, il, ll)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_ctc_loss_with_an_unknown_time_dim_is_one_loop_and_trains(backend):
    from d2s.static import InputSpec
    model = _CTCModel()
    model.to(dtype="float64")
    spec = [InputSpec([None, None, 4], "float64"), InputSpec([None, 3], "int32"),
            InputSpec([None], "int64"), InputSpec([None], "int64")]
    fn = d2s.jit.to_static(model.forward, input_spec=spec, backend=backend)
    w, b = model.fc.weight.numpy(), model.fc.bias.numpy()
    for steps in (6, 6) if backend == "xla" else (6, 7):
        feats = rn(steps, 3, 4)
        il = np.array([steps, 5, 4])
        loss = fn(d2s.to_tensor(feats), d2s.to_tensor(LABELS), d2s.to_tensor(il),
                  d2s.to_tensor(LABEL_LENS))
        loss.backward()
        ft = torch.tensor(feats, requires_grad=False)
        wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
        want = TF.ctc_loss(torch.log_softmax(ft @ wt + bt, 2), torch.tensor(LABELS).long(),
                           torch.tensor(il), torch.tensor(LABEL_LENS))
        want.backward()
        np.testing.assert_allclose(loss.numpy(), want.detach().numpy(), rtol=1e-9)
        np.testing.assert_allclose(model.fc.weight.grad.numpy(), wt.grad.numpy(), rtol=1e-7,
                                   atol=1e-12)
        model.fc.clear_gradients()
    assert len(fn.program_cache) == 1


# ---- random activations, layers -------------------------------------------------------------
def test_rrelu_training_slopes_in_range():
    x = -np.abs(rn(2000)) - 0.1
    out = F.rrelu(d2s.to_tensor(x), 0.1, 0.3).numpy()
    slope = out / x
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    pos = np.abs(rn(10))
    np.testing.assert_array_equal(F.rrelu(d2s.to_tensor(pos)).numpy(), pos)
    layer = nn.RReLU(0.1, 0.3)
    layer.eval()
    np.testing.assert_allclose(layer(d2s.to_tensor(x)).numpy(), x * 0.2)


def test_gumbel_softmax_soft_and_hard():
    x = rn(500, 4)
    soft = F.gumbel_softmax(d2s.to_tensor(x), temperature=0.5).numpy()
    np.testing.assert_allclose(soft.sum(-1), 1.0)
    xt = d2s.to_tensor(x, stop_gradient=False)
    hard = F.gumbel_softmax(xt, hard=True, axis=0)
    h = hard.numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(0) == 1).all()
    # the sample follows softmax(x): the most likely class wins most often
    counts = np.bincount(F.gumbel_softmax(d2s.to_tensor(np.tile([0.0, 2.0, 0.0], (4000, 1))),
                                          hard=True).numpy().argmax(-1), minlength=3)
    assert abs(counts[1] / 4000 - np.exp(2) / (np.exp(2) + 2)) < 0.04
    (hard * d2s.to_tensor(rn(500, 4))).sum().backward()
    assert np.abs(xt.grad.numpy()).sum() > 0  # the soft sample's gradient


def test_layers_match_functions():
    x, y = d2s.to_tensor(X), d2s.to_tensor(Y)
    np.testing.assert_allclose(nn.GLU()(x).numpy(), TF.glu(t(X)).numpy())
    np.testing.assert_allclose(nn.Softmin(axis=0)(x).numpy(), TF.softmin(t(X), 0).numpy())
    np.testing.assert_allclose(nn.Maxout(2)(d2s.to_tensor(X.reshape(1, 4, 3))).numpy(),
                               X.reshape(1, 2, 2, 3).max(2))
    np.testing.assert_allclose(nn.PairwiseDistance()(x, y).numpy(),
                               TF.pairwise_distance(t(X), t(Y)).numpy())
    np.testing.assert_allclose(nn.CosineSimilarity(axis=1)(x, y).numpy(),
                               TF.cosine_similarity(t(X), t(Y)).numpy())
    v = rn(2, 3, 2, 2)
    np.testing.assert_allclose(nn.Softmax2D()(d2s.to_tensor(v)).numpy(),
                               torch.nn.Softmax2d()(t(v)).numpy())
    np.testing.assert_allclose(nn.TripletMarginLoss(margin=0.5)(x, y, d2s.to_tensor(Z)).numpy(),
                               TF.triplet_margin_loss(t(X), t(Y), t(Z), 0.5).numpy())
    np.testing.assert_allclose(nn.TripletMarginWithDistanceLoss(margin=0.5)(
        x, y, d2s.to_tensor(Z)).numpy(), TF.triplet_margin_loss(t(X), t(Y), t(Z), 0.5).numpy())
    np.testing.assert_allclose(nn.MultiMarginLoss(margin=2.0)(x, d2s.to_tensor(CLS)).numpy(),
                               TF.multi_margin_loss(t(X), t(CLS), margin=2.0).numpy())
    np.testing.assert_allclose(nn.GaussianNLLLoss()(x, y, d2s.to_tensor(VAR)).numpy(),
                               TF.gaussian_nll_loss(t(X), t(Y), t(VAR)).numpy())
    np.testing.assert_allclose(nn.PoissonNLLLoss()(x, d2s.to_tensor(COUNTS)).numpy(),
                               TF.poisson_nll_loss(t(X), t(COUNTS)).numpy())
    np.testing.assert_allclose(
        nn.MultiLabelSoftMarginLoss()(x, d2s.to_tensor(BITS)).numpy(),
        TF.multilabel_soft_margin_loss(t(X), t(BITS)).numpy())
    np.testing.assert_allclose(
        nn.CosineEmbeddingLoss()(x, y, d2s.to_tensor(np.array([1, -1, -1]))).numpy(),
        TF.cosine_embedding_loss(t(X), t(Y), t(np.array([1, -1, -1]))).numpy())
