"""Tensor methods of Paddle's that are not functions: `x.to(...)` (a dtype
conversion; devices are all the host, so a device argument changes
nothing), `x.element_size()` (bytes per element) and `x.pin_memory()` (the
identity: there is no device to pin for)."""
from __future__ import annotations

import numpy as np

__all__ = ["EXTRA_METHODS"]

_DEVICE_WORDS = ("cpu", "gpu", "cuda", "xpu", "npu", "ipu", "custom")


def _is_device(arg):
    if isinstance(arg, str):
        return arg.split(":")[0].lower() in _DEVICE_WORDS
    return "Place" in type(arg).__name__ or "Place" in str(arg)


def _to(self, *args, **kwargs):
    """`x.to(dtype)`, `x.to(device)`, `x.to(device, dtype)`, `x.to(other)`
    (other's dtype), with `dtype=` / `device=` / `blocking=` keywords: the
    values cast to the dtype asked for (the same tensor when none is)."""
    from .core.dtypes import as_dtype
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("device", None)
    kwargs.pop("blocking", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"Tensor.to: unexpected arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, bool) or arg is None:
            continue  # blocking / non_blocking given by position
        if hasattr(arg, "dtype") and hasattr(arg, "shape"):
            dtype = arg.dtype
        elif _is_device(arg):
            continue
        else:
            dtype = arg
    if dtype is None:
        return self
    try:
        target = as_dtype(dtype)
    except (TypeError, ValueError, KeyError) as e:
        raise TypeError(f"Tensor.to: {dtype!r} is neither a dtype nor a device ('cpu', "
                        f"'gpu:0', a Place)") from e
    return self if np.dtype(self.dtype) == target else self.astype(target)


def _element_size(self):
    """Bytes per element of this tensor's dtype."""
    return int(np.dtype(self.dtype).itemsize)


def _pin_memory(self, blocking=True):
    return self


EXTRA_METHODS = {"to": _to, "element_size": _element_size, "pin_memory": _pin_memory}
