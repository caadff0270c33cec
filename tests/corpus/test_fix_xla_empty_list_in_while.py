"""Regression (found by the corpus's seq2seq greedy decoder): a list that
starts empty and is appended to in a tensor `while`, its items having a
dim unknown when the program was built (the batch), runs on xla itself —
no fallback to numpy — and equals eager, values and gradient."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

pytest.importorskip("jax")
from d2s.static.backend import BackendFallbackWarning  # noqa: E402


def decode(x, w):
    outs = []
    h = x
    step = d2s.zeros([], "int64")
    while step < 3:
        h = d2s.tanh(d2s.matmul(h, w))
        outs.append(d2s.sum(h, axis=-1))
        step += 1
    return d2s.stack(outs, axis=1)


@pytest.mark.parametrize("batch", [2, 5])
def test_empty_list_with_unknown_item_dim_appended_in_a_while_on_xla(batch):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, 3)).astype("float32")
    w = rng.normal(size=(3, 3)).astype("float32")
    we = d2s.to_tensor(w, stop_gradient=False)
    expected = decode(d2s.to_tensor(x), we)
    expected.sum().backward()
    fn = d2s.jit.to_static(decode, backend="xla", input_spec=[
        InputSpec([None, 3], "float32"), InputSpec([3, 3], "float32")])
    ws = d2s.to_tensor(w, stop_gradient=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        out = fn(d2s.to_tensor(x), ws)
        out.sum().backward()
    assert out.shape == (batch, 3)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ws.grad.numpy(), we.grad.numpy(), rtol=1e-5, atol=1e-5)
