"""Indexing: `x[...]` with ints, slices, None, Ellipsis, integer and bool tensors.

The index is encoded as a hashable `spec` attribute; tensors in it (index
arrays, slice bounds) become op inputs, so an index may depend on a static
Variable (e.g. `x[i]` with a loop counter inside a `while`).
"""
from __future__ import annotations

import numpy as np

from ..dispatch import all_eager, bind, run_eager
from ..attr_schema import Spec
from ..registry import OPS, Aval, register_op
from ..tensor import Tensor
from ..shapes import broadcast_shapes
from ._base import is_value, lift, onnx_scatter_add


def encode_index(index):
    """-> (spec, tensors). Spec items: ("int", i), ("slice", a, b, c), ("none",),
    ("ellipsis",), ("tensor", k); slice bounds are ints, None or ("t", k)."""
    items = index if isinstance(index, tuple) else (index,)
    spec, tensors = [], []

    def tensor_ref(v):
        tensors.append(v)
        return len(tensors) - 1

    for it in items:
        if it is None:
            spec.append(("none",))
        elif it is Ellipsis:
            spec.append(("ellipsis",))
        elif isinstance(it, slice):
            bounds = []
            for b in (it.start, it.stop, it.step):
                if isinstance(b, np.ndarray) and b.ndim == 0 and np.issubdtype(b.dtype, np.integer):
                    b = int(b)  # numpy accepts 0-d integer arrays as bounds too
                if b is None or isinstance(b, (int, np.integer)) and not isinstance(b, bool):
                    bounds.append(None if b is None else int(b))
                elif is_value(b):
                    bounds.append(("t", tensor_ref(b)))
                else:
                    raise TypeError(f"slice bounds must be ints or integer tensors, got {b!r}")
            spec.append(("slice",) + tuple(bounds))
        elif isinstance(it, (bool, np.bool_)):
            raise TypeError("indexing with a Python bool is not supported; use a bool tensor")
        elif isinstance(it, (int, np.integer)):
            spec.append(("int", int(it)))
        elif is_value(it):
            spec.append(("tensor", tensor_ref(it)))
        elif isinstance(it, (list, np.ndarray)):
            spec.append(("tensor", tensor_ref(lift(np.asarray(it)))))
        else:
            raise TypeError(f"unsupported index {it!r} of type {type(it).__name__}")
    return tuple(spec), tensors


def decode_index(spec, tensors):
    """The numpy index a spec denotes, given run-time tensor values."""
    if len(spec) == 1 and spec[0][0] == "int":
        return (spec[0][1],)  # x[i], each step of an eager loop over a tensor
    out = []
    for item in spec:
        kind = item[0]
        if kind == "int":
            out.append(item[1])
        elif kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "tensor":
            v = tensors[item[1]]
            out.append(int(v) if v.ndim == 0 and v.dtype.kind in "iu" else v)
        else:
            out.append(slice(*(int(tensors[b[1]]) if isinstance(b, tuple) else b
                               for b in item[1:])))
    return tuple(out)


def index_source(spec, tensor_ref):
    """Python source of the subscript a spec denotes, for generated code.

    `tensor_ref(k)` -> (source of tensor k, whether it is a 0-d integer): such a
    tensor is an int, as in `decode_index` (which this mirrors, item by item).
    """
    def tensor(k):
        src, is_int = tensor_ref(k)
        return f"int({src})" if is_int else src

    def bound(b):
        if b is None:
            return ""
        return f"int({tensor_ref(b[1])[0]})" if isinstance(b, tuple) else repr(int(b))

    parts = []
    for item in spec:
        kind = item[0]
        if kind == "int":
            parts.append(repr(int(item[1])))  # only numbers are written as text
        elif kind == "none":
            parts.append("None")
        elif kind == "ellipsis":
            parts.append("...")
        elif kind == "tensor":
            parts.append(tensor(item[1]))
        else:
            start, stop, step = item[1:]
            text = f"{bound(start)}:{bound(stop)}"
            parts.append(text if step is None else f"{text}:{bound(step)}")
    if not parts:
        return "()"
    return parts[0] if len(parts) == 1 else ", ".join(parts)


