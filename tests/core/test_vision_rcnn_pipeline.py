"""A two-stage detector's RoI path, as PaddleDetection writes it, end to end:
generate_proposals -> distribute_fpn_proposals -> roi_align per level (with
each level's RoIs per image) -> concat -> restore the proposals' order.
Eager equals a per-proposal recomputation, and to_static (numpy; xla, whose
data-dependent picks run on numpy after the warning) equals eager, with an
unknown batch dim."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec
from d2s.static.backend import BackendFallbackWarning
from d2s.vision.ops import distribute_fpn_proposals, generate_proposals, roi_align

R = np.random.default_rng(8)
A, H, W = 2, 4, 4


def inputs(n=2):
    scores = R.uniform(0, 1, size=(n, A, H, W)).astype("float32")
    deltas = R.normal(0, 0.5, size=(n, 4 * A, H, W)).astype("float32")
    cy, cx = np.meshgrid(np.arange(H) * 8 + 4.0, np.arange(W) * 8 + 4.0, indexing="ij")
    half = np.array([[3.0, 3.0], [9.0, 8.0]])
    anchors = np.stack([cx[..., None] - half[:, 0], cy[..., None] - half[:, 1],
                        cx[..., None] + half[:, 0], cy[..., None] + half[:, 1]], -1)
    variances = np.ones_like(anchors)
    img = np.array([[32, 32]] * n, "float32")
    p2 = R.normal(size=(n, 3, 8, 8)).astype("float32")    # stride 4
    p3 = R.normal(size=(n, 3, 4, 4)).astype("float32")    # stride 8
    return [scores, deltas, img, anchors.astype("float32"), variances.astype("float32"), p2, p3]


def head(scores, deltas, img, anchors, variances, p2, p3):
    rois, probs, num = generate_proposals(scores, deltas, img, anchors, variances,
                                          pre_nms_top_n=20, post_nms_top_n=8, nms_thresh=0.6,
                                          return_rois_num=True)
    multi, restore, per_level = distribute_fpn_proposals(rois, 2, 3, 3, 12, rois_num=num)
    pooled = [roi_align(f, r, n, 2, spatial_scale=1.0 / s)
              for f, r, n, s in zip((p2, p3), multi, per_level, (4, 8))]
    feats = d2s.concat(pooled)[restore[:, 0]]                   # proposals' order again
    return rois, num, feats * probs.reshape([-1, 1, 1, 1])


X = inputs()


def test_pipeline_eager_matches_per_proposal():
    rois, num, feats = head(*[d2s.to_tensor(a) for a in X])
    rois, num, feats = rois.numpy(), num.numpy(), feats.numpy()
    assert len(rois) == num.sum() and num.min() > 1
    multi, _, _ = distribute_fpn_proposals(d2s.to_tensor(rois), 2, 3, 3, 12,
                                           rois_num=d2s.to_tensor(num))
    assert min(len(m.numpy()) for m in multi) > 0              # both levels used
    probs = generate_proposals(*[d2s.to_tensor(a) for a in X[:5]], pre_nms_top_n=20,
                               post_nms_top_n=8, nms_thresh=0.6)[1].numpy()
    image = np.repeat(np.arange(len(num)), num)
    for i, box in enumerate(rois):                                # one RoI at a time
        lvl = min(3, max(2, int(np.floor(np.log2(np.sqrt(
            (box[2] - box[0]) * (box[3] - box[1])) / 12 + 1e-6) + 3))))
        fmap, stride = (X[5], 4) if lvl == 2 else (X[6], 8)
        one = roi_align(d2s.to_tensor(fmap[image[i]:image[i] + 1]), d2s.to_tensor(box[None]),
                        d2s.to_tensor(np.array([1], "int32")), 2, spatial_scale=1.0 / stride)
        np.testing.assert_allclose(feats[i], one.numpy()[0] * probs[i, 0], rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_pipeline_converted_equals_eager(backend):
    eager = head(*[d2s.to_tensor(a) for a in X])
    specs = [InputSpec([None] + list(a.shape[1:]), "float32") if k != 3 and k != 4
             else InputSpec(list(a.shape), "float32") for k, a in enumerate(X)]
    sf = d2s.jit.to_static(head, input_spec=specs, backend=backend)
    if backend == "xla":
        with pytest.warns(BackendFallbackWarning):
            got = sf(*[d2s.to_tensor(a) for a in X])
    else:
        got = sf(*[d2s.to_tensor(a) for a in X])
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
