"""Each op's ONNX rule, run in ONNX Runtime, gives the eager numbers.

Every case builds a small static program from data Variables twice — with
the inputs' shapes known, and with every dim unknown (`None`: the rules'
run-time shape paths) — exports it and compares ONNX Runtime's outputs with
the eager run of the same function on the same arrays: identical dtypes and
shapes, values to rtol 1e-5. The meta-test lists every op as mapped or not
exportable (with the reason) and checks that these cases exercise every
mapped op.
"""
from __future__ import annotations

import numpy as np
import pytest

from onnx_helpers import assert_same, run_model

import d2s
import d2s.distributed
import d2s.nn.functional as F
from d2s.core.dispatch import bind
from d2s import static
from d2s.core.ops.quant import gather_dequantize, weight_dequantize
from d2s.core.registry import OPS, NotLowerable
from d2s.onnx.exporter import export_program
from d2s.static.control_ops import CONTROL_OPS

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return rng.standard_normal(shape)


def ints(*shape, low=-5, high=6, dtype=np.int64):
    return rng.integers(low, high, size=shape).astype(dtype)


def bools(*shape):
    return rng.random(shape) > 0.5


# Values where numpy's floor division and remainder differ from C's.
_NUMERATORS = np.array([7, -7, 7, -7, 0, 5, -5, 1, -1, 9], np.int64)
_DIVISORS = np.array([2, 2, -2, -2, 3, 0, 0, -1, 1, -3], np.int64)
_FLOAT_NUM = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, 5.0, 1e-3, -2.0, 3.0, np.inf],
                      np.float64)
_FLOAT_DEN = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.1, 0.0, -7.0, np.inf, -np.inf, 2.0],
                      np.float64)

