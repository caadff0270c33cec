"""Checks shared by the model-code tests (tests/jit/test_model_code*.py).

Each test runs the same eager-style model code twice on the same inputs:
the original function (eager) and `to_static` of it; values, dtypes, shapes
and gradients must agree, and the program must hold the control-flow ops
the construct has to become.
"""
import numpy as np

import d2s


def tensor(value, grad=False, dtype=None):
    """A fresh eager Tensor (float data defaults to float32)."""
    array = np.array(value, dtype=dtype)
    if dtype is None and array.dtype == np.float64:
        array = array.astype(np.float32)
    return d2s.to_tensor(array, stop_gradient=not grad)


def leaves(value):
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in leaves(value[key])]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def assert_same(static, eager, what="output"):
    """Tensors: same dtype, shape and values (rtol 1e-5); other leaves equal.

    A Python number that a tensor loop carries (a step counter) is a 0-d
    tensor in the static result: DESIGN §4, Python scalars are promoted."""
    s_leaves, e_leaves = leaves(static), leaves(eager)
    assert len(s_leaves) == len(e_leaves), f"{what}: {static!r} vs eager {eager!r}"
    for i, (s, e) in enumerate(zip(s_leaves, e_leaves)):
        if isinstance(e, d2s.Tensor):
            assert isinstance(s, d2s.Tensor), f"{what} {i}: {s!r} vs eager {e!r}"
            assert s.dtype == e.dtype, f"{what} {i}: dtype {s.dtype} vs eager {e.dtype}"
            assert s.shape == e.shape, f"{what} {i}: shape {s.shape} vs eager {e.shape}"
            np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{what} {i}")
        elif isinstance(s, d2s.Tensor):
            assert s.shape == () and s.item() == e, f"{what} {i}: {s!r} vs eager {e!r}"
        else:
            assert type(s) is type(e) and s == e, f"{what} {i}: {s!r} vs eager {e!r}"


def program_ops(static_fn, *args, **kwargs):
    program = static_fn.get_concrete_program(*args, **kwargs).main_program
    return {op.type for op in program.all_ops()}


def backward_of(outputs):
    """Backward of the sum of every floating tensor output."""
    terms = [leaf.astype("float64").sum() for leaf in leaves(outputs)
             if isinstance(leaf, d2s.Tensor) and np.issubdtype(leaf.dtype, np.floating)]
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    if loss.stop_gradient:  # eagerly no output depends on a gradient input (a
        return              # zero-trip loop): no gradients, as eager leaves them
    loss.backward()


def assert_same_run(static_fn, eager_fn, make_args, grad_of=()):
    """Call both on fresh copies of the same inputs; compare outputs, then the
    gradients of the inputs (and of `grad_of`, e.g. a layer's parameters)."""
    s_args, e_args = make_args(), make_args()
    static, eager = static_fn(*s_args), eager_fn(*e_args)
    assert_same(static, eager)
    s_params = [a for a in s_args if isinstance(a, d2s.Tensor) and not a.stop_gradient]
    if not (s_params or grad_of):
        return static
    for p in grad_of:
        p.clear_grad()
    backward_of(static)
    s_grads = _grads(s_params, grad_of)
    for p in grad_of:
        p.clear_grad()
    backward_of(eager)
    e_params = [a for a in e_args if isinstance(a, d2s.Tensor) and not a.stop_gradient]
    e_grads = _grads(e_params, grad_of)
    for i, (s, e) in enumerate(zip(s_grads, e_grads)):
        if e is None:  # not used on the path taken: the static run may give zeros
            assert s is None or not np.any(s), f"gradient {i}: {s!r} vs eager None"
            continue
        assert s is not None, f"gradient {i}: none from the static run, eager {e!r}"
        if e is not None:
            np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-6,
                                       err_msg=f"gradient {i}")
    return static


def _grads(inputs, params):
    """Copies (a later clear_grad must not change them), None where no gradient."""
    return [None if t.grad is None else t.grad.numpy().copy() for t in list(inputs) + list(params)]


def outputs_and_grads(fn, *arrays):
    """fn's outputs and the gradients of its summed floating outputs with respect
    to each array (fed as eager Tensors; zeros where no gradient reaches one)."""
    ts = [d2s.to_tensor(a.copy(), stop_gradient=False) for a in arrays]
    out = fn(*ts)
    leaves_ = out if isinstance(out, tuple) else (out,)
    loss = None
    for leaf in leaves_:
        term = leaf.sum()
        loss = term if loss is None else loss + term
    loss.backward()
    return ([leaf.numpy() for leaf in leaves_],
            [np.zeros_like(a) if t.grad is None else t.grad.numpy() for a, t in zip(arrays, ts)])


def op_types(static_fn, *arrays):
    """The op types of the program `static_fn` builds for these arrays."""
    prog = static_fn.get_concrete_program(*(d2s.to_tensor(a) for a in arrays)).main_program
    return {op.type for op in prog.all_ops()}
