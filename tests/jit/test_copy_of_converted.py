"""`copy.deepcopy` of a converted layer or of a StaticFunction (issue 25
item 4): the copy runs (numpy and xla backends), gives the original's
results, and its parameters are its own."""
import copy

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

from model_code_helpers import tensor


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 2
        return h


class Decorated(Net):
    @to_static
    def forward(self, x):
        return self.fc(x) - 1


def _scaled(x, k):
    if x.mean() > 0:
        return x * k
    return x - k


X = [[1.0, -2.0, 0.5], [0.5, 1.0, 2.0]]


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("kind", ["to_static(layer)", "decorated"])
def test_deepcopy_of_a_converted_layer(backend, kind):
    if backend == "xla":
        pytest.importorskip("jax")
    d2s.seed(1)
    model = to_static(Net(), backend=backend) if kind == "to_static(layer)" else Decorated()
    x = tensor(X)
    before = model(x).numpy()
    twin = copy.deepcopy(model)
    np.testing.assert_allclose(twin(x).numpy(), before, rtol=1e-6)
    assert twin.fc.weight is not model.fc.weight
    twin.set_state_dict({"fc.weight": twin.fc.weight.numpy() * 3,
                         "fc.bias": twin.fc.bias.numpy() + 1})
    np.testing.assert_allclose(model(x).numpy(), before, rtol=1e-6)  # the original: unchanged
    eager = twin.forward.dygraph_function(x).numpy()
    np.testing.assert_allclose(twin(x).numpy(), eager, rtol=1e-5)
    assert not np.allclose(eager, before)
    loss = twin(x).sum()
    loss.backward()
    assert twin.fc.weight.grad is not None and model.fc.weight.grad is None


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_deepcopy_of_a_static_function(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    fn = to_static(_scaled, backend=backend)
    x = tensor([1.0, 2.0])
    fn(x, tensor(3.0))
    twin = copy.deepcopy(fn)
    assert twin is not fn and len(twin.program_cache) == 0
    for v in ([1.0, 2.0], [-1.0, -2.0]):
        np.testing.assert_allclose(twin(tensor(v), tensor(3.0)).numpy(),
                                   _scaled(tensor(v), tensor(3.0)).numpy())
    assert twin.code == fn.code