CASES = [
    # arithmetic, with NumPy 2 promotion becoming explicit Casts
    ("add", lambda x, y: x + y, [f32(2, 3), f32(3)]),
    ("add_int_float", lambda x, y: x + y, [ints(2, 3), f32(3)]),
    ("add_bools", lambda x, y: x + y, [bools(4), bools(4)]),
    ("add_int32_int64", lambda x, y: x + y, [ints(3, dtype=np.int32), ints(3)]),
    ("subtract", lambda x, y: x - y, [f64(2, 3), ints(2, 1)]),
    ("multiply", lambda x, y: x * y, [f32(4), f64(4)]),
    ("multiply_bools", lambda x, y: x * y, [bools(4), bools(4)]),
    ("divide", lambda x, y: x / y, [f32(3), f32(3) + 3]),
    ("divide_ints", lambda x, y: x / y, [ints(5), ints(5, low=1)]),
    ("floor_divide_ints", lambda x, y: x // y, [_NUMERATORS, _DIVISORS]),
    ("floor_divide_int32", lambda x, y: x // y, [_NUMERATORS.astype(np.int32),
                                                 _DIVISORS.astype(np.int32)]),
    ("floor_divide_floats", lambda x, y: x // y, [_FLOAT_NUM, _FLOAT_DEN]),
    ("floor_divide_float32", lambda x, y: x // y, [f32(20) * 10, f32(20)]),
    ("remainder_ints", lambda x, y: x % y, [_NUMERATORS, _DIVISORS]),
    ("remainder_floats", lambda x, y: x % y, [_FLOAT_NUM, _FLOAT_DEN]),
    ("remainder_float32", lambda x, y: x % y, [f32(20) * 10, f32(20)]),
    ("pow", lambda x, y: x ** y, [np.abs(f32(4)) + 0.5, f32(4)]),
    ("pow_ints", lambda x, y: x ** y, [ints(4), ints(4, low=0, high=4)]),
    ("bitwise_and", lambda x, y: x & y, [ints(2, 3), ints(3)]),
    ("bitwise_or_int32", lambda x, y: x | y, [ints(3, dtype=np.int32), ints(3, dtype=np.int32)]),
    ("bitwise_xor_bools", lambda x, y: d2s.bitwise_xor(x, y), [bools(4), bools(4)]),
    ("bitwise_not", lambda x: ~x, [ints(2, 3)]),
    ("maximum", d2s.maximum, [f32(2, 3), f32(3)]),
    ("minimum", d2s.minimum, [ints(3), f64(3)]),
    ("maximum_bools", d2s.maximum, [bools(4), bools(4)]),
    # comparisons and logic
    ("equal", d2s.equal, [ints(6, low=0, high=2), ints(6, low=0, high=2)]),
    ("equal_bools", d2s.equal, [bools(6), bools(6)]),
    ("not_equal", d2s.not_equal, [f32(3), f32(3)]),
    ("less_than", d2s.less_than, [ints(4), f32(4)]),
    ("less_equal", d2s.less_equal, [ints(4), ints(4)]),
    ("greater_than", d2s.greater_than, [bools(4), bools(4)]),
    ("greater_equal", d2s.greater_equal, [f64(4), f64(4)]),
    ("logical_and", d2s.logical_and, [bools(5), bools(5)]),
    ("logical_or", d2s.logical_or, [ints(5, low=0, high=2), bools(5)]),
    ("logical_xor", d2s.logical_xor, [bools(5), bools(5)]),
    ("logical_not", d2s.logical_not, [f32(5)]),
    # unary math
    ("neg", lambda x: -x, [ints(3)]),
    ("exp", d2s.exp, [f32(3)]),
    ("exp_int", d2s.exp, [ints(3)]),
    ("log", d2s.log, [np.abs(f64(3)) + 0.1]),
    ("sqrt", d2s.sqrt, [np.abs(f32(3))]),
    ("tanh", d2s.tanh, [f64(3)]),
    ("abs", d2s.abs, [ints(4)]),
    ("erf", d2s.erf, [f32(5)]),
    ("erf_float64", d2s.erf, [f64(5)]),  # runs in float32 in ONNX Runtime: rtol 1e-6
    ("sign", d2s.sign, [f32(5)]),
    ("sigmoid", d2s.sigmoid, [f32(5) * 20]),
    ("sigmoid_float64", d2s.sigmoid, [f64(5) * 20]),
    ("relu", d2s.relu, [f32(5)]),
    ("relu_int", d2s.relu, [ints(5)]),
    ("where", lambda c, x, y: d2s.where(c, x, y), [bools(2, 3), f32(3), ints(2, 3)]),
    ("clip", lambda x: d2s.clip(x, -0.5, 0.5), [f32(6)]),
    ("clip_int", lambda x: d2s.clip(x, -1.5, 2.5), [ints(6)]),
    ("clip_min_only", lambda x: d2s.clip(x, min=0.0), [f64(6)]),
    ("cast", lambda x: d2s.cast(x, "int32"), [f32(6) * 4]),
    ("cast_bool", lambda x: d2s.cast(x, "bool"), [ints(6, low=-1, high=2)]),
    # creation
    ("full", lambda x: x + d2s.full([2, 3], 1.5, "float32"), [f32(2, 3)]),
    ("zeros_large", lambda x: x + d2s.zeros([40, 3]), [f32(40, 3)]),
    ("assign_value", lambda x: x + np.arange(6.0).reshape(2, 3), [f64(2, 3)]),
    ("full_like", lambda x: d2s.full_like(x, 7, "int32"), [f32(2, 3)]),
    ("zeros_like", d2s.zeros_like, [f64(3, 2)]),
    ("arange", lambda x: x + d2s.arange(1, 8, 2), [ints(4)]),
    ("shape", d2s.shape, [f32(2, 3, 4)]),
    ("numel", d2s.numel, [f32(2, 3, 4)]),
    ("numel_axes", lambda x: d2s.numel(x, axes=[1]), [ints(3, 2)]),
    # shape manipulation
    ("reshape", lambda x: x.reshape([3, -1]), [f32(2, 3)]),
    ("reshape_copy_dim", lambda x: x.reshape([0, 2, -1]), [f32(2, 4, 3)]),
    ("reshape_run_time_dims", lambda x: x.reshape([d2s.shape(x)[1], -1]), [f32(2, 3)]),
    ("expand", lambda x: x.expand([2, -1, 3]), [f32(1, 3)]),
    ("expand_run_time_dims", lambda x, y: x.expand([d2s.shape(y)[0], 3]), [f32(3), f32(4)]),
    ("detach", lambda x: x.detach() * 2, [f32(3)]),
    # placements are metadata on one device: an identity in the exported model
    ("reshard", lambda x: d2s.distributed.reshard(
        x * 2, d2s.distributed.ProcessMesh([0, 1]), [d2s.distributed.Shard(0)]), [f32(4)]),
    ("full_run_time_dims", lambda x: d2s.zeros([d2s.shape(x)[0], 2], "int32"), [f32(5)]),
    ("arange_run_time_bound", lambda x: d2s.arange(d2s.shape(x)[0], dtype="float64"), [f32(4)]),
    ("transpose", lambda x: x.transpose([2, 0, 1]), [f32(2, 3, 4)]),
    ("unsqueeze", lambda x: d2s.unsqueeze(x, [0, 2]), [f32(2, 3)]),
    ("squeeze", lambda x: d2s.squeeze(x, 1), [f32(2, 1, 3)]),
    ("squeeze_all", lambda x: d2s.squeeze(x), [f32(1, 3, 1)]),  # unknown dims: kept
    ("flatten", lambda x: x.flatten(1, 2), [f32(2, 3, 4, 5)]),
    ("flatten_0d", lambda x: x.flatten(), [np.float32(3.0)]),
    ("concat", lambda x, y: d2s.concat([x, y], axis=1), [f32(2, 3), ints(2, 2)]),
    ("stack", lambda x, y: d2s.stack([x, y], axis=1), [f32(2, 3), f32(2, 3)]),
    ("gather", lambda x, i: d2s.gather(x, i, axis=1), [f32(3, 4), ints(2, 2, low=-4, high=4)]),
    # indexing (numpy's rules)
    ("getitem_int", lambda x: x[1], [f32(3, 4)]),
    ("getitem_last", lambda x: x[-1], [f32(3, 4)]),
    ("getitem_slice", lambda x: x[1:3], [f32(4, 2)]),
    ("getitem_reverse", lambda x: x[::-1, ::2], [f32(4, 5)]),
    ("getitem_negative_step", lambda x: x[3:0:-2], [f32(5)]),
    ("getitem_none_int", lambda x: x[None, 1, :, None], [f32(3, 4)]),
    ("getitem_ellipsis", lambda x: x[..., 0], [f32(2, 3, 4)]),
    ("getitem_int_tensor", lambda x, i: x[i], [f32(4, 3), np.int64(-2)]),
    ("getitem_tensor_bounds", lambda x, i, j: x[i:j], [f32(6), np.int64(1), np.int64(4)]),
    ("getitem_array", lambda x, i: x[i], [f32(4, 3), ints(2, 3, low=-4, high=4)]),
    # item assignment: a functional set_item (ScatterND over the flattened tensor)
    ("set_item_slice", lambda x, v: d2s.set_item(x, (1, slice(None, None, -1)), v),
     [f32(3, 4), f32(4)]),
    ("set_item_tensor_index", lambda x, i, v: d2s.set_item(x, i, v),
     [f32(4, 3), np.int64(-2), f64(3)]),
    ("getitem_mask", lambda x, m: x[m], [f32(6), bools(6)]),
    ("getitem_mask_2d", lambda x, m: x[m], [f32(3, 4), bools(3, 4)]),
    ("getitem_mask_axis1", lambda x, m: x[:, m], [f32(3, 4), bools(4)]),
    ("getitem_two_arrays", lambda x, i, j: x[i, j], [f32(4, 5), ints(3, low=0, high=4),
                                                     ints(2, 1, low=-5, high=5)]),
    ("getitem_slice_then_array", lambda x, i: x[:, i], [f32(3, 4), ints(2, low=0, high=4)]),
    ("getitem_int_and_array", lambda x, i: x[1, :, i], [f32(3, 4, 5), ints(2, low=0, high=5)]),
    ("getitem_split_arrays", lambda x, i, j: x[i, :, j], [f32(3, 4, 5), ints(2, low=0, high=3),
                                                          ints(2, low=0, high=5)]),
    ("getitem_array_none", lambda x, i: x[None, i, None], [f32(3, 4), ints(2, low=0, high=3)]),
    ("getitem_array_mask", lambda x, i, m: x[i, m], [f32(3, 4), ints(2, low=0, high=3),
                                                     np.array([True, False, False, True])]),
    # linear algebra, nn, reductions
    ("matmul", d2s.matmul, [f32(2, 3), f32(3, 4)]),
    ("matmul_batched_vector", d2s.matmul, [f32(2, 3, 4), f64(4)]),
    ("matmul_ints", d2s.matmul, [ints(2, 3), ints(3)]),
    ("softmax", lambda x: F.softmax(x, axis=0), [f32(3, 4)]),
    ("log_softmax", F.log_softmax, [f64(3, 4) * 10]),
    ("cross_entropy", F.cross_entropy, [f32(4, 3), ints(4, low=0, high=3)]),
    ("gelu", F.gelu, [f32(5)]),
    ("softplus", F.softplus, [f32(7) * 10]),
    ("batch_normalize", lambda x: bind("batch_normalize", x, axes=(0, 2, 3), epsilon=1e-5),
     [f32(3, 2, 4, 5)]),
    ("conv2d", lambda x, w: F.conv2d(x, w, stride=2, padding=[1, 0, 2, 1], dilation=(1, 2),
                                     groups=2), [f32(2, 4, 7, 8), f32(6, 2, 3, 2)]),
    ("conv2d_depthwise_bias", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=3),
     [f32(1, 3, 5, 5), f32(3, 1, 3, 3), f32(3)]),
    ("conv2d_transpose", lambda x, w: bind("conv2d_grad_input", x, w, input_hw=(14, 15),
                                           stride=(2, 2), padding=(1, 1, 1, 1),
                                           dilation=(1, 1), groups=1),
     [f32(1, 4, 7, 8), f32(4, 3, 3, 3)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [f32(2, 3, 8, 7)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1), [f32(2, 3, 8, 7)]),
    ("avg_pool2d_with_padding", lambda x: F.avg_pool2d(x, 2, 2, [1, 0], exclusive=False),
     [f32(1, 2, 5, 6)]),
    ("conv3d", lambda x, w: F.conv3d(x, w, stride=(2, 1, 1), padding=[1, 0, 1, 1, 0, 1],
                                     dilation=(1, 2, 1), groups=2),
     [f32(1, 4, 5, 6, 4), f32(4, 2, 2, 2, 3)]),
    ("conv3d_transpose", lambda x, w: bind("conv3d_grad_input", x, w, input_dhw=(7, 8, 6),
                                           stride=(2, 2, 1), padding=(1, 1, 1, 0, 0, 0),
                                           dilation=(1, 1, 1), groups=1),
     [f32(1, 4, 4, 4, 4), f32(4, 3, 3, 3, 3)]),
    ("max_pool3d", lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True), [f32(1, 2, 5, 6, 5)]),
    ("avg_pool3d", lambda x: F.avg_pool3d(x, 2, 2, [1, 0, 1], exclusive=False),
     [f32(1, 2, 5, 4, 5)]),
    ("sum", lambda x: x.sum(axis=1), [f32(2, 3, 4)]),
    ("sum_int32", lambda x: x.sum(), [ints(2, 3, dtype=np.int32)]),
    ("sum_bools_keepdim", lambda x: d2s.sum(x, axis=0, keepdim=True), [bools(3, 2)]),
    ("sum_no_axes", lambda x: d2s.sum(x, axis=[]), [f32(2, 2)]),
    ("mean", lambda x: x.mean(axis=[0, 2]), [f64(2, 3, 4)]),
    ("mean_int", lambda x: x.mean(), [ints(3, 4)]),
    ("max", lambda x: x.max(axis=-1, keepdim=True), [f32(2, 3)]),
    ("min", lambda x: x.min(), [ints(5)]),
    ("max_bools", lambda x: x.max(axis=0), [bools(3, 2)]),
    ("argmax", lambda x: x.argmax(axis=1), [ints(3, 4, low=0, high=3)]),
    ("argmax_flat_keepdim", lambda x: d2s.argmax(x, keepdim=True), [f32(3, 4)]),
    ("norm", lambda x: x.norm(), [f32(3, 4)]),
    # ---- issue 27: tensor-level primitives (composites: tests/core/test_ops_*.py) ----
    *[(n, getattr(d2s, n), [a]) for n, a in [
        ("sin", f64(5)), ("cos", f32(5)), ("tan", f32(5)), ("asin", f32(5) * 0.3),
        ("acos", f32(5) * 0.3), ("atan", f32(5)), ("sinh", f32(5)), ("cosh", f32(5)),
        ("floor", f64(6) * 3), ("ceil", f32(6) * 3), ("trunc", f64(6) * 3),
        ("rsqrt", np.abs(f64(5)) + 0.1), ("log2", np.abs(f32(5)) + 0.1),
        ("log10", np.abs(f64(5)) + 0.1)]],
    ("sin_int", d2s.sin, [ints(4)]),
    ("tan_float64", d2s.tan, [f64(5)]),
    ("sinh_float64", d2s.sinh, [np.array([1e-9, -0.3, 2.0, -5.0])]),
    ("cosh_float64", d2s.cosh, [f64(5)]),
    ("floor_int", d2s.floor, [ints(4)]),
    ("round", d2s.round, [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, 7.7])]),
    ("round_float32", d2s.round, [f32(8) * 4]),
    ("log1p", d2s.log1p, [np.array([1e-12, -1e-9, 0.5, 3.0, -0.75, 1e30, 0.0])]),
    ("log1p_float32", d2s.log1p, [np.array([1e-7, -3e-6, 0.5, 2.0], np.float32)]),
    ("expm1", d2s.expm1, [np.array([1e-12, -1e-9, 0.5, 3.0, -0.75, -50.0, 0.0, 800.0])]),
    ("expm1_float32", d2s.expm1, [np.array([1e-7, -3e-6, 0.5, 2.0], np.float32)]),
    ("cumsum", lambda x: d2s.cumsum(x, axis=1), [f32(2, 3)]),
    ("cumsum_int32_flat", lambda x: d2s.cumsum(x), [ints(2, 3, dtype=np.int32)]),
    ("argsort", lambda x: d2s.argsort(x, axis=0), [f32(4, 3)]),
    ("argsort_ties_desc", lambda x: d2s.argsort(x, descending=True),
     [ints(3, 6, low=0, high=3)]),
    ("argsort_bools", lambda x: d2s.argsort(x), [bools(6)]),
    ("prod", lambda x: d2s.prod(x, axis=1), [f32(2, 3)]),
    ("prod_int32", lambda x: d2s.prod(x), [ints(2, 3, dtype=np.int32)]),
    ("logsumexp", lambda x: d2s.logsumexp(x, axis=1), [f32(3, 4) * 20]),
    ("logsumexp_all_keepdim", lambda x: d2s.logsumexp(x, keepdim=True), [f32(2, 3)]),
    ("topk", lambda x: d2s.topk(x, 2), [f32(3, 5)]),
    ("topk_ties_smallest_axis0", lambda x: d2s.topk(x, 3, axis=0, largest=False),
     [ints(4, 3, low=0, high=2)]),
    ("topk_bools", lambda x: d2s.topk(x, 2), [bools(2, 5)]),
    ("one_hot", lambda i: d2s.one_hot(i, 5), [ints(2, 3, low=0, high=5)]),
    ("var", lambda x: d2s.var(x, axis=1), [f32(3, 4)]),
    ("var_biased_keepdim", lambda x: d2s.var(x, axis=[0, 1], unbiased=False, keepdim=True),
     [f32(2, 3, 2)]),
    # ---- end of issue 27 block ----
    # weight-only quantization (d2s.quantization): int8, packed int4, transposed
    ("weight_dequantize_int8", lambda q, s: weight_dequantize(q, s, bits=8, k=5),
     [ints(6, 3, low=-127, high=128, dtype=np.int8), np.abs(f32(2, 3)) + 0.1]),
    ("weight_dequantize_int4_t", lambda q, s: weight_dequantize(q, s, bits=4, k=7,
                                                                transpose=True),
     [ints(4, 3, low=0, high=256, dtype=np.uint8), np.abs(f32(2, 3)) + 0.1]),
    # int8 embedding rows: a lookup of [2, 3] ids in a 6-row table
    ("gather_dequantize", lambda q, s, i: gather_dequantize(q, s, i),
     [ints(6, 4, low=-127, high=128, dtype=np.int8), np.abs(f32(6, 1)) + 0.1,
      ints(2, 3, low=0, high=6)]),
    # detection (d2s.vision.ops): NMS's kept-box mask (NonMaxSuppression) and the RoI ops
    ("vision_nms", lambda b, s: d2s.vision.ops.nms(b, 0.2, s),
     [np.array([[0, 0, 2, 2], [0.2, 0, 2.2, 2], [1, 1, 3, 3], [0, 0.1, 2, 2.1]], np.float32),
      np.array([0.9, 0.8, 0.7, 0.95], np.float32)]),
    # generate_proposals' batched NMS mask (NonMaxSuppression over the images, invalid rows out)
    ("vision_proposal_nms_keep",
     lambda b, v: bind("proposal_nms_keep", b, v, iou_threshold=0.3, eta=1.0,
                       pixel_offset=False),
     [np.array([[[0, 0, 2, 2], [0.2, 0, 2.2, 2], [1, 1, 3, 3], [0, 0.1, 2, 2.1]],
                [[1, 1, 3, 3], [0, 0, 2, 2], [0.1, 0, 2.1, 2], [5, 5, 6, 6]]], np.float32),
      np.array([[1, 1, 1, 1], [1, 0, 1, 1]], bool)]),
    ("vision_roi_align", lambda x, b, n: d2s.vision.ops.roi_align(x, b, n, 2),
     [f32(2, 2, 5, 5), np.array([[0.5, 0.5, 3.0, 4.0], [1.0, 0.0, 4.5, 2.5]], np.float32),
      np.array([1, 1], np.int32)]),
    ("vision_roi_pool", lambda x, b, n: d2s.vision.ops.roi_pool(x, b, n, 2),
     [f32(2, 2, 5, 5), np.array([[0.5, 0.5, 3.0, 4.0], [1.0, 0.0, 4.5, 2.5]], np.float32),
      np.array([1, 1], np.int32)]),
    # issue 25 (opsmath): atan2 (float32: ORT's Atan) and signbit (-0.0 included)
    ("atan2", d2s.atan2, [f32(2, 3), np.array([1.0, -2.0, 0.0], np.float32)]),
    ("signbit", d2s.signbit, [np.array([-1.5, -0.0, 0.0, 2.0], np.float32)]),
    ("bitwise_ints", lambda x, y: (d2s.bitwise_and(x, y), d2s.bitwise_or(x, y),
                                   d2s.bitwise_xor(x, y), d2s.bitwise_not(x)),
     [ints(2, 3), ints(3, dtype=np.int32)]),
    ("bitwise_bools", lambda x, y: (d2s.bitwise_and(x, y), d2s.bitwise_or(x, y),
                                    d2s.bitwise_xor(x, y), d2s.bitwise_not(x)),
     [bools(4), bools(4)]),
]


