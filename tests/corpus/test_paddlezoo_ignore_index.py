"""`F.cross_entropy` with Paddle's default `ignore_index=-100`, as PaddleNLP's
token-classification and masked-LM heads write it: the labels of padding and
special tokens are -100 and leave the loss and its mean's divisor.

The default takes the fused cross-entropy op, which raised "labels must lie
in [0, C)" for them, eagerly and converted. Expected values from PyTorch
(the same convention), and eager vs converted on numpy and xla over
several training steps."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, train_and_compare

LABELS = np.array([[1, 2, -100, 0], [-100, -100, 3, 1]], "int64")


class TokenTagger(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.cls = nn.Linear(6, 4)

    def forward(self, input_ids, labels):
        logits = self.cls(F.tanh(self.emb(input_ids)))
        return F.cross_entropy(logits.reshape([-1, 4]), labels.reshape([-1]))


@pytest.mark.parametrize("ignored", ["some", "none", "all_but_one"])
def test_ignored_labels_leave_the_mean_like_torch(ignored):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(8, 4)).astype("float32")
    labels = {"some": LABELS.reshape(-1), "none": np.abs(LABELS.reshape(-1)) % 4,
              "all_but_one": np.array([-100] * 7 + [2], "int64")}[ignored]
    x = d2s.to_tensor(logits, stop_gradient=False)
    loss = F.cross_entropy(x, d2s.to_tensor(labels))
    loss.backward()
    tx = torch.tensor(logits, requires_grad=True)
    t_loss = torch.nn.functional.cross_entropy(tx, torch.tensor(labels), ignore_index=-100)
    t_loss.backward()
    np.testing.assert_allclose(loss.numpy(), t_loss.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_token_tagger_with_ignored_labels_trains_like_eager(backend):
    rng = np.random.default_rng(1)
    batches = [(rng.integers(0, 10, size=(2, 4)).astype("int64"), np.roll(LABELS, i, axis=1))
               for i in range(3)]
    train_and_compare(TokenTagger, batches, backend,
                      input_spec=[InputSpec([None, None], "int64"),
                                  InputSpec([None, None], "int64")])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_label_neither_class_nor_ignored_still_raises(backend):
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)

    static = d2s.jit.to_static(loss, backend=backend)
    logits = d2s.to_tensor(np.zeros((3, 4), "float32"))
    with pytest.raises(ValueError,
                       match=r"labels must lie in \[0, 4\), got \[-1, 0\] \(a label of -100"):
        loss(logits, d2s.to_tensor(np.array([0, -1, -100], "int64")))
    with pytest.raises(ValueError,
                       match=r"labels must lie in \[0, 4\), got \[0, 4\] \(a label of -100"):
        static(logits, d2s.to_tensor(np.array([0, 4, -100], "int64")))
