"""Shape manipulation: reshape, expand, transpose, (un)squeeze, flatten, concat, stack,
gather; and `detach` (the identity with no gradient path)."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import normalize_axes, normalize_axis, numel
from ._base import cast_like, lift
from .shape_args import dim_source, fill_spec, format_spec, split_shape


# ---- reshape ---------------------------------------------------------------------
def _resolve_shape(in_shape, spec):
    """Paddle reshape semantics: 0 copies the input dim, one -1 is inferred.

    `in_shape` and `spec` may hold None (unknown until run time); the result
    then holds None where it cannot be known. A shape that cannot fit raises
    ValueError naming the shape as written (`?` for a dim known at run time)."""
    if spec.count(-1) > 1:
        raise ValueError(f"reshape: only one dim of {format_spec(spec)} can be -1")
    out = []
    for i, d in enumerate(spec):
        if d == 0:
            if i >= len(in_shape):
                raise ValueError(f"reshape: dim {i} of {format_spec(spec)} is 0 (copy the input "
                                 f"dim), but the input {_shape_text(in_shape)} has rank "
                                 f"{len(in_shape)}")
            d = in_shape[i]
        elif d is not None and d < -1:
            raise ValueError(f"reshape: invalid dim {d} in {format_spec(spec)}")
        out.append(d)
    total = numel(in_shape)
    if -1 in out:
        known = numel([d for d in out if d != -1])
        inferred = None
        if known is not None and total is not None:
            if (known == 0 and total != 0) or (known and total % known):
                raise _cannot_reshape(in_shape, total, spec)
            inferred = total // known if known else 0
        out[out.index(-1)] = inferred
    elif total is not None and None not in out and numel(out) != total:
        raise _cannot_reshape(in_shape, total, spec)
    return tuple(out)


def _cannot_reshape(in_shape, total, spec):
    return ValueError(f"reshape: cannot reshape {_shape_text(in_shape)} ({total} elements) "
                      f"to {format_spec(spec)}")


def _shape_text(shape):
    dims = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def _dims_given_at_run_time(op):
    """A dim given as a tensor (after the first input) may be invalid at run time."""
    return len(op.inputs) > 1


def _reshape_kernel(x, *dims, shape):
    # the run-time error names the shape with its dynamic dims filled in
    full_spec = fill_spec(shape, dims)
    return x.reshape(_resolve_shape(x.shape, full_spec))


# `shape` holds None where a dim is given at run time by the next input (shape_args).
register_op("reshape", _reshape_kernel,
            lambda x, *dims, shape: Aval(_resolve_shape(tuple(x.shape), shape), x.dtype),
            vjp=lambda g, out, x, *dims, shape: (
                (bind("reshape_like", g, x),) + (None,) * len(dims)),
            checks=_dims_given_at_run_time)
# Reshape `g` to the (run-time) shape of `x`.
register_op("reshape_like", lambda g, x: g.reshape(x.shape),
            lambda g, x: Aval(tuple(x.shape), g.dtype),
            vjp=lambda gg, out, g, x: (bind("reshape_like", gg, g), None))


def reshape(x, shape):
    """`shape`: ints (0 copies a dim, one -1 is inferred), integer scalar tensors
    (a dynamic `x.shape[i]`), or one 1-D integer tensor."""
    x = lift(x)
    spec, dims = split_shape(shape, "reshape")
    return bind("reshape", x, *dims, shape=_known_minus_one(x, spec, dims))


def _known_minus_one(x, spec, dims):
    """`spec` with its -1 replaced by the number it must be, when that is known
    while building although some dims are not: in `x.reshape([x.shape[0], -1])`
    the unknown batch dim cancels out. Same result at run time; a known shape."""
    if -1 not in spec or not dims:
        return spec
    in_shape, out = list(x.shape), list(spec)
    dynamic = iter(dims)
    for i, d in enumerate(spec):
        if d is None:
            source = dim_source(next(dynamic))
            if source is not None and source[0] is x and in_shape[source[1]] is None:
                in_shape[source[1]] = out[i] = 1  # the same run-time number on both sides
    rest = [d for d in out if d != -1]
    if None in in_shape or None in rest or 0 in rest or 0 in in_shape:
        return spec
    total, known = numel(in_shape), numel(rest)
    if total % known:
        return spec  # cannot fit: the shape rule says so, naming the written shape
    return tuple(total // known if d == -1 else d for d in spec)


# ---- expand ----------------------------------------------------------------------
def _expand_shape(in_shape, spec):
    """Paddle expand semantics: `spec` is aligned with the input's trailing dims;
    -1 keeps the input dim, other dims must be the input's or broadcast a 1."""
    written = format_spec(spec)
    lead = len(spec) - len(in_shape)
    if lead < 0:
        raise ValueError(f"expand: {written} has fewer dims than the input {tuple(in_shape)}")
    out = []
    for i, d in enumerate(spec):
        own = in_shape[i - lead] if i >= lead else 1
        if d == -1:
            if i < lead:
                raise ValueError(f"expand: -1 in {written} at dim {i}, a new leading dim")
            d = own
        elif d is not None and (d < 0 or own not in (1, d, None)):
            raise ValueError(f"expand: cannot expand {tuple(in_shape)} to {written} (dim {i})")
        out.append(d)
    return tuple(out)


