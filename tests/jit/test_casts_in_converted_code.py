"""`bool()`, `int()`, `float()` of a traced tensor, and `and`/`or` of tensors
of different shapes, in converted code (DESIGN §4, issue 25 item 4).

Each case runs eagerly and under `to_static` (numpy and xla backends) on the
same inputs; the casts become ops where the value feeds tensor code, and
stay a clear error where a Python value is needed.
"""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError, InputSpec

from model_code_helpers import assert_same_run, tensor

BACKENDS = ["numpy", "xla"]


def _static(fn, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    return to_static(fn, backend=backend)


def _scaled(x):
    s = float(x.sum())          # a Python float eagerly: no gradient through it
    n = int(x.max())            # truncates toward zero
    if bool(x.mean() > 0):
        y = x * s + n
    else:
        y = x - n
    return y, int(x[0]), bool(x.min() < 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values", [[1.5, 2.25, -0.5], [-3.5, -1.0, 0.25]])
def test_casts_feed_tensor_code_as_eagerly(backend, values):
    static = _static(_scaled, backend)
    out = assert_same_run(static, _scaled, lambda: (tensor(values, grad=True),))
    assert out[1].dtype == np.int64 and out[2].dtype == np.bool_
    ops = {op.type for op in static.get_concrete_program(tensor(values)).main_program.all_ops()}
    assert "cond" in ops  # `if bool(t)` became a tensor if, not a build-time value


def _weak(x, k):
    return x * float(k) + int(k), x * (int(k) + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cast_keeps_the_dtype_a_python_number_would(backend):
    static = _static(_weak, backend)
    for dtype in ("float32", "float64"):
        x = d2s.to_tensor(np.array([1.0, 2.0], dtype=dtype))
        k = d2s.to_tensor(np.array(3, dtype="int32"))
        s, e = static(x, k), _weak(x, k)
        for a, b in zip(s, e):
            assert a.dtype == b.dtype == np.dtype(dtype)
            np.testing.assert_allclose(a.numpy(), b.numpy())


def _str_index(x):
    # (a list of tensors indexed by a tensor picks its item at run time:
    # tests/convert/test_autograph_lists_indexed_by_tensors.py)
    return "abc"[int(x.sum())]


def _range_bound(x):
    return len(list(range(int(x.sum()))))


@pytest.mark.parametrize("fn", [_str_index, _range_bound])
def test_a_python_value_needed_stays_a_clear_error(fn):
    x = tensor([1.0])
    assert fn(x) is not None  # eagerly fine
    with pytest.raises(TypeError, match="Python int|until run time") as info:
        to_static(fn)(x)
    message = str(info.value)
    assert f"in {fn.__name__}" in message and "int(x.sum())" in message


def test_int_of_many_elements_is_the_eager_error():
    def f(x):
        return x + int(x)
    with pytest.raises(ValueError, match="2 elements is ambiguous"):
        f(tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="2 elements is ambiguous"):
        to_static(f)(tensor([1.0, 2.0]))


# ---- `and` / `or` of a [1] tensor and a 0-d one: eager `&` broadcasting ----

EOS = 4


def _greedy(tok, max_len):
    step = d2s.zeros([], dtype="int64")
    total = d2s.zeros([1], dtype="int64")
    while tok != EOS and step < max_len:
        tok = (tok * 3 + 1) % 7
        total = total + tok
        step = step + 1
    return tok, step, total


def _either(tok, step):
    if tok == EOS or step > 2:
        return tok + step
    return tok - step


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("start,max_len", [(0, 10), (2, 3), (4, 5)])
def test_while_tok_and_step_broadcasts(backend, start, max_len):
    static = _static(_greedy, backend)
    make = lambda: (d2s.to_tensor(np.array([start], dtype="int64")),  # noqa: E731
                    d2s.to_tensor(np.array(max_len, dtype="int64")))
    assert_same_run(static, _greedy, make)
    assert "while" in {op.type for op in static.get_concrete_program(*make()).main_program.all_ops()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tok,step", [(4, 0), (1, 3), (1, 1)])
def test_or_of_a_1_element_and_a_0d_tensor(backend, tok, step):
    make = lambda: (d2s.to_tensor(np.array([tok], dtype="int64")),  # noqa: E731
                    d2s.to_tensor(np.array(step, dtype="int64")))
    assert_same_run(_static(_either, backend), _either, make)


def test_operands_that_do_not_broadcast_say_how_to_write_it():
    def f(a, b):
        if a > 0 and b > 0:
            return a * 2
        return a - 1
    assert f(tensor(1.0), tensor([1.0])).item() == 2.0  # eagerly: b of one element
    static = to_static(f, input_spec=[InputSpec([]), InputSpec([None])])
    with pytest.raises(ControlFlowError) as info:
        static(tensor(1.0), tensor([1.0]))
    message = str(info.value)
    assert "branches" not in message
    assert "shape [] and a tensor of shape [None]" in message and ".all()" in message
    assert "&" in message and "if a > 0 and b > 0" in message
