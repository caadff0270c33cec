"""torchvision-style detection post-processing (RetinaNet / FCOS
`postprocess_detections`): per level, the scores above a threshold
(`scores[keep]`: their number known only at run time), `num_topk =
min(topk_candidates, int(scores.shape[0]))`, `scores.topk(num_topk)`, class
= index % num_classes, anchor = index // num_classes, then box decoding.
`topk` with `k` computed in the program picks what eager's does (the same
ties), on numpy and xla, with gradients through the kept scores; a `k`
larger than the axis is an error at run time, as eager's is."""
import numpy as np
import pytest

import d2s

from harness import BACKENDS, close, t

NUM_CLASSES, TOPK = 3, 4


def postprocess(logits_per_level, anchors_per_level, score_thresh: float):
    all_boxes, all_scores, all_labels = [], [], []
    for logits, anchors in zip(logits_per_level, anchors_per_level):
        scores = d2s.nn.functional.sigmoid(logits).flatten()
        keep = scores > score_thresh
        scores = scores[keep]
        topk_idxs = d2s.nonzero(keep).flatten()
        num_topk = min(TOPK, int(topk_idxs.shape[0]))
        scores, idxs = scores.topk(num_topk)
        topk_idxs = topk_idxs[idxs]
        anchor_idxs = topk_idxs // NUM_CLASSES
        labels = topk_idxs % NUM_CLASSES
        boxes = anchors[anchor_idxs] + scores[:, None]
        all_boxes.append(boxes)
        all_scores.append(scores)
        all_labels.append(labels)
    return d2s.concat(all_boxes), d2s.concat(all_scores), d2s.concat(all_labels)


def _inputs(seed):
    rng = np.random.RandomState(seed)
    logits = [rng.randn(4, NUM_CLASSES).astype("float32"),
              rng.randn(2, NUM_CLASSES).astype("float32")]
    logits[0][1, 2] = logits[0][3, 0]  # a tie among the candidates
    anchors = [rng.rand(4, 4).astype("float32"), rng.rand(2, 4).astype("float32")]
    return logits, anchors


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("thresh", [0.3, 0.6, 0.99])
def test_postprocess_matches_eager(thresh, backend):
    static = d2s.jit.to_static(postprocess, backend=backend)
    for seed in (0, 1):
        logits, anchors = _inputs(seed)
        args = ([t(a) for a in logits], [t(a) for a in anchors], thresh)
        got, expected = static(*args), postprocess(*args)
        for a, e, what in zip(got, expected, ("boxes", "scores", "labels")):
            close(a.numpy(), e.numpy(), backend, f"{what} (threshold {thresh})")


@pytest.mark.parametrize("backend", BACKENDS)
def test_topk_of_a_run_time_k_differentiates(backend):
    def top_sum(x, n):
        vals, _ = d2s.topk(x, d2s.minimum(n, d2s.to_tensor(3)), largest=False)
        return (vals * vals).sum()

    static = d2s.jit.to_static(top_sum, backend=backend)
    x = np.array([[0.5, -1.0, 2.0, 0.1], [3.0, 0.2, 0.2, -0.7]], "float32")
    grads = []
    for f in (top_sum, static):
        xs = t(x)
        xs.stop_gradient = False
        f(xs, t(2)).backward()
        grads.append(xs.grad.numpy())
    close(grads[1], grads[0], backend, "gradient")


def test_topk_run_time_k_larger_than_the_axis_is_an_error():
    static = d2s.jit.to_static(lambda x, k: d2s.topk(x, k + 0))
    x = t(np.arange(3, dtype="float32"))
    assert static(x, t(3))[0].numpy().tolist() == [2.0, 1.0, 0.0]
    with pytest.raises(AssertionError, match="topk: k is negative or larger"):
        static(x, t(4))
