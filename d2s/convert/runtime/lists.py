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
           "convert_list_concat", "convert_reached_list_call", "check_list_aliases", "sharing",
           "tracing_paths", "enter_trace", "exit_trace", "new_container", "checked_method",
           "convert_list_pop", "convert_list_reverse"]

_shared = threading.local()   # .ids: ids of the lists shared by the branches being traced
# .depth: how many tensor `if` branches / loop bodies are being traced now
# (control_flow._traced counts them through enter_trace / exit_trace);
# .starts: the serial of each, innermost last; .serial: the last serial given;
# .created: id(container) -> the serial current when converted code created it.
tracing_paths = threading.local()


def enter_trace():
    """A tensor `if` branch or loop body starts being traced: it gets the next
    serial, so a list created from now on is known as created inside it."""
    paths = tracing_paths
    paths.depth = getattr(paths, "depth", 0) + 1
    paths.serial = getattr(paths, "serial", 0) + 1
    if paths.depth == 1:
        paths.starts, paths.created = [], {}
    paths.starts.append(paths.serial)


def exit_trace():
    paths = tracing_paths
    paths.depth -= 1
    paths.starts.pop()
    if not paths.depth:
        paths.created = {}   # ids of containers made while tracing: none is traced now


_CONTAINERS = (list, dict, set)


def new_container(value):
    """A new list (dict, set) converted code binds to a name (`parts = []`,
    the names `analysis.fresh_lists` finds), returned as is; while a tensor
    construct is traced it is remembered as created there (`check_outer_list`).
    The entry outlives the object, but an id a later one reuses maps to a
    serial older than any trace that begins after it: never taken for a newer
    object."""
    paths = tracing_paths
    if type(value) in _CONTAINERS and getattr(paths, "depth", 0):
        paths.created[id(value)] = paths.serial
    return value


def checked_method(obj, method, label, own=False):
    """`obj.method` for a call that changes a list, dict or set in place
    (`outs.pop()`, `d.update(...)`, `seen.add(k)`): checked as an append is
    (`check_outer_list`); any other object's method as it is (the call
    around it converts a user's method). `own`: a `pop` of the function's
    own list inside an expression, which only a statement of its own
    (`item = outs.pop()`) carries as a tensor array."""
    check_outer_list(obj, label, method, own)
    from d2s.static.tensor_array import PendingArray, is_tensor_array
    if isinstance(obj, PendingArray) or is_tensor_array(obj):
        from d2s.static import ControlFlowError
        from d2s.static.ir import user_origin
        origin = user_origin()
        where = f" ({origin[0]}, line {origin[1]})" if origin else ""
        fix = (f"write `item = {label}.pop(...)` on a line of its own (the name is then "
               f"rebound to the shorter array) and use `item` in the expression"
               if method == "pop" else
               f"build a new list from it instead (`{label} = ...`), e.g. with slices and "
               f"`d2s.concat`")
        raise ControlFlowError(
            f"'{label}.{method}(...)'{where}: the list '{label}' was filled by a loop on a "
            f"tensor and is carried as a tensor array, a program value no call changes in "
            f"place; {fix}")
    return getattr(obj, method)


def convert_list_pop(lst, label, outer, *args):
    """`x = lst.pop(*args)` as `lst, x = convert_list_pop(lst, "lst", outer,
    *args)`: (the list, the item popped). A list (any object) pops in place,
    checked as `checked_method` checks it; a tensor array (a list a tensor
    loop filled, after the loop or in its body) is a program value no call
    changes, so the shorter array comes back for the name to be rebound
    (`tensor_array.array_pop`). `outer`: the name may hold a list the
    function did not create (`check_outer_list`)."""
    from d2s.static.tensor_array import PendingArray, array_pop, is_tensor_array
    if not outer and type(lst) is list:
        # the function's own list, shared by the branches of a tensor `if`:
        # popped as a tensor array, the list left as the other branch sees it
        lst = _pending(lst, lst, "pop") or lst
    if isinstance(lst, PendingArray):
        # a list not yet carried as an array (a tensor `if`'s shared list, the
        # first trace of a loop body): its items are known, so are the rest
        return _pending_pop(lst, label, *args)
    if is_tensor_array(lst):
        if outer:
            check_outer_list(lst, label, "pop")
        return array_pop(lst, *args)
    pop = checked_method(lst, "pop", label)
    if type(lst) in _CONTAINERS:
        return lst, pop(*args)
    from .call import convert_call
    return lst, convert_call(pop)(*args)