# `shape` holds None where a dim is given at run time by the next input (shape_args).
register_op("expand",
            lambda x, *dims, shape: np.broadcast_to(
                x, _expand_shape(x.shape, fill_spec(shape, dims))),
            lambda x, *dims, shape: Aval(_expand_shape(tuple(x.shape), shape), x.dtype),
            vjp=lambda g, out, x, *dims, shape: (bind("sum_to_like", g, x),) + (None,) * len(dims),
            checks=_dims_given_at_run_time)


def expand(x, shape):
    """Broadcast `x` to `shape` (PaddlePaddle's `expand`): -1 keeps a dim of `x`;
    entries may be integer scalar tensors (dims known at run time)."""
    spec, dims = split_shape(shape, "expand")
    return bind("expand", lift(x), *dims, shape=spec)


# ---- detach ----------------------------------------------------------------------
# The value of `x` with no gradient path (no vjp): what `no_grad` and
# `Tensor.detach` mean inside a program.
register_op("detach", lambda x: x, lambda x: Aval(tuple(x.shape), x.dtype),
            elementwise=True)


def detach(x):
    return bind("detach", lift(x))


# ---- transpose -------------------------------------------------------------------
def _transpose_infer(x, perm):
    return Aval(tuple(x.shape[p] for p in perm), x.dtype)


# (the method: np.transpose would reach it through a Python wrapper, per call)
register_op("transpose", lambda x, perm: x.transpose(perm), _transpose_infer,
            vjp=lambda g, out, x, perm: (bind("transpose", g, perm=tuple(np.argsort(perm).tolist())),))


def transpose(x, perm=None):
    x = lift(x)
    ndim = len(x.shape)
    perm = tuple(reversed(range(ndim))) if perm is None else tuple(
        normalize_axis(int(p), ndim, "transpose") for p in perm)
    if sorted(perm) != list(range(ndim)):
        raise ValueError(f"transpose: {perm} is not a permutation of {ndim} axes")
    return bind("transpose", x, perm=perm)


# ---- unsqueeze / squeeze / flatten ------------------------------------------------
def _unsqueeze_shape(shape, axes):
    out = list(shape)
    for a in axes:
        out.insert(a, 1)
    return tuple(out)


register_op("unsqueeze", lambda x, axes: np.expand_dims(x, axes),
            lambda x, axes: Aval(_unsqueeze_shape(tuple(x.shape), axes), x.dtype),
            vjp=lambda g, out, x, axes: (bind("reshape_like", g, x),))


def unsqueeze(x, axis):
    x = lift(x)
    axes = [axis] if isinstance(axis, int) else list(axis)
    ndim = len(x.shape) + len(axes)
    axes = tuple(sorted(normalize_axis(a, ndim, "unsqueeze") for a in axes))
    return bind("unsqueeze", x, axes=axes)


