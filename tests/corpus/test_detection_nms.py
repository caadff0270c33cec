"""A detection head with box decoding and NMS (the post-processing of
SSD/YOLO-style detectors in PaddleDetection and torchvision): a conv head
predicts per-anchor deltas and class scores, the deltas are decoded against
anchors (center/size encoding with clipping), and greedy non-maximum
suppression picks boxes in a tensor `while` over score-sorted candidates."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, infer_and_compare, save_load_infer, t, train_and_compare, twins

A, C, G = 2, 3, 3          # anchors per cell, classes, grid size
N = G * G * A
IOU_THRESHOLD, MAX_DET = 0.5, 5


def make_anchors():
    centers = (np.arange(G) + 0.5) / G
    cy, cx = np.meshgrid(centers, centers, indexing="ij")
    sizes = np.array([[0.3, 0.3], [0.5, 0.25]])
    out = [[x, y, w, h] for y, x in zip(cy.ravel(), cx.ravel()) for w, h in sizes]
    return np.array(out, "float32")                    # [N, 4] cx, cy, w, h


def box_iou(box, boxes):
    x1 = d2s.maximum(box[0], boxes[:, 0])
    y1 = d2s.maximum(box[1], boxes[:, 1])
    x2 = d2s.minimum(box[2], boxes[:, 2])
    y2 = d2s.minimum(box[3], boxes[:, 3])
    inter = d2s.clip(x2 - x1, min=0.0) * d2s.clip(y2 - y1, min=0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / (area + areas - inter + 1e-9)


class Detector(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2D(3, 6, 3, padding=1), nn.ReLU())
        self.box_head = nn.Conv2D(6, A * 4, 1)
        self.cls_head = nn.Conv2D(6, A * C, 1)
        self.register_buffer("anchors", d2s.to_tensor(make_anchors()))

    def heads(self, img):
        f = self.backbone(img)
        b = img.shape[0]
        deltas = self.box_head(f).transpose([0, 2, 3, 1]).reshape([b, -1, 4])
        logits = self.cls_head(f).transpose([0, 2, 3, 1]).reshape([b, -1, C])
        return deltas, logits

    def forward(self, img, target_deltas, target_cls):
        deltas, logits = self.heads(img)
        box_loss = F.smooth_l1_loss(deltas, target_deltas)
        cls_loss = F.cross_entropy(logits.reshape([-1, C]), target_cls.reshape([-1]))
        return box_loss + cls_loss

    def decode(self, deltas):
        a = self.anchors
        cx = deltas[:, 0] * 0.1 * a[:, 2] + a[:, 0]
        cy = deltas[:, 1] * 0.1 * a[:, 3] + a[:, 1]
        w = d2s.exp(d2s.clip(deltas[:, 2] * 0.2, max=4.0)) * a[:, 2]
        h = d2s.exp(d2s.clip(deltas[:, 3] * 0.2, max=4.0)) * a[:, 3]
        boxes = d2s.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        return d2s.clip(boxes, 0.0, 1.0)

    def detect(self, img):
        """Boxes, scores and classes kept by NMS for the first image."""
        deltas, logits = self.heads(img)
        boxes = self.decode(deltas[0])
        probs = F.softmax(logits[0], axis=-1)
        scores, classes = d2s.max(probs, axis=-1), d2s.argmax(probs, axis=-1)
        order = d2s.argsort(scores, descending=True)
        boxes, scores, classes = d2s.gather(boxes, order), d2s.gather(scores, order), \
            d2s.gather(classes, order)
        alive = d2s.ones([N], dtype="bool")
        keep = d2s.zeros([N], dtype="bool")
        i = 0
        n_kept = 0
        while i < N and n_kept < MAX_DET:
            if alive[i]:
                keep = d2s.logical_or(keep, d2s.arange(N) == i)
                n_kept += 1
                overlap = box_iou(boxes[i], boxes) > IOU_THRESHOLD
                alive = d2s.logical_and(alive, d2s.logical_not(overlap))
            i += 1
        return d2s.where(keep.unsqueeze(1), boxes, d2s.zeros_like(boxes)), \
            d2s.where(keep, scores, d2s.zeros_like(scores))


def numpy_nms(boxes, scores):
    order = np.argsort(-scores, kind="stable")
    keep = []
    for i in order:
        if len(keep) == MAX_DET:
            break
        ok = True
        for j in keep:
            b, c = boxes[i], boxes[j]
            inter = max(0, min(b[2], c[2]) - max(b[0], c[0])) * max(0, min(b[3], c[3])
                                                                    - max(b[1], c[1]))
            union = (b[2] - b[0]) * (b[3] - b[1]) + (c[2] - c[0]) * (c[3] - c[1]) - inter
            ok = ok and inter / (union + 1e-9) <= IOU_THRESHOLD
        if ok:
            keep.append(i)
    return sorted(keep)


RNG = np.random.default_rng(12)
BATCHES = [(RNG.normal(size=(b, 3, G, G)), RNG.normal(size=(b, N, 4)),
            RNG.integers(0, C, (b, N))) for b in (2, 3, 2)]
SPEC = [InputSpec([None, 3, G, G], "float32"), InputSpec([None, N, 4], "float32"),
        InputSpec([None, N], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_detector_heads_train_like_eager(backend):
    train_and_compare(Detector, BATCHES, backend, SPEC, opt="sgd", lr=0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_box_decoding_and_nms_loop(backend):
    eager, model = twins(Detector)
    detect = d2s.jit.to_static(model.detect, input_spec=[InputSpec([1, 3, G, G], "float32")],
                               backend=backend)
    img = t(RNG.normal(size=(1, 3, G, G)))
    boxes, scores = infer_and_compare(eager.detect, detect, [img], backend)
    deltas, logits = eager.heads(img)
    all_boxes = eager.decode(deltas[0]).numpy()
    all_scores = F.softmax(logits[0], axis=-1).numpy().max(-1)
    kept = numpy_nms(all_boxes, all_scores)
    assert np.count_nonzero(scores) == len(kept)
    np.testing.assert_allclose(np.sort(scores[scores > 0]), np.sort(all_scores[kept]),
                               rtol=1e-6)


def test_detector_save_load_infer(tmp_path):
    model = twins(Detector)[0]

    class Infer(nn.Layer):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, img):
            return self.m.detect(img)

    save_load_infer(Infer(model), [InputSpec([1, 3, G, G], "float32")],
                    [t(RNG.normal(size=(1, 3, G, G)))], tmp_path)
