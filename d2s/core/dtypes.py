"""Dtype policy: NumPy 2 promotion with weak Python scalars, float32 by default.

One place decides what dtype a Python value becomes, so eager tensors,
static constants and branch outputs agree.
"""
from __future__ import annotations

import numpy as np

DEFAULT_FLOAT = np.dtype("float32")
DEFAULT_INT = np.dtype("int64")

_ALIASES = {"float": "float32", "int": "int64", "bool": "bool"}


def as_dtype(dtype) -> np.dtype:
    """Normalize a user dtype ("float32", np.float32, np.dtype, d2s alias)."""
    if isinstance(dtype, str):
        dtype = _ALIASES.get(dtype, dtype)
    if dtype is float:
        return DEFAULT_FLOAT
    if dtype is int:
        return DEFAULT_INT
    return np.dtype(dtype)


_NAMES = {}


def dtype_name(dtype: np.dtype) -> str:
    """`dtype.name`, remembered: numpy computes the name in Python on every
    read (microseconds), and every constant a trace makes asks for it."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype.name
    return name


_BY_NAME = {}


def named_dtype(name) -> np.dtype:
    """`np.dtype(name)` for a dtype's name (what op attributes hold), remembered:
    parsing the name costs a microsecond, and every constant of a trace asks."""
    dtype = _BY_NAME.get(name)
    if dtype is None:
        dtype = np.dtype(name)
        if type(name) is str:
            _BY_NAME[name] = dtype
    return dtype


def is_floating(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating)


def is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def default_dtype_for(value) -> np.dtype:
    """Dtype a Python value gets when it becomes a tensor on its own."""
    if isinstance(value, np.generic):  # numpy scalars keep their dtype (np.float64 is a float)
        return value.dtype
    if isinstance(value, bool):
        return np.dtype("bool")
    if isinstance(value, int):
        return DEFAULT_INT
    if isinstance(value, float):
        return DEFAULT_FLOAT
    arr = np.asarray(value)
    if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        # nested Python lists of floats: float32 like a Python float.
        return DEFAULT_FLOAT
    return arr.dtype


_WEAK_RESULTS = {}


def weak_scalar_dtype(partner_dtype, scalar) -> np.dtype:
    """Dtype of `scalar` when combined with a tensor of `partner_dtype`.

    NumPy 2 (NEP 50): the Python scalar is weak, so the tensor's dtype wins
    unless the scalar's kind is higher (int tensor + 1.5 -> float64). That
    depends on the scalar's type, never its value: the answer is remembered
    per (dtype, type), since `np.result_type` costs microseconds and every
    Python number next to a tensor in a trace asks.
    """
    key = (partner_dtype, type(scalar))
    found = _WEAK_RESULTS.get(key)
    if found is None:
        found = _WEAK_RESULTS[key] = np.result_type(np.dtype(partner_dtype), scalar)
    return found
