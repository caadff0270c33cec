"""The truth of a list a tensor loop filled (`if outs:`, `if not outs:`,
`while stack: stack.pop()`): as in Python, whether the list is empty, on the
numpy and xla backends. The loop makes the list a tensor array, whose truth
was taken elementwise (`array != 0`): a wrong answer or numpy's "cannot
reshape array of size 3 into shape ()"."""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _stack_or_empty(n):
    rows = []
    i = 0
    while i < n:
        rows.append(i * 10 + 1)
        i += 1
    return d2s.stack(rows).max() if rows else n * 0 - 7


def _not_list(n):
    seen = []
    for i in range(n):
        seen.append(i + 2)
    if not seen:
        return n * 0 - 1
    return d2s.stack(seen).sum()


def _drain(n):
    work = []
    i = 0
    while i < n:
        work.append(i * 2 + 1)
        i += 1
    total = 0
    while work:
        item = work.pop()
        total = total * 10 + item
    return total


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_stack_or_empty, _not_list, _drain])
def test_truth_of_a_loop_filled_list_is_its_emptiness(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for n in (0, 1, 3):
        out, ref = static(d2s.to_tensor(np.array(n))), fn(d2s.to_tensor(np.array(n)))
        ref = ref.numpy() if isinstance(ref, d2s.Tensor) else np.array(ref)
        np.testing.assert_array_equal(out.numpy(), ref)
        assert out.numpy().shape == ref.shape, n
