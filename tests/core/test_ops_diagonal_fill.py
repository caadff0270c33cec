"""`Tensor.fill_diagonal_`, `fill_diagonal_tensor(_)` (core.ops.diagonal_fill):
values against PyTorch's `fill_diagonal_` and a numpy reference written from
Paddle's definition, gradients by finite differences, converted on numpy and
xla with dims unknown (a contrastive loss's batch), ONNX Runtime, and the
in-place forms rebinding their receiver in converted code."""
import numpy as np
import pytest

import d2s
from d2s.core.ops.diagonal_fill import fill_diagonal, fill_diagonal_tensor

from ops_check import check


def _fill_reference(x, value, offset, wrap):
    """Paddle's walk: flat positions i = 0, s, 2s, ... (s: one more than a
    row, or the sum of the strides past 2 dims) below `cols**2` (all of it
    with `wrap`, or past 2 dims), each moved by `offset` if it stays in
    its row."""
    out = x.copy().reshape(-1)
    cols = x.shape[-1]
    stride = cols + 1 if x.ndim == 2 else sum(cols ** k for k in range(x.ndim))
    size = out.size if wrap or x.ndim > 2 else min(out.size, cols * cols)
    for i in range(0, size, stride):
        if 0 <= i % cols + offset < cols:
            out[i + offset] = value
    return out.reshape(x.shape)


CASES = [((4, 3), 0, False), ((7, 3), 0, True), ((7, 3), 0, False), ((3, 5), 1, False),
         ((5, 3), -1, False), ((3, 4), -2, True), ((3, 3, 3), 0, False), ((2, 6), 3, False)]


@pytest.mark.parametrize("shape,offset,wrap", CASES)
def test_fill_diagonal_values_and_gradients(shape, offset, wrap):
    x = np.random.default_rng(0).standard_normal(shape)
    check(lambda t: fill_diagonal(t, -2.5, offset, wrap), [x],
          lambda a: _fill_reference(a, -2.5, offset, wrap))


@pytest.mark.parametrize("shape,wrap", [((4, 3), False), ((7, 3), True), ((7, 3), False),
                                        ((3, 3, 3), False), ((2, 5), False)])
def test_fill_diagonal_is_pytorchs(shape, wrap):
    torch = pytest.importorskip("torch")
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    want = torch.tensor(x).fill_diagonal_(7.0, wrap=wrap).numpy()
    t = d2s.to_tensor(x)
    same = t.fill_diagonal_(7.0, wrap=wrap)
    assert same is t
    np.testing.assert_array_equal(t.numpy(), want)


def test_paddle_documented_examples():
    x = d2s.ones([4, 3]) * 2
    x.fill_diagonal_(1.0)
    assert x.numpy().tolist() == [[1, 2, 2], [2, 1, 2], [2, 2, 1], [2, 2, 2]]
    x = d2s.ones([4, 3]) * 2
    nx = x.fill_diagonal_tensor(d2s.ones([3]))
    assert nx.numpy().tolist() == [[1, 2, 2], [2, 1, 2], [2, 2, 1], [2, 2, 2]]
    assert x.numpy().tolist() == [[2, 2, 2]] * 4  # (not in place)


def _diag_tensor_reference(x, y, offset, d1, d2):
    out = x.copy()
    moved = np.moveaxis(out, (d1, d2), (-2, -1))
    rows, cols = moved.shape[-2:]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    r = np.arange(length) + max(0, -offset)
    moved[..., r, r + offset] = y
    return out


@pytest.mark.parametrize("shape,offset,d1,d2", [((4, 3), 0, 0, 1), ((3, 5), 2, 0, 1),
                                                ((2, 4, 3), -1, 1, 2), ((3, 2, 4), 1, 2, 0)])
def test_fill_diagonal_tensor_values_and_gradients(shape, offset, d1, d2):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    ref_diag = np.diagonal(x, offset, d1, d2)
    y = rng.standard_normal(ref_diag.shape)
    check(lambda a, b: fill_diagonal_tensor(a, b, offset, d1, d2), [x, y],
          lambda a, b: _diag_tensor_reference(a, b, offset, d1, d2), unknown_dims=False)


def test_wrong_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="at least 2 dims"):
        d2s.ones([3]).fill_diagonal_(0.0)
    with pytest.raises(ValueError, match="all dims equal"):
        d2s.ones([2, 3, 3]).fill_diagonal_(0.0)
    with pytest.raises(ValueError, match=r"y must have shape \[3\]"):
        d2s.ones([4, 3]).fill_diagonal_tensor(d2s.ones([4]))


def _nt_xent_logits(z):
    z = d2s.nn.functional.normalize(z, axis=1)
    sim = d2s.matmul(z, z, transpose_y=True)
    sim.fill_diagonal_(-1e9)  # a sample is not its own positive
    return sim


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_in_place_in_converted_code_with_an_unknown_batch(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    static = d2s.jit.to_static(_nt_xent_logits, backend=backend,
                               input_spec=[d2s.static.InputSpec([None, 4], "float32")])
    for n in (3, 5):
        z = d2s.to_tensor(np.random.default_rng(n).standard_normal((n, 4)).astype("float32"))
        got = static(z).numpy()
        np.testing.assert_allclose(got, _nt_xent_logits(z).numpy(), rtol=1e-5)
        assert (np.diag(got) == -1e9).all() and (got[~np.eye(n, dtype=bool)] > -2).all()
