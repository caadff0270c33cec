"""`global` assignments under Python-valued `if`s (and loops) convert and
write the module global as the eager code does (issue 25 item 4); under a
tensor `if` they are a clear error naming the global and the line, never a
build-time Variable left in the module."""
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import ControlFlowError

from model_code_helpers import assert_same_run, tensor

MODE = "train"
SCALE = 1.0
STEPS = 0


def _configured(x):
    global SCALE, STEPS
    if MODE == "train":
        SCALE = 2.0
    else:
        SCALE = 0.5
    for _ in range(3):
        STEPS += 1
    if x.sum() > 0:          # a tensor `if` beside them: converted
        y = x * SCALE
    else:
        y = x - SCALE
    return y


def _tensor_branch(x):
    global SCALE
    if x.sum() > 0:
        SCALE = 3.0
    return x * 2


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("values", [[1.0, 2.0], [-1.0, -3.0]])
def test_global_writes_under_python_ifs(backend, mode, values):
    if backend == "xla":
        pytest.importorskip("jax")
    global MODE, STEPS, SCALE
    MODE, STEPS, SCALE = mode, 0, 1.0
    static = to_static(_configured, backend=backend)
    assert_same_run(static, _configured, lambda: (tensor(values, grad=True),))
    assert SCALE == (2.0 if mode == "train" else 0.5)
    assert STEPS == 6  # 3 while tracing, 3 eagerly
    assert type(SCALE) is float


def test_a_global_write_under_a_tensor_if_is_a_clear_error():
    global SCALE
    SCALE = 1.0
    with pytest.raises(ControlFlowError) as info:
        to_static(_tensor_branch)(tensor([1.0]))
    message = str(info.value)
    assert "global SCALE" in message and "test_global_writes.py" in message
    assert "if x.sum() > 0" in message
    assert SCALE == 1.0