def _build(fn, arrays, dynamic):
    """A program of `fn` over data Variables (dims unknown if `dynamic`)."""
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", [None] * a.ndim if dynamic else a.shape, a.dtype)
              for i, a in enumerate(np.asarray(a) for a in arrays)]
        out = fn(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return prog, xs, outs


def _eager(fn, arrays):
    out = fn(*[d2s.to_tensor(np.asarray(a)) for a in arrays])
    return list(out) if isinstance(out, (tuple, list)) else [out]


# With unknown dims, squeeze() cannot see the size-1 dims: the program (numpy
# backend too) keeps them, unlike eager. The rule is checked with known dims.
# ConvTranspose's output_padding is an attribute: the input's spatial dims must be known.
_KNOWN_DIMS_ONLY = {"squeeze_all", "conv2d_transpose", "conv3d_transpose",
                    # a quantized weight is a captured parameter: its dims are always known
                    "weight_dequantize_int8", "weight_dequantize_int4_t"}
_RTOL = {"erf_float64": 1e-6}


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize("dynamic", [False, True], ids=["known_dims", "unknown_dims"])
@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_op_rule_equals_eager(name, fn, arrays, dynamic):
    if dynamic and name in _KNOWN_DIMS_ONLY:
        pytest.skip("the program itself differs from eager with unknown dims")
    prog, xs, outs = _build(fn, arrays, dynamic)
    model = export_program(prog, prog.global_block().ops, xs, outs)
    got = run_model(model, [np.asarray(a) for a in arrays])
    want = _eager(fn, arrays)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} output {k}", rtol=_RTOL.get(name, 1e-5))


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value", "ignore:overflow")
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_floor_divide_and_remainder_are_numpys_bit_for_bit(dtype):
    """Python/numpy semantics, not C's: signs, signed zeros, x // 0, x % 0,
    MIN // -1 (which traps in hardware) and float quotients snapped like numpy."""
    n = 4000
    if dtype.startswith("float"):
        x = np.concatenate([rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n),
                            _FLOAT_NUM, [np.nan, 1.0, -0.0]]).astype(dtype)
        y = np.concatenate([rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n),
                            _FLOAT_DEN, [1.0, np.nan, -3.0]]).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(-50, 50, n), _NUMERATORS, [info.min, info.min, 7]])
        y = np.concatenate([rng.integers(-7, 7, n), _DIVISORS, [-1, 1, info.min]])
        x, y = x.astype(dtype), y.astype(dtype)
    prog, xs, outs = _build(lambda a, b: (a // b, a % b), [x, y], dynamic=True)
    got = run_model(export_program(prog, prog.global_block().ops, xs, outs), [x, y])
    for g, want in zip(got, (np.floor_divide(x, y), np.remainder(x, y))):
        assert g.dtype == want.dtype
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want))