def _squeeze_axes(shape, axis):
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = normalize_axes(axis, len(shape), "squeeze")
    # Like paddle: axes whose dim is not 1 are left alone.
    return tuple(a for a in axes if shape[a] == 1 or shape[a] is None)


register_op("squeeze", lambda x, axes: np.squeeze(x, axes) if axes else x,
            lambda x, axes: Aval(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype),
            vjp=lambda g, out, x, axes: (bind("reshape_like", g, x),))


def squeeze(x, axis=None):
    x = lift(x)
    return bind("squeeze", x, axes=_squeeze_axes(tuple(x.shape), axis))


def _flatten_shape(shape, start, stop):
    mid = numel(shape[start:stop + 1])
    return tuple(shape[:start]) + (mid,) + tuple(shape[stop + 1:])


def _flatten_kernel(x, start, stop):
    if not x.ndim:
        return x.reshape(1)
    # the merged size is spelled out: -1 is ambiguous when another dim is 0
    return x.reshape(_flatten_shape(x.shape, start, stop))


register_op("flatten", _flatten_kernel,
            lambda x, start, stop: Aval(_flatten_shape(tuple(x.shape), start, stop)
                                        if len(x.shape) else (1,), x.dtype),
            vjp=lambda g, out, x, start, stop: (bind("reshape_like", g, x),))


def flatten(x, start_axis=0, stop_axis=-1):
    x = lift(x)
    ndim = max(len(x.shape), 1)
    start = normalize_axis(start_axis, ndim, "flatten")
    stop = normalize_axis(stop_axis, ndim, "flatten")
    return bind("flatten", x, start=start, stop=stop)


# ---- concat / stack -----------------------------------------------------------------
def _concat_infer(*xs, axis):
    first = tuple(xs[0].shape)
    dtype = np.result_type(*(np.dtype(x.dtype) for x in xs))
    out = list(first)
    sizes = [x.shape[axis] for x in xs]
    out[axis] = None if None in sizes else int(np.sum(sizes))
    for x in xs[1:]:
        if len(x.shape) != len(first):
            raise ValueError(f"concat: ranks differ: {first} vs {tuple(x.shape)}")
        for i, (a, b) in enumerate(zip(first, x.shape)):
            if i != axis and a is not None and b is not None and a != b:
                raise ValueError(f"concat: shapes {first} and {tuple(x.shape)} differ on axis {i}")
            if i != axis and out[i] is None:
                out[i] = b
    return Aval(tuple(out), dtype)


def _concat_piece_kernel(g, *xs, axis, index):
    start = int(np.sum([x.shape[axis] for x in xs[:index]], dtype=np.int64))
    sl = [slice(None)] * g.ndim
    sl[axis] = slice(start, start + xs[index].shape[axis])
    return g[tuple(sl)]


register_op("concat", lambda *xs, axis: np.concatenate(xs, axis=axis), _concat_infer,
            vjp=lambda g, out, *xs, axis: tuple(
                cast_like(bind("concat_piece", g, *xs, axis=axis, index=i), x)
                for i, x in enumerate(xs)))


def _concat_piece_vjp(gg, out, g, *xs, axis, index):
    """The piece's cotangent back in place, zeros elsewhere (the transpose of slicing)."""
    zeros = [gg if i == index else bind("full_like", x, fill_value=0, dtype=np.dtype(gg.dtype).name)
             for i, x in enumerate(xs)]
    return (bind("concat", *zeros, axis=axis),) + (None,) * len(xs)


# The slice of a concat cotangent that belongs to input `index`.
register_op("concat_piece", _concat_piece_kernel,
            lambda g, *xs, axis, index: Aval(tuple(
                xs[index].shape[i] if i == axis else g.shape[i] for i in range(len(g.shape))),
                g.dtype),
            vjp=_concat_piece_vjp)


def _array_axis_to(arr, axis):
    """A tensor array (one Variable whose axis 0 holds the items of a list appended
    in a static loop) with that axis moved to `axis`: `stack(items, axis)`."""
    perm = list(range(1, len(arr.shape)))
    perm.insert(axis, 0)
    return arr if axis == 0 else transpose(arr, perm)


