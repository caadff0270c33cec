"""A user layer with tensor control flow inside `nn.Sequential`,
`nn.LayerList` or `nn.LayerDict`, called from converted code, is converted
(issue 25 item 4): values and gradients equal the eager run's on the numpy
and xla backends."""
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

from model_code_helpers import assert_same_run, tensor


class Gate(nn.Layer):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = d2s.tanh(h)
        else:
            h = h * 0.5
        return h


class InSequential(nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(Gate(3), nn.ReLU(), nn.Sequential(("g", Gate(3))))

    def forward(self, x):
        return self.body(x)


class InLayerList(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.LayerList([Gate(3), Gate(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x) + x
        return self.blocks[-1](x)


class InLayerDict(nn.Layer):
    def __init__(self):
        super().__init__()
        self.heads = nn.LayerDict({"a": Gate(3), "b": Gate(3)})

    def forward(self, x):
        return self.heads["a"](x) - self.heads["b"](x)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("kind", [InSequential, InLayerList, InLayerDict])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_layers_in_containers_are_converted(backend, kind, sign):
    if backend == "xla":
        pytest.importorskip("jax")
    d2s.seed(7)
    model = kind()

    def run(x):
        return model(x)

    static = to_static(run, backend=backend)
    make = lambda: (tensor([[sign * 1.0, 2.0 * sign, 0.5], [0.25, sign, 3.0]], grad=True),)  # noqa: E731
    assert_same_run(static, run, make, grad_of=model.parameters())
    ops = {op.type for op in static.get_concrete_program(*make()).main_program.all_ops()}
    assert "cond" in ops


def test_layer_dict_behaves_like_paddles():
    a, b, c = Gate(2), Gate(2), Gate(2)
    d = nn.LayerDict([("a", a), ("b", b)])
    assert list(d) == ["a", "b"] and d.keys() == ["a", "b"] and len(d) == 2
    d["c"] = c
    assert d["c"] is c and "c" in d and d.values() == [a, b, c]
    assert d.pop("b") is b and "b" not in d and len(d) == 2
    assert len(d.parameters()) == 4  # a's and c's weight and bias
    d.update(nn.LayerDict({"b": b}))
    assert [k for k, _ in d.items()] == ["a", "c", "b"]
    del d["a"]
    d.clear()
    assert len(d) == 0 and d.parameters() == []
    with pytest.raises(TypeError, match="pairs"):
        d.update([a])
