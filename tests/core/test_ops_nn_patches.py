"""Sliding windows of d2s.nn.functional (d2s/nn/patch_functional.py): unfold,
fold, max_pool2d/1d(return_mask=True), max_unpool2d, adaptive_max_pool2d/1d,
checked against PyTorch (values, masks, gradients by finite differences of the
torch reference), to_static on numpy and xla, unknown dims and ONNX Runtime."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import nn
from ops_check import check

torch = pytest.importorskip("torch")
TF = torch.nn.functional
R = np.random.default_rng(5)


def t(a):
    return torch.tensor(a)


def x4(*s):
    return R.standard_normal(s)


def _pool_ref(k, s, p, ceil=False):
    def ref(x):
        v, i = TF.max_pool2d(t(x), k, s, p, ceil_mode=ceil, return_indices=True)
        return v.numpy(), i.numpy().astype(np.int32)
    return ref


def _unpool_ref(k, s, p, size):
    def ref(x):
        v, i = TF.max_pool2d(t(x), k, s, p, return_indices=True)
        return TF.max_unpool2d(v, i, k, s, p, output_size=size).numpy()
    return ref


def _pool3d_unpool(x):
    v, m = F.max_pool3d(x, 2, 2, 1, return_mask=True)
    return v, m, F.max_unpool3d(v, m, 2, 2, 1, output_size=[4, 3, 5])


def _pool3d_ref(x):
    v, i = TF.max_pool3d(t(x), 2, 2, 1, return_indices=True)
    u = TF.max_unpool3d(v, i, 2, 2, 1, output_size=(4, 3, 5))
    return v.numpy(), i.numpy().astype(np.int32), u.numpy()


CASES = [
    ("unfold", lambda x: F.unfold(x, 2), [x4(2, 3, 4, 5)],
     lambda x: TF.unfold(t(x), 2).numpy(), "all"),
    ("unfold_stride_pad_dilation", lambda x: F.unfold(x, [2, 3], strides=2, paddings=1,
                                                      dilations=[1, 2]),
     [x4(1, 2, 5, 6)], lambda x: TF.unfold(t(x), (2, 3), (1, 2), 1, 2).numpy(), "all"),
    ("unfold_four_paddings", lambda x: F.unfold(x, 2, paddings=[1, 0, 2, 1]), [x4(1, 2, 3, 3)],
     lambda x: TF.unfold(TF.pad(t(x), (0, 1, 1, 2)), 2).numpy(), "all"),
    ("fold", lambda x: F.fold(x, [4, 5], 2), [x4(2, 12, 12)],
     lambda x: TF.fold(t(x), (4, 5), 2).numpy(), "first"),
    ("fold_stride_pad_dilation", lambda x: F.fold(x, [5, 6], [2, 3], strides=2, paddings=1,
                                                  dilations=[1, 2]),
     [x4(1, 12, 6)], lambda x: TF.fold(t(x), (5, 6), (2, 3), (1, 2), 1, 2).numpy(), "first"),
    ("max_pool2d_mask", lambda x: F.max_pool2d(x, 2, return_mask=True), [x4(2, 2, 4, 5)],
     _pool_ref(2, 2, 0), "all"),
    ("max_pool2d_mask_overlap_pad", lambda x: F.max_pool2d(x, 3, 2, 1, return_mask=True),
     [x4(1, 2, 5, 6)], _pool_ref(3, 2, 1), "all"),
    ("max_pool2d_mask_ceil", lambda x: F.max_pool2d(x, 3, 2, 1, return_mask=True,
                                                    ceil_mode=True),
     [x4(1, 2, 6, 5)], _pool_ref(3, 2, 1, True), "first"),
    ("max_pool1d_mask", lambda x: F.max_pool1d(x, 2, return_mask=True), [x4(2, 3, 6)],
     lambda x: tuple(a.numpy().astype(np.int32) if a.dtype == torch.int64 else a.numpy()
                     for a in TF.max_pool1d(t(x), 2, return_indices=True)), "all"),
    ("max_unpool2d", lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_mask=True), 2),
     [x4(1, 2, 4, 6)], _unpool_ref(2, 2, 0, None), "first"),
    ("max_unpool2d_output_size",
     lambda x: F.max_unpool2d(*F.max_pool2d(x, 3, 2, 1, return_mask=True), 3, 2, 1,
                              output_size=[5, 5]),
     [x4(1, 2, 5, 5)], _unpool_ref(3, 2, 1, (5, 5)), "first"),
    ("max_pool3d_mask_unpool3d", lambda x: _pool3d_unpool(x), [x4(1, 1, 4, 3, 5)],
     _pool3d_ref, "first"),
    ("max_unpool1d", lambda x: F.max_unpool1d(*F.max_pool1d(x, 2, return_mask=True), 2),
     [x4(2, 2, 6)], lambda x: TF.max_unpool1d(*TF.max_pool1d(t(x), 2, return_indices=True),
                                              2).numpy(), "first"),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, [2, 3], return_mask=True),
     [x4(2, 2, 5, 7)],
     lambda x: tuple(a.numpy().astype(np.int32) if a.dtype == torch.int64 else a.numpy()
                     for a in TF.adaptive_max_pool2d(t(x), (2, 3), return_indices=True)),
     "first"),
    ("adaptive_max_pool3d", lambda x: F.adaptive_max_pool3d(x, [2, 3, 2], return_mask=True),
     [x4(1, 2, 3, 5, 4)],
     lambda x: tuple(a.numpy().astype(np.int32) if a.dtype == torch.int64 else a.numpy()
                     for a in TF.adaptive_max_pool3d(t(x), (2, 3, 2), return_indices=True)),
     "first"),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 3), [x4(2, 2, 7)],
     lambda x: TF.adaptive_max_pool1d(t(x), 3).numpy(), "first"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_patch_op(case):
    name, fn, arrays, ref, unknown = case
    check(fn, arrays, ref, unknown=unknown)


def test_layers_match_torch():
    x = x4(1, 2, 4, 4)
    v, m = nn.MaxPool2D(2, return_mask=True)(d2s.to_tensor(x))
    np.testing.assert_array_equal(nn.MaxUnPool2D(2)(v, m).numpy(),
                                  TF.max_unpool2d(*TF.max_pool2d(t(x), 2, return_indices=True),
                                                  2).numpy())
    np.testing.assert_array_equal(nn.MaxUnPool1D(2)(*nn.MaxPool1D(2, return_mask=True)(
        d2s.to_tensor(x[0]))).numpy(), TF.max_unpool1d(*TF.max_pool1d(
            t(x[0]), 2, return_indices=True), 2).numpy())
    v3 = x4(1, 1, 2, 2, 2)
    np.testing.assert_array_equal(nn.MaxUnPool3D(2)(*nn.MaxPool3D(2, return_mask=True)(
        d2s.to_tensor(v3))).numpy(), TF.max_unpool3d(*TF.max_pool3d(
            t(v3), 2, return_indices=True), 2).numpy())
    cols = nn.Unfold([2, 2])(d2s.to_tensor(x))
    np.testing.assert_allclose(cols.numpy(), TF.unfold(t(x), 2).numpy())
    np.testing.assert_allclose(nn.Fold([4, 4], 2)(cols).numpy(),
                               TF.fold(TF.unfold(t(x), 2), (4, 4), 2).numpy())
    np.testing.assert_allclose(nn.AdaptiveMaxPool3D(1)(d2s.to_tensor(v3)).numpy(),
                               TF.adaptive_max_pool3d(t(v3), 1).numpy())
    np.testing.assert_allclose(nn.AdaptiveMaxPool2D(2)(d2s.to_tensor(x)).numpy(),
                               TF.adaptive_max_pool2d(t(x), 2).numpy())


def test_unfold_keeps_infinities():
    x = np.array([[[[np.inf, 1.0], [2.0, -np.inf]]]])
    np.testing.assert_array_equal(F.unfold(d2s.to_tensor(x), 1).numpy(), x.reshape(1, 1, 4))


def test_bad_arguments_name_the_function():
    x = d2s.to_tensor(x4(1, 1, 3, 3))
    with pytest.raises(ValueError, match="unfold: kernel_sizes"):
        F.unfold(x, 4)
    with pytest.raises(ValueError, match="fold: the input has 5 columns"):
        F.fold(d2s.to_tensor(x4(1, 4, 5)), [3, 3], 2)
    with pytest.raises(ValueError, match="paddings"):
        F.unfold(x, 2, paddings=[1, 2, 3])