def _consumed(item, avals):
    if item[0] in ("int", "slice"):
        return 1
    if item[0] == "tensor":
        a = avals[item[1]]
        return len(a.shape) if np.dtype(a.dtype) == np.bool_ else 1
    return 0


def getitem_shape(shape, spec, avals, opname="getitem"):
    """Shape rule for `getitem` where dims may be None.

    Follows numpy: once an index holds an integer or bool array, plain ints
    are advanced indices too (broadcast shape `()`); the broadcast shape of
    all advanced indices replaces them in place when they are adjacent, and
    goes first when a slice, `None` or `...` (even an empty one) separates
    them.
    """
    shape = tuple(shape)
    used = sum(_consumed(it, avals) for it in spec)
    if used > len(shape):
        raise IndexError(f"{opname}: too many indices ({used}) for a tensor of rank {len(shape)}")
    if sum(it[0] == "ellipsis" for it in spec) > 1:
        raise IndexError(f"{opname}: an index can only have a single ellipsis")
    fill = [("slice", None, None, None)] * (len(shape) - used)
    expanded = []
    for it in spec:
        # the ellipsis keeps a position of its own: it separates advanced indices
        expanded.extend([it] + fill if it[0] == "ellipsis" else [it])
    if not any(it[0] == "ellipsis" for it in spec):
        expanded.extend(fill)
    has_array = any(it[0] == "tensor" and (len(avals[it[1]].shape) > 0
                                           or np.dtype(avals[it[1]].dtype) == np.bool_)
                    for it in spec)

    out, adv_shapes, adv_pos, dim = [], [], [], 0
    for pos, it in enumerate(expanded):
        kind = it[0]
        if kind == "ellipsis":
            continue
        if kind == "none":
            out.append(1)
            continue
        if kind == "slice":
            d = shape[dim]
            if d is not None and not any(isinstance(b, tuple) for b in it[1:]):
                out.append(len(range(*slice(*it[1:]).indices(d))))
            else:
                out.append(None)
            dim += 1
            continue
        if kind == "int":
            idx_shape = ()
            d = shape[dim]
            if d is not None and not -d <= it[1] < d:
                raise IndexError(f"{opname}: index {it[1]} is out of bounds for axis {dim} "
                                 f"with size {d}")
            dim += 1
        else:
            a = avals[it[1]]
            if np.dtype(a.dtype) == np.bool_:
                mask = tuple(a.shape)
                for j, (m, d) in enumerate(zip(mask, shape[dim:dim + len(mask)])):
                    if m is not None and d is not None and m != d:
                        raise IndexError(f"{opname}: boolean index of shape {mask} does not "
                                         f"match axis {dim + j} of size {d}")
                idx_shape = (None,)
                dim += len(mask)
            elif np.issubdtype(np.dtype(a.dtype), np.integer):
                idx_shape = tuple(a.shape)
                dim += 1
            else:
                raise IndexError(f"{opname}: tensors used as indices must be integer or bool, "
                                 f"got {a.dtype}")
        if not has_array:  # ints (and 0-d int tensors) alone just drop their axis
            continue
        adv_shapes.append(idx_shape)
        adv_pos.append(pos)
        out.append("ADV")
    if adv_shapes:
        adv = broadcast_shapes(*adv_shapes, opname=opname)
        contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
        rest = [d for d in out if d != "ADV"]
        if contiguous:
            first = out.index("ADV")
            out = rest[:first] + list(adv) + rest[first:]
        else:
            out = list(adv) + rest
    return tuple(out)


def _getitem_kernel(x, *tensors, spec):
    return x[decode_index(spec, tensors)]


def _getitem_infer(x, *tensors, spec):
    _check_tensor_count(spec, tensors)
    return Aval(getitem_shape(x.shape, spec, tensors), x.dtype)


def _getitem_grad_infer(g, x, *tensors, spec):
    _check_tensor_count(spec, tensors)
    return Aval(tuple(x.shape), g.dtype)


