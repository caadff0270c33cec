"""F.multi_label_margin_loss / nn.MultiLabelMarginLoss: values and input
gradients against PyTorch's multilabel_margin_loss (targets ended by -1,
repeated targets, a row with no target), every reduction; numpy+xla static,
unknown batch dim and ONNX Runtime through the shared ops_check."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F

from ops_check import check

RNG = np.random.default_rng(17)
X = RNG.standard_normal((4, 5))
LABEL = np.array([[3, 0, -1, 2, 1], [1, 1, 4, -1, -1], [-1, 2, 3, 0, 1], [0, 1, 2, 3, 4]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_matches_torch(reduction):
    torch = pytest.importorskip("torch")
    xd = d2s.to_tensor(X, stop_gradient=False)
    xt = torch.tensor(X, requires_grad=True)
    yd = F.multi_label_margin_loss(xd, d2s.to_tensor(LABEL), reduction=reduction)
    yt = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(LABEL), reduction=reduction)
    np.testing.assert_allclose(yd.numpy(), yt.detach().numpy(), rtol=1e-12)
    w = RNG.standard_normal(yt.shape)
    (yd * d2s.to_tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    layer = nn.MultiLabelMarginLoss(reduction=reduction)
    np.testing.assert_allclose(layer(d2s.to_tensor(X), d2s.to_tensor(LABEL)).numpy(),
                               yt.detach().numpy(), rtol=1e-12)


def _ref(x, label):
    out = np.zeros(len(x))
    for n in range(len(x)):
        targets = []
        for v in label[n]:
            if v < 0:
                break
            targets.append(v)
        others = [k for k in range(x.shape[1]) if k not in targets]
        out[n] = sum(max(0.0, 1 - (x[n, j] - x[n, k])) for j in targets for k in others)
    return out / x.shape[1]


def test_static_xla_onnx():
    check(lambda x, lab: F.multi_label_margin_loss(x, lab, reduction="none"), [X, LABEL],
          _ref, unknown="first")


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        F.multi_label_margin_loss(d2s.to_tensor(X[0]), d2s.to_tensor(LABEL[0]))
    with pytest.raises(TypeError, match="integers"):
        F.multi_label_margin_loss(d2s.to_tensor(X), d2s.to_tensor(X))
