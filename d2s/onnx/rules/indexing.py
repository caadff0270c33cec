"""ONNX rules of indexing: `getitem` and its gradient (`d2s/core/ops/indexing.py`:
numpy indexing as Slice / Squeeze / Unsqueeze / Gather(ND) / Compress) and
`set_item` (`d2s/core/ops/set_item.py`): a ScatterND into the flattened
tensor (every index form `getitem` exports works here too)."""
from __future__ import annotations

import numpy as np

from ...core.ops.indexing import _consumed
from ...core.registry import register_lowering
from ._base import onnx_dims, onnx_product, onnx_scatter_add


def _onnx(ns, x, v, *tensors, spec):
    """Flat ids of x's elements, indexed as the forward indexes x, say where
    each element of v (expanded to the indexed shape) goes: one ScatterND."""
    dims = onnx_dims(ns, x)
    n = onnx_product(ns, dims)
    count = ns.scalar(n, np.int64) if isinstance(n, int) else ns.node(
        "Reshape", n, ns.ints([]), shape=())
    ids = ns.reshape(ns.node("Range", ns.scalar(0, np.int64), count, ns.scalar(1, np.int64)),
                     dims).with_shape(x.shape)
    picked = onnx_index(ns, ids, spec, tensors)
    where = ns.node("Reshape", picked, ns.ints([-1, 1]))
    values = ns.node("Expand", ns.cast(v, x.dtype), ns.node("Shape", picked))
    flat = ns.node("ScatterND", ns.node("Reshape", x, ns.ints([-1])), where,
                   ns.node("Reshape", values, ns.ints([-1])))
    return ns.reshape(flat, dims)


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



register_lowering("onnx", "set_item", _onnx)


register_lowering("onnx", "getitem", lambda ns, x, *tensors, spec: onnx_index(ns, x, spec, tensors))
register_lowering("onnx", "getitem_grad", lambda ns, g, x, *tensors, spec: onnx_scatter_add(
    ns, g, x, lambda ids: onnx_index(ns, ids, spec, tensors)))