def _tensor_refs(spec):
    """The tensor indices a spec refers to, in order (items, then slice bounds)."""
    for item in spec:
        if item[0] == "tensor":
            yield item[1]
        elif item[0] == "slice":
            yield from (b[1] for b in item[1:] if isinstance(b, tuple))


def _check_tensor_count(spec, tensors):
    if len(tensors) != sum(1 for _ in _tensor_refs(spec)):
        raise IndexError(f"the index refers to {sum(1 for _ in _tensor_refs(spec))} tensors, "
                         f"{len(tensors)} are given")


def _spec_problem(spec):
    """What is wrong with `spec` as `encode_index` writes it (a loaded
    program's `spec` attribute), or None: tuples of a known kind whose
    numbers are ints, tensors referred to as 0, 1, 2, ... in order."""
    if type(spec) is not tuple or len(spec) > 64:
        return f"expected a tuple of at most 64 index items, got {spec!r}"[:200]
    for item in spec:
        if type(item) is not tuple or not item or type(item[0]) is not str \
                or item[0] not in _ITEM_ARITY \
                or len(item) != _ITEM_ARITY[item[0]]:
            return f"malformed index item {item!r}"[:200]
        if item[0] in ("int", "tensor") and not _plain_int(item[1]):
            return f"malformed index item {item!r}"[:200]
        if item[0] == "slice" and not all(
                b is None or _plain_int(b) or type(b) is tuple and len(b) == 2
                and b[0] == "t" and _plain_int(b[1]) for b in item[1:]):
            return f"malformed slice {item!r}"[:200]
    refs = list(_tensor_refs(spec))
    if refs != list(range(len(refs))):
        return f"tensor references {refs} are not 0, 1, 2, ... in order"
    return None


def _plain_int(v):
    return type(v) is int and abs(v) < (1 << 63)


_ITEM_ARITY = {"int": 2, "none": 1, "ellipsis": 1, "tensor": 2, "slice": 4}
INDEX_SPEC = Spec(_spec_problem, "an index spec")


def _has_array_index(spec, tensors):
    return any(it[0] == "tensor" and tensors[it[1]].ndim > 0 for it in spec)


def _getitem_grad_kernel(g, x, *tensors, spec):
    out = np.zeros(x.shape, dtype=g.dtype)
    idx = decode_index(spec, tensors)
    if _has_array_index(spec, tensors):
        np.add.at(out, idx, g)
    else:
        out[idx] = g
    return out


def lowered_index(ns, shape, spec, tensors):
    """The index a spec denotes for a compiling backend (jax indexes as numpy
    does, and clamps out-of-range values that are only known at run time).
    Shapes that depend on values cannot compile: `ns.Unsupported`. An index
    made only of constants is checked against `shape` (when the backend knows
    it statically) now, as numpy would."""
    for it in spec:
        if it[0] == "tensor" and np.dtype(tensors[it[1]].dtype) == np.bool_:
            raise ns.Unsupported("indexing with a bool mask: the result's shape depends "
                                 "on the mask's values")
        if it[0] == "slice" and any(isinstance(b, tuple) for b in it[1:]):
            raise ns.Unsupported("a slice with tensor bounds: the result's shape depends "
                                 "on their values")
    if shape is not None and all(isinstance(t, np.ndarray) for t in tensors):
        index = decode_index(spec, tensors)
        np.broadcast_to(np.empty((), bool), shape)[index]  # numpy's IndexError, if any
        return index
    return tuple(tensors[it[1]] if it[0] == "tensor" else decode_index((it,), ())[0]
                 for it in spec)


def _empty_axes_run_indexes(spec, tensors, shape):
    """The axes of size 0 that a run-time integer index addresses (a loop over
    an empty tensor compiles a body that indexes it, and never runs it)."""
    if shape is None or 0 not in shape:
        return ()
    consuming = sum(1 for it in spec if it[0] not in ("none", "ellipsis"))
    axes, axis = [], 0
    for it in spec:
        if it[0] == "ellipsis":
            axis += len(shape) - consuming
            continue
        if it[0] == "none":
            continue
        if (it[0] == "tensor" and not isinstance(tensors[it[1]], np.ndarray)
                and shape[axis] == 0):
            axes.append(axis)
        axis += 1
    return tuple(axes)


