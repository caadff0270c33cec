"""Input signatures: what makes two calls share one program.

Tensors are described by shape, dtype and stop_gradient (or by the
`InputSpec` given for their argument, so `None` dims serve every size);
Python arguments by type and value (unhashable ones by identity), after
defaults are bound. A bound Layer's `training` flag is part of the key, so
`eval()` gets its own program.
"""
from __future__ import annotations

import inspect
import weakref

import numpy as np

from ..core.tensor import Tensor
from ..static.input_spec import InputSpec
from ..static.pytree import flatten, is_record, record_fields


class Signature:
    __slots__ = ("key", "leaves", "tree", "specs", "names", "args", "kwargs", "tops")

    def __init__(self, key, leaves, tree, specs, names, args=(), kwargs=None, tops=None):
        self.key = key
        self.leaves = leaves
        self.tree = tree
        self.specs = specs      # InputSpec per leaf, None for Python leaves
        self.names = names      # a readable name per leaf
        self.args = args        # the call's own arguments (containers kept by identity)
        self.kwargs = kwargs or {}
        self.tops = tops        # each argument's name as written (`args[2]` for *args)


_signatures = weakref.WeakKeyDictionary()  # function -> inspect.Signature or None


def _signature_of(fn):
    """`inspect.signature(fn)` (slow to compute, asked on every build), or None."""
    try:
        return _signatures[fn]
    except (KeyError, TypeError):  # not seen yet, or not weak-referenceable
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    try:
        _signatures[fn] = sig
    except TypeError:
        pass
    return sig


def arg_names(fn, args, kwargs):
    """Parameter names for the positional and keyword arguments of a call."""
    sig = _signature_of(fn)
    params = list(sig.parameters.values()) if sig is not None else []
    names = []
    for i in range(len(args)):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"args_{i}")
    return names + list(kwargs)


def _labels_top(fn, names_top, n_args):
    """`names_top` as the user wrote the arguments: a positional one gathered
    by `*args` is `args[i]` (its data Variable is named `args_<i>`)."""
    sig = _signature_of(fn)
    params = list(sig.parameters.values()) if sig is not None else []
    star = next((p for p in params if p.kind is p.VAR_POSITIONAL), None)
    if star is None:
        return list(names_top)
    first = params.index(star)
    return [f"{star.name}[{i - first}]" if first <= i < n_args else n
            for i, n in enumerate(names_top)]


def input_labels(signature):
    """A readable name per tensor input of `signature`, as the user writes it:
    `cache`, `args[2]`, `caches[0]['k']` (for messages and the labels of the
    inputs a program writes)."""
    values = list(signature.args) + list(signature.kwargs.values())
    out = []
    for v, n in zip(values, signature.tops or ()):
        _leaf_labels(v, n, out)
    if len(out) != len(signature.leaves):  # (a structure this walk reads otherwise)
        out = list(signature.names)
    return [label for label, spec in zip(out, signature.specs) if spec is not None]


def _leaf_labels(value, name, out):
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _leaf_labels(v, f"{name}[{i}]", out)
    elif isinstance(value, dict):
        for k in value:
            _leaf_labels(value[k], f"{name}[{k!r}]", out)
    elif is_record(value):
        for k in record_fields(value):
            _leaf_labels(getattr(value, k), f"{name}.{k}", out)
    else:
        out.append(name)


def tensor_aliases(tensors):
    """None when the tensors are distinct objects, else for each the position
    of the first one that is the same Tensor (`f(a, a)`): a program that
    writes an input in place is built for one such pattern."""
    ids = [id(t) for t in tensors]
    if len(set(ids)) == len(ids):
        return None
    return tuple(ids.index(i) for i in ids)


def _leaf_names(value, name, out):
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _leaf_names(v, f"{name}_{i}", out)
    elif isinstance(value, dict):
        for k in value:
            _leaf_names(value[k], f"{name}_{k}", out)
    elif is_record(value):  # a dataclass: its fields, as static.pytree flattens it
        for k in record_fields(value):
            _leaf_names(getattr(value, k), f"{name}_{k}", out)
    else:
        out.append(name)


