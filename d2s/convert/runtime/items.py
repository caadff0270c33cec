"""`_jst.set_item(container, index, value)`: what `x[i] = v` becomes in
converted code (transformers.item_assignment). A static Variable gets the
functional `set_item` op, and the Variable object is rebound to the result
(static.rebinding: an alias, or the caller's name when a called function
wrote its argument, reads the new value; a view writes its base); the
caller also rebinds its name to the result. Anything else gets the plain
subscript assignment, returning the same object (an eager Tensor then
rebinds its own value, core.inplace)."""
from .dispatch import _is_static


def set_item(container, index, value, held=False):
    """`held`: the container is an attribute (`self.buf[i] = v`), which the
    caller assigns the result to: while a program is built, an eager Tensor
    there (a buffer) gets the functional result too, so that the attribute
    write is what the program records (state write-back, jit.outliving),
    also inside a tensor `if`/`while`."""
    if _is_static(container):
        from d2s.core.ops import set_item as functional
        start = getattr(container, "_fresh", None)
        new = functional(start() if start is not None and not held else container, index,
                         value)
        written = getattr(container, "_write_in_place", None)
        if written is not None:
            # (held: an item of an attribute, `self.b[i][j] = v`, whose caller
            # writes the attribute itself with the outer item)
            written(new, not held)
        return new
    if held and _building() and _is_eager_tensor(container):
        from d2s.core.ops import set_item as functional
        return functional(container, index, value)
    if held and _building() and type(container) in (list, dict):
        # a copy, as for a tensor: each branch of a tensor `if` starts from the
        # attribute's value before it (the construct carries the attribute)
        container = type(container)(container)
    container[index] = value
    return container


def _building():
    from d2s.core import state
    return bool(state._tls.builders)


def _is_eager_tensor(value):
    from d2s.core.tensor import DeviceTensor, Tensor
    return type(value) is Tensor or type(value) is DeviceTensor


def set_nested(root, indices, value):
    """`root[i][j]... = value` in converted code, on a name (transformers.
    item_assignment); returns what the name holds after it.

    A tensor's item by basic indexing is a view (core.views): written, it
    writes the tensor (an alias of the tensor, or the caller's name, sees
    it; static.rebinding); an item by advanced indexing is a copy whose write
    is dropped, as eagerly. Below a list or dict the item is written
    functionally and stored back into the container (`cache["k"][:, i] = v`
    is `cache["k"] = set_item(cache["k"], (..., i), v)`), which the analyses
    of tensor loops carry as an item of the container; outside a tensor loop
    the tensor is rebound too (an alias of it reads the write)."""
    if len(indices) == 1:
        if type(root) in (list, dict):  # (an entry rebound: no in-place write of it)
            _mark_entry(root, indices[0], None, False)
        return set_item(root, indices[0], value)
    if _is_tensor(root):
        set_nested(root[indices[0]], indices[1:], value)
        return current(root)
    item = root[indices[0]]
    new = set_item(root, indices[0], _functional_nested(item, indices[1:], value, top=True))
    if type(root) in (list, dict) and getattr(item, "is_data", False):
        _mark_entry(root, indices[0], item, True)  # an input written through the entry
    return new


def _mark_entry(container, key, var, written):
    from d2s.static import rebinding
    rebinding.mark_entry(container, key, var, written)


def _functional_nested(container, indices, value, top=False):
    """The new value of `container` with `container[i][j]... = value`, the
    tensors on the way written functionally (no view writes, no rebinding:
    the caller stores the result where `container` came from)."""
    if len(indices) > 1:
        value = _functional_nested(container[indices[0]], indices[1:], value)
    if _is_static(container) or _building() and _is_eager_tensor(container):
        from d2s.core.ops import set_item as functional
        new = functional(container, indices[0], value)
        if top and _is_static(container):
            from d2s.static import rebinding
            if not rebinding.in_loop():
                # an alias of the tensor (held outside the container) reads the
                # write too; a tensor loop carries the container's item instead
                container._write_in_place(new, False)
                if container.is_data:
                    # an input of the program (a tensor of an argument's list or
                    # dict): the entry keeps holding it, as eagerly the same
                    # Tensor, and the run writes that Tensor back (jit.outliving)
                    return container
        return new
    container[indices[0]] = value
    return container


def _is_tensor(value):
    return _is_static(value) or _is_eager_tensor(value)


def current(value):
    """What `value` holds now: a program's value written in place since (a
    view of it written, static.rebinding), the Variable holding it; anything
    else itself."""
    latest = getattr(value, "_latest_value", None) if _is_static(value) else None
    return latest() if latest is not None else value


def make_slice(start, stop, step):
    """`a:b:c` of a rewritten subscript target."""
    return slice(start, stop, step)


def inplace_call(fn, *args, **kwargs):
    """`x.add_(y)` / `d2s.reshape_(x, s)` in converted code, whose result the
    receiver's name is rebound to: on a program's value the functional result
    (core.inplace), on an eager Tensor the write itself (it returns x)."""
    from d2s.core.inplace import rebinding
    with rebinding():
        result = fn(*args, **kwargs)
    if result is None:  # a method of the user's own object with a Paddle in-place
        return getattr(fn, "__self__", None)  # name, returning nothing: the receiver
    return result


def inplace_call_held(fn, *args, **kwargs):
    """`o.t.add_(y)` in converted code, which assigns the result to `o.t`:
    as `inplace_call`; while a program is built an eager Tensor receiver (a
    buffer) gives the functional result, so the attribute write is what the
    program records (core.inplace.rebinding)."""
    from d2s.core.inplace import rebinding
    with rebinding(held=True):
        return fn(*args, **kwargs)


def inplace_on_item(container, index, method, *args, **kwargs):
    """`xs[i].add_(v)` in converted code where `xs` is not a list or dict the
    function made itself (transformers.inplace_methods). An item of a tensor
    by basic indexing is a view (core.views): its write reaches the tensor,
    eagerly and on a program's value alike (an advanced index gives a copy,
    whose write is made and dropped, as in PyTorch). An
    item of another container is written in place when it is an eager
    Tensor; a program's value there would need the container rebound, which
    only works outside tensor constructs (else a clear error)."""
    from d2s.core.inplace import rebinding
    from d2s.core.tensor import Tensor
    item = container[index]
    with rebinding():
        result = getattr(item, method)(*args, **kwargs)
    if _is_static(container) or isinstance(container, Tensor) or not _is_static(item):
        return None
    if type(container) is tuple or getattr(item, "is_data", False):
        # (`*args`, or an input of the program in an argument's list or dict: the
        # value itself is rebound, static.rebinding, and written back into the
        # caller's Tensor after the run, jit.outliving; eagerly the entry keeps
        # holding that same Tensor)
        return None
    from .lists import tracing_paths
    if getattr(tracing_paths, "depth", 0):
        from d2s.static import ControlFlowError
        raise ControlFlowError(
            f"'...[{index!r}].{method}(...)' inside an `if` or a loop on a tensor: the item of "
            f"a {type(container).__name__} the function did not create cannot be rebound "
            f"there (others may hold the container); write `item = container[i]."
            f"{method.rstrip('_')}(...)` and use `item`, or create the container in this "
            f"function")
    container[index] = result
    return None
