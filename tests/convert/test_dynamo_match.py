"""`match` statements in converted code (TorchDynamo's function tests use
them): a `return` inside a case, tensor `if`s inside cases, and `match`
inside Python and tensor loops convert, on the numpy and xla backends, and
give the eager values and gradients. (A `return` in a case crashed the
return canonicalizer: a `Match` has no `body`.)"""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _dispatch(x, mode):
    match mode:
        case "flip":
            if x.sum() > 0:
                return x
            else:
                return -x
        case "double" | "twice":
            y = x * 2
            if y.sum() > 0:
                y = y + 1
            return y
        case _:
            return x * 3


def _every_mode(x):
    return _dispatch(x, "flip"), _dispatch(x, "twice"), _dispatch(x, "other")


def _guard_and_mapping(x):
    cfg = {"act": "relu", "n": x.shape[0]}
    match cfg:
        case {"act": "relu", "n": n} if n > 2:
            return d2s.nn.functional.relu(x) * n
        case _:
            return x


def _return_in_loop(x):
    s = x
    for k in range(5):
        match k:
            case 2:
                return s
            case _:
                if s.sum() > 0:
                    s = s + 1
    return s * 0


def _in_tensor_loop(x):
    s = x
    i = d2s.to_tensor(0)
    kind = 1
    while i < 3:
        match kind:
            case 1:
                s = s * 1.5
            case _:
                s = s - 1
        i += 1
    return s


def _shape_subject(x):
    match x.shape:
        case [3]:
            if x.sum() > 0:
                return x
            return -x
    return x * 0


def _loss(out):
    outs = out if isinstance(out, tuple) else (out,)
    total = outs[0].sum()
    for o in outs[1:]:
        total = total + o.sum()
    return total


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("fn", [_every_mode, _guard_and_mapping, _return_in_loop,
                                _in_tensor_loop, _shape_subject])
def test_match_converts_like_eager(backend, fn):
    if backend == "xla":
        pytest.importorskip("jax")
    static = to_static(fn, backend=backend)
    for values in ([1.0, -2.0, 3.0], [-1.0, -2.0, -3.0]):
        xs, xe = (d2s.to_tensor(np.array(values, "float32"), stop_gradient=False)
                  for _ in range(2))
        out, ref = static(xs), fn(xe)
        outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
        assert type(out) is type(ref) and len(outs) == len(refs)
        for o, r in zip(outs, refs):
            np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-6)
        _loss(out).backward()
        _loss(ref).backward()
        np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-6)
