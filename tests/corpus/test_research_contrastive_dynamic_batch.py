"""Contrastive and metric-learning losses as papers' reference code writes
them, converted with a `None` batch dim: SimCLR's NT-Xent masks the
similarity matrix's diagonal with `eye(2 * n)` (subtracted, or a bool mask
for `masked_fill`), batch-all triplet mining masks anchors with
`~eye(n)`. `n` is then computed by the program: `eye` of a run-time size
is built in the program, so one program serves every batch size. Loss and
gradients compared with eager on numpy and xla for two batch sizes, and
the loss checked against a numpy reference."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t


def nt_xent_subtract(z1, z2, tau=0.5):
    n = z1.shape[0]
    z = F.normalize(d2s.concat([z1, z2]), axis=1)
    sim = d2s.matmul(z, z, transpose_y=True) / tau
    sim = sim - d2s.eye(2 * n) * 1e9
    labels = d2s.concat([d2s.arange(n) + n, d2s.arange(n)])
    return F.cross_entropy(sim, labels)


def nt_xent_masked(z1, z2, tau=0.5):
    n = z1.shape[0]
    z = F.normalize(d2s.concat([z1, z2]), axis=1)
    sim = d2s.matmul(z, z, transpose_y=True) / tau
    sim = d2s.masked_fill(sim, d2s.eye(2 * n, dtype="bool"), -1e9)
    labels = d2s.concat([d2s.arange(n, 2 * n), d2s.arange(0, n)])
    return F.cross_entropy(sim, labels)


def triplet_batch_all(emb, labels, margin=0.2):
    d = ((emb.unsqueeze(1) - emb.unsqueeze(0)) ** 2).sum(-1)
    loss = d.unsqueeze(2) - d.unsqueeze(1) + margin
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    not_self = ~d2s.eye(labels.shape[0], dtype="bool")
    valid = (same & not_self).unsqueeze(2) & (~same).unsqueeze(1)
    loss = F.relu(loss) * valid.astype("float32")
    return loss.sum() / ((loss > 1e-16).astype("float32").sum() + 1e-16)


def nt_xent_reference(z1, z2, tau=0.5):
    z = np.concatenate([z1, z2]).astype("float64")
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    n = len(z1)
    sim = z @ z.T / tau
    np.fill_diagonal(sim, -np.inf)
    pos = np.concatenate([np.arange(n, 2 * n), np.arange(n)])
    lse = np.log(np.exp(sim).sum(1))
    return (lse - sim[np.arange(2 * n), pos]).mean()


RNG = np.random.RandomState(0)
PAIRS = {n: (RNG.randn(n, 4).astype("float32"), RNG.randn(n, 4).astype("float32")) for n in (3, 5)}
TRIPLETS = {n: (RNG.randn(n, 3).astype("float32"), RNG.randint(0, 2, n)) for n in (4, 6)}
CASES = {
    "nt_xent_subtract": (nt_xent_subtract, [InputSpec([None, 4])] * 2, PAIRS),
    "nt_xent_masked": (nt_xent_masked, [InputSpec([None, 4])] * 2, PAIRS),
    "triplet_batch_all": (triplet_batch_all, [InputSpec([None, 3]), InputSpec([None], "int64")],
                          TRIPLETS),
}


@pytest.mark.parametrize("fn", [nt_xent_subtract, nt_xent_masked])
def test_nt_xent_matches_numpy(fn):
    z1, z2 = PAIRS[3]
    np.testing.assert_allclose(fn(t(z1), t(z2)).numpy(), nt_xent_reference(z1, z2), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_loss_and_gradient_for_every_batch_size(case, backend):
    fn, spec, data = CASES[case]
    static = d2s.jit.to_static(fn, input_spec=spec, backend=backend)
    for n, (a, b) in data.items():
        results = []
        for f in (fn, static):
            x = t(a)
            x.stop_gradient = False
            loss = f(x, t(b))
            loss.backward()
            results.append((loss.numpy(), x.grad.numpy()))
        close(results[1][0], results[0][0], backend, f"loss, batch {n}")
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
    assert len(static.program_cache) == 1


def eye_plus(x):
    return d2s.eye(x.shape[0], x.shape[1] + 1, dtype="int32")[:, 1:] + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_eye_of_run_time_rows_and_columns(backend):
    static = d2s.jit.to_static(eye_plus, input_spec=[InputSpec([None, None], "int32")],
                               backend=backend)
    for shape in ((2, 3), (4, 1), (3, 3)):
        x = np.arange(np.prod(shape), dtype="int32").reshape(shape)
        expected = np.eye(shape[0], shape[1] + 1, dtype="int32")[:, 1:] + x
        np.testing.assert_array_equal(static(t(x, "int32")).numpy(), expected)
    assert len(static.program_cache) == 1
