"""`fleet.utils.recompute`: a block's activations are dropped after the
forward pass and computed again in backward, with the same numbers (the
random state put back: dropout draws the same mask) and the same
gradients for its inputs and its parameters as without recompute."""
import gc
import weakref

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.distributed.fleet.utils import recompute


def _block():
    d2s.seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 4))


def _x(needs_grad=True):
    return d2s.to_tensor(np.linspace(-1, 1, 12).reshape(3, 4).astype("float32"),
                         stop_gradient=not needs_grad)


def _custom_forward(layer):  # PaddleNLP's create_custom_forward
    def forward(*inputs):
        return layer(*inputs)
    return forward


@pytest.mark.parametrize("wrap", ["layer", "bound_method", "closure"])
@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_values_and_gradients_equal_the_block_without_recompute(wrap, x_needs_grad):
    def run(use):
        block, x = _block(), _x(x_needs_grad)
        fn = {"layer": block, "bound_method": block.forward,
              "closure": _custom_forward(block)}[wrap]
        d2s.seed(5)
        y = recompute(fn, x) if use else block(x)
        (y * y).sum().backward()
        return [y.numpy()] + [p.grad.numpy() for p in block.parameters()] + \
            ([x.grad.numpy()] if x_needs_grad else [])
    for got, want in zip(run(True), run(False)):
        np.testing.assert_array_equal(got, want)


def test_the_blocks_activations_are_not_kept_until_backward():
    def held(use):
        block, x = _block(), _x()
        seen = []
        block[1].register_forward_post_hook(lambda layer, inp, out: seen.append(weakref.ref(out)))
        y = recompute(block, x) if use else block(x)
        gc.collect()
        alive = seen[0]() is not None
        y.sum().backward()
        return alive
    assert held(use=False) and not held(use=True)


def test_in_converted_code_the_block_is_called_as_it_is():
    block = _block()
    block.eval()  # (no dropout: eager and converted draw differently)

    def f(x):
        return recompute(block, x) * 2.0

    x = _x()
    np.testing.assert_allclose(d2s.jit.to_static(f)(x).numpy(), f(x).numpy(), rtol=1e-6)


def test_arguments_that_are_not_tensors_go_by_keyword():
    with pytest.raises(TypeError, match=r"pass the block's arguments as Tensors"):
        recompute(lambda x, n: x * n, _x(), 3)
    with pytest.raises(TypeError, match=r"function must be callable"):
        recompute(3, _x())
    np.testing.assert_allclose(recompute(lambda x, n=1: x * n, _x(), n=3).numpy(),
                               _x().numpy() * 3)
