"""Shared test helpers: run a function eagerly and as a static program, and
check gradients against central finite differences."""
from __future__ import annotations

import numpy as np

import d2s
from d2s import static


def run_eager(fn, *arrays, grad=False):
    """fn on eager Tensors; with `grad`, also d(sum(out))/d(each float input)."""
    ts = [d2s.to_tensor(a, stop_gradient=not (grad and np.issubdtype(a.dtype, np.floating)))
          for a in arrays]
    out = fn(*ts)
    if not grad:
        return out.numpy()
    out.sum().backward()
    return out.numpy(), [t.grad.numpy() if t.grad is not None else None for t in ts]


def run_static(fn, *arrays, grad=False):
    """fn built into a Program over `data` inputs, then run by the Executor."""
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"in{i}", a.shape, a.dtype.name) for i, a in enumerate(arrays)]
        out = fn(*xs)
        fetch = [out]
        if grad:
            wrt = [x for x, a in zip(xs, arrays) if np.issubdtype(a.dtype, np.floating)]
            fetch += static.gradients([out.sum()], wrt)
    res = static.Executor().run(prog, {f"in{i}": a for i, a in enumerate(arrays)}, fetch)
    return (res[0], res[1:]) if grad else res[0]


def numeric_grads(fn, *arrays, eps=1e-6):
    """Central differences of sum(fn(*arrays)) w.r.t. each float array (float64)."""
    def f(*xs):
        return float(np.sum(fn(*[d2s.to_tensor(x) for x in xs]).numpy()))

    grads = []
    for i, a in enumerate(arrays):
        if not np.issubdtype(a.dtype, np.floating):
            continue
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


def check_both_modes(fn, ref, *arrays, rtol=1e-5, atol=1e-6, grads=True):
    """Values vs the numpy reference in both modes; gradients vs finite
    differences (inputs should be float64) in both modes."""
    expected = ref(*arrays)
    np.testing.assert_allclose(run_eager(fn, *arrays), expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(run_static(fn, *arrays), expected, rtol=rtol, atol=atol)
    if not grads:
        return
    numeric = numeric_grads(fn, *arrays)
    _, eager_g = run_eager(fn, *arrays, grad=True)
    _, static_g = run_static(fn, *arrays, grad=True)
    eager_g = [g for g, a in zip(eager_g, arrays) if np.issubdtype(a.dtype, np.floating)]
    for n, e, s in zip(numeric, eager_g, static_g):
        np.testing.assert_allclose(e, n, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s, n, rtol=1e-5, atol=1e-6)
