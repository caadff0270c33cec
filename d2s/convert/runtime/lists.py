"""`list.append` / `.extend` / `list += [...]` / `lst = lst + [...]` in converted
loops and branches: a Python list, or a tensor array in a static loop or branch.

A Python list that both branches of a tensor `if` start from is *shared*
while they are traced (`sharing`): appending a tensor to it in place would
show the value to the other branch and to the code after the `if`, whatever
the condition (a silent wrong answer). Such an append gives a tensor array
instead, leaving the list as it was; `cond` merges the paths' arrays.
"""
import threading

from .dispatch import _is_static

__all__ = ["convert_list_append", "convert_list_extend", "convert_list_extend_call",
           "convert_list_concat", "sharing"]

_shared = threading.local()   # .ids: ids of the lists shared by the branches being traced


class sharing:
    """While tracing a branch: `lists` are shared with the other branch."""

    __slots__ = ("ids",)

    def __init__(self, lists):
        self.ids = frozenset(id(x) for x in lists)

    def __enter__(self):
        stack = getattr(_shared, "stack", None)
        if stack is None:
            stack = _shared.stack = []
        stack.append(self.ids)
        return self

    def __exit__(self, *exc):
        _shared.stack.pop()
        return False


def _pending(lst, values):
    """`lst` as a pending array when it is a shared list and every value can be a
    tensor (a number, an array, a tensor); else None (Python's own list)."""
    stack = getattr(_shared, "stack", None)
    if not stack or type(lst) is not list or not any(id(lst) in ids for ids in stack):
        return None
    import numbers

    import numpy as np
    from d2s.core.tensor import Tensor
    if not all(_is_static(v) or isinstance(v, (Tensor, numbers.Number, np.ndarray))
               for v in values):
        return None
    from d2s.static.tensor_array import PendingArray
    return PendingArray(lst)


def convert_list_append(lst, value):
    """`lst.append(value)`, returning the list (the generated code reassigns it).

    Inside a loop on a tensor the list is carried as a tensor array (a
    Variable whose axis 0 holds the appended values; `d2s.stack` of it is
    itself), so the appended values survive the loop."""
    from d2s.static.tensor_array import PendingArray, array_append, is_tensor_array
    pending = _pending(lst, (value,))
    lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_append(lst, value)
    lst.append(value)
    return lst


def convert_list_extend(lst, values):
    """`lst += values` (a list literal), returning the result (the generated code
    reassigns it). On a tensor array each value is appended; otherwise it is
    Python's `+=` itself (a list extends in place, a tensor adds)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if type(lst) is list and isinstance(values, (list, tuple)):
        pending = _pending(lst, values)
        lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    lst += values
    return lst


def convert_list_extend_call(lst, values):
    """`lst.extend(values)`, returning the list (the generated code reassigns
    it): on a tensor array one append per value, else the object's own
    `extend` (a list, a deque, ...)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if type(lst) is list and isinstance(values, (list, tuple)):
        pending = _pending(lst, values)
        lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    lst.extend(values)
    return lst


def convert_list_concat(lst, values):
    """`lst + values` (a list literal) assigned back to `lst`: on a tensor array
    one append per value (never an elementwise add of the array and the
    values), else Python's `+` (a new list; a tensor adds)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if type(lst) is list and isinstance(values, (list, tuple)):
        pending = _pending(lst, values)
        lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    return lst + values
