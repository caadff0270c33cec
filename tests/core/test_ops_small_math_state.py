"""t / sinc / polar / positive / negative / gammaln / multigammaln /
reduce_as / shard_index / log_normal (d2s/core/ops/small_math.py) vs numpy through the shared
ops_check (values, gradients, numpy+xla static, unknown dims, ONNX where it
has the dtype); is_grad_enabled / set_grad_enabled / enable_grad; the
random generator's state saved and put back redraws the same numbers."""
import math

import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(37)

CASES = [
    ("sinc", lambda x: d2s.sinc(x), [np.array([0.0, 0.3, -1.7, 2.5, 0.0])], np.sinc),
    ("sinc_method_f32", lambda x: x.sinc(), [R.standard_normal((2, 3)).astype(np.float32)],
     lambda x: np.sinc(x).astype(np.float32)),
    ("t_2d", lambda x: d2s.t(x), [R.standard_normal((2, 3))], lambda x: x.T),
    ("t_1d", lambda x: d2s.t(x) * 2.0, [R.standard_normal(4)], lambda x: x * 2.0),
    ("positive_negative", lambda x: (d2s.positive(x) * 1.0, x.negative()),
     [R.standard_normal(3)], lambda x: (x, -x)),
    ("gammaln", lambda x: d2s.gammaln(x), [R.uniform(0.5, 4, 4)],
     lambda x: np.array([math.lgamma(v) for v in x])),
    ("multigammaln", lambda x: d2s.multigammaln(x, 3), [R.uniform(1.5, 4, 4)],
     lambda x: np.array([3 * 2 / 4 * math.log(math.pi)
                         + sum(math.lgamma(v + (1 - j) / 2) for j in range(1, 4)) for v in x])),
    ("reduce_as", lambda x, y: d2s.reduce_as(x, y), [R.standard_normal((2, 3, 4)),
                                                     R.standard_normal((3, 1))],
     lambda x, y: x.sum(0).sum(1, keepdims=True)),
    ("shard_index", lambda x: d2s.shard_index(x, 20, 2, 1), [np.array([[16], [1], [10], [9]])],
     lambda x: np.where(x // 10 == 1, x % 10, -1)),
]


@pytest.mark.parametrize("name,fn,arrays,ref", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, arrays, ref):
    check(fn, arrays, ref, unknown="first" if name == "reduce_as" else "all",
          onnx="gammaln" not in name)  # ONNX has no lgamma (NotLowerable)


def test_log_normal_and_errors():
    d2s.seed(5)
    x = d2s.log_normal(0.5, 0.25, shape=[4000])
    assert x.dtype == np.float32
    logs = np.log(x.numpy())
    assert abs(logs.mean() - 0.5) < 0.02 and abs(logs.std() - 0.25) < 0.02
    assert d2s.bitwise_invert(d2s.to_tensor(np.array([0, 5]))).numpy().tolist() == [-1, -6]
    with pytest.raises(TypeError, match="bool"):
        d2s.positive(d2s.to_tensor(np.array([True])))
    with pytest.raises(ValueError, match="broadcast"):
        d2s.reduce_as(d2s.ones([2, 3]), d2s.ones([2]))


def test_polar():
    check(lambda a, th: d2s.polar(a, th), [R.uniform(0.5, 2, 4), R.uniform(-3, 3, 4)],
          lambda a, th: a * np.exp(1j * th), grad=False, onnx=False)  # ONNX: no complex
    with pytest.raises(ValueError, match="at most 2-D"):
        d2s.t(d2s.ones([2, 2, 2]))


def test_cholesky_at_the_top_level():
    a = R.standard_normal((3, 3))
    spd = a @ a.T + 3 * np.eye(3)
    np.testing.assert_allclose(d2s.cholesky(d2s.to_tensor(spd)).numpy(),
                               np.linalg.cholesky(spd), rtol=1e-12)
    assert d2s.cholesky is d2s.linalg.cholesky


def test_nextafter():
    x, y = R.standard_normal(5), np.array([np.inf, -np.inf, 0.0, 1.0, -1.0])
    check(lambda a, b: d2s.nextafter(a, b), [x, y], np.nextafter, grad=False, onnx=False)
    np.testing.assert_array_equal(d2s.to_tensor(x).nextafter(d2s.to_tensor(y)).numpy(),
                                  np.nextafter(x, y))
    with pytest.raises(TypeError, match="float32 or float64"):
        d2s.nextafter(d2s.to_tensor(np.array([1])), d2s.to_tensor(np.array([2])))


def test_grad_mode():
    x = d2s.to_tensor(np.ones(2), stop_gradient=False)
    assert d2s.is_grad_enabled()
    with d2s.set_grad_enabled(False):
        assert not d2s.is_grad_enabled()
        assert (x * 2).stop_gradient
        with d2s.enable_grad():
            assert d2s.is_grad_enabled() and not (x * 2).stop_gradient
    assert d2s.is_grad_enabled()
    d2s.set_grad_enabled(False)
    try:
        assert not d2s.is_grad_enabled()
    finally:
        d2s.set_grad_enabled(True)
    with pytest.raises(TypeError, match="bool"):
        d2s.set_grad_enabled("no")


def test_rng_state_round_trip():
    d2s.seed(3)
    state = d2s.get_rng_state()
    first = [d2s.rand([3]).numpy(), d2s.randn([2]).numpy()]
    d2s.set_rng_state(state)
    again = [d2s.rand([3]).numpy(), d2s.randn([2]).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert d2s.get_cuda_rng_state() == []
    d2s.set_cuda_rng_state([])
    with pytest.raises(ValueError, match="get_rng_state"):
        d2s.set_rng_state([1, 2])


def test_set_printoptions():
    from d2s.core.tensor import PRINT_OPTIONS
    saved = dict(PRINT_OPTIONS)
    try:
        x = d2s.to_tensor(np.array([1.0 / 3, 2.0e-5, 12.5]))
        d2s.set_printoptions(precision=2, sci_mode=False)
        assert "0.33, 0.00, 12.50" in repr(x)
        d2s.set_printoptions(sci_mode=True)
        assert "3.33e-01" in repr(x)
        d2s.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(d2s.to_tensor(np.arange(20.0)))
        with pytest.raises(ValueError, match="precision"):
            d2s.set_printoptions(precision=-1)
    finally:
        PRINT_OPTIONS.clear()
        PRINT_OPTIONS.update(saved)
        from d2s import runtime_state
        runtime_state._SCI_MODE[0] = None
