"""Paddle's tensor functions as Tensor methods: `x.unique()`, `x.isclose(y)`.

PaddlePaddle makes most functions of `paddle.tensor` methods of its Tensor
(the receiver is the first argument), and ported model code calls them
that way. The methods d2s defines by hand (core.methods: arithmetic, the
in-place ones, those with Paddle-specific argument handling) stay; every
other name of the list below that d2s has as a function becomes a method
forwarding to it, on the eager Tensor and the static Variable alike (both
share `TensorMethods`). Assembled here, at the top of the package, because
the functions live in several namespaces above the core (d2s, d2s.linalg).

`<name>_` of an elementwise function is its in-place form (core.inplace:
eager rebinding, functional in converted code; the converter rebinds the
receiver for each name of `INPLACE_NAMES`).
"""
from __future__ import annotations

import functools

# Paddle's Tensor methods that are functions of `paddle` / `paddle.linalg`
# (names are Paddle's API; the list is d2s's own).
METHOD_NAMES = (
    "abs", "acos", "acosh", "add_n", "addmm", "all", "allclose", "amax", "amin", "any",
    "argmax", "argmin", "argsort", "asin", "asinh", "atan", "atan2", "atanh", "bincount",
    "bmm", "broadcast_tensors", "broadcast_to", "bucketize", "cast", "cdist", "ceil",
    "cholesky", "chunk", "clip", "concat", "corrcoef", "cos", "cosh", "count_nonzero",
    "cov", "cross", "cummax", "cummin", "cumprod", "cumsum", "deg2rad", "diag",
    "diag_embed", "diagonal", "diff", "digamma", "dist", "divide", "dot", "equal",
    "equal_all", "erf", "erfinv", "exp", "expand", "expand_as", "expm1", "flatten", "flip",
    "floor", "floor_divide", "floor_mod", "fmax", "fmin", "frac", "gather", "gather_nd",
    "gcd", "greater_equal", "greater_than", "heaviside", "histogram", "increment",
    "index_add", "index_put", "index_sample", "index_select", "inner", "inverse",
    "is_complex", "is_empty", "is_floating_point", "is_integer", "isclose", "isfinite",
    "isinf", "isnan", "kron", "kthvalue", "lcm", "lerp", "less_equal", "less_than",
    "lgamma", "log", "log10", "log1p", "log2", "logaddexp", "logcumsumexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logit", "logsumexp", "masked_fill",
    "masked_select", "matrix_power", "max", "maximum", "mean", "median", "min", "minimum",
    "mm", "mod", "mode", "moveaxis", "multi_dot", "multiply", "mv", "nan_to_num",
    "nanmean", "nansum", "neg", "nonzero", "norm", "not_equal", "numel", "outer", "pow",
    "prod", "put_along_axis", "qr", "quantile", "rad2deg", "rank", "reciprocal",
    "remainder", "repeat_interleave", "reshape", "reverse", "roll", "rot90", "round",
    "rsqrt", "scale", "scatter", "scatter_nd_add", "sgn", "sign", "sin", "sinh", "slice",
    "solve", "sort", "split", "sqrt", "square", "squeeze", "stack", "stanh", "std",
    "strided_slice", "subtract", "sum", "take", "take_along_axis", "tanh", "tensordot",
    "tile", "topk", "trace", "transpose", "trapezoid", "cumulative_trapezoid", "tril",
    "triu", "trunc", "unbind", "unflatten", "unique", "unique_consecutive", "unsqueeze",
    "unstack", "var", "vsplit", "where",
    "view", "view_as", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "ldexp",
    "vander", "nanmedian", "nanquantile", "polygamma", "unfold",
    # more of Paddle's methods, functions of d2s already (apidiff)
    "diagflat", "diagonal_scatter", "dsplit", "hsplit", "hypot", "index_fill", "isneginf",
    "isposinf", "isreal", "masked_scatter", "multinomial", "renorm", "select_scatter",
    "signbit", "slice_scatter", "tensor_split", "fliplr", "flipud", "frexp", "sinc", "positive", "negative", "gammaln",
    "multigammaln", "reduce_as", "bitwise_invert", "nextafter", "scatter_nd", "i0", "i0e", "i1", "i1e",
    "gammainc", "gammaincc",
)

# Elementwise functions whose in-place form `<name>_` is a method (and a
# `d2s.<name>_` function) built here when core.inplace has none of its own.
INPLACE_FORMS = (
    "ceil", "floor", "round", "trunc", "frac", "reciprocal", "rsqrt", "log", "log2",
    "log10", "log1p", "sigmoid", "abs", "neg", "sin", "cos", "tan", "pow", "remainder",
    "mod", "floor_divide", "floor_mod", "lerp", "erfinv", "logit", "lgamma", "digamma",
    "square", "nan_to_num", "masked_fill", "where", "clip", "cast", "transpose",
    "put_along_axis", "index_add", "index_put", "cumsum", "cumprod", "gcd", "lcm",
    "equal", "not_equal", "greater_than", "greater_equal", "less_than", "less_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
)