def convert_list_reverse(lst, label, outer):
    """`lst.reverse()` as `lst = convert_list_reverse(lst, "lst", outer)`: a
    list (any object) reverses in place, checked as `checked_method` checks
    it; a tensor array (a list a tensor loop filled: Viterbi's backtracked
    path) is a program value no call changes, so its items last first come
    back for the name to be rebound, as `pop` does."""
    from d2s.core.ops import getitem, lift, stack
    from d2s.static.tensor_array import PendingArray, _mark, is_tensor_array
    if not outer and type(lst) is list:
        lst = _pending(lst, lst, "reverse") or lst
    if isinstance(lst, PendingArray):
        items = [lift(x) for x in lst.items]
        return _mark(stack(items[::-1])) if items else lst
    if is_tensor_array(lst):
        if outer:
            check_outer_list(lst, label, "reverse")
        return getitem(lst, slice(None, None, -1))  # (still an array: getitem)
    reverse = checked_method(lst, "reverse", label)
    if type(lst) in _CONTAINERS:
        reverse()
    else:
        from .call import convert_call
        convert_call(reverse)()
    return lst


def _pending_pop(pending, label, index=-1):
    """`pending.pop(index)` as (the array of the other items, the item): the
    items are Python values, so no read of an array of run-time length."""
    from d2s.core.ops import lift, stack
    from d2s.static.tensor_array import _mark, array_init
    items = [lift(x) for x in pending.items]
    if not items:
        raise IndexError(f"pop from empty list '{label}'")
    value = items.pop(index)
    if items:
        return _mark(stack(items)), value
    return array_init(type(pending)([]), stack([value])), value


def _created_in_innermost_trace(lst):
    paths = tracing_paths
    return paths.created.get(id(lst), 0) >= paths.starts[-1]


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


def _pending(lst, values, method):
    """`lst` as a pending array when it is a shared list (every value must then
    be one a tensor can hold: `_check_array_items`); else None (Python's own
    list)."""
    stack = getattr(_shared, "stack", None)
    if not stack or type(lst) is not list or not any(id(lst) in ids for ids in stack):
        return None
    _check_array_items(lst, values, method)
    from d2s.static.tensor_array import PendingArray
    return PendingArray(lst)


def convert_list_append(lst, value, outer=None):
    """`lst.append(value)`, returning the list (the generated code reassigns it).

    Inside a loop on a tensor the list is carried as a tensor array (a
    Variable whose axis 0 holds the appended values; `d2s.stack` of it is
    itself), so the appended values survive the loop. `outer`: the name, when
    it may hold a list the function did not create (`check_outer_list`)."""
    from d2s.static.tensor_array import PendingArray, array_append, is_tensor_array
    if outer is not None:
        check_outer_list(lst, outer, "append")
    pending = _pending(lst, (value,), "append")
    lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        _check_array_items(lst, (value,), "append")
        return array_append(lst, value)
    lst.append(value)
    return lst


def convert_list_insert(lst, index, value, outer=None):
    """`lst.insert(index, value)` in a loop or `if`, returning the list (the
    generated code reassigns it). Inside a loop on a tensor a list is a
    tensor array: `insert(0, v)` -- returns computed in a reversed loop,
    each put in front -- puts `v` before its rows; another position raises,
    saying what to write. `outer`: as for convert_list_append."""
    from d2s.static.tensor_array import PendingArray, array_prepend, is_tensor_array
    if outer is not None:
        check_outer_list(lst, outer, "insert")
    pending = _pending(lst, (value,), "insert")
    lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        if type(index) is not int or index != 0:
            from d2s.static import ControlFlowError
            raise ControlFlowError(
                f"insert({index!r}, ...) into a list a loop on a tensor fills: only "
                "insert(0, v) (in front) or append(v) can be carried by the loop; "
                "append the values and reorder them after the loop")
        _check_array_items(lst, (value,), "insert")
        return array_prepend(lst, value)
    lst.insert(index, value)
    return lst