def _window(ns, shape, spec, tensors):
    """(position in `spec`, axis of x, start, size) of a slice `x[t:t + c]`
    whose bounds are tensors, the stop the start plus an integer constant of
    the program (`ns.constant_offset`), and every other item static; or None.
    XLA slices such a window (a static size at a run-time start)."""
    found, axis = None, 0
    for p, it in enumerate(spec):
        if it[0] == "ellipsis" or (it[0] != "none" and axis >= len(shape)):
            return None
        if it[0] == "slice" and any(isinstance(b, tuple) for b in it[1:]):
            start, stop, step = it[1:]
            if found is not None or step not in (None, 1) or not (
                    isinstance(start, tuple) and isinstance(stop, tuple)):
                return None
            begin = tensors[start[1]]
            size = ns.constant_offset(begin, tensors[stop[1]])
            if size is None or not 0 <= size <= shape[axis] or getattr(begin, "ndim", 1) != 0:
                return None
            found = (p, axis, begin, size)
        if it[0] != "none":
            axis += 1
    return found


def _in_window(ns, shape, window):
    """The window's start, checked to lie where numpy's slice is the window
    itself (`0 <= t` and `t + c <= dim`; elsewhere numpy clips it or counts
    from the end: the call runs again on numpy)."""
    _, axis, start, size = window
    ns.check_on_numpy((start >= 0) & (start <= shape[axis] - size))
    return start


def _without_window(spec, window):
    return spec[:window[0]] + (("slice", None, None, None),) + spec[window[0] + 1:]


def _getitem_xla(ns, x, *tensors, spec):
    # a backend's tensor array has no static shape (its length is a run-time value)
    shape = getattr(x, "shape", None)
    window = None if shape is None else _window(ns, shape, spec, tensors)
    if window is not None:  # `x[t:t + c]`: a window of x, then the rest of the index
        start = _in_window(ns, shape, window)
        x = ns.lax.dynamic_slice_in_dim(x, start, window[3], window[1])
        return _getitem_xla(ns, x, *tensors, spec=_without_window(spec, window))
    index = lowered_index(ns, shape, spec, tensors)
    axes = _empty_axes_run_indexes(spec, tensors, shape)
    if axes:
        # A stand-in with one row on those axes, so that the indexing compiles;
        # a run reaching it is numpy's IndexError: it runs again on numpy.
        ns.check_on_numpy(ns.jnp.zeros((), np.bool_))
        x = ns.jnp.zeros(tuple(1 if i in axes else d for i, d in enumerate(shape)), x.dtype)
    return x[index]


def _getitem_grad_xla(ns, g, x, *tensors, spec):
    return _scattered(ns, g, tuple(x.shape), tensors, spec)


def _scattered(ns, g, shape, tensors, spec):
    """Zeros of `shape` with `g` added where `spec` indexes."""
    window = _window(ns, shape, spec, tensors)
    if window is not None:  # into the window, placed at its start
        start = _in_window(ns, shape, window)
        inner = list(shape)
        inner[window[1]] = window[3]
        inner = _scattered(ns, g, tuple(inner), tensors, _without_window(spec, window))
        return ns.lax.dynamic_update_slice_in_dim(ns.jnp.zeros(shape, g.dtype), inner, start,
                                                  window[1])
    index = lowered_index(ns, shape, spec, tensors)
    if _empty_axes_run_indexes(spec, tensors, shape):
        return ns.jnp.zeros(shape, g.dtype)  # (its forward never ran)
    return ns.jnp.zeros(shape, g.dtype).at[index].add(g)  # duplicates accumulate