# Paddle's diagonal fills, in place (core.ops.diagonal_fill): `sim.fill_diagonal_(-1e9)`.
DIAGONAL_FILLS = ("fill_diagonal", "fill_diagonal_tensor")

# Paddle's in-place random fills: the tensor's values redrawn, shape and
# dtype kept (custom weight initialisation, noise injection).
RANDOM_FILLS = ("uniform_", "normal_", "exponential_")


def _shape_of(x):
    from .core.ops import shape
    return list(x.shape) if None not in x.shape else shape(x)


def _uniform_(x, min=-1.0, max=1.0, seed=0, name=None):
    from .core.ops import uniform
    return uniform(_shape_of(x), x.dtype, min, max)


def _normal_(x, mean=0.0, std=1.0, name=None):
    from .core.ops import cast, randn, scale
    return cast(scale(randn(_shape_of(x)), float(std), float(mean)), x.dtype)


def _exponential_(x, lam=1.0, name=None):
    """Samples of Exp(lam) by inversion, `-log(1 - u) / lam` (u in [0, 1))."""
    from .core.ops import cast, log1p, neg, scale, uniform
    u = uniform(_shape_of(x), "float64", 0.0, 1.0)
    return cast(scale(neg(log1p(neg(u))), 1.0 / float(lam)), x.dtype)


def _random_fill(name, draw):
    from .core import inplace

    def method(self, *args, **kwargs):
        return inplace.method(self, name, lambda v: draw(v, *args, **kwargs))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = draw.__doc__ or f"In place: this tensor's values redrawn ({name})."
    return method


def _find(name, namespaces):
    for space in namespaces:
        fn = space.get(name) if isinstance(space, dict) else getattr(space, name, None)
        if callable(fn):
            return fn
    return None


def _forwarding(name, fn):
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    return method


def _in_place(name, fn):
    """`x.<name>_(...)`: `x`'s value becomes `fn(x, ...)` (core.inplace.method)."""
    from .core import inplace

    def method(self, *args, **kwargs):
        return inplace.method(self, name + "_", lambda v: fn(v, *args, **kwargs),
                              keep_shape=name != "transpose")
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: this tensor's value becomes `{name}(self, ...)`."
    return method


def install(namespaces):
    """Attach the methods d2s lacks, finding each function in `namespaces`
    (the package's globals, then d2s.linalg: given by the package, which
    nothing below it imports); idempotent. Returns the in-place methods, by
    name, for the functions `d2s.<name>_`."""
    from .core.methods import TensorMethods
    for name in METHOD_NAMES:
        if name in TensorMethods.__dict__ or hasattr(TensorMethods, name):
            continue
        fn = _find(name, namespaces)
        if fn is not None:
            setattr(TensorMethods, name, _forwarding(name, fn))
    from .tensor_extras import EXTRA_METHODS
    for name, fn in EXTRA_METHODS.items():  # x.to(...), x.element_size(), x.pin_memory()
        if not hasattr(TensorMethods, name):
            setattr(TensorMethods, name, fn)
    made = {}
    for name, draw in zip(RANDOM_FILLS, (_uniform_, _normal_, _exponential_)):
        if not hasattr(TensorMethods, name):
            setattr(TensorMethods, name, _random_fill(name, draw))
    for name in INPLACE_FORMS:
        fn = _find(name, namespaces)
        if fn is None:
            continue
        if not hasattr(TensorMethods, name + "_"):
            setattr(TensorMethods, name + "_", _in_place(name, fn))
        made[name + "_"] = getattr(TensorMethods, name + "_")
    # (methods only, as in Paddle: no `d2s.fill_diagonal_`)
    from .core.ops import diagonal_fill
    if not hasattr(TensorMethods, "fill_diagonal_tensor"):
        TensorMethods.fill_diagonal_tensor = _forwarding(
            "fill_diagonal_tensor", diagonal_fill.fill_diagonal_tensor)
    for name in DIAGONAL_FILLS:
        if not hasattr(TensorMethods, name + "_"):
            setattr(TensorMethods, name + "_", _in_place(name, getattr(diagonal_fill, name)))
    return made


def inplace_function(method):
    """`d2s.<name>_(x, ...)`: the method as a function."""
    @functools.wraps(method)
    def fn(x, *args, **kwargs):
        return method(x, *args, **kwargs)
    return fn
