"""`F.pad` in constant mode on a dim that is `None` in the InputSpec (a
causal Conv1D's left padding over a variable sequence length, found by the
TCN corpus model): it used to raise "padding needs the padded dims known";
it now concatenates blocks of the fill value, equal to eager padding. Modes
that read the input's far edge (reflect, replicate, circular) still need the
dim and say so, naming what to write instead."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close


def causal(x):
    return F.pad(x, [3, 0], data_format="NCL", value=0.5) * 2.0


def both_sides(x):
    return F.pad(x, [0, 0, 0, 0, 1, 2, 2, 1], value=-1.0)       # every dim, constant


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, spec, shapes", [
    (causal, [None, 2, None], [(1, 2, 4), (3, 2, 1)]),
    (both_sides, [None, 3, None, None], [(2, 3, 2, 5), (1, 3, 4, 1)]),
])
def test_constant_pad_of_unknown_dims_matches_eager(backend, fn, spec, shapes):
    static = d2s.jit.to_static(fn, input_spec=[InputSpec(spec)], backend=backend)
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = d2s.to_tensor(rng.normal(size=shape).astype("float32"))
        x.stop_gradient = False
        y = static(x)
        assert y.shape == fn(x).shape
        close(y.numpy(), fn(x).numpy(), backend, f"output for {shape}")
        (y * y).sum().backward()
        g = x.grad.numpy().copy()
        x.clear_grad()
        (fn(x) ** 2).sum().backward()
        close(g, x.grad.numpy(), backend, f"grad for {shape}")
    assert len(static.program_cache) == 1


def test_reflect_pad_of_unknown_dim_pads_at_run_time():
    """(It raised "needs the padded dims known"; the indices are now computed in
    the program: tests/corpus/test_paddlezoo_pad_dynamic.py.)"""
    static = d2s.jit.to_static(lambda x: F.pad(x, [1, 1], mode="reflect", data_format="NCL"),
                               input_spec=[InputSpec([None, 2, None])])
    x = d2s.to_tensor(np.arange(8, dtype="float32").reshape(1, 2, 4))
    np.testing.assert_array_equal(static(x).numpy(),
                                  F.pad(x, [1, 1], mode="reflect", data_format="NCL").numpy())
