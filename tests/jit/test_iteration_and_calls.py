"""Iteration forms and calls in converted code beyond the table's values
(tests/jit/test_conversion_table.py): the errors they give, caching, grad modes.
"""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static
from d2s.static import InputSpec, Program, data, program_guard


def _rows_squared(x):
    return sum([row * row for row in x])


def test_comprehension_over_rows_of_unknown_count_names_the_line():
    sf = to_static(_rows_squared, input_spec=[InputSpec([None, 2], "float64")])
    with pytest.raises(TypeError) as info:
        sf(d2s.to_tensor(np.ones((3, 2))))
    message = str(info.value)
    assert "first dim is unknown until run time" in message
    assert __file__ in message and "return sum([row * row for row in x])" in message
    assert len(sf.program_cache) == 0


def _squares_up_to(n):
    return [i * i for i in range(n)]


def test_comprehension_over_a_tensor_range_is_a_clear_error():
    sf = to_static(_squares_up_to)
    assert sf(4) == [0, 1, 4, 9]  # Python values: Python semantics
    with pytest.raises(TypeError, match="length is unknown until run time"):
        sf(d2s.to_tensor(4))


def test_rows_of_a_variable_unpack_in_a_static_program():
    with program_guard(Program()):
        pairs = data("pairs", [3, 2], "float64")
        rows = list(pairs)
        a, b = rows[0]
        assert len(rows) == 3 and a.shape == () and b.shape == ()
        unknown = data("unknown", [None, 2], "float64")
        with pytest.raises(TypeError, match="'unknown'.*first dim is unknown"):
            list(unknown)


class _Blocks(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([nn.Linear(2, 2) for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
            if x.sum() > 0:
                break
        return block(x)  # which block ran last depends on the tensor test


def test_loop_target_over_layers_read_after_a_tensor_break_is_a_clear_name_error():
    layer = to_static(_Blocks())
    with pytest.raises(NameError) as info:
        layer(d2s.to_tensor(np.ones((1, 2), "float32")))
    message = str(info.value)
    assert "'block'" in message and "different Python object on each path" in message
    assert "return block(x)" in message
    assert len(layer.forward.program_cache) == 0


@d2s.no_grad()
def _scaled(x):
    if x.sum() > 0:
        return x * 3
    return x


class _WithNoGradMethod(nn.Layer):
    @d2s.no_grad()
    def helper(self, x):
        if x.sum() > 0:
            return x * 3
        return -x

    def forward(self, x):
        return self.helper(x) + x


@pytest.mark.parametrize("values", [[1.0, 2.0], [-1.0, -2.0]])
def test_no_grad_method_is_converted_and_blocks_gradients(values):
    layer = _WithNoGradMethod()
    grads = []
    for fn in (layer.forward, to_static(layer).forward):
        x = d2s.to_tensor(np.array(values), stop_gradient=False)
        out = fn(x)
        out.sum().backward()
        grads.append((out.numpy(), x.grad.numpy()))
    (eager_out, eager_grad), (static_out, static_grad) = grads
    np.testing.assert_allclose(static_out, eager_out)
    np.testing.assert_allclose(static_grad, np.ones(2))
    np.testing.assert_allclose(eager_grad, np.ones(2))
    assert d2s.core.grad_enabled()  # the mode is restored after the call


def _calls_scaled(x):
    return _scaled(x) * 2


@pytest.mark.parametrize("values", [[1.0, 3.0], [1.0, -3.0]])
def test_no_grad_helper_builds_a_cond_and_detaches_what_it_computes(values):
    sf = to_static(_calls_scaled)
    probe = d2s.to_tensor(np.array(values), stop_gradient=False)
    ops = [op.type for op in sf.get_concrete_program(probe).main_program.all_ops()]
    assert "cond" in ops and "detach" in ops
    x = d2s.to_tensor(np.array(values), stop_gradient=False)
    eager = _calls_scaled(x)
    want = np.array(values) * (6 if sum(values) > 0 else 2)
    np.testing.assert_allclose(eager.numpy(), want)
    if eager.stop_gradient:  # x * 3 under no_grad: detached
        with pytest.raises(RuntimeError, match="does not require grad"):
            eager.sum().backward()
        eager_grad = np.zeros(2)
    else:  # x handed back unchanged keeps its gradient path
        eager.sum().backward()
        eager_grad = x.grad.numpy()
        np.testing.assert_allclose(eager_grad, [2.0, 2.0])
    # Statically the `cond` output may be either branch's, so it requires a
    # gradient; through the detached branch that gradient is zero.
    x = d2s.to_tensor(np.array(values), stop_gradient=False)
    out = sf(x)
    np.testing.assert_allclose(out.numpy(), want)
    assert not out.stop_gradient
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), eager_grad)


def _count(n):
    s = 0
    for i in range(n):
        s = s + i
    return s


def test_range_of_a_float_tensor_raises_type_error_in_both_modes():
    n = d2s.to_tensor(np.float32(3.0))
    with pytest.raises(TypeError):
        _count(n)
    with pytest.raises(TypeError, match="range\\(\\) of a float32 tensor"):
        to_static(_count)(n)
    assert int(to_static(_count)(d2s.to_tensor(3))) == 3


def _maybe_add(x, y=None, scale=2.0):
    if y is None:
        return x * scale
    return x + y


def test_calls_that_differ_only_in_spelled_out_defaults_share_one_program():
    sf = to_static(_maybe_add)
    x = d2s.to_tensor(np.array([1.0, 2.0]))
    outs = [sf(x), sf(x, None), sf(x, y=None), sf(x, None, 2.0), sf(x, scale=2.0)]
    for out in outs:
        np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    assert len(sf.program_cache) == 1
    np.testing.assert_allclose(sf(x, x).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(sf(x, scale=3.0).numpy(), [3.0, 6.0])
    assert len(sf.program_cache) == 3
    with pytest.raises(TypeError):  # a call that does not fit: Python's own error
        sf(x, None, 2.0, 5)
