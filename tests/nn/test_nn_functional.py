"""d2s.nn.functional vs numpy references, eager and static; gradients of the
compositions vs finite differences in both modes."""
import math

import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import static
from nn_helpers import check_both_modes, run_eager, run_static

rng = np.random.default_rng(0)


def np_layer_norm(x, w, b, k, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


# ---- compositions: values and gradients ---------------------------------------------
def test_layer_norm_last_axis():
    x, w, b = rng.normal(size=(3, 5)), rng.normal(size=5), rng.normal(size=5)
    check_both_modes(lambda x, w, b: F.layer_norm(x, 5, w, b),
                     lambda x, w, b: np_layer_norm(x, w, b, 1), x, w, b)


def test_layer_norm_two_trailing_axes_and_epsilon():
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    check_both_modes(lambda x, w, b: F.layer_norm(x, [3, 4], w, b, epsilon=1e-3),
                     lambda x, w, b: np_layer_norm(x, w, b, 2, eps=1e-3), x, w, b)


def test_layer_norm_without_affine():
    x = rng.normal(size=(4, 6))
    check_both_modes(lambda x: F.layer_norm(x, [6]), lambda x: np_layer_norm(x, 1, 0, 1), x)


def test_layer_norm_rejects_mismatched_shape():
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(d2s.ones([2, 3]), [4])


@pytest.mark.parametrize("reduction,ref", [
    ("mean", lambda x, y: np.mean((x - y) ** 2)),
    ("sum", lambda x, y: np.sum((x - y) ** 2)),
    ("none", lambda x, y: (x - y) ** 2),
])
def test_mse_loss(reduction, ref):
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    check_both_modes(lambda x, y: F.mse_loss(x, y, reduction=reduction), ref, x, y)


def test_mse_loss_bad_reduction():
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(d2s.ones([2]), d2s.ones([2]), reduction="avg")


def test_linear_with_bias():
    x, w, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    check_both_modes(F.linear, lambda x, w, b: x @ w + b, x, w, b)


def test_linear_without_bias_batched():
    x, w = rng.normal(size=(2, 4, 3)), rng.normal(size=(3, 2))
    check_both_modes(F.linear, lambda x, w: x @ w, x, w)


def test_gelu_exact_and_tanh():
    x = rng.normal(size=(3, 4)) * 2
    erf = np.vectorize(math.erf)
    check_both_modes(F.gelu, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), x)
    approx = lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    check_both_modes(lambda x: F.gelu(x, approximate=True), approx, x)


# ---- wrappers over fused core ops: values in both modes --------------------------------
def test_relu_tanh_sigmoid():
    x = rng.normal(size=(3, 4)).astype("float32")
    check_both_modes(F.relu, lambda x: np.maximum(x, 0), x, grads=False)
    check_both_modes(F.tanh, np.tanh, x, grads=False)
    check_both_modes(F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), x, grads=False)


def test_softmax_and_log_softmax_axis():
    x = rng.normal(size=(3, 4)).astype("float32")
    for axis in (-1, 0):
        ref = np.exp(np_log_softmax(x, axis))
        check_both_modes(lambda x: F.softmax(x, axis=axis), lambda x: ref, x, grads=False)
        check_both_modes(lambda x: F.log_softmax(x, axis), lambda x: np_log_softmax(x, axis),
                         x, grads=False)


