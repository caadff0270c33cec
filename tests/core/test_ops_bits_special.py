"""bitwise ops, hypot, copysign, logspace, ldexp, vander, nanmedian,
nanquantile, polygamma, baddbmm (d2s/core/ops/bits_special.py): values vs
numpy (or PyTorch for polygamma), gradients by finite differences,
to_static on numpy and xla, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(30)


def f64(*s):
    return R.uniform(0.5, 1.5, size=s) * R.choice([-1.0, 1.0], size=s)


NANS = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan, np.nan, np.nan, np.nan],
                 [2.0, -1.0, 4.0, 7.0]])

CASES = [
    ("bitwise_int", lambda x, y: (d2s.bitwise_and(x, y), d2s.bitwise_or(x, y),
                                  d2s.bitwise_xor(x, y), d2s.bitwise_not(x), x.bitwise_and(y)),
     [np.array([[5, -3, 12]]), np.array([3, 6, -1])],
     lambda x, y: (x & y, x | y, x ^ y, ~x, x & y), {}),
    ("bitwise_bool_int32", lambda x, y, a: (d2s.bitwise_and(x, y), d2s.bitwise_not(x),
                                            d2s.bitwise_xor(a, a + 1)),
     [np.array([True, False, True]), np.array([True, True, False]),
      np.array([1, 2, 7], np.int32)],
     lambda x, y, a: (x & y, ~x, a ^ (a + 1)), {}),
    ("operators_int_bitwise", lambda x, y: (x & y, x | 3, 6 ^ x, ~x, x & (y > 0)),
     [np.array([5, -3, 12]), np.array([3, 6, -1])],
     lambda x, y: (x & y, x | 3, 6 ^ x, ~x, x & (y > 0)), {}),
    ("operators_bool_logical", lambda x, y: (x & y, x | y, x ^ True, ~x),
     [np.array([True, False, True]), np.array([False, False, True])],
     lambda x, y: (x & y, x | y, x ^ True, ~x), {}),
    ("hypot", lambda x, y: d2s.hypot(x, y), [f64(2, 3), f64(3)], np.hypot, {}),
    ("hypot_huge", lambda x, y: d2s.hypot(x, y), [np.array([1e300, 0.0]), np.array([1e300, 0.0])],
     np.hypot, {"grad": False}),
    ("copysign", lambda x, y: d2s.copysign(x, y),
     [f64(4), np.array([-1.0, -0.0, 0.0, 2.0], np.float32)], np.copysign, {}),
    ("ldexp", lambda x, y: d2s.ldexp(x, y), [f64(3), np.array([1, -2, 3])],
     lambda x, y: np.ldexp(x, y), {}),
    ("vander", lambda x: (d2s.vander(x), d2s.vander(x, 4, True)), [f64(3)],
     lambda x: (np.vander(x), np.vander(x, 4, True)), {"unknown_dims": False}),
    ("nanmedian", lambda x: (d2s.nanmedian(x, 1), d2s.nanmedian(x),
                             d2s.nanmedian(x, 1, keepdim=True, mode="min")[0]),
     [NANS], lambda x: (_nanmedian(x, 1), np.nanmedian(x),
                        _nanmedian_low(x, 1)[:, None]), {"grad": False, "unknown_dims": False}),
    ("nanmedian_grad", lambda x: d2s.nanmedian(x, 1), [f64(2, 4)],
     lambda x: np.nanmedian(x, 1), {"unknown": "first"}),
    ("nanquantile", lambda x: (d2s.nanquantile(x, 0.3, 1),
                               d2s.nanquantile(x, [0.5, 0.9], 1, keepdim=True)),
     [NANS], lambda x: (_nanq(x, 0.3, 1), _nanq(x, [0.5, 0.9], 1, True)),
     {"grad": False, "unknown": "first"}),
    ("nanquantile_modes", lambda x: tuple(d2s.nanquantile(x, 0.5, 1, interpolation=m)
                                          for m in ("lower", "higher", "nearest", "midpoint")),
     [NANS], lambda x: tuple(_nanq(x, 0.5, 1, method=m)
                             for m in ("lower", "higher", "nearest", "midpoint")),
     {"grad": False, "unknown": "first"}),
    ("baddbmm", lambda i, x, y: d2s.baddbmm(i, x, y, 0.5, 2.0),
     [f64(2, 2, 3), f64(2, 2, 4), f64(2, 4, 3)], lambda i, x, y: 0.5 * i + 2.0 * (x @ y), {}),
]


def _nanmedian(x, axis):
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        return np.nanmedian(x, axis)


def _nanmedian_low(x, axis):
    out = []
    for row in x:
        v = np.sort(row[~np.isnan(row)])
        out.append(v[(len(v) - 1) // 2] if len(v) else np.nan)
    return np.array(out)


def _nanq(x, q, axis, keepdims=False, method="linear"):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(x, q, axis, keepdims=keepdims, method=method)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bits_special_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_logspace_and_polygamma():
    np.testing.assert_allclose(d2s.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000], rtol=1e-6)
    assert d2s.logspace(0, 1, 3, base=2.0, dtype="float64").dtype == np.float64
    torch = pytest.importorskip("torch")
    x = np.array([0.3, 2.5, 11.0])
    for n in (0, 1):
        np.testing.assert_allclose(d2s.polygamma(d2s.to_tensor(x), n).numpy(),
                                   torch.polygamma(n, torch.from_numpy(x)).numpy(), rtol=1e-9)
    with pytest.raises(NotImplementedError, match="n=2"):
        d2s.polygamma(d2s.to_tensor(x), 2)


def test_bitwise_needs_integers():
    with pytest.raises(TypeError, match="integer or bool"):
        d2s.bitwise_and(d2s.to_tensor([1.0]), d2s.to_tensor([1.0]))
