"""`to_static(layer.forward)` returns a converted function of its own: the
layer itself is unchanged (`layer(x)` and `layer.forward` still run the
Python forward), and two such calls give two independent converted
functions (a program pass added to one does not reach the other).

A method decorated in its class is different: the class's StaticFunction
binds once per instance, and every lookup returns that one."""
import numpy as np

import d2s


class Counting(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.linear = d2s.nn.Linear(3, 2)
        self.python_runs = 0

    def forward(self, x):
        self.python_runs += 1  # a Python side effect: counts the Python runs
        return self.linear(x)


class Decorated(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.linear = d2s.nn.Linear(3, 2)

    @d2s.jit.to_static
    def forward(self, x):
        return self.linear(x)


def _x():
    return d2s.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))


def test_converting_a_bound_forward_leaves_the_layer_as_it_was():
    layer = Counting()
    converted = d2s.jit.to_static(layer.forward)
    assert "forward" not in vars(layer)
    assert not isinstance(layer.forward, d2s.jit.StaticFunction)
    x = _x()
    expected = layer(x).numpy()
    assert layer.python_runs == 1
    for _ in range(3):
        np.testing.assert_allclose(converted(x).numpy(), expected, rtol=1e-6)
    traced_runs = layer.python_runs
    layer(x)
    layer(x)
    assert layer.python_runs == traced_runs + 2  # the layer still runs its Python


def test_two_conversions_of_one_bound_forward_are_independent():
    layer = Counting()
    first = d2s.jit.to_static(layer.forward)
    second = d2s.jit.to_static(layer.forward)
    assert first is not second
    seen = []

    def count_pass(program):
        seen.append(program)
        return program

    first.add_program_pass(count_pass)
    x = _x()
    second(x)
    assert seen == []
    first(x)
    assert len(seen) == 1


def test_a_decorated_method_binds_once_per_instance():
    layer, other = Decorated(), Decorated()
    assert layer.forward is layer.forward
    assert layer.forward is not other.forward
    x = _x()
    np.testing.assert_allclose(layer(x).numpy(),
                               layer.forward.dygraph_function(x).numpy(), rtol=1e-6)
