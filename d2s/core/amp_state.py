"""Automatic mixed precision: which dtype each op computes in while an
`auto_cast` block is active, decided once where every op passes (`bind`).

The policy is PaddlePaddle's. Level O1: ops on the white list (matrix
products, convolutions) cast their float32 inputs to the low dtype; ops on
the black list (reductions, softmax, exp/log, losses) cast low-precision
inputs to float32, since their sums and exponentials lose too much in 16
bits; every other op runs in float32 if any floating input is float32 (so a
float16 product plus a float32 bias is float32), else in the low dtype.
Level O2: every op runs in the low dtype except the black list and ops
that only move state (optimizer updates, casts, random fills).

Living at the dispatch point, the same rule applies eagerly and while a
program is traced (the casts become ops of the program), and the casts are
ordinary ops with their own vjp, so gradients flow back in the dtype of
each parameter. Gradient ops themselves are never recast: a backward pass
computes in the dtypes its forward chose.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from . import state

WHITE_LIST = frozenset({"matmul", "conv2d", "conv3d", "bmm", "einsum", "mm"})
BLACK_LIST = frozenset({
    "exp", "expm1", "log", "log10", "log1p", "log2", "pow", "rsqrt", "tan", "acos", "asin",
    "sinh", "cosh", "sum", "mean", "prod", "cumsum", "cumprod", "softmax", "log_softmax",
    "softplus", "cross_entropy", "logsumexp", "var", "norm", "inverse", "batch_normalize"})
# Ops that only move or make values: never recast (their dtype is the caller's).
_UNTOUCHED_SUFFIXES = ("_update", "_grad", "_grad_input", "_grad_filter")
_UNTOUCHED = frozenset({
    "cast", "assign_value", "full", "full_like", "uniform", "gaussian", "print", "assert",
    "shape", "numel", "detach", "reshard", "set_item", "where", "array_append", "argmax",
    "argsort", "equal", "not_equal", "greater_than", "greater_equal", "less_than",
    "less_equal", "dropout"})

# Paddle's op names for the d2s op they mean (custom lists use Paddle's names).
_PADDLE_NAMES = {"matmul_v2": "matmul", "reduce_sum": "sum", "reduce_mean": "mean",
                 "reduce_prod": "prod", "elementwise_add": "add", "elementwise_sub": "subtract",
                 "elementwise_mul": "multiply", "elementwise_div": "divide",
                 "softmax_with_cross_entropy": "cross_entropy", "depthwise_conv2d": "conv2d"}

_FLOAT32 = np.dtype("float32")


class _Policy:
    __slots__ = ("low", "level", "white", "black")

    def __init__(self, low, level, white, black):
        self.low, self.level, self.white, self.black = low, level, white, black

    def key(self):
        return (self.low.name, self.level, tuple(sorted(self.white)), tuple(sorted(self.black)))


class _AmpTLS(threading.local):
    def __init__(self):
        self.stack = []       # active policies, innermost last (None: disabled block)
        self.suspended = 0    # > 0 while a backward pass runs


_tls = _AmpTLS()
active_blocks = [0]  # enabled blocks open in all threads: `bind` checks this first
_count_lock = threading.Lock()


def op_name(name):
    """The d2s op of a (Paddle or d2s) op name in a custom list."""
    return _PADDLE_NAMES.get(name, name)


def current():
    """The innermost active policy of this thread, or None."""
    if _tls.suspended or not _tls.stack:
        return None
    return _tls.stack[-1]


def key():
    """What a traced program depends on: None outside `auto_cast`."""
    policy = current()
    return None if policy is None else policy.key()


@contextlib.contextmanager
def policy_guard(enable, low, level, white, black):
    """Ops bound inside follow the policy (or, with `enable` False, none: an
    inner `auto_cast(False)` turns it off). The eager fast paths of `bind`
    are switched off meanwhile (`state._count_push`), so every op reaches
    the cast decision."""
    policy = _Policy(low, level, frozenset(white), frozenset(black)) if enable else None
    _tls.stack.append(policy)
    state.layer_modes_version[0] += 1  # converted functions key their programs by it
    if policy is not None:
        state._count_push(1)
        with _count_lock:
            active_blocks[0] += 1
    try:
        yield
    finally:
        _tls.stack.pop()
        state.layer_modes_version[0] += 1
        if policy is not None:
            with _count_lock:
                active_blocks[0] -= 1
            state._count_push(-1)


@contextlib.contextmanager
def suspended():
    """No recasting inside (a backward pass: its ops follow the forward's dtypes)."""
    _tls.suspended += 1
    try:
        yield
    finally:
        _tls.suspended -= 1


def _in_backward():
    """True while gradient ops are being made: eager backward's walk or a
    program's backward block."""
    if _tls.suspended:
        return True
    from . import autograd
    if getattr(autograd._queued, "callbacks", None) is not None:
        return True
    builder = state.current_builder()
    return builder is not None and getattr(builder.program, "_building_grad", False)


def cast_inputs(op, inputs):
    """`inputs` of `op`, cast as the active policy says (the same tuple when
    nothing changes)."""
    policy = current()
    name = op.name
    if policy is None or name in _UNTOUCHED or name.endswith(_UNTOUCHED_SUFFIXES):
        return inputs
    if name in policy.black:
        target = _FLOAT32
    elif name in policy.white:
        target = policy.low
    else:
        floats = [np.dtype(x.dtype) for x in inputs if _is_float(x)]
        if not floats:
            return inputs
        if policy.level == "O2":
            target = policy.low
        elif policy.level == "OD":
            target = _FLOAT32
        elif _FLOAT32 in floats:
            target = _FLOAT32
        else:
            return inputs
    if _in_backward():
        return inputs
    from .dispatch import bind
    out, changed = [], False
    for x in inputs:
        if _is_float(x):
            dt = np.dtype(x.dtype)
            # float64 is the user's explicit choice: left alone, as Paddle does
            if dt != target and dt != np.float64:
                x = bind("cast", x, dtype=target.name)
                changed = True
        out.append(x)
    return tuple(out) if changed else inputs


def _is_float(x):
    dt = getattr(x, "dtype", None)
    if dt is None:
        return False
    dt = np.dtype(dt)
    return dt.kind == "f" or dt.name == "bfloat16"
