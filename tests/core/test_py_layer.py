"""`d2s.autograd.PyLayer`: a function with its own gradient rule, in eager
code and in converted code (traced into a `py_layer` op whose backward is
the user's `backward`), on the numpy and xla backends, against finite
differences and PyTorch's `autograd.Function`."""
import numpy as np
import pytest

import d2s
from d2s.autograd import PyLayer
from d2s.jit import InputSpec, to_static


class Cube(PyLayer):
    @staticmethod
    def forward(ctx, x, scale=1.0):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x ** 3 * scale

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensor()
        return dy * 3.0 * x ** 2 * ctx.scale


class MulAdd(PyLayer):
    """Two inputs, two outputs (tests leave one unused: a zero reaches backward)."""
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, d_prod, d_sum):
        x, y = ctx.saved_tensor()
        return d_prod * y + d_sum, d_prod * x + d_sum


class StraightThrough(PyLayer):
    """round() with the identity as its gradient: the rule is not the derivative."""
    @staticmethod
    def forward(ctx, x):
        return d2s.round(x)

    @staticmethod
    def backward(ctx, dy):
        return dy


class MaxWithIndex(PyLayer):
    @staticmethod
    def forward(ctx, x):
        idx = d2s.argmax(x)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x)
        return d2s.max(x), idx

    @staticmethod
    def backward(ctx, dmax, _didx):
        (x,) = ctx.saved_tensor()
        return d2s.cast(x == d2s.max(x), x.dtype) * dmax


class SignScaled(PyLayer):
    """Tensor `if`s in forward and backward: converted in converted code."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x * 0.5
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensor()
        if x.sum() > 0:
            g = dy * 2.0
        else:
            g = dy * 0.5
        return g


def sign_scaled(x, y):
    return (SignScaled.apply(x * y) * x).sum()


def cube(x, y):
    return (Cube.apply(x * 1.0, 2.0) * y).sum()


def mul_add_both(x, y):
    p, s = MulAdd.apply(x, y)
    return (p * s).sum()


def mul_add_first(x, y):
    p, _ = MulAdd.apply(x, y)
    return (p * p).sum()


def max_with_index(x, y):
    m, idx = MaxWithIndex.apply(x * y)
    return m * 2.0 + d2s.cast(idx, "float64") * 0.0


FUNCTIONS = {"cube": cube, "mul_add_both": mul_add_both, "mul_add_first": mul_add_first,
             "max_with_index": max_with_index, "sign_scaled": sign_scaled}
X0, Y0 = np.array([0.5, -1.2, 2.0]), np.array([1.5, 0.3, -0.7])


def _grads(fn, x0, y0):
    x = d2s.to_tensor(x0, stop_gradient=False)
    y = d2s.to_tensor(y0, stop_gradient=False)
    out = fn(x, y)
    out.backward()
    return out.numpy(), x.grad.numpy(), y.grad.numpy()


def _numeric(fn, x0, y0, eps=1e-6):
    grads = []
    for which in (0, 1):
        g = np.zeros(3)
        for i in range(3):
            e = np.zeros(3)
            e[i] = eps
            args_p = [x0 + e, y0] if which == 0 else [x0, y0 + e]
            args_m = [x0 - e, y0] if which == 0 else [x0, y0 - e]
            g[i] = (fn(*map(d2s.to_tensor, args_p)).numpy()
                    - fn(*map(d2s.to_tensor, args_m)).numpy()) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_eager_gradients_equal_finite_differences(name):
    fn = FUNCTIONS[name]
    _, gx, gy = _grads(fn, X0, Y0)
    nx, ny = _numeric(fn, X0, Y0)
    np.testing.assert_allclose(gx, nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, ny, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS) + ["straight_through"])
def test_converted_code_uses_the_layers_backward(name, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    fn = FUNCTIONS.get(name) or (lambda x, y: (StraightThrough.apply(x * 3.0) * y).sum())
    want = _grads(fn, X0, Y0)
    sf = to_static(fn, backend=backend)
    got = _grads(sf, X0, Y0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    prog = sf.get_concrete_program(d2s.to_tensor(X0), d2s.to_tensor(Y0)).main_program
    assert "py_layer" in {op.type for op in prog.all_ops()}


def test_the_rule_not_the_derivative_gives_the_gradient():
    """round() has derivative 0; the layer's backward says 1 (times 3 and y)."""
    x = d2s.to_tensor(X0, stop_gradient=False)
    (StraightThrough.apply(x * 3.0) * d2s.to_tensor(Y0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * Y0)


def test_gradients_equal_torch_autograd_function():
    torch = pytest.importorskip("torch")

    class TorchMulAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y, x + y

        @staticmethod
        def backward(ctx, d_prod, d_sum):
            x, y = ctx.saved_tensors
            return d_prod * y + d_sum, d_prod * x + d_sum

    tx = torch.tensor(X0, requires_grad=True)
    ty = torch.tensor(Y0, requires_grad=True)
    p, s = TorchMulAdd.apply(tx, ty)
    (p * s).sum().backward()
    _, gx, gy = _grads(mul_add_both, X0, Y0)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy, ty.grad.numpy(), rtol=1e-12)


def test_second_derivative_through_the_rule():
    """With create_graph the rule's ops are recorded: d2/dx2 of x^3 = 6x."""
    x = d2s.to_tensor(X0, stop_gradient=False)
    (g,) = d2s.grad(Cube.apply(x).sum(), [x], create_graph=True)
    (h,) = d2s.grad(g.sum(), [x])
    np.testing.assert_allclose(g.numpy(), 3 * X0 ** 2)
    np.testing.assert_allclose(h.numpy(), 6 * X0)


def test_non_differentiable_outputs_and_no_grad_inputs():
    x = d2s.to_tensor(X0, stop_gradient=False)
    m, idx = MaxWithIndex.apply(x)
    assert idx.stop_gradient and not m.stop_gradient
    y = Cube.apply(d2s.to_tensor(X0))  # no input needs a gradient: no node
    assert y.stop_gradient


class WrongCount(PyLayer):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, dz):
        return dz


@pytest.mark.parametrize("convert", [False, True])
def test_a_backward_returning_too_few_gradients_is_named(convert):
    fn = lambda x, y: WrongCount.apply(x, y).sum()  # noqa: E731
    fn = to_static(fn) if convert else fn
    x, y = (d2s.to_tensor(v, stop_gradient=False) for v in (X0, Y0))
    with pytest.raises(ValueError, match="WrongCount.backward returned 1 gradients for 2"):
        fn(x, y).backward()


def test_saving_a_program_with_a_py_layer_says_why_not(tmp_path):
    class Net(d2s.nn.Layer):
        def forward(self, x):
            return Cube.apply(x)

    net = to_static(Net(), input_spec=[InputSpec([None, 3], "float64")])
    net(d2s.to_tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="PyLayer Cube.apply: its backward is Python code"):
        d2s.jit.save(net, str(tmp_path / "m"))


def _exported_layer(x):
    p, s = MulAdd.apply(x, x * 0.5)
    return Cube.apply(p) + s  # a py_layer's value read again, and one as an output


def test_onnx_export_runs_the_forward_of_a_py_layer(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path = d2s.onnx.export(_exported_layer, tmp_path / "p.onnx",
                           input_spec=[InputSpec([None], "float64")])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: X0})
    np.testing.assert_allclose(got, _exported_layer(d2s.to_tensor(X0)).numpy(), rtol=1e-12)