def test_cross_entropy_mean_of_picked_log_probs():
    logits = rng.normal(size=(5, 3))
    label = np.array([0, 2, 1, 1, 0], dtype=np.int64)
    ref = lambda lg, lb: -np.mean(np_log_softmax(lg)[np.arange(5), lb])
    check_both_modes(F.cross_entropy, ref, logits, label)
    assert run_eager(F.cross_entropy, logits.astype("float32"), label).shape == ()


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", ">i8"])
def test_cross_entropy_rejects_labels_out_of_range(dtype):
    """Both bounds, whatever the integer type (the check reads signed labels as
    unsigned: a negative one must still be caught)."""
    logits = d2s.to_tensor(rng.normal(size=(3, 4)).astype("float32"))
    bad = [[0, 4, 1]] + ([[0, -1, 1], [-128, 0, 0]] if np.dtype(dtype).kind == "i" else [])
    for labels in bad:
        with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
            F.cross_entropy(logits, d2s.to_tensor(np.array(labels, dtype=dtype)))
    ok = np.array([0, 3, 1], dtype=dtype)
    ref = -np.mean(np_log_softmax(logits.numpy())[np.arange(3), ok.astype(np.int64)])
    np.testing.assert_allclose(F.cross_entropy(logits, d2s.to_tensor(ok)).numpy(), ref,
                               rtol=1e-6)


def test_cross_entropy_grad_kernel_writes_the_same_values_into_a_given_buffer():
    """The compiled executor passes the dead probabilities' own array (or another
    dead buffer) as `out=`: the values are those of a fresh result."""
    from d2s.core.registry import OPS
    kernel = OPS["cross_entropy_grad"].kernel
    probs = np.exp(rng.normal(size=(5, 3)).astype("float32"))
    probs /= probs.sum(axis=1, keepdims=True)
    label, g = np.array([0, 2, 1, 1, 0]), np.asarray(np.float32(0.5))
    fresh = kernel(g, probs, label)
    assert fresh is not probs
    other = np.full_like(probs, np.nan)
    assert kernel(g, probs, label, out=other) is other
    own = probs.copy()
    assert kernel(g, own, label, out=own) is own
    for got in (other, own):
        np.testing.assert_array_equal(got, fresh)


# ---- embedding ----------------------------------------------------------------------------
def test_embedding_values_and_scatter_add_grad():
    w = rng.normal(size=(6, 3))
    ids = np.array([[1, 4], [1, 0]], dtype=np.int64)
    check_both_modes(lambda ids, w: F.embedding(ids, w), lambda ids, w: w[ids], ids, w)
    _, (_, gw) = run_eager(lambda ids, w: F.embedding(ids, w), ids, w, grad=True)
    expected = np.zeros_like(w)
    np.add.at(expected, ids, 1.0)
    np.testing.assert_array_equal(gw, expected)  # row 1 used twice accumulates


# ---- dropout -------------------------------------------------------------------------------
def test_dropout_eval_and_zero_p_are_identity():
    x = d2s.to_tensor(rng.normal(size=(4, 4)).astype("float32"))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    prog = static.Program()
    with static.program_guard(prog):
        v = static.data("x", [4, 4])
        assert F.dropout(v, 0.3, training=False) is v
    assert not prog.global_block().ops


@pytest.mark.parametrize("mode", ["eager", "static"])
def test_dropout_statistics(mode):
    p = 0.3
    x = np.ones((200, 500), dtype="float32")
    run = run_eager if mode == "eager" else run_static
    out = run(lambda x: F.dropout(x, p), x)
    zero_frac = np.mean(out == 0)
    assert abs(zero_frac - p) < 0.01
    np.testing.assert_allclose(out[out != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(out.mean() - 1.0) < 0.02  # inverted dropout keeps the expectation


def test_dropout_same_seed_same_mask_in_both_modes_and_grad_is_mask():
    x = rng.normal(size=(8, 16)).astype("float32")
    d2s.seed(7)
    eager_out, (gx,) = run_eager(lambda x: F.dropout(x, 0.5), x, grad=True)
    d2s.seed(7)
    static_out = run_static(lambda x: F.dropout(x, 0.5), x)
    np.testing.assert_array_equal(eager_out, static_out)
    mask = np.where(eager_out != 0, 2.0, 0.0)
    np.testing.assert_allclose(gx, mask)


def test_dropout_p_one_and_bad_p():
    out = run_eager(lambda x: F.dropout(x, 1.0), np.ones((3, 3), "float32"))
    np.testing.assert_array_equal(out, 0)
    with pytest.raises(ValueError, match="p must be in"):
        F.dropout(d2s.ones([2]), 1.5)
