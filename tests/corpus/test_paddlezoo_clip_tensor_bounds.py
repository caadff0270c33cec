"""`paddle.clip` with tensor bounds in converted code, as PaddleDetection's
post-processing writes it: decoded boxes clipped to the image size read from
the `im_shape` input (`paddle.clip(x1, 0, im_w)`), and a loss clamped to a
statistic of the batch.

An eager bound is read as its number; a bound computed in the program (it
raised "float() of static Variable") is now selected against with `where`,
without a gradient to the bound as eager's number has none. Eager and
converted agree on values and gradients on numpy and xla."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS


def clip_boxes(boxes, im_shape):
    h, w = im_shape[0, 0], im_shape[0, 1]
    x1 = d2s.clip(boxes[:, 0], 0, w)
    y1 = d2s.clip(boxes[:, 1], min=0, max=h)
    x2 = d2s.clip(boxes[:, 2], max=w)
    y2 = boxes[:, 3].clip(min=im_shape[:, 0] * 0.0, max=h)
    return d2s.stack([x1, y1, x2, y2], axis=-1)


def clamp_to_batch(x):
    return d2s.clip(x, min=x.mean(), max=x.max() - 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_bounds_match_eager(backend):
    rng = np.random.default_rng(0)
    boxes = (rng.normal(size=(5, 4)) * 8 + 4).astype("float32")
    im = np.array([[6.0, 5.0]], "float32")
    x_np = rng.normal(size=(3, 4)).astype("float32")
    cases = [(clip_boxes, (boxes, im), [InputSpec([None, 4]), InputSpec([1, 2])]),
             (clamp_to_batch, (x_np,), [InputSpec([None, 4])])]
    for fn, arrays, spec in cases:
        static = d2s.jit.to_static(fn, backend=backend, input_spec=spec)
        results = []
        for f in (fn, static):
            ins = [d2s.to_tensor(a, stop_gradient=False) for a in arrays]
            out = f(*ins)
            (out * out).sum().backward()
            results.append([out.numpy()] + [
                np.zeros_like(a) if t.grad is None else t.grad.numpy()
                for a, t in zip(arrays, ins)])
        for s, e in zip(results[1], results[0]):
            np.testing.assert_allclose(s, e, rtol=1e-6, atol=1e-6)
    clipped = results[0][0]
    assert clipped.min() >= x_np.mean() - 1e-6 and clipped.max() <= x_np.max() - 0.5 + 1e-6


def test_a_bound_of_several_values_is_named():
    static = d2s.jit.to_static(lambda x: d2s.clip(x, min=x[:2]))
    with pytest.raises(ValueError, match="clip: a tensor bound must hold one value"):
        static(d2s.ones([3]))
