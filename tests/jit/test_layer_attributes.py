"""A Layer's tensor attributes are read by (layer, attribute) path on every run.

Expected values come from the eager run of the same layer.
"""
import numpy as np
import pytest

import d2s
from d2s import nn
from d2s.jit import to_static


class _Shifted(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.offset = d2s.to_tensor(np.array([1.0, 2.0], np.float32))  # not a parameter

    def forward(self, x):
        return self.lin(x) + self.offset


class _Outer(nn.Layer):
    def __init__(self):
        super().__init__()
        self.inner = _Shifted()

    def forward(self, x):
        return self.inner(x) * 2.0


def _eager(layer, x):
    d2s.jit.enable_to_static(False)
    try:
        return layer(x).numpy()
    finally:
        d2s.jit.enable_to_static(True)


X = np.array([[0.5, -1.0]], np.float32)


@pytest.mark.parametrize("make", [_Shifted, _Outer])
def test_a_replaced_tensor_attribute_is_read_by_the_next_run(make, each_executor):
    d2s.seed(0)
    layer = to_static(make())
    x = d2s.to_tensor(X)
    before = layer(x).numpy()
    np.testing.assert_allclose(before, _eager(layer, x), rtol=1e-6)
    owner = layer if isinstance(layer, _Shifted) else layer.inner
    owner.offset = d2s.to_tensor(np.array([10.0, -10.0], np.float32))
    got = layer(x).numpy()
    np.testing.assert_allclose(got, _eager(layer, x), rtol=1e-6)
    assert not np.allclose(got, before)
    assert len(layer.forward.program_cache) == 1  # the same program, re-bound


def test_a_replaced_parameter_gets_the_gradients(each_executor):
    d2s.seed(1)
    layer = to_static(_Shifted())
    x = d2s.to_tensor(X)
    layer(x).sum().backward()
    old = layer.lin.weight
    layer.lin.weight = d2s.to_tensor(np.full((2, 2), 3.0, np.float32), stop_gradient=False)
    out = layer(x)
    np.testing.assert_allclose(out.numpy(), X @ np.full((2, 2), 3.0) + layer.lin.bias.numpy()
                               + [1.0, 2.0], rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(layer.lin.weight.grad.numpy(), np.repeat(X.T, 2, axis=1),
                               rtol=1e-6)
    assert old.grad is not None and layer.lin.weight is not old


def test_a_replacement_of_another_shape_is_a_clear_error():
    layer = to_static(_Shifted())
    x = d2s.to_tensor(X)
    layer(x)
    layer.offset = d2s.to_tensor(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"_Shifted\.offset was replaced by a float32\[3\] "
                                         r"tensor.*float32\[2\]"):
        layer(x)
    layer.offset = d2s.to_tensor(np.array([5.0, 5.0], np.float32))  # fixed: runs again
    np.testing.assert_allclose(layer(x).numpy(), _eager(layer, x), rtol=1e-6)


def test_save_after_replacement_writes_the_current_value(tmp_path):
    layer = to_static(_Shifted())
    x = d2s.to_tensor(X)
    layer(x)
    layer.offset = d2s.to_tensor(np.array([7.0, 8.0], np.float32))
    path = str(tmp_path / "shifted")
    d2s.jit.save(layer, path)
    np.testing.assert_allclose(d2s.jit.load(path)(x).numpy(), _eager(layer, x), rtol=1e-6)
