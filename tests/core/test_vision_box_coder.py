"""d2s.vision.ops.box_coder (d2s/vision/_detection.py, a composite):
encode/decode center-size vs a loop reference written from Paddle's
definition (variance tensor, list or none; normalized or pixel boxes;
decode along axis 0 or 1), gradients by finite differences, numpy and xla
conversion, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

from d2s.vision.ops import box_coder
from ops_check import check

R = np.random.default_rng(9)


def corners(n):
    lo = R.uniform(0, 2, size=(n, 2))
    return np.concatenate([lo, lo + R.uniform(0.5, 2, size=(n, 2))], 1)


def center(b, extra):
    w, h = b[2] - b[0] + extra, b[3] - b[1] + extra
    return b[0] + w / 2, b[1] + h / 2, w, h


def ref_encode(prior, var, target, normalized=True):
    extra = 0.0 if normalized else 1.0
    out = np.zeros((len(target), len(prior), 4))
    for i, t in enumerate(target):
        tcx, tcy, tw, th = center(t, extra)
        for j, p in enumerate(prior):
            pcx, pcy, pw, ph = center(p, extra)
            v = np.ones(4) if var is None else np.asarray(var[j] if np.ndim(var) == 2 else var)
            out[i, j] = np.array([(tcx - pcx) / pw, (tcy - pcy) / ph, np.log(abs(tw / pw)),
                                  np.log(abs(th / ph))]) / v
    return out


def ref_decode(prior, var, target, normalized=True, axis=0):
    extra = 0.0 if normalized else 1.0
    out = np.zeros(target.shape)
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            k = j if axis == 0 else i
            pcx, pcy, pw, ph = center(prior[k], extra)
            v = np.ones(4) if var is None else np.asarray(var[k] if np.ndim(var) == 2 else var)
            d = target[i, j]
            cx, cy = v[0] * d[0] * pw + pcx, v[1] * d[1] * ph + pcy
            w, h = np.exp(v[2] * d[2]) * pw, np.exp(v[3] * d[3]) * ph
            out[i, j] = [cx - w / 2, cy - h / 2, cx + w / 2 - extra, cy + h / 2 - extra]
    return out


P, V, T = corners(3), R.uniform(0.1, 0.3, size=(3, 4)), corners(2)
D0, D1 = R.standard_normal((2, 3, 4)) * 0.3, R.standard_normal((3, 2, 4)) * 0.3
LV = [0.1, 0.1, 0.2, 0.2]
CASES = [
    ("encode_var_tensor", lambda p, v, t: box_coder(p, v, t), [P, V, T],
     lambda p, v, t: ref_encode(p, v, t)),
    ("encode_var_list_pixels", lambda p, t: box_coder(p, LV, t, box_normalized=False),
     [P * 10, T * 10], lambda p, t: ref_encode(p, LV, t, False)),
    ("decode_axis0_var_tensor",
     lambda p, v, t: box_coder(p, v, t, "decode_center_size"), [P, V, D0],
     lambda p, v, t: ref_decode(p, v, t)),
    ("decode_axis1_list_pixels",
     lambda p, t: box_coder(p, LV, t, "decode_center_size", False, axis=1), [P * 10, D1],
     lambda p, t: ref_decode(p, LV, t, False, 1)),
    ("decode_no_var_float32",
     lambda p, t: box_coder(p, None, t, "decode_center_size"),
     [P.astype("float32"), D0.astype("float32")],
     lambda p, t: ref_decode(p, None, t).astype("float32")),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_box_coder(case):
    name, fn, arrays, ref = case
    check(fn, arrays, ref, rtol=1e-5 if arrays[0].dtype == np.float32 else 1e-6)


def test_box_coder_bad_input():
    import d2s
    p = d2s.to_tensor(P)
    with pytest.raises(ValueError, match="code_type"):
        box_coder(p, None, d2s.to_tensor(T), "encode_corner")
    with pytest.raises(ValueError, match=r"target_box \[N, M, 4\]"):
        box_coder(p, None, d2s.to_tensor(T), "decode_center_size")
