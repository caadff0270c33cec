"""d2s.vision.ops.generate_proposals (d2s/vision/_proposals.py: composites
and the `proposal_nms_keep` op) vs a plain-Python reference written from
Paddle's definition (pre-NMS top-n, center-size decoding with the log-size
cap, clipping, the min-size / center filter, greedy NMS with the pixel
offset and the eta-adaptive threshold, post-NMS top-n, a zero box for an
empty image); eager, converted on numpy, unknown dims; the keep mask op
compiles on xla (the final pick runs on numpy after the warning); ONNX
Runtime runs it without pixel_offset and eta (NonMaxSuppression has
neither) and the export with them fails naming the options."""
import math
import warnings

import numpy as np
import pytest

import d2s
from d2s.core.dispatch import bind
from d2s.static.backend import BackendFallbackWarning
from d2s.vision.ops import generate_proposals
from ops_check import check

R = np.random.default_rng(17)
A, H, W = 2, 3, 3


def jaccard(a, b, normalized):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    norm = 0.0 if normalized else 1.0

    def area(x):
        return 0.0 if x[2] < x[0] or x[3] < x[1] else (x[2] - x[0] + norm) * (x[3] - x[1] + norm)
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + norm) * (min(a[3], b[3]) - max(a[1], b[1]) + norm)
    return inter / (area(a) + area(b) - inter)


def ref(scores, deltas, img, anchors, variances, pre, post, thr, min_size, eta, pixel_offset):
    off = 1.0 if pixel_offset else 0.0
    anc, var = anchors.reshape(-1, 4), variances.reshape(-1, 4)
    rois, probs, nums = [], [], []
    for n in range(scores.shape[0]):
        s = scores[n].transpose(1, 2, 0).reshape(-1)
        d = deltas[n].transpose(1, 2, 0).reshape(-1, 4)
        order = sorted(range(len(s)), key=lambda i: -s[i])
        order = order[:pre] if pre > 0 else order
        imh, imw = img[n]
        cands = []
        for i in order:
            a, v, t = anc[i], var[i], d[i]
            aw, ah = a[2] - a[0] + off, a[3] - a[1] + off
            cx, cy = v[0] * t[0] * aw + a[0] + aw / 2, v[1] * t[1] * ah + a[1] + ah / 2
            bw = math.exp(min(v[2] * t[2], math.log(1000 / 16))) * aw
            bh = math.exp(min(v[3] * t[3], math.log(1000 / 16))) * ah
            x1, y1 = cx - bw / 2, cy - bh / 2
            x2, y2 = cx + bw / 2 - off, cy + bh / 2 - off
            x1, x2 = (max(min(x, imw - off), 0) for x in (x1, x2))
            y1, y2 = (max(min(y, imh - off), 0) for y in (y1, y2))
            ws, hs = x2 - x1 + off, y2 - y1 + off
            ok = ws >= max(min_size, 1) and hs >= max(min_size, 1)
            if pixel_offset:
                ok = ok and x1 + ws / 2 <= imw and y1 + hs / 2 <= imh
            if ok:
                cands.append(([x1, y1, x2, y2], s[i]))
        if not cands:
            kept = [([0.0] * 4, 0.0)]
        elif thr <= 0:
            kept = cands
        else:
            kept, t = [], thr
            for box, sc in cands:
                if all(jaccard(box, k, not pixel_offset) <= t for k, _ in kept):
                    kept.append((box, sc))
                    if eta < 1 and t > 0.5:
                        t *= eta
            kept = kept[:post] if post > 0 else kept
        rois += [b for b, _ in kept]
        probs += [[sc] for _, sc in kept]
        nums.append(len(kept))
    dt = scores.dtype
    return (np.array(rois, dt).reshape(-1, 4), np.array(probs, dt).reshape(-1, 1),
            np.array(nums, np.int32))


def inputs(n, dtype="float32", img=((30, 28), (26, 32))):
    scores = R.uniform(0, 1, size=(n, A, H, W)).astype(dtype)
    deltas = R.normal(0, 0.4, size=(n, 4 * A, H, W)).astype(dtype)
    cy, cx = np.meshgrid(np.arange(H) * 8 + 6.0, np.arange(W) * 8 + 6.0, indexing="ij")
    half = np.array([[5.0, 5.0], [8.0, 6.0]])                        # per anchor (w, h) / 2
    anchors = np.stack([cx[..., None] - half[:, 0], cy[..., None] - half[:, 1],
                        cx[..., None] + half[:, 0], cy[..., None] + half[:, 1]], -1)
    variances = np.broadcast_to([0.5, 0.5, 1.0, 1.0], anchors.shape)
    return [scores, deltas, np.array(img[:n], dtype), anchors.astype(dtype),
            np.ascontiguousarray(variances).astype(dtype)]