def concat(xs=None, axis=0, name=None, x=None):
    """Join tensors along `axis` (`x=`: Paddle's keyword for the list)."""
    xs = _tensors_arg(xs, x, "concat")
    if getattr(xs, "is_array", False):
        # The items are rows of one Variable: stack them at `axis`, then merge
        # that axis with the next (their number is known only at run time).
        axis = normalize_axis(axis, len(xs.shape) - 1, "concat")
        return flatten(_array_axis_to(xs, axis), axis, axis + 1)
    xs = [lift(x) for x in xs]
    if not xs:
        raise ValueError("concat: needs at least one tensor")
    return bind("concat", *xs, axis=normalize_axis(axis, len(xs[0].shape), "concat"))


def _stack_infer(*xs, axis):
    base = _concat_infer(*[Aval(_unsqueeze_shape(tuple(x.shape), (axis,)), x.dtype) for x in xs],
                         axis=axis)
    return base


def _stack_vjp(g, out, *xs, axis):
    from .indexing import getitem
    return tuple(cast_like(getitem(g, (slice(None),) * axis + (i,)), x)
                 for i, x in enumerate(xs))


register_op("stack", lambda *xs, axis: np.stack(xs, axis=axis), _stack_infer,
            vjp=_stack_vjp)


def _tensors_arg(xs, x, where):
    if x is not None:
        if xs is not None:
            raise TypeError(f"{where}: give the tensors once (xs or x)")
        return x
    if xs is None:
        raise TypeError(f"{where}: missing the list of tensors")
    return xs


def stack(xs=None, axis=0, name=None, x=None):
    """Stack tensors along a new `axis` (`x=`: Paddle's keyword for the list)."""
    xs = _tensors_arg(xs, x, "stack")
    if getattr(xs, "is_array", False):  # a tensor array is already stacked along axis 0
        axis = normalize_axis(axis, len(xs.shape), "stack")
        # a value of its own, no longer the list: a function returning it
        # returns a Tensor, one returning the list a list (jit.program_parts)
        return bind("reshape_like", xs, xs) if axis == 0 else _array_axis_to(xs, axis)
    xs = [lift(x) for x in xs]
    if not xs:
        raise ValueError("stack: needs at least one tensor")
    return bind("stack", *xs, axis=normalize_axis(axis, len(xs[0].shape) + 1, "stack"))


# ---- gather -------------------------------------------------------------------------
def _gather_infer(x, index, axis):
    shape = tuple(x.shape)
    return Aval(shape[:axis] + tuple(index.shape) + shape[axis + 1:], x.dtype)


def _gather_grad_kernel(g, x, index, axis):
    out = np.zeros(x.shape, dtype=g.dtype)
    np.add.at(out, _along(axis, index), g)
    return out


def _along(axis, index):
    """The numpy index picking `index` along `axis` (jax indexes the same way)."""
    return (slice(None),) * axis + (index,)


# XLA clamps an index that is out of range (numpy raises): see the README.


register_op("gather", lambda x, index, axis: np.take(x, index, axis=axis), _gather_infer,
            vjp=lambda g, out, x, index, axis: (bind("gather_grad", g, x, index, axis=axis), None),
            checks=True)
# Scatter-add of a gather cotangent (duplicates accumulate).
register_op("gather_grad", _gather_grad_kernel,
            lambda g, x, index, axis: Aval(tuple(x.shape), g.dtype),
            vjp=lambda gg, out, g, x, index, axis: (
                bind("gather", gg, index, axis=axis), None, None))


def gather(x, index, axis=0):
    """Rows (or slices along `axis`) of `x` picked by integer `index` (any shape)."""
    x = lift(x)
    index = lift(index)
    if not np.issubdtype(np.dtype(index.dtype), np.integer):
        raise TypeError(f"gather: index must be an integer tensor, got {index.dtype}")
    return bind("gather", x, index, axis=normalize_axis(axis, len(x.shape), "gather"))
