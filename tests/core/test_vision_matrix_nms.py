"""d2s.vision.ops.matrix_nms (d2s/vision/_matrix_nms.py, a composite) vs a
plain-Python reference written from Matrix NMS's definition (Paddle's
kernel semantics: candidates above score_threshold, best nms_top_k per
class, decayed by the worst ratio over better candidates, kept above
post_threshold, keep_top_k per image); eager, converted on numpy, unknown
dims and ONNX Runtime; on xla the decision compiles and the final pick
runs on numpy after the backend's warning."""
import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning
from d2s.vision.ops import matrix_nms
from ops_check import check

R = np.random.default_rng(11)


def boxes(n, m, dtype="float32"):
    centers = R.uniform(2, 6, size=(n, 1, 2)) + R.uniform(-1.5, 1.5, size=(n, m, 2))
    half = R.uniform(0.5, 2.5, size=(n, m, 2))
    return np.concatenate([centers - half, centers + half], -1).astype(dtype)


def jaccard(a, b, normalized):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    norm = 0.0 if normalized else 1.0

    def area(x):
        return 0.0 if x[2] < x[0] or x[3] < x[1] else (x[2] - x[0] + norm) * (x[3] - x[1] + norm)
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + norm) * (min(a[3], b[3]) - max(a[1], b[1]) + norm)
    return inter / (area(a) + area(b) - inter)


def ref(bb, sc, st, pt, nms_top_k, keep_top_k, gaussian=False, sigma=2.0, bg=0,
        normalized=True):
    n_img, n_cls, m = sc.shape
    out, index, num = [], [], []
    for n in range(n_img):
        dets = []
        for c in range(n_cls):
            if c == bg:
                continue
            cand = sorted((i for i in range(m) if sc[n, c, i] > st), key=lambda i: -sc[n, c, i])
            if nms_top_k > -1:
                cand = cand[:nms_top_k]
            iou_max = []
            for i, bi in enumerate(cand):
                ious = [jaccard(bb[n, bi], bb[n, bj], normalized) for bj in cand[:i]]
                iou_max.append(max(ious, default=0.0))
                decay = 1.0
                for j in range(i):
                    d = (np.exp((iou_max[j] ** 2 - ious[j] ** 2) * sigma) if gaussian
                         else (1 - ious[j]) / (1 - iou_max[j]))
                    decay = min(decay, d)
                if decay * sc[n, c, bi] > pt:
                    dets.append((decay * sc[n, c, bi], c, bi))
        dets.sort(key=lambda d: -d[0])
        if keep_top_k > -1:
            dets = dets[:keep_top_k]
        out += [[c, s, *bb[n, i]] for s, c, i in dets]
        index += [[n * m + i] for s, c, i in dets]
        num.append(len(dets))
    return (np.array(out, bb.dtype).reshape(-1, 6), np.array(num, np.int32),
            np.array(index, np.int32).reshape(-1, 1))


B, S = boxes(2, 7), R.uniform(0, 1, size=(2, 3, 7)).astype("float32")
B64, S64 = boxes(2, 6, "float64"), R.uniform(0, 1, size=(2, 4, 6))
CASES = [  # (name, arrays, kwargs)
    ("linear", [B, S], dict(score_threshold=0.1, post_threshold=0.2, nms_top_k=-1,
                            keep_top_k=-1)),
    ("gaussian_top_k", [B, S], dict(score_threshold=0.05, post_threshold=0.1, nms_top_k=4,
                                    keep_top_k=5, use_gaussian=True, gaussian_sigma=2.0)),
    ("pixels_no_background_f64", [B64, S64],
     dict(score_threshold=0.2, post_threshold=0.15, nms_top_k=5, keep_top_k=6,
          background_label=-1, normalized=False)),
    ("background_2_gaussian_f64", [B64, S64],
     dict(score_threshold=0.3, post_threshold=0.3, nms_top_k=-1, keep_top_k=-1,
          background_label=2, use_gaussian=True, gaussian_sigma=3.0)),
]
REF_KW = dict(score_threshold="st", post_threshold="pt", use_gaussian="gaussian",
              gaussian_sigma="sigma", background_label="bg")


def _ref_kwargs(kw):
    return {REF_KW.get(k, k): v for k, v in kw.items()}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matrix_nms(case):
    name, arrays, kw = case
    want = ref(*arrays, **_ref_kwargs(kw))
    sc, bg = arrays[1], kw.get("background_label", 0)
    candidates = sum(int((sc[:, c] > kw["score_threshold"]).sum())
                     for c in range(sc.shape[1]) if c != bg)
    assert 0 < len(want[0]) < candidates          # some kept, some decayed away
    check(lambda b, s: matrix_nms(b, s, return_index=True, **kw), arrays,
          lambda b, s: ref(b, s, **_ref_kwargs(kw)), grad=False, xla=False)


def test_matrix_nms_outputs_and_xla():
    kw = CASES[0][2]
    out, num, index = matrix_nms(d2s.to_tensor(B), d2s.to_tensor(S), **kw)
    assert index is None and num.dtype == d2s.int32        # Paddle's defaults
    out, num, index = matrix_nms(d2s.to_tensor(B), d2s.to_tensor(S), return_rois_num=False,
                                 **kw)
    assert num is None and index is None
    want = ref(B, S, **_ref_kwargs(kw))
    sf = d2s.jit.to_static(lambda b, s: matrix_nms(b, s, return_index=True, **kw)[::2],
                           backend="xla")
    with pytest.warns(BackendFallbackWarning):
        got = sf(d2s.to_tensor(B), d2s.to_tensor(S))
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-5)
    np.testing.assert_array_equal(got[1].numpy(), want[2])


def test_matrix_nms_bad_input():
    with pytest.raises(ValueError, match=r"bboxes must be \[N, M, 4\]"):
        matrix_nms(d2s.to_tensor(B[0]), d2s.to_tensor(S), 0.1, 0.1, -1, -1)
    with pytest.raises(ValueError, match=r"scores must be \[N, C, M\]"):
        matrix_nms(d2s.to_tensor(B), d2s.to_tensor(S[0]), 0.1, 0.1, -1, -1)
