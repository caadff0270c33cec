"""Paddle's argument names and orders as ported model code passes them:
`paddle.concat(x=[...])`, `paddle.stack(x=...)`, `paddle.sum(x, axis,
dtype=...)` (and a dtype third, Paddle's position), `argmax(..., dtype=)`,
`paddle.argmin`, `F.softmax(x, axis, dtype=)`, `paddle.normal(mean, std,
shape)`. Each raised TypeError (or took a dtype for keepdim). Expected
values from numpy; eager and converted agree on numpy and xla."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F

from harness import BACKENDS

X = np.array([[0.5, -1.0, 2.0, 2.0], [3.0, 3.0, -4.0, 0.0]], "float32")


def ported(x):
    mask = x > 0
    return (d2s.concat(x=[x, x * 2], axis=1),
            d2s.stack(x=[x, -x], axis=0),
            d2s.sum(mask, axis=1, dtype="int64"),
            d2s.sum(x, 1, "float64"),
            mask.sum(axis=1, dtype="int32"),
            d2s.argmax(x, axis=-1, dtype="int32"),
            d2s.argmin(x, axis=1, keepdim=True),
            x.argmin(axis=0),
            F.softmax(x, axis=-1, dtype="float64"),
            F.log_softmax(x, -1, dtype="float64"))


def expected():
    mask = X > 0
    e = np.exp(X.astype("float64") - X.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    return [np.concatenate([X, X * 2], 1), np.stack([X, -X]), mask.sum(1).astype("int64"),
            X.astype("float64").sum(1), mask.sum(1).astype("int32"),
            X.argmax(-1).astype("int32"), X.argmin(1)[:, None], X.argmin(0), sm, np.log(sm)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_paddle_argument_forms_eager_and_converted(backend):
    want = expected()
    for fn in (ported, d2s.jit.to_static(ported, backend=backend)):
        got = fn(d2s.to_tensor(X))
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype, f"output {i}: {g.dtype} vs {w.dtype}"
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, err_msg=f"output {i}")


def test_normal_in_paddles_order():
    d2s.seed(3)
    a = d2s.normal(2.0, 0.5, [4000])
    d2s.seed(3)
    b = d2s.normal(shape=[4000], mean=2.0, std=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert abs(float(a.mean()) - 2.0) < 0.05 and abs(float(a.std()) - 0.5) < 0.05
    with pytest.raises(TypeError, match="give the shape"):
        d2s.normal(0.0, 1.0)
