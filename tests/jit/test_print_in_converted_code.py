"""`print` in converted code prints on every call, with the values of that
call: a parameter (an eager Tensor captured by the program) and a captured
tensor next to a program Variable.
"""

import numpy as np

import d2s
from d2s.jit import to_static

from model_code_helpers import program_ops, tensor


class _Scaled(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.scale = self.create_parameter([2])

    def forward(self, x):
        print("scale:", self.scale)
        return x * self.scale


def test_print_of_a_parameter_prints_on_every_call_with_its_value_then(capsys):
    layer = _Scaled()
    static = to_static(layer.forward)
    expected = []
    for step in range(3):
        # as an optimizer's update does: the parameter's array replaced
        layer.scale._value = np.array([step, step + 0.5], np.float32)
        layer.forward(tensor([1.0, 1.0]))
        expected.append(capsys.readouterr().out)
        static(tensor([1.0, 1.0]))
        got = capsys.readouterr().out
        assert got == expected[-1], f"call {step}: {got!r} vs eager {expected[-1]!r}"
    assert len(set(expected)) == 3  # the value printed is the one at that call
    assert "print" in program_ops(static, tensor([1.0, 1.0]))


_CAPTURED = d2s.to_tensor(np.array([3.0, 4.0], np.float32))


def _prints_a_captured_tensor_and_a_variable(x):
    print(_CAPTURED, x + 1.0, sep=" | ")
    return x * 2.0


def test_print_of_a_captured_tensor_next_to_a_variable(capsys):
    static = to_static(_prints_a_captured_tensor_and_a_variable)
    for _ in range(2):
        _prints_a_captured_tensor_and_a_variable(tensor([1.0]))
        eager = capsys.readouterr().out
        static(tensor([1.0]))
        assert capsys.readouterr().out == eager
