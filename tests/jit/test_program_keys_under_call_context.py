"""A program whose trace read a Layer's `training` flag is cached under the
flags it read *and* the call's context (forward hooks set somewhere, an
`auto_cast` in force): the lookup of a later call composes its key the same
way, so it finds that program instead of building another each time."""
import numpy as np
import pytest

import d2s
from d2s import nn


def _x():
    return d2s.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))


def _converted():
    linear, dropout = nn.Linear(3, 2), nn.Dropout(0.5)
    dropout.eval()  # the trace reads this flag: the program is keyed by it
    return d2s.jit.to_static(lambda t: dropout(linear(t))), linear, dropout


def _assert_one_program(sf, x):
    first = sf.get_concrete_program(x)
    out = sf(x).numpy()
    assert sf.get_concrete_program(x) is first
    assert sf._cache.builds == 1
    return out


def test_a_program_is_found_again_while_forward_hooks_exist():
    elsewhere = nn.Linear(1, 1)
    handle = elsewhere.register_forward_post_hook(lambda layer, inputs, output: None)
    try:
        sf, linear, _ = _converted()
        x = _x()
        out = _assert_one_program(sf, x)
        np.testing.assert_allclose(out, linear(x).numpy(), rtol=1e-6)
    finally:
        handle.remove()


@pytest.mark.parametrize("level", ["O1", "O2"])
def test_a_program_is_found_again_inside_auto_cast(level):
    sf, linear, _ = _converted()
    x = _x()
    with d2s.amp.auto_cast(level=level):
        _assert_one_program(sf, x)
