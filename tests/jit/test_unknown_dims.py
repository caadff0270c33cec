"""Unknown (`None`) dims from an InputSpec (DESIGN §4): what `x.shape` is in
converted code, shape arguments built from it, and reshape's errors.

Values are checked in tests/jit/test_conversion_table.py (section "unknown
dims"); here: the types converted code sees, the ops built, one program for
every size, errors at build and run time, and save/load of such programs.
"""
import re

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import Executor, InputSpec, Program, Variable, data, program_guard


def _x(n, k=3):
    return d2s.to_tensor(np.arange(n * k, dtype="float32").reshape(n, k))


def test_known_dims_are_python_ints_and_unknown_ones_weak_int64_scalars():
    seen = []

    def f(x):
        # (recorded as Python values: a Variable put in a list that outlives the
        # call would be written back as the run's Tensor, DESIGN §4)
        shape = x.shape
        seen.append((type(shape), len(shape), type(shape[1]), shape[1],
                     isinstance(shape[0], Variable), shape[0].shape, shape[0].dtype,
                     shape[0].weak))
        return d2s.zeros([x.shape[1]]) + x.sum(0)

    sf = to_static(f, input_spec=[InputSpec([None, 3])])
    out = sf(_x(4))
    np.testing.assert_allclose(out.numpy(), _x(4).numpy().sum(0))
    ((kind, n, type1, dim1, variable, shape0, dtype0, weak),) = seen
    assert kind is tuple and n == 2
    assert type1 is int and dim1 == 3
    assert variable
    assert shape0 == () and dtype0 == np.int64 and weak
    # the known dim built no dynamic input: `full` has no operands
    prog = sf.get_concrete_program(_x(4)).main_program
    assert [op.inputs for op in prog.all_ops() if op.type == "full"] == [[]]


def test_one_program_serves_every_batch_size():
    def flatten_rows(x):
        b, n, k = x.shape
        return x.reshape([b, -1]) * d2s.ones([b, n * k])

    sf = to_static(flatten_rows, input_spec=[InputSpec([None, 2, 3])])
    for n in (1, 4, 7):
        x = np.random.default_rng(n).normal(size=(n, 2, 3)).astype("float32")
        out = sf(d2s.to_tensor(x))
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), x.reshape(n, 6))
    assert len(sf.program_cache) == 1


def _flattened(x):
    return x.reshape([x.shape[0], -1]), x.reshape([len(x), 3, -1]), x.reshape([-1, 6])


def test_minus_one_next_to_the_inputs_own_unknown_dim_is_known_while_building():
    sf = to_static(_flattened, input_spec=[InputSpec([None, 2, 3])])
    x = np.arange(24, dtype="float32").reshape(4, 2, 3)
    outputs = sf.get_concrete_program(d2s.to_tensor(x)).outputs
    assert [v.shape for v in outputs] == [(None, 6), (None, 3, 2), (None, 6)]
    for got, want in zip(sf(d2s.to_tensor(x)), (x.reshape(4, 6), x.reshape(4, 3, 2),
                                                 x.reshape(4, 6))):
        np.testing.assert_array_equal(got.numpy(), want)


def _cannot_fit(x):
    return x.reshape([-1, 5])


def test_reshape_that_cannot_fit_is_a_build_error_naming_the_line_and_is_not_cached():
    sf = to_static(_cannot_fit)
    with pytest.raises(ValueError) as info:
        sf(d2s.to_tensor(np.arange(6.0)))
    message = str(info.value)
    assert "cannot reshape (6,) (6 elements) to [-1, 5]" in message
    assert __file__ in message and "return x.reshape([-1, 5])" in message
    assert len(sf.program_cache) == 0
    # the same function still works where the shape fits
    np.testing.assert_allclose(sf(d2s.to_tensor(np.arange(10.0))).numpy(),
                               np.arange(10.0).reshape(2, 5))


def _rows_of_three(x):
    return x.reshape([x.shape[0], 3])


def test_reshape_known_only_at_run_time_fails_then_naming_the_shape_as_filled_in():
    sf = to_static(_rows_of_three, input_spec=[InputSpec([None, 4])])
    with pytest.raises(ValueError, match=re.escape("cannot reshape (2, 4) (8 elements) to [2, 3]")):
        sf(_x(2, 4))
    assert len(sf.program_cache) == 1  # the program was fine; that input was not


def test_reshape_with_two_minus_ones_is_a_clear_error():
    with pytest.raises(ValueError, match=r"only one dim of \[-1, -1\] can be -1"):
        d2s.to_tensor(np.arange(6.0)).reshape([-1, -1])


@pytest.mark.parametrize("bad", [[2.5, 3], ["a"], [None, 3]])
def test_shape_entries_that_are_not_ints_are_a_clear_type_error(bad):
    with pytest.raises(TypeError, match="shape entry 0 must be an int"):
        d2s.zeros(bad)


def test_float_tensor_dim_is_a_clear_type_error():
    prog = Program()
    with program_guard(prog):
        x = data("x", [None, 3], "float32")
        with pytest.raises(TypeError, match="reshape: shape entry 0 must be an int or an integer"):
            d2s.reshape(x, [x.sum(), 3])


def test_shape_given_as_a_shape_tensor_in_a_static_program():
    prog = Program()
    with program_guard(prog):
        x = data("x", [None, 3], "float32")
        y = data("y", [None, 3], "float32")
        same = d2s.reshape(y, d2s.shape(x)) + d2s.zeros(d2s.shape(x))
        rows = d2s.arange(d2s.shape(x)[0])
    assert same.shape == (None, None) and rows.shape == (None,)
    for exe in (Executor(),):
        a = np.ones((5, 3), "float32")
        b = np.arange(15, dtype="float32").reshape(5, 3)
        got_same, got_rows = exe.run(prog, feed={"x": a, "y": b}, fetch_list=[same, rows])
        np.testing.assert_array_equal(got_same, b)
        np.testing.assert_array_equal(got_rows, np.arange(5))
        assert got_rows.dtype == np.int64


class _Flatten(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.lin = d2s.nn.Linear(6, 2)

    @to_static(input_spec=[InputSpec([None, 2, 3])])
    def forward(self, x):
        h = x.reshape([x.shape[0], -1])
        return self.lin(h) + d2s.zeros([x.shape[0], 2])


def test_saved_program_with_dynamic_dims_loads_and_serves_every_size(tmp_path):
    d2s.seed(0)
    layer = _Flatten()
    path = str(tmp_path / "flatten")
    d2s.jit.save(layer, path)
    loaded = d2s.jit.load(path)
    w, b = layer.lin.weight.numpy(), layer.lin.bias.numpy()
    for n in (1, 3):
        x = np.random.default_rng(n).normal(size=(n, 2, 3)).astype("float32")
        np.testing.assert_allclose(loaded(d2s.to_tensor(x)).numpy(), x.reshape(n, 6) @ w + b,
                                   rtol=1e-5)
