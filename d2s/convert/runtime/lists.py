"""`list.append` / `.extend` / `list += [...]` / `lst = lst + [...]` in converted loops: a Python list, or a tensor
array in a static loop."""
__all__ = ["convert_list_append", "convert_list_extend", "convert_list_extend_call",
           "convert_list_concat"]


def convert_list_append(lst, value):
    """`lst.append(value)`, returning the list (the generated code reassigns it).

    Inside a loop on a tensor the list is carried as a tensor array (a
    Variable whose axis 0 holds the appended values; `d2s.stack` of it is
    itself), so the appended values survive the loop."""
    from d2s.static.tensor_array import PendingArray, array_append, is_tensor_array
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_append(lst, value)
    lst.append(value)
    return lst


def convert_list_extend(lst, values):
    """`lst += values` (a list literal), returning the result (the generated code
    reassigns it). On a tensor array each value is appended; otherwise it is
    Python's `+=` itself (a list extends in place, a tensor adds)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    lst += values
    return lst


def convert_list_extend_call(lst, values):
    """`lst.extend(values)`, returning the list (the generated code reassigns
    it): on a tensor array one append per value, else the object's own
    `extend` (a list, a deque, ...)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    lst.extend(values)
    return lst


def convert_list_concat(lst, values):
    """`lst + values` (a list literal) assigned back to `lst`: on a tensor array
    one append per value (never an elementwise add of the array and the
    values), else Python's `+` (a new list; a tensor adds)."""
    from d2s.static.tensor_array import PendingArray, array_extend, is_tensor_array
    if isinstance(lst, PendingArray) or is_tensor_array(lst):
        return array_extend(lst, values)
    return lst + values
