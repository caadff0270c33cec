"""`list.append` in converted loops: a Python list, or a tensor array in a static loop."""
__all__ = ["convert_list_append"]


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
