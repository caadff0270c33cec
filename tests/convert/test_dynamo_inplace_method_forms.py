"""In-place methods in converted code beyond `x.add_(y)` as a statement:
`return y.add_(v)`, a chain `y.add_(a).multiply_(b)`, one inside an
expression (`z = d2s.tanh(y.add_(v)) * 2`, written first), and an attribute
receiver `self.total.add_(x)` (also under a tensor `if`), whose attribute is
rebound to the result, so the program records and replays the write (a
layer's buffer keeps counting over calls, on numpy and xla). The attribute
form was taken for the function form `d2s.add_(x, ...)` and rebound its
argument: `x` silently became `self.total + x`."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _return_written(x):
    y = x * 1.5
    return y.add_(d2s.ones_like(y))


def _chain(x):
    y = x * 1.0
    y.add_(d2s.full_like(y, 2.0)).multiply_(d2s.full_like(y, 3.0))
    return y * x


def _inside_an_expression(x):
    y = x * 1.0
    z = d2s.tanh(y.add_(d2s.ones_like(y))) * 2.0   # y reads before its write only
    return z + y


def _own_list_item(x):
    ys = [x * 1.0, x * 2.0]
    ys[0].add_(d2s.ones_like(x))
    if x.sum() > 0:
        ys[1].multiply_(d2s.full_like(x, 3.0))
    return ys[0] + ys[1]


def _slice_of_a_tensor(x):
    y = x * 1.0
    y[1:].add_(d2s.ones_like(y[1:]))    # a copy: y is unchanged, as eagerly
    return y * 2.0


def _item_of_a_list_argument(x, ys):
    ys[0].add_(x)
    return ys[0] * 1.0


class _Box:
    pass


def _attribute_receiver(x):
    box = _Box()
    box.t = x * 2.0
    box.t.add_(x)          # box.t = 3x; x itself is unchanged
    return box.t + x


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_return_written, _chain, _attribute_receiver,
                                _inside_an_expression, _own_list_item, _slice_of_a_tensor])
def test_inplace_method_forms(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for values in ([1.0, -2.0, 3.0], [-1.0, -0.5, 2.0]):
        xs, xe = (d2s.to_tensor(np.array(values, "float32"), stop_gradient=False)
                  for _ in range(2))
        out, ref = static(xs), fn(xe)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
        (out * out).sum().backward()
        (ref * ref).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_an_item_of_a_list_argument_written_in_place_changes_the_callers_tensor(backend):
    """The item is an input Tensor of the converted function: eagerly the
    caller's Tensor changes, and so it does after each converted call (the
    running call's own list item, not the traced call's)."""
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(_item_of_a_list_argument, backend=backend)
    for start in ([10.0, 20.0], [1.0, 2.0]):
        x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
        eager = [d2s.to_tensor(np.array(start, "float32"))]
        want = _item_of_a_list_argument(x, eager)
        mine = [d2s.to_tensor(np.array(start, "float32"))]
        held = mine[0]
        got = static(x, mine)
        assert mine[0] is held   # written in place: the same Tensor
        np.testing.assert_array_equal(mine[0].numpy(), eager[0].numpy())
        np.testing.assert_array_equal(got.numpy(), want.numpy())


class _Counting(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", d2s.zeros([]))
        self.register_buffer("total", d2s.zeros([2]))

    def forward(self, x):
        self.count.add_(d2s.ones_like(self.count))
        if x.sum() > 0:
            self.total.add_(x)
        return x * self.count + self.total


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_buffer_written_in_place_in_forward_is_written_back(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    eager, converted = _Counting(), _Counting()
    forward = to_static(converted.forward, backend=backend)
    for values in ([1.0, 2.0], [-3.0, 1.0], [2.0, 2.0], [0.5, -0.25]):
        x = np.array(values, "float32")
        np.testing.assert_allclose(forward(d2s.to_tensor(x)).numpy(),
                                   eager(d2s.to_tensor(x)).numpy(), rtol=1e-6)
        np.testing.assert_allclose(converted.count.numpy(), eager.count.numpy())
        np.testing.assert_allclose(converted.total.numpy(), eager.total.numpy(), rtol=1e-6)
    assert type(converted.total) is type(eager.total)


def _in_a_conditional_expression(x):
    y = x * 1.0
    z = y.add_(d2s.ones_like(x)) if x.sum() > 100 else x   # may not run: never hoisted
    return z


def test_an_inplace_call_nothing_rebinds_says_where_and_what_to_write():
    """An in-place call in a conditional expression is not rebound: a clear
    error saying so (it said "outside converted code", which the code
    already was), never the write made on a path Python does not take."""
    x = d2s.to_tensor(np.array([1.0, 2.0], "float32"))
    with pytest.raises(TypeError, match=r"(?s)nor in converted code where nothing rebinds "
                                        r"it.*conditional expression"):
        to_static(_in_a_conditional_expression)(x)
    np.testing.assert_allclose(_in_a_conditional_expression(x).numpy(), [1.0, 2.0])
