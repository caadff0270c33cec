"""d2s.vision.ops.distribute_fpn_proposals (d2s/vision/_proposals.py, a
composite) vs a plain-Python reference written from Paddle's definition
(level = floor(log2(sqrt(area) / refer_scale + 1e-6) + refer_level),
clipped; RoIs kept in order per level; the restore index; RoIs per image
per level); eager, converted on numpy, unknown dims, ONNX Runtime; on xla
the levels compile and the per-level pick runs on numpy after the warning."""
import math

import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning
from d2s.vision.ops import distribute_fpn_proposals
from ops_check import check

R = np.random.default_rng(3)


def rois(n, dtype="float32"):
    lo = R.uniform(0, 300, size=(n, 2))
    side = 2.0 ** R.uniform(4, 9.5, size=(n, 1))           # levels 2 .. 5 at refer 224 / 4
    size = side * R.uniform(0.7, 1.4, size=(n, 2))
    out = np.concatenate([lo, lo + size], 1)
    out[1] = [50, 50, 40, 60]                  # inverted: area 0, the lowest level
    return out.astype(dtype)


def ref(r, min_l, max_l, refer_l, refer_s, pixel_offset=False, rois_num=None):
    off = 1.0 if pixel_offset else 0.0
    levels = []
    for x1, y1, x2, y2 in r.astype(np.float64):
        w, h = x2 - x1, y2 - y1
        area = 0.0 if w < 0 or h < 0 else (w + off) * (h + off)
        lvl = math.floor(math.log2(math.sqrt(area) / refer_s + 1e-6) + refer_l)
        levels.append(min(max_l, max(lvl, min_l)))
    levels = np.array(levels)
    multi = [r[levels == lvl] for lvl in range(min_l, max_l + 1)]
    went = np.concatenate([np.flatnonzero(levels == lvl) for lvl in range(min_l, max_l + 1)])
    restore = np.empty(len(r), np.int32)
    restore[went] = np.arange(len(r))
    outs = multi + [restore.reshape(-1, 1)]
    if rois_num is not None:
        image = np.repeat(np.arange(len(rois_num)), rois_num)
        outs += [np.array([np.sum((levels == lvl) & (image == b)) for b in range(len(rois_num))],
                          np.int32) for lvl in range(min_l, max_l + 1)]
    return outs


def flat(multi, restore, per_level):
    return (*multi, restore, *(per_level or []))


R12, N12 = rois(12), np.array([5, 0, 7], np.int32)
CASES = [  # (name, arrays, args, pixel_offset)
    ("levels_2_5_per_image", [R12, N12], (2, 5, 4, 224), False),
    ("pixel_offset_f64", [rois(10, "float64"), np.array([4, 6], np.int64)], (2, 4, 3, 112), True),
    ("one_image_no_rois_num", [R12], (3, 6, 4, 100), False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_distribute_fpn_proposals(case):
    name, arrays, args, offset = case
    want = ref(*arrays[:1], *args, offset, *arrays[1:])
    assert sum(len(m) > 0 for m in want[:args[1] - args[0] + 1]) >= 3   # several levels used
    check(lambda r, *num: flat(*distribute_fpn_proposals(r, *args, pixel_offset=offset,
                                                         rois_num=num[0] if num else None)),
          arrays, lambda r, *num: ref(r, *args, offset, *num), grad=False, xla=False)


def test_restore_index_and_xla():
    multi, restore, per_level = distribute_fpn_proposals(d2s.to_tensor(R12), 2, 5, 4, 224,
                                                         rois_num=d2s.to_tensor(N12))
    back = d2s.concat(multi)[restore[:, 0]]
    np.testing.assert_array_equal(back.numpy(), R12)
    assert restore.dtype == d2s.int32 and all(p.dtype == d2s.int32 for p in per_level)
    sf = d2s.jit.to_static(lambda r, n: flat(*distribute_fpn_proposals(r, 2, 5, 4, 224,
                                                                       rois_num=n)),
                           backend="xla")
    with pytest.warns(BackendFallbackWarning):
        got = sf(d2s.to_tensor(R12), d2s.to_tensor(N12))
    for g, w in zip(got, ref(R12, 2, 5, 4, 224, False, N12)):
        np.testing.assert_array_equal(g.numpy(), w)


def test_distribute_fpn_proposals_bad_input():
    with pytest.raises(ValueError, match=r"fpn_rois must be \[R, 4\]"):
        distribute_fpn_proposals(d2s.to_tensor(R12[:, :3]), 2, 5, 4, 224)
    with pytest.raises(ValueError, match="max_level"):
        distribute_fpn_proposals(d2s.to_tensor(R12), 5, 2, 4, 224)
