"""unfold, crop (d2s/core/ops/windows.py) and isposinf / isneginf / isreal
(math_more.py): values vs numpy (or PyTorch's Tensor.unfold), gradients by
finite differences, to_static on numpy and xla, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(31)


def f64(*s):
    return R.uniform(-1.5, 1.5, size=s)


def _unfold(x, axis, size, step):
    torch = pytest.importorskip("torch")
    return torch.from_numpy(x).unfold(axis, size, step).numpy()


CASES = [
    ("unfold", lambda x: (d2s.unfold(x, 1, 3, 2), x.unfold(0, 2, 1)), [f64(3, 7)],
     lambda x: (_unfold(x, 1, 3, 2), _unfold(x, 0, 2, 1)), {"unknown_dims": False}),
    ("unfold_batch_unknown", lambda x: d2s.unfold(x, -1, 4, 4), [f64(2, 8)],
     lambda x: _unfold(x, 1, 4, 4), {"unknown": "first"}),
    ("crop", lambda x: (d2s.crop(x, [2, -1], [1, 1]), d2s.crop(x, [1, 2])), [f64(3, 4)],
     lambda x: (x[1:3, 1:], x[:1, :2]), {"unknown": "first"}),
    ("inf_tests", lambda x: (d2s.isposinf(x), d2s.isneginf(x), d2s.isreal(x)),
     [np.array([np.inf, -np.inf, np.nan, 1.0])],
     lambda x: (np.isposinf(x), np.isneginf(x), np.isreal(x)), {}),
    ("inf_tests_int", lambda x: (d2s.isposinf(x), d2s.isneginf(x)), [np.array([1, -2])],
     lambda x: (np.isposinf(x), np.isneginf(x)), {}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_windows_op(case):
    name, fn, arrays, ref, opts = case
    check(fn, arrays, ref, **opts)


def test_bad_windows():
    x = d2s.to_tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="size must be"):
        d2s.unfold(x, 1, 4, 1)
    with pytest.raises(ValueError, match="exceeds"):
        d2s.crop(x, [2, 2], [1, 0])
