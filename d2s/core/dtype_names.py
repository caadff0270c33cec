"""Paddle's dtype names (`d2s.float32`, `d2s.int64`, `d2s.bool`, ...): numpy
dtypes, which every d2s op and `astype` accept; and the dtype helpers
(`finfo`, `iinfo`, `get_default_dtype`, `set_default_dtype`, `is_tensor`)."""
from __future__ import annotations

import numpy as np

from . import dtypes as _dtypes

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool = np.dtype("bool")  # noqa: A001  (Paddle's name)
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
dtype = np.dtype
finfo = np.finfo
iinfo = np.iinfo

try:  # bfloat16 is numpy's through ml_dtypes, the extension JAX installs
    import ml_dtypes as _ml_dtypes
    bfloat16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - without the xla extra
    bfloat16 = None


def get_default_dtype():
    """The dtype Python floats become ("float32")."""
    return _dtypes.DEFAULT_FLOAT.name


def set_default_dtype(d):
    """Only "float32", d2s's fixed default, is accepted: Python floats become
    float32 throughout (other defaults are not supported yet)."""
    if _dtypes.as_dtype(d) != _dtypes.DEFAULT_FLOAT:
        raise NotImplementedError(f"set_default_dtype({d!r}): d2s's default float dtype is "
                                  "float32 and cannot be changed yet; pass dtype= to the "
                                  "ops that create tensors instead")


def is_tensor(x):
    """True for a d2s Tensor (eager) or a static Variable standing for one."""
    from .ops._base import is_value
    return is_value(x)
