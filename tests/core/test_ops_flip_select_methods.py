"""fliplr / flipud / multiplex (d2s/core/ops/flip_select.py) and frexp: values vs
numpy, gradients, numpy+xla static, unknown dims, ONNX Runtime (the shared
ops_check); the Tensor methods added for existing functions forward to
them; `x.to(...)`, `element_size`, `pin_memory`."""
import numpy as np
import pytest

import d2s
from ops_check import check

R = np.random.default_rng(13)


def f64(*s):
    return R.standard_normal(s)


_IDX = np.array([[2], [0], [1], [2]])

_F = np.array([3.0, -5.5, 0.3, -0.7, 12.0, 1e-3])            # away from powers of two
_EDGES = np.array([0.0, 1.0, -2.0, 0.5, 4.0, np.nextafter(8.0, 0), np.inf, -np.inf])

CASES = [
    ("frexp", lambda x: d2s.frexp(x), [_F], lambda x: tuple(np.asarray(v, x.dtype)
                                                            for v in np.frexp(x))),
    ("frexp_edges_f32", lambda x: x.frexp(), [_EDGES.astype(np.float32)],
     lambda x: tuple(np.asarray(v, x.dtype) for v in np.frexp(x))),
    ("frexp_edges_f64", lambda x: d2s.frexp(x), [_EDGES],
     lambda x: tuple(np.asarray(v, x.dtype) for v in np.frexp(x))),
    ("fliplr", lambda x: d2s.fliplr(x), [f64(3, 4, 2)], lambda x: np.fliplr(x)),
    ("flipud_method", lambda x: x.flipud(), [f64(3, 2)], lambda x: np.flipud(x)),
    ("multiplex", lambda a, b, c, i: d2s.multiplex([a, b, c], i),
     [f64(4, 3), f64(4, 3), f64(4, 3), _IDX],
     lambda a, b, c, i: np.stack([a, b, c])[i[:, 0], np.arange(4)]),
    ("multiplex_3d", lambda a, b, i: d2s.multiplex([a, b], i),
     [f64(2, 3, 2), f64(2, 3, 2), np.array([[1], [0]], np.int32)],
     lambda a, b, i: np.stack([b[0], a[1]])),
]


@pytest.mark.parametrize("name,fn,arrays,ref", CASES, ids=[c[0] for c in CASES])
def test_op(name, fn, arrays, ref):
    check(fn, arrays, ref, unknown="first" if name.startswith("multiplex") else "all",
          grad=not name.startswith("frexp_edges"))  # edges: jumps and infinities


def test_bad_arguments():
    with pytest.raises(ValueError, match="2-D"):
        d2s.fliplr(d2s.to_tensor(np.ones(3)))
    with pytest.raises(ValueError, match="one shape"):
        d2s.multiplex([d2s.ones([2, 3]), d2s.ones([2, 2])], d2s.to_tensor(_IDX[:2]))
    with pytest.raises(ValueError, match=r"\(M, 1\)"):
        d2s.multiplex([d2s.ones([2, 3])], d2s.to_tensor(np.array([0.0, 1.0])))


METHODS = [
    ("hypot", (f64(3),)), ("signbit", ()), ("isposinf", ()), ("isneginf", ()), ("isreal", ()),
    ("diagflat", ()), ("hsplit", (2,)), ("dsplit", (1,)), ("tensor_split", (2,)),
    ("renorm", (2.0, 0, 1.0)), ("scatter_nd", (np.ones(2), [5])),
]


@pytest.mark.parametrize("name,args", METHODS, ids=[m[0] for m in METHODS])
def test_methods_forward_to_the_functions(name, args):
    x = d2s.to_tensor(f64(3, 4, 2) if name == "dsplit" else np.array([[1], [3]])
                      if name == "scatter_nd" else
                      f64(3) if name in ("hypot", "diagflat") else f64(4, 2))
    targs = [d2s.to_tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    got = getattr(x, name)(*targs)
    want = getattr(d2s, name)(x, *targs)
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got],
                    want if isinstance(want, (list, tuple)) else [want]):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_to_element_size_pin_memory():
    x = d2s.to_tensor(np.arange(4.0))
    assert x.to("float32").dtype == np.float32 and x.to("float32").numpy().tolist() == [0, 1, 2, 3]
    assert x.to("cpu") is x and x.to("gpu:0") is x and x.to(d2s.CPUPlace()) is x
    assert x.to("cpu", "int32").dtype == np.int32
    assert x.to(dtype="float16").dtype == np.float16
    assert x.to(d2s.to_tensor(np.zeros(1, np.int64))).dtype == np.int64
    assert x.element_size() == 8 and x.to("float16").element_size() == 2
    assert x.pin_memory() is x
    with pytest.raises(TypeError, match="neither a dtype nor a device"):
        x.to("banana")
    xv = d2s.to_tensor(np.ones((2, 2), np.float32), stop_gradient=False)
    xv.to("float64").sum().backward()  # a cast: gradients flow back
    np.testing.assert_array_equal(xv.grad.numpy(), np.ones((2, 2), np.float32))
