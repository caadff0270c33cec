"""Unary math (d2s/core/ops/math.py) through the public functions and Tensor
methods: values vs numpy, gradients vs finite differences, numpy+xla static,
unknown dims, ONNX Runtime; the composites (square, reciprocal, isnan, isinf,
isfinite, scale, increment); Paddle's round (halfway away from zero)."""
import math

import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(99)


def f64(*s, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, size=s)


_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0])

CASES = [
    ("sin_method", lambda x: x.sin(), [f64(3, 4)], np.sin),
    ("cos_method", lambda x: x.cos(), [f64(3, 4)], np.cos),
    ("tan", d2s.tan, [f64(5, lo=-1, hi=1)], np.tan),
    ("sinh_cosh", lambda x: d2s.sinh(x) * d2s.cosh(x), [f64(5)], lambda x: np.sinh(x) * np.cosh(x)),
    ("floor_method", lambda x: x.floor() + x, [np.array([[-2.7, -0.3, 0.2], [1.6, 2.5, 3.1]])], lambda x: np.floor(x) + x),
    ("ceil", d2s.ceil, [np.array([-1.5, -0.2, 0.3, 2.4])], np.ceil),
    ("round_half_away", d2s.round, [np.array([-2.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7])],
     lambda x: np.array([-3.0, -1.0, 1.0, 2.0, 3.0, 0.0, -1.0]), dict(grad=False)),
    ("rsqrt", d2s.rsqrt, [f64(3, 2, lo=0.5, hi=3)], lambda x: 1 / np.sqrt(x)),
    ("rsqrt_int", d2s.rsqrt, [np.array([1, 4, 9])], lambda x: 1 / np.sqrt(x)),
    ("log1p_expm1", lambda x: d2s.log1p(d2s.expm1(x)), [f64(4, lo=-1, hi=1)],
     lambda x: np.log1p(np.expm1(x))),
    ("log2_log10", lambda x: d2s.log2(x) + d2s.log10(x), [f64(4, lo=0.5, hi=4)],
     lambda x: np.log2(x) + np.log10(x)),
    ("asin_acos_atan_f32", lambda x: d2s.asin(x) + d2s.acos(x) * d2s.atan(x),
     [f64(5, lo=-0.9, hi=0.9).astype(np.float32)],
     lambda x: np.arcsin(x) + np.arccos(x) * np.arctan(x), dict(rtol=1e-5)),
    ("square", d2s.square, [f64(3, 3)], np.square),
    ("square_int", lambda x: x.square(), [np.arange(-3, 3)], np.square),
    ("reciprocal", d2s.reciprocal, [f64(4, lo=0.5, hi=2)], np.reciprocal),
    ("isnan_isinf_isfinite", lambda x: (d2s.isnan(x), d2s.isinf(x), d2s.isfinite(x)),
     [_SPECIAL], lambda x: (np.isnan(x), np.isinf(x), np.isfinite(x))),
    ("isinf_int", lambda x: (d2s.isinf(x), d2s.isfinite(x)), [np.arange(3)],
     lambda x: (np.isinf(x), np.isfinite(x))),
    ("scale", lambda x: d2s.scale(x, 2.0, 0.5), [f64(2, 3)], lambda x: 2 * x + 0.5),
    ("scale_bias_first", lambda x: x.scale(3.0, 1.0, bias_after_scale=False), [f64(4)],
     lambda x: 3 * (x + 1)),
    ("scale_act", lambda x: d2s.scale(x, -1.0, act="relu"), [f64(5)],
     lambda x: np.maximum(-x, 0)),
    ("scale_int", lambda x: d2s.scale(x, 2, 1), [np.arange(4)], lambda x: 2 * x + 1),
    ("increment", lambda x: d2s.increment(x, 2.0), [f64(1)], lambda x: x + 2),
    ("increment_int", d2s.increment, [np.array([5])], lambda x: x + 1),
    ("pow_method", lambda x: x.pow(3), [f64(3)], lambda x: x ** 3),
    ("divide_method", lambda x, y: x.divide(y), [f64(3), f64(3, lo=1, hi=2)], np.divide),
    ("erf_sign_methods", lambda x: x.erf() + x.sign(), [f64(4)],
     lambda x: np.vectorize(math.erf)(x) + np.sign(x), dict(grad=False)),
]


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_math_op(case):
    name, fn, arrays, ref, *options = case
    check(fn, arrays, ref, **(options[0] if options else {}))


def test_round_near_half_is_not_fooled_by_float_addition():
    x = np.array([0.49999999999999994, -0.49999999999999994, 2.5000000000000004])
    np.testing.assert_array_equal(d2s.round(d2s.to_tensor(x)).numpy(), [0.0, -0.0, 3.0])


def test_onnx_float64_inverse_trig_says_why_not():
    from d2s.onnx.errors import ExportError
    pytest.importorskip("onnx")
    from d2s.onnx.exporter import export_program
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        x = d2s.static.data("x", [3], "float64")
        y = d2s.atan(x)
    with pytest.raises(ExportError, match="float64.*cast to float32"):
        export_program(prog, prog.global_block().ops, [x], [y])


def test_scale_rejects_unknown_act():
    with pytest.raises(ValueError, match="unknown act"):
        d2s.scale(d2s.to_tensor(f64(2)), act="gelu6")