def convert_list_extend(lst, values, outer=None):
    """`lst += values` (a list literal), returning the result (the generated code
    reassigns it). On a tensor array each value is appended; otherwise it is
    Python's `+=` itself (a list extends in place, a tensor adds). `outer`: as
    for convert_list_append."""
    if outer is not None:
        check_outer_list(lst, outer, "extend")
    array = _extended_array(lst, values)
    if array is not None:
        return array
    lst += values
    return lst


def convert_list_extend_call(lst, values, outer=None):
    """`lst.extend(values)`, returning the list (the generated code reassigns
    it): on a tensor array one append per value, else the object's own
    `extend` (a list, a deque, ...). `outer`: as for convert_list_append."""
    if outer is not None:
        check_outer_list(lst, outer, "extend")
    array = _extended_array(lst, values)
    if array is not None:
        return array
    lst.extend(values)
    return lst


def _extended_array(lst, values):
    """`lst` (a list a tensor branch or loop appends to, or a tensor array)
    with `values` appended as a tensor array; None where `lst` stays a Python
    object, which the caller extends as Python does."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if type(lst) is list and isinstance(values, (list, tuple)):
        pending = _pending(lst, values, "extend")
        lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        _check_array_items(lst, values, "extend")
        return array_extend(lst, values)
    return None


def convert_list_concat(lst, values):
    """`lst + values` (a list literal) assigned back to `lst`: on a tensor array
    one append per value (never an elementwise add of the array and the
    values), else Python's `+` (a new list; a tensor adds)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if type(lst) is list and isinstance(values, (list, tuple)):
        pending = _pending(lst, values, "extend")
        lst = lst if pending is None else pending
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    return new_container(lst + values)


def convert_reached_list_call(lst, method, value, label):
    """`obj.attr.append(v)` / `d["k"].extend(vs)` (a list reached through an
    attribute or a subscript) in an `if` or a loop, and `lst.append(v)`
    anywhere of a list the function did not create (`lst` a parameter, a name
    from outside): Python's call, unless a tensor branch or loop is being
    traced (`check_outer_list`). Another object's method (a user class's
    `append`) is called as converted code calls any function."""
    check_outer_list(lst, label, method)
    if type(lst) in _CONTAINERS:
        getattr(lst, method)(value)
        return
    from .call import convert_call
    convert_call(getattr(lst, method))(value)


def _check_array_items(array, values, method):
    """A tensor array holds tensors (numbers, arrays): appending anything else
    (a tuple, a dict, a string, None) to the list it stands for, or to a list
    a tensor `if` shares with its other branch, is an error naming the list
    (the append showed on every path, or numpy failed on a Variable)."""
    import numbers

    import numpy as np
    from d2s.core.tensor import Tensor
    for value in values:
        if not (_is_static(value) or isinstance(value, (Tensor, numbers.Number, np.ndarray))):
            from d2s.static import ControlFlowError
            from d2s.static.ir import user_origin
            origin = user_origin()
            where = f" ({origin[0]}, line {origin[1]})" if origin else ""
            name = _user_name_of(array) or "the list"
            hint = ("keep each part in a list of its own (`firsts.append(a)`, "
                    "`seconds.append(b)`)" if isinstance(value, (tuple, list)) else
                    "append tensors (or numbers) there, or change the list outside the "
                    "construct")
            raise ControlFlowError(
                f"'{name}.{method}(...)' of a {type(value).__name__} inside an `if` or a loop "
                f"on a tensor{where}: there the list is carried as a tensor array (one value "
                f"per path and trip), whose items are tensors (or numbers); {hint}")


def _user_name_of(value):
    """The local name of the user's converted function that holds `value`."""
    import os
    import sys
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package + os.sep):
        frame = frame.f_back
    if frame is None:
        return None
    return next((n for n, v in frame.f_locals.items() if v is value), None)


