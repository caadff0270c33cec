"""Indexing: `x[...]` with ints, slices, None, Ellipsis, integer and bool tensors.

The index is encoded as a hashable `spec` attribute; tensors in it (index
arrays, slice bounds) become op inputs, so an index may depend on a static
Variable (e.g. `x[i]` with a loop counter inside a `while`).
"""
from __future__ import annotations

import functools

import numpy as np

from ..dispatch import all_eager, bind, run_eager
from ..attr_schema import Spec
from ..registry import OPS, Aval, register_op
from ..tensor import Tensor
from ..shapes import broadcast_shapes
from ._base import is_value, lift
from .. import views


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
    if not tensors:  # ints, slices, None, Ellipsis: the same index every call
        return x[_constant_index(spec)]
    return x[decode_index(spec, tensors)]


@functools.lru_cache(maxsize=1024)
def _constant_index(spec):
    """`decode_index` of a spec that refers to no tensor, remembered: an eager
    `x[:, a:b]` (split's pieces) decodes the same spec on every call."""
    return decode_index(spec, ())


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


register_op("getitem", _getitem_kernel, _getitem_infer,
            vjp=lambda g, out, x, *tensors, spec: (
                bind("getitem_grad", g, x, *tensors, spec=spec),) + (None,) * len(tensors),
            checks=lambda op: len(op.inputs) > 1,  # tensor indices: out of range?
            attrs={"spec": INDEX_SPEC})
# Scatter a getitem cotangent into zeros shaped like `x`.
register_op("getitem_grad", _getitem_grad_kernel, _getitem_grad_infer,
            # linear in g: its transpose is the indexing itself (second-order gradients)
            vjp=lambda gg, out, g, x, *tensors, spec: (
                bind("getitem", gg, *tensors, spec=spec), None) + (None,) * len(tensors),
            attrs={"spec": INDEX_SPEC})


_GETITEM = OPS["getitem"]


def getitem(x, index):
    if type(index) is int and type(x) is Tensor and all_eager[0]:
        # x[i] in an eager loop: the spec encode_index would make, without its walk
        out = run_eager(_GETITEM, (x,), {"spec": (("int", index),)})
        out._base = (x, index, x._version)  # a view (core.views)
        return out
    spec, tensors = encode_index(index)
    out = bind("getitem", lift(x), *tensors, spec=spec)
    if views.is_basic(spec, tensors):
        views.remember(out, x, index)
    if getattr(x, "is_array", False) and spec and spec[0][0] == "slice":
        # A slice of a tensor array along its items (`res = res[::-1]`, `feats[1:]`)
        # is a list of those items: still an array (stack/concat read it as one).
        out.is_array = True
    return out
