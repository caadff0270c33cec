"""`d2s.full_like(x, t)` with a one-element tensor `t` as the fill value (a
traced value in converted code), as PaddlePaddle model code writes
`paddle.full_like(logits, logits.min())` for masks: the value is read with
no gradient path, the dtype defaults to x's, and x's dims may be unknown
until run time. Eager and converted runs agree on numpy and xla."""
import os
import sys

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static import InputSpec

from harness import BACKENDS

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jit"))
from model_code_helpers import assert_same_run, tensor  # noqa: E402


def _masked_fill(x, mask):
    low = d2s.full_like(x, x.min() - 1.0)
    counts = d2s.full_like(x, mask.sum(), dtype="int64")
    return d2s.where(mask, x, low) * 2.0, counts


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spec", [None, [InputSpec([None, 3]), InputSpec([None, 3], "bool")]])
def test_full_like_with_a_tensor_fill_value(backend, spec):
    static = to_static(_masked_fill, backend=backend, input_spec=spec)
    for rows in ((2, 4) if spec else (2,)):   # unknown rows: two batch sizes, one program
        values = np.arange(rows * 3, dtype="float32").reshape(rows, 3) - 4.0
        make = lambda: (tensor(values, grad=True), d2s.to_tensor(values > 0))  # noqa: E731
        out = assert_same_run(static, _masked_fill, make)
        assert out[1].dtype == np.int64 and out[0].dtype == np.float32


def test_full_like_needs_one_element():
    x = tensor([[1.0, 2.0]])
    with pytest.raises(ValueError, match="one-element"):
        to_static(lambda x: d2s.full_like(x, x))(x)