# ---- gradient ops: the backward of small programs ------------------------------------
GRAD_CASES = [
    ("broadcast_sum", lambda x, y: (x * y).sum(), [f32(2, 3), f32(3)]),
    ("reshape_flatten", lambda x, y: (x.reshape([3, 2]).flatten() * y).sum(), [f32(2, 3), f32(6)]),
    ("concat_pieces", lambda x, y: (d2s.concat([x, y], axis=0) ** 2).sum(), [f32(2, 3), f32(1, 3)]),
    ("gather", lambda x, i: d2s.gather(x, i).sum(), [f32(4, 3), np.array([0, 2, 0, -1])]),
    ("getitem_basic", lambda x, y: (x[1:, ::-1] * y).sum(), [f32(3, 4), f32(4)]),
    ("getitem_array", lambda x, i: (x[i] * x[i]).sum(), [f32(4, 3), np.array([1, 1, 3])]),
    ("cross_entropy", lambda x, y: F.cross_entropy(x, y), [f32(4, 3), np.array([0, 2, 1, 2])]),
    ("mean_max", lambda x, y: x.mean(axis=0).max() + y.sum(), [f32(3, 4), f32(2)]),
]


@pytest.mark.parametrize("name,fn,arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_op_rules_equal_eager_gradients(name, fn, arrays):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", a.shape, a.dtype) for i, a in enumerate(arrays)]
        for x in xs:
            x.stop_gradient = x.dtype.kind != "f"
        wrt = [x for x in xs if x.dtype.kind == "f"]
        grads = static.gradients([fn(*xs)], wrt)
    model = export_program(prog, prog.global_block().ops, xs, grads)
    got = run_model(model, arrays)
    tensors = [d2s.to_tensor(a, stop_gradient=a.dtype.kind != "f") for a in arrays]
    fn(*tensors).backward()
    want = [t.grad for t in tensors if t.dtype.kind == "f"]
    for k, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, f"{name} gradient {k}")


