"""Volumetric `F.grid_sample` (NCDHW input, (N, D, H, W, 3) grid: trilinear
'bilinear' and 'nearest', every padding mode, align_corners both ways) and
3-D `F.affine_grid` (theta (N, 3, 4)) against PyTorch: values, gradients
w.r.t. the input, the grid and theta by finite differences of the torch
reference, to_static on numpy and xla, unknown dims, ONNX Runtime."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from ops_check import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
R = np.random.default_rng(11)


def t(a):
    return torch.tensor(a)


def _grid_case(mode, padding_mode, align):
    grid = R.uniform(-1.3, 1.3, (1, 2, 1, 2, 3))
    x = R.standard_normal((1, 2, 2, 3, 2))
    return (f"{mode}_{padding_mode}_{'ac' if align else 'noac'}",
            lambda x, g: F.grid_sample(x, g, mode, padding_mode, align), [x, grid],
            lambda x, g: TF.grid_sample(t(x), t(g), mode, padding_mode, align).numpy(), "all")


CASES = [_grid_case(m, p, a) for m in ("bilinear", "nearest")
         for p in ("zeros", "border", "reflection") for a in (True, False)] + [
    ("affine_grid_3d", lambda th: F.affine_grid(th, [2, 1, 2, 3, 2]),
     [R.standard_normal((2, 3, 4))],
     lambda th: TF.affine_grid(t(th), (2, 1, 2, 3, 2), align_corners=True).numpy(), "first"),
    ("affine_grid_3d_noac", lambda th: F.affine_grid(th, [1, 1, 3, 1, 2], align_corners=False),
     [R.standard_normal((1, 3, 4))],
     lambda th: TF.affine_grid(t(th), (1, 1, 3, 1, 2), align_corners=False).numpy(), "first"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_volumetric_grid_op(case):
    name, fn, arrays, ref, unknown = case
    check(fn, arrays, ref, unknown=unknown)


def test_affine_grid_then_grid_sample_3d_round_trip():
    """The identity map samples the volume back (align_corners=True)."""
    x = R.standard_normal((2, 1, 2, 3, 4))
    theta = np.tile(np.eye(3, 4), (2, 1, 1))
    grid = F.affine_grid(d2s.to_tensor(theta), list(x.shape))
    out = F.grid_sample(d2s.to_tensor(x), grid)
    np.testing.assert_allclose(out.numpy(), x, rtol=1e-12, atol=1e-12)


def test_shape_mismatches_are_clear_errors():
    x5 = d2s.to_tensor(np.zeros((1, 1, 2, 2, 2)))
    with pytest.raises(ValueError, match=r"grid must be \(N, D, H, W, 3\)"):
        F.grid_sample(x5, d2s.to_tensor(np.zeros((1, 2, 2, 2))))
    with pytest.raises(ValueError, match=r"theta must be \(N, 3, 4\)"):
        F.affine_grid(d2s.to_tensor(np.zeros((1, 2, 3))), [1, 1, 2, 2, 2])