# ---- ONNX: numpy indexing as Slice / Squeeze / Unsqueeze / Gather(ND) / Compress -----
_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def onnx_index(ns, x, spec, tensors):
    """`x[index]` in ONNX nodes, for the index a spec denotes (numpy's rules,
    as `getitem_shape` states them): slices become one Slice, ints a Gather
    each, `None`s Unsqueeze; with integer or bool arrays, every int
    and array is an advanced index: one array is a Gather (a 1-D mask a
    Compress), several a GatherND over the advanced axes moved first, its
    result placed where numpy places it."""
    used = sum(_consumed(it, tensors) for it in spec)
    fill = [("slice", None, None, None)] * (x.ndim - used)
    items = []
    for it in spec:  # an ellipsis stays, as a separator of advanced indices
        items.extend([it] + fill if it[0] == "ellipsis" else [it])
    if not any(it[0] == "ellipsis" for it in spec):
        items.extend(fill)
    has_array = any(it[0] == "tensor" and (len(tensors[it[1]].shape) > 0
                                           or tensors[it[1]].dtype == np.bool_) for it in items)
    slices, picks, advanced, layout, dim = [], [], [], [], 0
    for pos, it in enumerate(items):
        kind = it[0]
        if kind == "none":
            layout.append("new")
        elif kind == "slice":
            if it[1:] != (None, None, None):
                slices.append((dim,) + _slice_bounds(ns, it[1:], tensors))
            layout.append(dim)
            dim += 1
        elif kind in ("int", "tensor") and not has_array:  # x[i]: a Gather of one element
            picks.append((dim, ns.scalar(it[1], np.int64) if kind == "int"
                          else _scalar_int(ns, tensors[it[1]])))
            dim += 1
        elif kind in ("int", "tensor"):
            index = tensors[it[1]] if kind == "tensor" else ns.scalar(it[1], np.int64)
            n = len(index.shape) if index.dtype == np.bool_ else 1
            advanced.append((pos, list(range(dim, dim + n)), index))
            if not layout or layout[-1] != "adv":
                layout.append("adv")
            dim += n
    if slices:
        axes, starts, stops, steps = zip(*slices)
        x = ns.node("Slice", x, ns.shape_vector(starts), ns.shape_vector(stops),
                    ns.ints(axes), ns.shape_vector(steps)).with_shape((None,) * x.ndim)
    if not advanced:
        for axis, index in reversed(picks):  # the last first: the others keep their axis
            x = ns.node("Gather", x, index, axis=axis)
        new = [i for i, e in enumerate(layout) if e == "new"]
        return ns.node("Unsqueeze", x, ns.ints(new)) if new else x
    return _advanced_index(ns, x, advanced, layout)


def _scalar_int(ns, t):
    """A 0-d (or one-element) integer tensor as a 0-d int64 value."""
    return ns.node("Reshape", ns.cast(t, np.int64), ns.ints([]), shape=())


def _slice_bounds(ns, bounds, tensors):
    """(start, stop, step) of one axis for ONNX's Slice, which reads huge
    bounds as numpy reads omitted ones (also for negative steps)."""
    start, stop, step = (None if b is None else b if isinstance(b, int)
                         else _scalar_int(ns, tensors[b[1]]) for b in bounds)
    step = 1 if step is None else step
    if isinstance(step, int):
        negative = step < 0
        first, last = (_INT64_MAX, _INT64_MIN) if negative else (0, _INT64_MAX)
    else:  # a run-time step: its sign picks the defaults
        negative = ns.node("Less", step, ns.scalar(0, np.int64))
        first = ns.node("Where", negative, ns.scalar(_INT64_MAX, np.int64), ns.scalar(0, np.int64))
        last = ns.node("Where", negative, ns.scalar(_INT64_MIN, np.int64),
                       ns.scalar(_INT64_MAX, np.int64))
    return (first if start is None else start, last if stop is None else stop, step)


