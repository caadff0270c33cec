"""Masked-LM labels as HuggingFace's data collator makes them: -100 for
every token not masked, the default `ignore_index` of `cross_entropy`.
The mean loss ignores them (PyTorch's value), eagerly and inside converted
programs on numpy and xla; the hand-written form (`reduction='none'`
averaged over the kept labels) gives the same loss and gradient."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F

from harness import BACKENDS, close, t

LOGITS = np.random.RandomState(0).randn(6, 5).astype("float32")
LABELS = np.array([-100, 3, -100, 0, 4, -100])


def test_eager_mean_loss_ignores_minus_100_like_pytorch():
    torch = pytest.importorskip("torch")
    got = F.cross_entropy(t(LOGITS), t(LABELS)).numpy()
    expected = torch.nn.functional.cross_entropy(torch.tensor(LOGITS), torch.tensor(LABELS))
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6)
    kept = LABELS != -100  # the same as the loss over the kept rows only
    np.testing.assert_allclose(got, F.cross_entropy(t(LOGITS[kept]), t(LABELS[kept])).numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_mean_loss_ignores_minus_100(backend):
    static = d2s.jit.to_static(lambda x, y: F.cross_entropy(x, y), backend=backend)
    kept = LABELS != -100
    expected = F.cross_entropy(t(LOGITS[kept]), t(LABELS[kept])).numpy()
    close(static(t(LOGITS), t(LABELS)).numpy(), expected, backend, "loss")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_workaround_matches_eager(backend):
    def mlm_loss(logits, labels):
        per_token = F.cross_entropy(logits, labels, reduction="none").reshape([-1])
        kept = (labels != -100).astype("float32")
        return (per_token * kept).sum() / kept.sum()

    static = d2s.jit.to_static(mlm_loss, backend=backend)
    x = t(LOGITS)
    x.stop_gradient = False
    loss = static(x, t(LABELS))
    loss.backward()
    xe = t(LOGITS)
    xe.stop_gradient = False
    expected = F.cross_entropy(xe, t(LABELS))
    expected.backward()
    close(loss.numpy(), expected.numpy(), backend, "loss")
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
