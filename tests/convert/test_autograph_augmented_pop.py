"""`total += items.pop()` in a loop on a tensor (AutoGraph's list tests pop a
prefilled list that way), `total = total * 0.5 + rows.pop() * 2.0`,
`total = f(rows.pop(0)) + total`: the pop becomes a statement of its own, so the
list, carried as a tensor array, is popped by rebinding its name, as `item
= items.pop()` is. Values match eager for zero and several trips on numpy
and xla (it was "'items.pop(...)' inside an expression ... write `item =
items.pop(...)` on a line of its own")."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _pop_prefilled(n):
    items = [1, 2, 3, 4]
    total = 0
    for _ in range(n):
        total += items.pop()
    return d2s.stack(items), total


def _pop_what_a_loop_filled(x, n):
    rows = []
    for i in range(n):
        rows.append(x * (i + 1.0))
    total = x * 0
    while len(rows) > 1:
        total *= 0.5
        total += rows.pop()
    return total, len(rows)


def _pop_at_an_index(n):
    items = [10, 20, 30, 40]
    total = 0
    i = 0
    while i < n:
        total -= items.pop(0)
        i += 1
    return d2s.stack(items), total


def _pop_inside_expressions(x, n):
    rows = []
    for i in range(n):
        rows.append(x * (i + 1.0))
    total = x * 0
    while len(rows) > 2:
        total = total * 0.5 + rows.pop() * 2.0
    total = d2s.tanh(rows.pop(0)) + total
    out = total * rows.pop()
    return out, len(rows)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_augmented_assignment_of_a_pop_in_tensor_loops(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    cases = [(_pop_prefilled, lambda n: (d2s.to_tensor(np.array(n)),)),
             (_pop_at_an_index, lambda n: (d2s.to_tensor(np.array(n)),)),
             (_pop_inside_expressions,
              lambda n: (d2s.to_tensor(np.array([1.0, -2.0], "float32")),
                         d2s.to_tensor(np.array(n + 2)))),
             (_pop_what_a_loop_filled,
              lambda n: (d2s.to_tensor(np.array([1.0, -2.0], "float32")),
                         d2s.to_tensor(np.array(n + 1))))]
    for fn, make in cases:
        static = to_static(fn, backend=backend)
        for n in (0, 2, 3):
            out, ref = static(*make(n)), fn(*make(n))
            assert len(out) == len(ref)
            for o, r in zip(out, ref):
                r = r.numpy() if isinstance(r, d2s.Tensor) else np.array(r)
                np.testing.assert_allclose(np.asarray(o.numpy()), r, rtol=1e-6)
                assert o.numpy().shape == r.shape, (fn.__name__, n)
