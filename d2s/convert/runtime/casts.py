"""`bool()`, `int()` and `float()` as called by converted code.

Python values and eager Tensors get the builtins.  A static Variable has no
value while its program is built, so, as PaddlePaddle's converter does, the
call becomes a cast: a 0-d Variable of the one element, bool / int64 /
float64, weakly typed like the Python number it stands for (`x * float(s)`
keeps x's dtype, as the eager Python float would).  Where a Python value is
truly needed (a `range` bound outside a converted `for`, a Python list
index) the cast Variable's `__index__` raises the usual clear error.

`t.numpy()` and `t.item(...)` ask for the same value and get the same
answer: the array is the Variable itself (detached: the eager array carries
no gradient), the number a weak 0-d cast of the one element (`item(i)`
indexes the flattened tensor, `item(i, j, ...)` one element per axis).
Code that then needs real numpy (np.* functions) meets the Variable's clear
"no value while its program is being built" error.
"""
import builtins

from .dispatch import _is_static
from .logical import check_truth_size

__all__ = ["convert_bool", "convert_int", "convert_float", "convert_numpy", "convert_item"]


def convert_bool(*args, **kwargs):
    if len(args) == 1 and not kwargs and _is_static(args[0]):
        return _cast(args[0], "bool", "bool")
    return builtins.bool(*args, **kwargs)


def convert_int(*args, **kwargs):
    if len(args) == 1 and not kwargs and _is_static(args[0]):
        return _cast(args[0], "int64", "int")
    return builtins.int(*args, **kwargs)


def convert_float(*args, **kwargs):
    if len(args) == 1 and not kwargs and _is_static(args[0]):
        return _cast(args[0], "float64", "float")
    return builtins.float(*args, **kwargs)


def convert_numpy(value):
    if _is_static(value):
        from d2s.core import ops
        return ops.detach(value)
    return value.numpy()


def convert_item(value, *index):
    if not _is_static(value):
        return value.item(*index)
    if len(index) == 1:
        value = value.reshape([-1])[index[0]]
    elif index:
        if len(index) != len(value.shape):
            raise ValueError(f"item() of a {len(value.shape)}-d Tensor takes 0, 1 or "
                             f"{len(value.shape)} indices, not {len(index)}")
        value = value[tuple(index)]
    kind = value.dtype.kind
    if kind == "b":
        return _cast(value, "bool", "item")
    if kind in "iu":
        return _cast(value, "int64", "item")
    if kind == "f":
        return _cast(value, "float64", "item")
    value._no_value(".item()")   # a complex number has no weak 0-d stand-in


def _cast(value, dtype, builtin):
    """The one element of `value` as a weak 0-d Variable of `dtype`.

    Like the builtin on an eager Tensor: more than one element is the same
    ValueError (checked now where the dims are known); `bool`
    of a number is `!= 0`, `int` of a float truncates toward zero; no gradient
    flows through it (the eager result is a Python number)."""
    from d2s.core import ops
    if builtin == "bool":
        check_truth_size(value)
    elif builtin == "item" and all(type(d) is int for d in value.shape) and _size(value.shape) != 1:
        raise ValueError(f"item() of a Tensor with {_size(value.shape)} elements: only "
                         "one-element tensors convert (or give the index: t.item(i))")
    elif all(type(d) is int for d in value.shape) and _size(value.shape) != 1:
        raise ValueError(f"{builtin}() of a Tensor with {_size(value.shape)} elements is "
                         "ambiguous; only one-element tensors convert")
    if tuple(value.shape):
        value = ops.reshape(value, [])
    if builtin == "bool":
        out = value if value.dtype.kind == "b" else value != 0
    else:
        out = value if str(value.dtype) == dtype else ops.cast(value, dtype)
    # A new Variable (the weak mark must not touch the user's), with no
    # gradient path: the eager builtin gives a Python number, a constant.
    out = ops.detach(out)
    out.weak = True
    return out


def _size(shape):
    size = 1
    for d in shape:
        size *= d
    return size
