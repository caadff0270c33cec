"""d2s.vision.ops.nms (d2s/vision/_detection.py, the `nms_keep` op): kept
indices vs a plain-Python greedy reference written from the definition,
with and without scores, per category, top_k; converted on numpy; on xla
(the data-dependent pick runs on numpy after the warning, the keep mask
itself compiles); unknown dims; ONNX Runtime (NonMaxSuppression)."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.core.dispatch import bind
from d2s.static.backend import BackendFallbackWarning
from d2s.vision.ops import nms
from ops_check import check

R = np.random.default_rng(5)


def boxes(n, dtype="float32"):
    lo = R.uniform(0, 1.5, size=(n, 2))
    return np.concatenate([lo, lo + R.uniform(0.5, 3, size=(n, 2))], 1).astype(dtype)


def iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def ref_nms(b, thr, scores=None, cats=None, categories=None, top_k=None):
    order = list(range(len(b))) if scores is None else \
        sorted(range(len(b)), key=lambda i: -scores[i])
    kept = []
    for i in order:
        if cats is not None and int(cats[i]) not in categories:
            continue
        if all(iou(b[i], b[j]) <= thr for j in kept
               if cats is None or cats[j] == cats[i]):
            kept.append(i)
    if top_k is not None and scores is not None:
        kept = kept[:top_k]
    return np.array(kept, np.int64)


B8, S8 = boxes(8), R.permutation(8).astype("float32") / 8
C8 = np.array([0, 1, 0, 2, 1, 0, 1, 2])
CASES = [
    ("no_scores", lambda b: nms(b, 0.3), [B8], lambda b: ref_nms(b, 0.3)),
    ("scores", lambda b, s: nms(b, 0.2, s), [B8, S8], lambda b, s: ref_nms(b, 0.2, s)),
    ("scores_f64_top_k", lambda b, s: nms(b, 0.1, scores=s, top_k=3),
     [boxes(8, "float64"), R.permutation(8) / 8.0], lambda b, s: ref_nms(b, 0.1, s, top_k=3)),
    ("categories", lambda b, s, c: nms(b, 0.1, s, c, [0, 1]), [B8, S8, C8],
     lambda b, s, c: ref_nms(b, 0.1, s, c, [0, 1])),
    ("categories_top_k", lambda b, s, c: nms(b, 0.1, s, c, [0, 1, 2], top_k=4), [B8, S8, C8],
     lambda b, s, c: ref_nms(b, 0.1, s, c, [0, 1, 2], top_k=4)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nms(case):
    name, fn, arrays, ref = case
    want = ref(*arrays)
    assert 0 < len(want) < len(arrays[0])  # some suppressed, some kept
    check(fn, arrays, ref, grad=False, xla=False)


def test_nms_on_xla_runs_the_pick_on_numpy_and_the_mask_compiles():
    b, s = B8, S8
    sf = d2s.jit.to_static(lambda b, s: nms(b, 0.2, s), backend="xla")
    with pytest.warns(BackendFallbackWarning):
        got = sf(d2s.to_tensor(b), d2s.to_tensor(s))
    np.testing.assert_array_equal(got.numpy(), ref_nms(b, 0.2, s))

    def mask(b, g):
        return bind("nms_keep", b, g, iou_threshold=0.1)
    g = d2s.to_tensor(C8)
    eager = mask(d2s.to_tensor(b), g).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        got = d2s.jit.to_static(mask, backend="xla")(d2s.to_tensor(b), g).numpy()
    np.testing.assert_array_equal(got, eager)
    kept = np.flatnonzero(eager)
    np.testing.assert_array_equal(kept, np.sort(ref_nms(b, 0.1, np.arange(8, 0, -1), C8,
                                                         [0, 1, 2])))


def test_nms_bad_input():
    with pytest.raises(ValueError, match="boxes must be"):
        nms(d2s.to_tensor(np.zeros((3, 3), "float32")))
    with pytest.raises(ValueError, match="categories"):
        nms(d2s.to_tensor(B8), 0.3, d2s.to_tensor(S8), d2s.to_tensor(C8))
