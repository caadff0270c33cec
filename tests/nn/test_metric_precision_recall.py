"""d2s.metric.Precision / Recall: counts accumulated over batches equal the
numpy definitions (predictions rounded at 0.5); reset; 0.0 when undefined."""
import numpy as np
import pytest

import d2s
from d2s import metric


def test_precision_and_recall_over_batches():
    rng = np.random.default_rng(1)
    preds = [rng.random((6, 1)), rng.random(5)]
    labels = [rng.integers(0, 2, (6, 1)), rng.integers(0, 2, 5)]
    p, r = metric.Precision(), metric.Recall()
    for pr, lb in zip(preds, labels):
        p.update(d2s.to_tensor(pr), d2s.to_tensor(lb))
        r.update(pr, lb)
    pred = np.concatenate([x.reshape(-1) for x in preds]) >= 0.5
    lab = np.concatenate([x.reshape(-1) for x in labels]) == 1
    assert p.accumulate() == pytest.approx((pred & lab).sum() / pred.sum())
    assert r.accumulate() == pytest.approx((pred & lab).sum() / lab.sum())
    assert p.name() == "precision" and r.name() == "recall"
    p.reset()
    r.reset()
    p.update(np.zeros(3), np.ones(3))
    r.update(np.ones(3), np.zeros(3))
    assert p.accumulate() == 0.0 and r.accumulate() == 0.0
    with pytest.raises(ValueError, match="same number"):
        p.update(np.zeros(3), np.ones(4))