def _advanced_index(ns, x, advanced, layout):
    """Integer and bool arrays (ints among them count as 0-d arrays)."""
    positions = [pos for pos, _, _ in advanced]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
    if not contiguous:  # numpy puts the broadcast index dims first
        layout = ["adv"] + [e for e in layout if e != "adv"]
    if len(advanced) == 1 and "new" not in layout:
        _, axes, index = advanced[0]
        if index.dtype != np.bool_:
            return ns.node("Gather", x, ns.cast(index, np.int64), axis=axes[0])
        if len(axes) == 1:
            return ns.node("Compress", x, index, axis=axes[0])
    arrays, axes = [], []
    for _, index_axes, index in advanced:
        if index.dtype == np.bool_:  # x[mask] is x[mask.nonzero()]
            nonzero = ns.node("NonZero", index, dtype=np.int64)
            arrays += [ns.node("Gather", nonzero, ns.scalar(j, np.int64), axis=0)
                       for j in range(len(index_axes))]
        else:
            arrays.append(_nonnegative(ns, ns.cast(index, np.int64), ns.dim(x, index_axes[0])))
        axes += index_axes
    if len(arrays) > 1:  # broadcast them against each other
        zero = arrays[0]
        for a in arrays[1:]:
            zero = ns.node("Add", zero, a)
        zero = ns.node("Mul", zero, ns.scalar(0, np.int64))
        arrays = [ns.node("Add", a, zero) for a in arrays]
    rest = [d for d in range(x.ndim) if d not in axes]
    moved = ns.node("Transpose", x, perm=axes + rest) if axes + rest != list(range(x.ndim)) else x
    index = ns.node("Concat", *(ns.node("Unsqueeze", a, ns.ints([-1])) for a in arrays), axis=-1)
    out = ns.node("GatherND", moved, index)
    # a mask's index is 1-D (its true elements); ints and int arrays broadcast
    n_index = max(1 if a.dtype == np.bool_ else len(a.shape) for _, _, a in advanced)
    return _place(ns, out, layout, n_index)


def _nonnegative(ns, index, dim):
    """numpy's negative indices counted from the end (GatherND wants them so)."""
    size = ns.scalar(dim, np.int64) if isinstance(dim, int) else _scalar_int(ns, dim)
    return ns.node("Where", ns.node("Less", index, ns.scalar(0, np.int64)),
                   ns.node("Add", index, size), index)


def _place(ns, out, layout, n_index):
    """GatherND gives [index dims] + [other dims]; numpy's layout may put
    `None` dims among them, and the index dims after some others."""
    others = [e for e in layout if e != "adv"]
    new = [n_index + i for i, e in enumerate(others) if e == "new"]
    if new:
        out = ns.node("Unsqueeze", out, ns.ints(new))
    before = layout.index("adv")
    if before == 0:
        return out
    total = n_index + len(others)
    perm = (list(range(n_index, n_index + before)) + list(range(n_index))
            + list(range(n_index + before, total)))
    return ns.node("Transpose", out, perm=perm)


register_op("getitem", _getitem_kernel, _getitem_infer,
            vjp=lambda g, out, x, *tensors, spec: (
                bind("getitem_grad", g, x, *tensors, spec=spec),) + (None,) * len(tensors),
            checks=lambda op: len(op.inputs) > 1,  # tensor indices: out of range?
            attrs={"spec": INDEX_SPEC}).lowering(
    xla=_getitem_xla, onnx=lambda ns, x, *tensors, spec: onnx_index(ns, x, spec, tensors))
# Scatter a getitem cotangent into zeros shaped like `x`.
register_op("getitem_grad", _getitem_grad_kernel, _getitem_grad_infer,
            # linear in g: its transpose is the indexing itself (second-order gradients)
            vjp=lambda gg, out, g, x, *tensors, spec: (
                bind("getitem", gg, *tensors, spec=spec), None) + (None,) * len(tensors),
            attrs={"spec": INDEX_SPEC}).lowering(
    xla=_getitem_grad_xla,
    onnx=lambda ns, g, x, *tensors, spec: onnx_scatter_add(
        ns, g, x, lambda ids: onnx_index(ns, ids, spec, tensors)))


_GETITEM = OPS["getitem"]


def getitem(x, index):
    if type(index) is int and type(x) is Tensor and all_eager[0]:
        # x[i] in an eager loop: the spec encode_index would make, without its walk
        return run_eager(_GETITEM, (x,), {"spec": (("int", index),)})
    spec, tensors = encode_index(index)
    return bind("getitem", lift(x), *tensors, spec=spec)
