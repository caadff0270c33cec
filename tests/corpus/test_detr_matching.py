"""A DETR-like set-prediction head and its loss (as ported from
PaddleDetection / the DETR reference), with the Hungarian matcher replaced
by the greedy per-target matching users write when scipy is not at hand:
learned object queries (`Embedding.weight`) attend over flattened conv
features; each padded ground-truth box takes the query of lowest cost
(class probability + L1 box distance), padded targets masked out with
`where`; matched queries get the target's class, the others "no object"
with a down-weighted loss, and the L1 box loss is averaged over the real
boxes. Variable batch and number of ground-truth slots."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, train_and_compare
from xla_budget import for_backend

C, Q, D = 3, 4, 8                  # classes (+1 "no object"), queries, width
NO_OBJ, EOS_COEF = C, 0.1


class TinyDETR(nn.Layer):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2D(3, D, 3, stride=2, padding=1), nn.ReLU())
        self.query_embed = nn.Embedding(Q, D)
        self.class_embed = nn.Linear(D, C + 1)
        self.bbox_embed = nn.Sequential(nn.Linear(D, D), nn.ReLU(), nn.Linear(D, 4))

    def forward(self, images):
        feat = self.backbone(images).flatten(2).transpose([0, 2, 1])          # [B, HW, D]
        q = self.query_embed.weight.unsqueeze(0).expand([feat.shape[0], Q, D])
        attn = F.softmax(d2s.matmul(q, feat, transpose_y=True) / D ** 0.5, axis=-1)
        hs = q + d2s.matmul(attn, feat)
        return self.class_embed(hs), F.sigmoid(self.bbox_embed(hs))

    def loss(self, images, gt_labels, gt_boxes, gt_valid):
        logits, boxes = self(images)                          # [B, Q, C+1], [B, Q, 4]
        prob = F.softmax(logits, axis=-1)
        valid = gt_valid.astype("bool")                       # [B, G]
        # cost[b, q, g] = -p(class of g) + |box_q - box_g|_1; padded g never chosen
        gt_idx = gt_labels.unsqueeze(1).expand([-1, Q, -1])   # [B, Q, G]
        cost_class = -d2s.take_along_axis(prob, gt_idx, axis=2)
        cost_box = (boxes.unsqueeze(2) - gt_boxes.unsqueeze(1)).abs().sum(axis=-1)
        cost = cost_class + cost_box
        cost = d2s.where(valid.unsqueeze(1), cost, d2s.full_like(cost, 1e4))
        match_q = d2s.argmax(-cost, axis=1)                   # [B, G]: argmin over queries
        assign = F.one_hot(match_q, Q) * valid.unsqueeze(-1).astype("float32")   # [B, G, Q]
        matched = assign.sum(axis=1) > 0                      # [B, Q]
        # the class each query must predict: its target's, or no-object
        q_label = d2s.matmul(assign.transpose([0, 2, 1]),
                             gt_labels.unsqueeze(-1).astype("float32")).squeeze(-1)
        target = d2s.where(matched, q_label.astype("int64"), d2s.full_like(q_label, NO_OBJ,
                                                                          dtype="int64"))
        logp = F.log_softmax(logits, axis=-1)
        nll = -d2s.take_along_axis(logp, target.unsqueeze(-1), axis=2).squeeze(-1)
        w = d2s.where(matched, d2s.ones_like(nll), d2s.full_like(nll, EOS_COEF))
        loss_ce = (nll * w).sum() / w.sum()
        # L1 on the matched pairs, averaged over the real boxes
        pred_for_gt = d2s.take_along_axis(boxes, match_q.unsqueeze(-1).expand([-1, -1, 4]), axis=1)
        l1 = (pred_for_gt - gt_boxes).abs().sum(axis=-1)
        num_boxes = d2s.clip(valid.astype("float32").sum(), min=1.0)
        loss_bbox = d2s.where(valid, l1, d2s.zeros_like(l1)).sum() / num_boxes
        return loss_ce + 5.0 * loss_bbox


RNG = np.random.default_rng(21)


def batch(n, g):
    valid = np.zeros((n, g), "int64")
    for i in range(n):
        valid[i, :RNG.integers(1, g + 1)] = 1
    return (RNG.normal(size=(n, 3, 6, 6)), RNG.integers(0, C, (n, g)),
            RNG.uniform(size=(n, g, 4)), valid)


BATCHES = [batch(2, 3), batch(3, 2), batch(2, 3)]
SPEC = [InputSpec([None, 3, 6, 6]), InputSpec([None, None], "int64"),
        InputSpec([None, None, 4]), InputSpec([None, None], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_detr_greedy_matching_loss_trains_like_eager(backend):
    _, _, fn = train_and_compare(TinyDETR, for_backend(BATCHES, backend), backend, SPEC, method="loss", opt="adamw")
    assert len(fn.program_cache) == 1
