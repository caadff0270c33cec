"""`_jst.set_item(container, index, value)`: what `x[i] = v` becomes in
converted code (transformers.item_assignment). A static Variable gets the
functional `set_item` op (the caller rebinds its name to the result);
anything else the plain subscript assignment, returning the same object
(an eager Tensor then rebinds its own value, core.inplace)."""
from .dispatch import _is_static


def set_item(container, index, value):
    if _is_static(container):
        from d2s.core.ops import set_item as functional
        return functional(container, index, value)
    container[index] = value
    return container


def make_slice(start, stop, step):
    """`a:b:c` of a rewritten subscript target."""
    return slice(start, stop, step)


def inplace_call(fn, *args, **kwargs):
    """`x.add_(y)` / `d2s.reshape_(x, s)` in converted code, whose result the
    receiver's name is rebound to: on a program's value the functional result
    (core.inplace), on an eager Tensor the write itself (it returns x)."""
    from d2s.core.inplace import rebinding
    with rebinding():
        return fn(*args, **kwargs)