def check_outer_list(lst, label, method, own=False):
    """Raise when a list that may be seen through another reference (reached
    through an object or a dict, a parameter, a name from outside the
    function) is changed in place while a tensor `if` branch or loop body is
    traced, here or in a function calling this one, unless converted code
    created it after that trace began (`new_container`: `parts = []` in the loop's
    body, passed to `add(parts, h)`, is that trip's own list).

    Python runs that code once whatever the condition or trip count: an
    in-place append would show on every path (or once for all trips), a
    silent wrong list. A list the function creates itself is carried by name
    as a tensor array; one that others may hold (a layer's cache, the
    caller's list) cannot be, as no program value can change what they see,
    so this is an error naming it."""
    if not getattr(tracing_paths, "depth", 0):
        return
    if type(lst) in _CONTAINERS:
        if _created_in_innermost_trace(lst):
            return
    else:
        from d2s.static.tensor_array import PendingArray, is_tensor_array
        if not (isinstance(lst, PendingArray) or is_tensor_array(lst)):
            return
    from d2s.static import ControlFlowError
    from d2s.static.ir import user_origin
    origin = user_origin()
    where = f" ({origin[0]}, line {origin[1]})" if origin else ""
    hint = _local_hint(label)
    if own:
        raise ControlFlowError(
            f"'{label}.{method}(...)' inside an expression, inside an `if` or a loop on a "
            f"tensor{where}: there the function's own list '{label}' is carried as a tensor "
            f"array, which only a statement of its own pops (the name is rebound to the "
            f"shorter array). Write `item = {label}.{method}(...)` on a line of its own and "
            f"use `item` in the expression")
    if type(lst) in _CONTAINERS:
        kind, why = type(lst).__name__, "was not created inside it (others may hold it: a " \
            "caller, a layer's cache, or what it was handed to before the construct: " \
            f"`self.x = {label}`, `d[k] = {label}`, `(…, {label})`, a call)"
    else:
        kind, why = "list", "is carried there as a tensor array (a program value no " \
            "in-place change reaches), while others may hold the list the name had: a " \
            f"parameter's, one reached through an object or a call (`{hint} = self.cache`), " \
            f"or one handed out before the construct (`self.x = {hint}`, `d[k] = {hint}`, " \
            f"`(…, {hint})`, a call, a closure)"
    raise ControlFlowError(
        f"'{label}.{method}(...)' inside an `if` or a loop on a tensor{where} (in this "
        f"function or in one calling it): the program traces that code once for every path "
        f"and trip, and the {kind} '{label}' {why}, so changing it in place would show on "
        f"all of them. Change a list only this code holds: create it inside the construct, "
        f"or make `{hint} = []` (or `{hint} = list(...)` of another list) the last binding "
        f"of '{hint}' before the construct and hand it out nowhere before the construct; "
        f"return it, or use, rebind or hand it out after the construct")


def _local_hint(label):
    import re
    name = re.sub(r"\W+", "_", label.split(".")[-1]).strip("_")
    return name if name.isidentifier() and not name[0].isdigit() else "items"


def check_list_aliases(named_lists, construct):
    """Raise when a list a tensor `construct` appends to (`named_lists`: (name,
    list) pairs) is also bound to another local name of the user's function.

    The construct carries the list by its name as a tensor array and leaves
    the Python list as it was, so `b = a` before it would not show the appends
    made through `a` (eager code sees them through both): a silent wrong list."""
    named_lists = [(n, v) for n, v in named_lists if type(v) is list]
    if not named_lists:
        return
    import os
    import sys
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package + os.sep):
        frame = frame.f_back
    if frame is None:
        return
    local_values = frame.f_locals
    for name, lst in named_lists:
        others = sorted(n for n, v in local_values.items() if v is lst and n != name)
        if others:
            from d2s.static import ControlFlowError
            from d2s.static.ir import user_origin
            origin = user_origin()
            where = f" ({origin[0]}, line {origin[1]})" if origin else ""
            raise ControlFlowError(
                f"the list '{name}' is appended to in {construct}{where}, and "
                f"'{others[0]}' names the same list: the program carries '{name}' as a "
                f"tensor array and cannot change the list '{others[0]}' sees. Read the list "
                f"through '{name}' after the construct (or build '{others[0]}' from it there)")
