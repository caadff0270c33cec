"""The numpy backend's pool_mask pass (d2s/backends/numpy/pool_mask.py): the
ReLU mask after max pooling's gradient is applied on the pooled grid, where
windows do not overlap, and gives eager's gradients bit for bit (ties,
zeros, negative windows); overlapping windows keep the two input-sized
passes; xla gives the same gradients."""
import numpy as np
import pytest

import d2s
import d2s.nn.functional as F
from d2s import static
from d2s.backends.numpy.passes import optimize
from d2s.jit import to_static
from d2s.static.passes import ProgramView

RNG = np.random.default_rng(3)


def _inputs(shape):
    # small integers around 0: ReLU zeros whole windows, ties in most others
    x = RNG.integers(-2, 3, size=shape).astype(np.float32)
    return x


def _pool(x, kernel, stride):
    if x.ndim == 5:
        return F.max_pool3d(x, kernel, stride)
    return F.max_pool2d(x, kernel, stride)


def _grad_fn(kernel, stride):
    def grad_of(x, r):
        y = _pool(F.relu(x * 1.5), kernel, stride)
        (gx,) = d2s.grad([(y * r).sum()], [x])
        return gx
    return grad_of


def _optimized_types(shape, kernel, stride):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", shape, "float32")
        x.stop_gradient = False
        y = _pool(F.relu(x), kernel, stride)
        (gx,) = d2s.grad([y.sum()], [x])
    view = ProgramView(prog, prog.global_block().ops, [gx.name], [x.name])
    ops = optimize(view).blocks[0]
    return [op.type for op in ops], ops


@pytest.mark.parametrize("shape,kernel,stride,rewritten", [
    ((2, 3, 8, 6), 2, 2, True),           # the 2x2 pooling after ReLU: rewritten
    ((2, 3, 7, 9), (3, 2), (3, 3), True),  # windows with gaps between them: rewritten
    ((2, 3, 9, 9), 3, 2, False),          # overlapping windows: sums, left alone
    ((1, 2, 4, 4, 6), 2, 2, True),        # the 3-D member
])
def test_pooled_mask_gives_eagers_gradient_bit_for_bit(shape, kernel, stride, rewritten):
    x_np = _inputs(shape)
    grad_of = _grad_fn(kernel, stride)
    pooled = _pool(d2s.to_tensor(x_np), kernel, stride)
    r = d2s.to_tensor(RNG.normal(size=pooled.shape).astype(np.float32))
    want = grad_of(d2s.to_tensor(x_np, stop_gradient=False), r).numpy()
    assert (want == 0).any() and (want != 0).any()
    static_fn = to_static(grad_of)
    for _ in range(3):  # the first call runs on the interpreter, later ones generated code
        got = static_fn(d2s.to_tensor(x_np, stop_gradient=False), r).numpy()
        np.testing.assert_array_equal(got, want)

    types, ops = _optimized_types(list(shape), kernel, stride)
    pool_grad = "max_pool3d_grad" if len(shape) == 5 else "max_pool2d_grad"
    (grad_op,) = [op for op in ops if op.type == pool_grad]
    fed_by = {v.name: op.type for op in ops for v in op.outputs}
    if rewritten:
        # the mask is of the pooled output and the product is before the gradient
        assert fed_by[grad_op.inputs[0].name] == "multiply"
        assert not any(op.type == "multiply" and grad_op.outputs[0].name in
                       [v.name for v in op.inputs] for op in ops)
        (mask_op,) = [op for op in ops if op.type == "greater_than"]
        assert tuple(mask_op.outputs[0].shape) == tuple(grad_op.inputs[0].shape)
    else:
        (mask_op,) = [op for op in ops if op.type == "greater_than"]
        assert tuple(mask_op.outputs[0].shape) == tuple(shape)


def test_xla_gives_the_same_gradient():
    pytest.importorskip("jax")
    x_np = _inputs((2, 3, 8, 8))
    grad_of = _grad_fn(2, 2)
    r = d2s.to_tensor(RNG.normal(size=(2, 3, 4, 4)).astype(np.float32))
    want = to_static(grad_of)(d2s.to_tensor(x_np, stop_gradient=False), r)
    got = to_static(grad_of, backend="xla")(d2s.to_tensor(x_np, stop_gradient=False), r)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
