"""Views: what basic indexing gives, and how an in-place write to it reaches
the tensor it was taken from.

PyTorch and PaddlePaddle give a view for basic indexing (ints, slices,
`None`, `...`): `y[0][1] = 7` and `row = y[0]; row[1] = 7` change `y`.
d2s never shares storage (a Tensor's array is never written, core.inplace),
so a view is a value that remembers `(base, index)`; an in-place write to
it rebinds it and then writes the base, `base[index] = view` (itself an
in-place write, so chains `y[0][1][2] = v` reach the root, and gradients
flow through each write as through `set_item`). The same holds for a
program's values (static.rebinding): the write rebinds the base Variable.

Not views, as in PyTorch and numpy: advanced indexing (integer or bool
tensors, lists) gives a copy, and so do the results of every other op.

Where shared storage would differ: a view remembers its base's version (or,
in a program, the Variable holding the base) when taken. Written after the
base was written by another route (the base itself, a sibling view
`a = y[0]; b = y[0]; a[1] = 7; b[0] = 1`), the view first takes the base's
values again, so the write starts from them and undoes nothing (PyTorch's
answer). *Reading* such a view before writing it gives its values as they
were when it was taken: take the view again after writing the base.
"""
from __future__ import annotations

import numpy as np


def is_basic(spec, tensors):
    """Whether an encoded index is basic indexing (a view): ints, slices,
    None, Ellipsis, and 0-d integer tensors (as an int) -- not an integer
    or bool tensor with dims, nor a list."""
    for item in spec:
        if item[0] == "tensor":
            t = tensors[item[1]]
            shape = getattr(t, "shape", None)
            dtype = getattr(t, "dtype", None)
            if shape is None or len(shape) != 0 or dtype is None \
                    or not np.issubdtype(np.dtype(dtype), np.integer):
                return False
    return True


def remember(out, base, index):
    """Mark `out` (just made as `base[index]`) a view of `base`."""
    from .dispatch import Symbolic
    from .tensor import Tensor
    if isinstance(out, Tensor) and isinstance(base, Tensor):
        out._base = (base, index, base._version)
    elif isinstance(out, Symbolic) and hasattr(out, "_base") and isinstance(
            base, (Tensor, Symbolic)):
        out._base = (base, index, _token(base))


def _token(base):
    """What a static view remembers of its base: the Variable holding the
    base's value when the view was taken (an eager base, a buffer written
    through the trace's overlay, has no token: its writes are checked
    eagerly)."""
    latest = getattr(base, "_latest_value", None)
    return latest() if latest is not None else None
