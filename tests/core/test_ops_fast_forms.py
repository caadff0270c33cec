"""The short forms some ops take for their common cases (d2s/core/ops:
einsum as one matmul, ...): the programs hold only the ops that compute
the result, and the values equal numpy's on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
from d2s import static
from ops_check import check

R = np.random.default_rng(7)


def _op_types(fn, *arrays):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", a.shape, a.dtype) for i, a in enumerate(arrays)]
        fn(*xs)
    return [op.type for op in prog.global_block().ops]


def _static_on_both_backends(fn, arrays, want):
    for backend in ("numpy", "xla"):
        got = d2s.jit.to_static(fn, backend=backend)(*[d2s.to_tensor(a) for a in arrays])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-9, err_msg=backend)


@pytest.mark.parametrize("equation,shapes,ops", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["matmul"]),
    ("bij,bjk->bik", [(1, 3, 4), (3, 4, 5)], ["matmul"]),  # batch dims broadcast
    ("ij,jk->ik", [(3, 4), (4, 2)], ["matmul"]),
    ("ij,jk", [(3, 4), (4, 2)], ["matmul"]),
    ("bhqd,bhdk->bhqk", [(1, 2, 3, 4), (1, 2, 4, 5)], ["matmul"]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], ["matmul"]),
    ("bsd,dh->bsh", [(2, 3, 4), (4, 5)], ["matmul"]),  # a batch on one side: broadcast
    ("ij,bjk->bik", [(3, 4), (2, 4, 5)], ["matmul"]),
    # not matmul's own layout: a transpose first, still no reshapes
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)], ["transpose", "matmul"]),
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)], ["matmul", "transpose"]),
    ("ij,jk->ki", [(3, 4), (4, 2)], ["matmul", "transpose"]),
    # batches on both sides that differ: not one matmul (the general plan)
    ("aij,bjk->abik", [(2, 3, 4), (3, 4, 5)], None),
])
def test_einsum_of_a_matmul_is_one_matmul(equation, shapes, ops):
    arrays = [R.standard_normal(s) for s in shapes]
    fn = lambda a, b: d2s.einsum(equation, a, b)  # noqa: E731
    if ops is not None:
        assert _op_types(fn, *arrays) == ops
    else:
        assert _op_types(fn, *arrays) != ["matmul"]
    want = np.einsum(equation, *arrays)
    got = fn(*[d2s.to_tensor(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-9)
    _static_on_both_backends(fn, arrays, want)


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_of_non_finite_slices_on_every_backend(keepdim):
    # one kernel (the logsumexp op): rows of -inf, an inf, a nan, large values
    x = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1000.0, 1000.0]])
    want = np.array([-np.inf, np.inf, np.nan, 1000.0 + np.log(2.0)])
    fn = lambda t: d2s.logsumexp(t, axis=-1, keepdim=keepdim)  # noqa: E731
    assert _op_types(fn, x) == ["logsumexp"]
    check(fn, [x], lambda a: want[:, None] if keepdim else want, grad=False)


def test_logsumexp_second_derivative_is_the_softmax_jacobian():
    # the vjp is built from d2s ops, so it differentiates again
    a = np.array([[0.3, -1.2, 2.0], [1.0, 1.0, -0.5]])
    x = d2s.to_tensor(a, stop_gradient=False)
    (g,) = d2s.grad(d2s.logsumexp(x, axis=1).sum(), x, create_graph=True)
    r = R.standard_normal(a.shape)
    (h,) = d2s.grad((g * d2s.to_tensor(r)).sum(), x)
    s = np.exp(a - np.log(np.exp(a).sum(1, keepdims=True)))
    np.testing.assert_allclose(g.numpy(), s, rtol=1e-12)
    # d(sum r * softmax)/dx = s * (r - sum(r * s))
    np.testing.assert_allclose(h.numpy(), s * (r - (r * s).sum(1, keepdims=True)), rtol=1e-10)


def _stable_topk(x, k, axis, largest):
    idx = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(idx, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis), idx


@pytest.mark.parametrize("k,axis,largest", [(3, -1, True), (2, 0, False), (5, 1, True),
                                            (1, 1, False)])
def test_topk_is_one_op_with_stable_ties_on_every_backend(k, axis, largest):
    # ties everywhere (values from {0, 1, 2}): the lower index comes first
    x = np.array([[2.0, 1.0, 2.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0, 2.0],
                  [1.0, 2.0, 1.0, 2.0, 0.0]])
    fn = lambda t: d2s.topk(t, k, axis=axis, largest=largest)  # noqa: E731
    assert _op_types(fn, x) == ["topk"]
    check(fn, [x], lambda a: _stable_topk(a, k, axis, largest), grad=False)
    # gradients (distinct values): the values' cotangent goes back where they were read
    check(fn, [R.standard_normal((3, 5))], lambda a: _stable_topk(a, k, axis, largest),
          xla=False, onnx=False, unknown_dims=False)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_topk_k_larger_than_a_dim_unknown_while_building_raises(backend):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [None, None], "float32")
        values, _ = d2s.topk(x, 4)
    with pytest.raises(ValueError, match=r"k=4 is larger than the size 3"):
        static.Executor(backend=backend).run(prog, feed={"x": np.zeros((2, 3), np.float32)},
                                             fetch_list=[values])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_one_hot_is_one_op_on_every_backend(dtype):
    i = np.array([[0, 3], [2, 2], [1, 0]], dtype)
    fn = lambda t: d2s.one_hot(t, 4)  # noqa: E731
    assert _op_types(fn, i) == ["one_hot"]
    check(fn, [i], lambda a: (a[..., None] == np.arange(4)).astype(np.float32))


@pytest.mark.parametrize("bad", [4, -1, -5])
def test_one_hot_out_of_range_names_the_op_and_the_range(bad):
    i = d2s.to_tensor(np.array([0, bad]))
    with pytest.raises(IndexError, match=r"one_hot: values must be in \[0, 4\), got "):
        d2s.one_hot(i, 4)
    for backend in ("numpy", "xla"):  # (xla: the call runs again on numpy, which raises)
        with pytest.raises(IndexError, match=r"one_hot: values must be in \[0, 4\)"):
            d2s.jit.to_static(lambda t: d2s.one_hot(t, 4), backend=backend)(i)


@pytest.mark.parametrize("axis,unbiased,keepdim", [(1, True, False), ([0, 2], False, True),
                                                   (None, True, False), (-1, False, False)])
def test_var_is_one_op_on_every_backend_with_its_gradient(axis, unbiased, keepdim):
    x = R.standard_normal((3, 4, 2))
    fn = lambda t: d2s.var(t, axis=axis, unbiased=unbiased, keepdim=keepdim)  # noqa: E731
    assert _op_types(fn, x) == ["var"]
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    check(fn, [x], lambda a: np.var(a, np_axis, ddof=int(unbiased), keepdims=keepdim))


@pytest.mark.parametrize("axis,unbiased", [(1, True), (None, False)])
def test_std_is_the_root_of_var(axis, unbiased):
    x = R.standard_normal((3, 4)) + 2.0
    fn = lambda t: d2s.std(t, axis=axis, unbiased=unbiased)  # noqa: E731
    assert _op_types(fn, x) == ["var", "sqrt"]
    check(fn, [x], lambda a: np.std(a, axis, ddof=int(unbiased)))
    np.testing.assert_allclose(d2s.to_tensor(x).std(axis, unbiased).numpy(),
                               np.std(x, axis, ddof=int(unbiased)), rtol=1e-12)


def test_var_second_derivative():
    # d/dx_i sum_j r_j * dvar/dx_j = 2 / (n - 1) * (r_i - mean(r))
    a = R.standard_normal(5)
    r = R.standard_normal(5)
    x = d2s.to_tensor(a, stop_gradient=False)
    (g,) = d2s.grad(d2s.var(x), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 2 * (a - a.mean()) / 4, rtol=1e-12)
    (h,) = d2s.grad((g * d2s.to_tensor(r)).sum(), x)
    np.testing.assert_allclose(h.numpy(), 2 / 4 * (r - r.mean()), rtol=1e-10)
