"""`xs[i]` with a computed index, as converted code reads it
(`_jst.convert_subscript`, from transformers.builtin_calls).

A Python list or tuple has no item at a static Variable: `xs[t]` with `t`
a tensor loop's counter (`for t in range(n)` on a tensor `n`, an RNN over a
list of per-step inputs) or any tensor index. As the program picks the item
when it runs, the items become rows of one tensor (`stack`) and the index a
`getitem` of it, which differentiates into the items; a list of Python
numbers is a constant whose picked value stays weakly typed, as the number
would be (`x * ws[t]` keeps x's dtype). Items no tensor row can stand for
(layers, dicts, tensors of different shapes) are a clear error naming the
list and the line, as is another sequence that has no item at a run-time
index (`layers[i](x)` of a LayerList in a loop on a tensor). Everything
else is the plain subscript.
"""
import numbers

from .dispatch import _is_static

__all__ = ["convert_subscript"]


def convert_subscript(container, index, label="the list"):
    """`label`: the container's source text, which messages name."""
    if _is_static(index):
        if type(container) in (list, tuple):
            return _picked(container, index, label)
        from d2s.static.tensor_array import PendingArray
        if type(container) is PendingArray:
            # the list a tensor loop appends to, on the loop's first trace (it
            # learns what is appended): `fib.append(fib[i - 1] + fib[i - 2])`
            return _picked(container.items, index, label)
        if hasattr(container, "__len__") and not isinstance(container, (dict, str, bytes)) \
                and not _is_static(container) and not _is_tensor(container):
            try:
                return container[index]
            except TypeError as e:   # a sequence of layers (`layers[i](x)`), of objects
                raise _refusal(container, label, f"a {type(container).__name__} has no "
                               "item at a value known only when the program runs") from e
    return container[index]


def _is_tensor(value):
    from d2s.core.tensor import Tensor
    return isinstance(value, Tensor)


def _picked(items, index, label):
    from d2s.core import ops
    from d2s.core.tensor import Tensor
    if index.dtype.kind not in "iub":
        return items[index]   # the same TypeError Python gives for a float index
    if index.dtype.kind == "b":
        index = ops.cast(index, "int64")   # a bool picks item 0 or 1, as in Python
    if tuple(index.shape):
        _refuse(items, label, "the index is a tensor of shape "
                f"{list(index.shape)}, not one integer")
    if not items:
        _refuse(items, label, "the list is empty")
    if all(isinstance(v, numbers.Number) for v in items):
        import numpy as np
        kind = (bool if all(isinstance(v, bool) for v in items) else
                int if all(isinstance(v, numbers.Integral) for v in items) else float)
        table = np.array(items, dtype={bool: np.bool_, int: np.int64, float: np.float64}[kind])
        out = ops.getitem(ops.lift(table), index)
        out.weak = True
        return out
    for v in items:
        if not (_is_static(v) or isinstance(v, (Tensor, numbers.Number))):
            _refuse(items, label, f"it holds a {type(v).__name__}, which no tensor row stands for")
    rows = [ops.lift(v) for v in items]
    shapes = {tuple(r.shape) for r in rows}
    if len(shapes) > 1 or any(d is None for s in shapes for d in s):
        _refuse(items, label, "its items have different (or unknown) shapes: "
                + ", ".join(str(list(s)) for s in sorted(shapes, key=str)))
    return ops.getitem(ops.stack(rows), index)


def _refuse(items, label, why):
    raise _refusal(items, label, why)


def _refusal(items, label, why):
    from d2s.static import ControlFlowError
    kind = type(items).__name__
    return ControlFlowError(
        f"'{label}[...]': the {kind} '{label}' ({len(items)} items) is indexed by a tensor "
        f"(a value known only when the program runs, such as the counter of a loop on a "
        f"tensor), and {why}, so the program cannot pick the item. Index it with a Python "
        f"int instead (`for i in range(len({label})):` is a Python loop the program "
        f"unrolls), or keep the items in one tensor of equal rows (`d2s.stack(...)`) "
        f"and index that")