# ---- the meta-test ----------------------------------------------------------------------
def _exercised_ops():
    ops = set()
    for _, fn, arrays in CASES:
        for dynamic in (False, True):
            ops |= {op.type for op in _build(fn, arrays, dynamic)[0].all_ops()}
    for _, fn, arrays in GRAD_CASES:
        prog = static.Program()
        with static.program_guard(prog):
            xs = [static.data(f"x{i}", a.shape, a.dtype) for i, a in enumerate(arrays)]
            static.gradients([fn(*xs)], [x for x in xs if x.dtype.kind == "f"])
        ops |= {op.type for op in prog.all_ops()}
    return ops


def export_table():
    """op type -> "mapped" or "not exportable: <reason>", for every registered
    op and every control-flow op (each declares its rule in its home)."""
    table = {}
    for name in sorted(set(OPS) | set(CONTROL_OPS)):
        rule = (CONTROL_OPS.get(name) or OPS[name]).lowerings.get("onnx")
        table[name] = (f"not exportable: {rule.reason}" if isinstance(rule, NotLowerable)
                       else "mapped" if rule is not None else "MISSING")
    return table


# Exercised by the control-flow and table tests instead (they need sub-blocks).
_CONTROL_FLOW_TESTED = {"cond", "while", "array_append", "undefined", "cast_if_defined",
                        "py_layer"}  # (tests/core/test_py_layer.py)


def test_every_op_is_mapped_or_says_why_not():
    """The table is printed into the test's captured output, so a normal run
    stays quiet: `pytest -rA tests/onnx` shows it in the summary."""
    table = export_table()
    print("ONNX export of each op:")
    for name, status in table.items():
        print(f"  {name:20s} {status}")
    assert [n for n, s in table.items() if s == "MISSING"] == []
    for name, status in table.items():
        if status.startswith("not exportable"):
            assert len(status) > len("not exportable: ") + 10, name  # a real reason
    mapped = {n for n, s in table.items() if s == "mapped"}
    untested = mapped - _exercised_ops() - _CONTROL_FLOW_TESTED
    assert untested == set(), f"mapped ops no case exercises: {sorted(untested)}"