def _check_against_spec(tensor, spec, name):
    if np.dtype(tensor.dtype) != spec.dtype:
        raise ValueError(f"argument '{name}': dtype {np.dtype(tensor.dtype).name} does not "
                         f"match its InputSpec dtype {spec.dtype.name}")
    shape = tuple(tensor.shape)
    if len(shape) != len(spec.shape) or any(
            s is not None and s != d for s, d in zip(spec.shape, shape)):
        raise ValueError(f"argument '{name}': shape {list(shape)} does not match its "
                         f"InputSpec shape {[s for s in spec.shape]}")


def _python_key(x):
    try:
        hash(x)
        return ("py", type(x).__qualname__, x)
    except TypeError:
        return ("obj", type(x).__qualname__, id(x))


def bind_defaults(fn, args, kwargs):
    """The call as `fn` receives it, defaults filled in: `f(x)`, `f(x, None)` and
    `f(x, y=None)` (None the default) are one call, so they share one program.
    A call that does not fit the signature is left as it is (calling the
    function then raises Python's own TypeError)."""
    sig = _signature_of(fn)
    try:
        bound = sig.bind(*args, **kwargs) if sig is not None else None
    except TypeError:
        bound = None
    if bound is None:
        return tuple(args), dict(kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def make_signature(fn, args, kwargs, input_spec=None, training=None):
    args, kwargs = bind_defaults(fn, args, kwargs)
    names_top = arg_names(fn, args, kwargs)
    values = list(args) + [kwargs[k] for k in kwargs]
    leaves, tree = flatten((tuple(args), dict(kwargs)))
    names = []
    for v, n in zip(values, names_top):
        _leaf_names(v, n, names)
    # Specs given per positional argument.
    arg_specs = {}
    if input_spec is not None:
        for i, s in enumerate(input_spec):
            if i < len(args):
                arg_specs[names_top[i]] = s
    specs, key, new_leaves = [], [], []
    for leaf, name in zip(leaves, names):
        given = arg_specs.get(name)
        if isinstance(leaf, np.ndarray):
            leaf = Tensor(leaf)
        if isinstance(leaf, InputSpec):
            spec = leaf
            key.append(("spec", spec.shape, spec.dtype.str, True))
        elif isinstance(leaf, Tensor):
            if isinstance(given, InputSpec):
                _check_against_spec(leaf, given, name)
                spec = given
            else:
                spec = InputSpec(leaf.shape, leaf.dtype, name)
            key.append(("tensor", spec.shape, spec.dtype.str, leaf.stop_gradient))
        else:
            spec = None
            key.append(_python_key(leaf))
        specs.append(spec)
        new_leaves.append(leaf)
    return Signature((tree, tuple(key), training), new_leaves, tree, specs, names,
                     tuple(args), dict(kwargs), _labels_top(fn, names_top, len(args)))


def varying_arguments(signatures):
    """What keeps changing across `signatures` (the newest last), to name in
    the warning of a function that builds program after program.

    Returns (names, kind): the arguments whose part of the key took the most
    distinct values, and "tensor" (a shape or dtype changes) or "python" (a
    value changes); or a description of the structure / training flag.
    """
    newest = signatures[-1]
    same_tree = [s for s in signatures if s.tree == newest.tree]
    if len(same_tree) < 2:
        return ["the structure of the arguments"], "structure"
    parts = list(zip(*(s.key[1] for s in same_tree)))
    counts = [len(set(p)) for p in parts]
    most = max(counts, default=1)
    if most < 2:
        return ["the layer's training flag"], "training"
    changing = [i for i, c in enumerate(counts) if c == most]
    kind = "tensor" if all(newest.specs[i] is not None for i in changing) else "python"
    return [f"'{newest.names[i]}'" for i in changing], kind
