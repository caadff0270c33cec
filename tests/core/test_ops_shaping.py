"""Shape manipulation composites (d2s/core/ops/shaping.py): split, chunk,
unbind, tile, broadcast_to, expand_as, flip, roll, tril, triu, meshgrid,
slice, strided_slice, against numpy with gradients, numpy+xla static,
unknown dims and ONNX Runtime; bad input."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(2027)


def f64(*s):
    return R.standard_normal(s)


def ints(*s):
    return R.integers(-5, 5, size=s).astype(np.int64)


CASES = [
    ("split_num", lambda x: d2s.split(x, 3, axis=1), [f64(2, 6)], lambda x: np.split(x, 3, 1)),
    ("split_sections_minus1", lambda x: d2s.split(x, [1, -1, 2], axis=-1), [f64(2, 6)],
     lambda x: np.split(x, [1, 4], -1), dict(unknown="first")),
    ("split_int", lambda x: x.split([2, 1], axis=1), [ints(2, 3)],
     lambda x: np.split(x, [2], 1), dict(unknown="first")),
    ("chunk", lambda x: d2s.chunk(x, 2, axis=0), [f64(4, 3)], lambda x: np.split(x, 2, 0)),
    ("unbind", lambda x: d2s.unbind(x, axis=1), [f64(2, 3, 2)],
     lambda x: [x[:, i] for i in range(3)], dict(unknown="first")),
    ("tile", lambda x: d2s.tile(x, [2, 1, 3]), [f64(2, 3)], lambda x: np.tile(x, [2, 1, 3])),
    ("tile_method_short", lambda x: x.tile([2]), [ints(2, 3)], lambda x: np.tile(x, 2)),
    ("tile_0d", lambda x: d2s.tile(x, [3]), [np.float64(1.5)], lambda x: np.tile(x, 3)),
    ("broadcast_to", lambda x: d2s.broadcast_to(x, [2, 3, 4]), [f64(3, 1)],
     lambda x: np.broadcast_to(x, (2, 3, 4)), dict(unknown_dims=False)),
    ("expand_as", lambda x, y: d2s.expand_as(x, y), [f64(1, 3), f64(4, 3)],
     lambda x, y: np.broadcast_to(x, (4, 3)), dict(grad=False)),
    ("flip", lambda x: d2s.flip(x, [0, -1]), [f64(2, 3, 4)], lambda x: np.flip(x, (0, 2))),
    ("flip_int", lambda x: x.flip(1), [ints(2, 3)], lambda x: np.flip(x, 1)),
    ("roll", lambda x: d2s.roll(x, [1, -5], [0, 1]), [f64(3, 4)],
     lambda x: np.roll(x, [1, -5], [0, 1])),
    ("roll_flat", lambda x: d2s.roll(x, 4), [f64(2, 3)], lambda x: np.roll(x, 4)),
    ("tril", lambda x: d2s.tril(x), [f64(3, 4)], np.tril),
    ("tril_diag", lambda x: d2s.tril(x, 1), [f64(2, 3, 4)], lambda x: np.tril(x, 1)),
    ("triu_neg", lambda x: d2s.triu(x, -1), [f64(4, 3)], lambda x: np.triu(x, -1)),
    ("triu_int", lambda x: x.triu(), [ints(3, 3)], np.triu),
    ("meshgrid", lambda a, b: d2s.meshgrid(a, b), [f64(3), f64(2)],
     lambda a, b: np.meshgrid(a, b, indexing="ij")),
    ("meshgrid_list", lambda a, b, c: d2s.meshgrid([a, b, c]), [ints(2), ints(3), ints(1)],
     lambda a, b, c: np.meshgrid(a, b, c, indexing="ij")),
    ("slice", lambda x: d2s.slice(x, [0, 2], [1, -3], [10, 3]), [f64(3, 4, 5)],
     lambda x: x[1:10, :, -3:3]),
    ("bools", lambda m: (d2s.flip(m, 0), d2s.tile(m, [2, 1]), d2s.tril(m), d2s.roll(m, 1, 1),
                         *d2s.split(m, 2, 1)), [R.random((2, 4)) > 0.5],
     lambda m: (np.flip(m, 0), np.tile(m, [2, 1]), np.tril(m), np.roll(m, 1, 1),
                *np.split(m, 2, 1))),
    ("empty_rows", lambda x: (d2s.flip(x, 0), d2s.tile(x, [1, 2]), d2s.roll(x, 1, 0),
                              *d2s.split(x, 3, 1)), [np.zeros((0, 3))],
     lambda x: (x, np.tile(x, [1, 2]), x, *np.split(x, 3, 1)), dict(onnx=False)),
    ("strided_slice", lambda x: d2s.strided_slice(x, [1], [3], [0], [-2]), [f64(2, 5)],
     lambda x: x[:, 3:0:-2]),
]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # (empty_rows: a 0 % 0)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_shaping_op(case):
    name, fn, arrays, ref, *options = case
    check(fn, arrays, ref, **(options[0] if options else {}))


def test_split_sections_need_the_dim_known():
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        x = d2s.static.data("x", [2, None], "float64")
        with pytest.raises(ValueError, match="need the size of axis 1 known"):
            d2s.split(x, [1, 2], axis=1)


def test_split_with_unknown_dim_reads_it_at_run_time():
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        x = d2s.static.data("x", [2, None], "float64")
        parts = d2s.split(x, 2, axis=1)
        assert [p.shape for p in parts] == [(2, None), (2, None)]
    arr = f64(2, 6)
    got = d2s.static.Executor().run(prog, feed={"x": arr}, fetch_list=parts)
    for g, w in zip(got, np.split(arr, 2, 1)):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("call,error,match", [
    (lambda x: d2s.split(x, 4, axis=1), ValueError, r"size 6\) does not divide into 4"),
    (lambda x: d2s.split(x, [2, 2], axis=1), ValueError, "sum to 4"),
    (lambda x: d2s.split(x, [-1, -1], axis=1), ValueError, "only one"),
    (lambda x: d2s.split(x, 2, axis=2), ValueError, "out of range"),
    (lambda x: d2s.chunk(x, 0), ValueError, "positive"),
    (lambda x: d2s.tile(x, [-1]), ValueError, ">= 0"),
    (lambda x: d2s.tril(x[0]), ValueError, "at least 2 dims"),
    (lambda x: d2s.roll(x, [1, 2], [0]), ValueError, "2 shifts for 1 axes"),
    (lambda x: d2s.broadcast_to(x, [3, 6]), ValueError, "cannot expand"),
    (lambda x: d2s.meshgrid(x), ValueError, "1-D"),
])
def test_bad_input_raises(call, error, match):
    with pytest.raises(error, match=match):
        call(d2s.to_tensor(f64(2, 6)))
