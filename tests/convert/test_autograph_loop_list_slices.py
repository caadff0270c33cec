"""A slice of a list a tensor loop filled is a list: `d2s.stack(outs[::-1])`,
`d2s.concat(outs[1:])`, `for o in outs[::-1]` give eager's values and
gradients on numpy and xla (the slice of the tensor array was a plain
Variable, and stack() of it failed: "cannot iterate over static Variable")."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _fill(x, n):
    outs = []
    for i in range(n):
        outs.append(x[0] * (i + 1.0) + x[1])
    return outs


def _stack_reversed(x, n):
    return d2s.stack(_fill(x, n)[::-1])


def _stack_reversed_on_axis_1(x, n):
    return d2s.stack(_fill(x, n)[::-1], axis=1)


def _concat_tail(x, n):
    outs = _fill(x, n)
    outs = outs[1:]
    return d2s.concat(outs), len(outs)


def _loop_over_reversed(x, n):
    s = x[0] * 0
    for o in _fill(x, n)[::-1]:
        s = s * 2 + o
    return s


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_stack_reversed, _stack_reversed_on_axis_1, _concat_tail,
                                _loop_over_reversed])
def test_slices_of_a_loop_filled_list_are_lists(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for n in (2, 4):
        values = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], "float32")
        xs, xe = (d2s.to_tensor(values, stop_gradient=False) for _ in range(2))
        out, ref = static(xs, d2s.to_tensor(np.array(n))), fn(xe, d2s.to_tensor(np.array(n)))
        out, ref = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
        np.testing.assert_allclose(out[0].numpy(), ref[0].numpy(), rtol=1e-6)
        for o, r in zip(out[1:], ref[1:]):
            assert int(o) == r
        (out[0] * out[0]).sum().backward()
        (ref[0] * ref[0]).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
