"""`d2s.vision.ops.yolo_box` against a loop-based numpy reference of
Paddle's documented decoding (grid offsets, anchors, confidence threshold,
clipping, scale_x_y, iou_aware), converted on the numpy and xla backends
and exported to ONNX Runtime."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.vision.ops import yolo_box

RNG = np.random.default_rng(23)


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _ref(x, img_size, anchors, class_num, thresh, down, clip, scale, iou_aware, factor):
    n, _, h, w = x.shape
    an = len(anchors) // 2
    per = 5 + class_num
    boxes = np.zeros((n, an * h * w, 4))
    scores = np.zeros((n, an * h * w, class_num))
    for b in range(n):
        img_h, img_w = img_size[b]
        for a in range(an):
            for i in range(h):
                for j in range(w):
                    m = (a * h + i) * w + j
                    base = an + a * per if iou_aware else a * per
                    t = x[b, base:base + per, i, j]
                    conf = _sig(t[4])
                    if iou_aware:
                        conf = conf ** (1 - factor) * _sig(x[b, a, i, j]) ** factor
                    if conf < thresh:
                        continue
                    cx = (j + _sig(t[0]) * scale - 0.5 * (scale - 1)) / w
                    cy = (i + _sig(t[1]) * scale - 0.5 * (scale - 1)) / h
                    bw = np.exp(t[2]) * anchors[2 * a] / (down * w)
                    bh = np.exp(t[3]) * anchors[2 * a + 1] / (down * h)
                    box = np.array([(cx - bw / 2) * img_w, (cy - bh / 2) * img_h,
                                    (cx + bw / 2) * img_w, (cy + bh / 2) * img_h])
                    if clip:
                        box[0], box[1] = max(box[0], 0), max(box[1], 0)
                        box[2], box[3] = min(box[2], img_w - 1), min(box[3], img_h - 1)
                    boxes[b, m] = box
                    scores[b, m] = _sig(t[5:]) * conf
    return boxes, scores


CASES = [  # (grid h, w, anchors, class_num, thresh, clip, scale_x_y, iou_aware)
    (3, 3, [10, 13, 16, 30, 33, 23], 2, 0.5, True, 1.0, False),
    (4, 3, [10, 13, 16, 30], 3, 0.3, False, 1.2, False),
    (3, 4, [10, 13, 16, 30], 2, 0.4, True, 1.0, True),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_reference(case):
    h, w, anchors, cls, thresh, clip, scale, iou = case
    an = len(anchors) // 2
    x = RNG.standard_normal((2, an * (5 + cls + (1 if iou else 0)), h, w)) * 2
    img = np.array([[40, 60], [33, 20]], np.int32)
    boxes, scores = yolo_box(d2s.to_tensor(x), d2s.to_tensor(img), anchors, cls, thresh, 8,
                             clip_bbox=clip, scale_x_y=scale, iou_aware=iou,
                             iou_aware_factor=0.4)
    want_b, want_s = _ref(x, img, anchors, cls, thresh, 8, clip, scale, iou, 0.4)
    assert 0 < np.count_nonzero(want_s[..., 0]) < want_s.shape[1] * 2  # some kept, some not
    np.testing.assert_allclose(boxes.numpy(), want_b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores.numpy(), want_s, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    x = RNG.standard_normal((2, 14, 3, 3)).astype(np.float32)
    img = np.array([[40, 60], [33, 20]], np.int32)

    def f(x, img):
        return yolo_box(x, img, [10, 13, 16, 30], 2, 0.3, 8)
    want = f(d2s.to_tensor(x), d2s.to_tensor(img))
    got = to_static(f, backend=backend)(d2s.to_tensor(x), d2s.to_tensor(img))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_exports_to_onnx(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from d2s.static import InputSpec

    class Head(d2s.nn.Layer):
        def forward(self, x, img):
            return yolo_box(x, img, [10, 13, 16, 30], 2, 0.3, 8)
    head = Head()
    path = d2s.onnx.export(head, tmp_path / "yolo.onnx",
                           input_spec=[InputSpec([None, 14, 3, 3], "float32"),
                                       InputSpec([None, 2], "int32")])
    onnx.checker.check_model(str(path), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((2, 14, 3, 3)).astype(np.float32)
    img = np.array([[40, 60], [33, 20]], np.int32)
    names = [i.name for i in sess.get_inputs()]
    got = sess.run(None, {names[0]: x, names[1]: img})
    want = head(d2s.to_tensor(x), d2s.to_tensor(img))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-5)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="channels"):
        yolo_box(d2s.zeros([1, 13, 3, 3]), d2s.to_tensor(np.ones((1, 2), np.int32)),
                 [10, 13, 16, 30], 2, 0.5, 8)
    with pytest.raises(ValueError, match="pairs"):
        yolo_box(d2s.zeros([1, 14, 3, 3]), d2s.to_tensor(np.ones((1, 2), np.int32)),
                 [10, 13, 16], 2, 0.5, 8)
