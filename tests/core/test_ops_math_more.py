"""atan2 ... lcm (d2s/core/ops/math_more.py, issue 25): values vs numpy or
PyTorch (the special functions), gradients by finite differences,
to_static on numpy and xla, unknown dims, ONNX Runtime where ONNX has the
op."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(26)


def f64(*s, lo=0.5, hi=1.5):
    return R.uniform(lo, hi, size=s) * R.choice([-1.0, 1.0], size=s)


def _torch(fn_name):
    torch = pytest.importorskip("torch")
    fn = eval(f"torch.{fn_name}")  # (a fixed name from this file)

    def ref(x):
        return fn(torch.from_numpy(np.asarray(x))).numpy()
    return ref


def _logaddexp(x, y):
    return np.logaddexp(x, y)


CASES = [
    ("atan2", lambda x, y: (d2s.atan2(x, y), x.atan2(y)), [f64(2, 3), f64(3)],
     lambda x, y: (np.arctan2(x, y), np.arctan2(x, y)), {"onnx": False}),
    ("atan2_float32", lambda x, y: d2s.atan2(x, y),
     [f64(2, 3).astype(np.float32), np.array([1.0, -1.0, 0.0], np.float32)],
     lambda x, y: np.arctan2(x, y), {"rtol": 1e-5}),
    ("atan2_int", lambda x, y: d2s.atan2(x, y), [np.array([1, -2, 0]), np.array([-3, 0, 5])],
     lambda x, y: np.arctan2(x, y), {"onnx": False}),
    ("logit", lambda x: (d2s.logit(x), x.logit(0.3)), [R.uniform(0.1, 0.9, (2, 3))],
     lambda x: (np.log(x / (1 - x)), np.log(np.clip(x, 0.3, 0.7) / (1 - np.clip(x, 0.3, 0.7)))),
     {}),
    ("frac", lambda x: d2s.frac(x), [f64(2, 3) * 3], lambda x: x - np.trunc(x), {}),
    ("heaviside", lambda x, y: d2s.heaviside(x, y),
     [np.array([-1.0, 0.0, 2.0, 0.0]), np.array([0.5, 0.25, 0.75, 3.0])], np.heaviside,
     {"grad": False}),
    ("logaddexp", lambda x, y: (d2s.logaddexp(x, y), x.logaddexp(y)),
     [f64(2, 3) * 300, f64(3) * 300], lambda x, y: (_logaddexp(x, y), _logaddexp(x, y)), {}),
    ("signbit", lambda x: d2s.signbit(x), [np.array([-1.0, -0.0, 0.0, 2.0, -np.inf])],
     np.signbit, {}),
    ("signbit_int", lambda x: d2s.signbit(x), [np.array([-3, 0, 4], np.int32)], np.signbit, {}),
    ("sgn", lambda x: d2s.sgn(x), [np.array([-2.0, 0.0, 3.0])], np.sign, {"grad": False}),
    ("nan_to_num", lambda x: (d2s.nan_to_num(x), x.nan_to_num(1.0, 9.0, -9.0)),
     [np.array([np.nan, np.inf, -np.inf, 1.5])],
     lambda x: (np.nan_to_num(x), np.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0)),
     {"grad": False}),
    ("lerp", lambda x, y, w: (d2s.lerp(x, y, w), x.lerp(y, 0.25)),
     [f64(2, 3), f64(2, 3), f64(3)],
     lambda x, y, w: (x + w * (y - x), x + 0.25 * (y - x)), {}),
    ("gcd_lcm", lambda x, y: (d2s.gcd(x, y), d2s.lcm(x, y), x.gcd(y)),
     [np.array([12, -18, 0, 7, 0]), np.array([8, 12, 5, 0, 0])],
     lambda x, y: (np.gcd(x, y), np.lcm(x, y), np.gcd(x, y)), {"onnx": False}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_math_more_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


SPECIAL = [
    ("erfinv", lambda x: (d2s.erfinv(x), x.erfinv()), "special.erfinv",
     np.array([-0.99, -0.5, 0.0, 0.3, 0.9, 0.995])),
    ("lgamma", lambda x: (d2s.lgamma(x), x.lgamma()), "lgamma",
     np.array([-2.5, -0.3, 0.2, 1.0, 2.7, 30.0])),
    ("digamma", lambda x: (d2s.digamma(x), x.digamma()), "digamma",
     np.array([-2.5, -0.3, 0.2, 1.0, 2.7, 30.0])),
]


@pytest.mark.parametrize("case", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_special_function_vs_torch(case):
    name, fn, torch_name, x = case
    ref = _torch(torch_name)
    check(fn, [x], lambda v: (ref(v), ref(v)), onnx=False, rtol=1e-9)


def test_special_functions_at_edges_match_torch():
    near_one = np.array([0.99999, -0.9999999, 1 - 1e-12, -(1 - 1e-15), 0.7, -1e-300])
    np.testing.assert_allclose(d2s.erfinv(d2s.to_tensor(near_one)).numpy(),
                               _torch("special.erfinv")(near_one), rtol=1e-9)
    torch = pytest.importorskip("torch")
    x = np.array([-1.0, 1.0, 1.5, 0.0])
    np.testing.assert_array_equal(d2s.erfinv(d2s.to_tensor(x)).numpy(),
                                  torch.special.erfinv(torch.from_numpy(x)).numpy())
    poles = np.array([0.0, -1.0, -2.0])
    np.testing.assert_array_equal(d2s.lgamma(d2s.to_tensor(poles)).numpy(),
                                  torch.lgamma(torch.from_numpy(poles)).numpy())
    np.testing.assert_array_equal(d2s.digamma(d2s.to_tensor(poles)).numpy(),
                                  torch.digamma(torch.from_numpy(poles)).numpy())
    assert d2s.erfinv(d2s.to_tensor(np.array([0.5], np.float32))).dtype == np.float32


def test_digamma_gradient_is_trigamma():
    torch = pytest.importorskip("torch")
    x = np.array([-1.5, 0.3, 4.0, 25.0])
    t = d2s.to_tensor(x, stop_gradient=False)
    d2s.digamma(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(),
                               torch.polygamma(1, torch.from_numpy(x)).numpy(), rtol=1e-9)
    # at integers, psi'(n) = pi^2 / 6 - sum_{k < n} 1 / k^2 (torch's is good to 1e-10 only)
    t = d2s.to_tensor(np.array([4.0]), stop_gradient=False)
    d2s.digamma(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [np.pi ** 2 / 6 - (1 + 1 / 4 + 1 / 9)],
                               rtol=1e-13)


def test_onnx_export_of_special_functions_says_why_not():
    from d2s import static
    from d2s.onnx.exporter import export_program
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float64")
        y = d2s.lgamma(x)
    with pytest.raises(Exception, match="lgamma"):
        export_program(prog, prog.global_block().ops, [x], [y])


def test_gcd_needs_integers():
    with pytest.raises(TypeError, match="integer"):
        d2s.gcd(d2s.to_tensor([1.0]), d2s.to_tensor([2.0]))