X2, X64 = inputs(2), inputs(2, "float64")
CASES = [  # (name, arrays, (pre, post, nms_thresh, min_size, eta, pixel_offset), onnx)
    ("defaults_like", X2, (12, 5, 0.5, 0.1, 1.0, False), True),
    ("pixel_offset_eta_f64", X64, (-1, 0, 0.9, 6.0, 0.7, True), False),
    ("no_nms_no_post_top_n", X2, (6, 3, 0.0, 7.0, 1.0, False), True),
    ("one_image_empty", inputs(2, img=((30, 28), (1, 1))), (10, 4, 0.4, 2.0, 1.0, True), False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_generate_proposals(case):
    name, arrays, (pre, post, thr, ms, eta, po), onnx = case
    want = ref(*arrays, pre, post, thr, ms, eta, po)
    if name == "one_image_empty":
        assert want[2][1] == 1 and not want[0][-1].any()
    else:
        assert 1 < want[2].min() and want[2].max() < H * W * A       # some dropped
    check(lambda *xs: generate_proposals(*xs, pre_nms_top_n=pre, post_nms_top_n=post,
                                         nms_thresh=thr, min_size=ms, eta=eta, pixel_offset=po,
                                         return_rois_num=True),
          arrays, lambda *xs: ref(*xs, pre, post, thr, ms, eta, po), grad=False, xla=False,
          onnx=onnx, rtol=1e-5)


def test_eta_and_pixel_offset_change_the_result():
    """The reference itself tells the options apart on these inputs (so the
    cases above test them)."""
    base = ref(*X64, -1, 0, 0.9, 6.0, 1.0, True)
    assert len(ref(*X64, -1, 0, 0.9, 6.0, 0.7, True)[0]) < len(base[0])
    assert not np.array_equal(ref(*X2, 12, 5, 0.5, 0.1, 1.0, True)[0],
                              ref(*X2, 12, 5, 0.5, 0.1, 1.0, False)[0])


def test_keep_mask_compiles_on_xla_and_whole_op_falls_back():
    rng = np.random.default_rng(2)
    lo = rng.uniform(0, 3, size=(2, 9, 2))
    boxes = np.concatenate([lo, lo + rng.uniform(3, 8, size=(2, 9, 2))], -1)
    valid = rng.uniform(size=(2, 9)) > 0.2
    for thr, eta, po in ((0.3, 1.0, False), (0.75, 0.8, True)):
        def mask(b, v):
            return bind("proposal_nms_keep", b, v, iou_threshold=thr, eta=eta, pixel_offset=po)
        eager = mask(d2s.to_tensor(boxes), d2s.to_tensor(valid)).numpy()
        assert 0 < eager.sum() < valid.sum()
        with warnings.catch_warnings():
            warnings.simplefilter("error", BackendFallbackWarning)
            got = d2s.jit.to_static(mask, backend="xla")(d2s.to_tensor(boxes),
                                                         d2s.to_tensor(valid)).numpy()
        np.testing.assert_array_equal(got, eager)
    sf = d2s.jit.to_static(lambda *xs: generate_proposals(*xs, 12, 5, return_rois_num=True),
                           backend="xla")
    with pytest.warns(BackendFallbackWarning):
        got = sf(*[d2s.to_tensor(a) for a in X2])
    for g, w in zip(got, ref(*X2, 12, 5, 0.5, 0.1, 1.0, False)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5)


def test_onnx_export_refuses_pixel_offset_and_eta():
    pytest.importorskip("onnx")
    from d2s import static
    from d2s.onnx.errors import ExportError
    from d2s.onnx.exporter import export_program
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", a.shape, a.dtype) for i, a in enumerate(X2)]
        outs = list(generate_proposals(*xs, eta=0.7, nms_thresh=0.8, return_rois_num=True))
    with pytest.raises(ExportError, match="pixel_offset=False, eta=1.0"):
        export_program(prog, prog.global_block().ops, xs, outs)


def test_generate_proposals_outputs_and_bad_input():
    rois, probs, num = generate_proposals(*[d2s.to_tensor(a) for a in X2])
    assert num is None and rois.shape[1] == 4 and probs.shape[1] == 1
    assert rois.stop_gradient and probs.stop_gradient
    with pytest.raises(ValueError, match="bbox_deltas has 4 channels; 2 anchors need 8"):
        generate_proposals(d2s.to_tensor(X2[0]), d2s.to_tensor(X2[1][:, :4]),
                           *[d2s.to_tensor(a) for a in X2[2:]])
    with pytest.raises(TypeError, match="scores must be float"):
        generate_proposals(d2s.to_tensor(X2[0].astype("int32")),
                           *[d2s.to_tensor(a) for a in X2[1:]])
