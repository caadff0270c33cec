"""Mode state: static mode, the active program builder, and grad mode.

Grad mode and program building are per thread (like torch's grad mode), so
concurrent tracing in several threads never mixes programs; the global
`enable_static()` switch is process-wide, like PaddlePaddle's.
"""
from __future__ import annotations

import contextlib
import threading


class _ThreadState(threading.local):
    def __init__(self):
        self.grad_enabled = True
        # Stack of active builders (static.builder.Builder); top one receives ops.
        self.builders = []


_tls = _ThreadState()
_global = {"static": False}

# `all_eager[0]` is True while static mode is off and no thread has pushed a
# builder (or an eager_guard): then every op certainly runs eagerly, which the
# eager hot path learns from one plain read instead of a thread-local lookup.
# False says nothing: the per-thread state decides (see `current_builder`).
all_eager = [True]
_pushed = [0]  # builder-stack entries pushed in all threads
_pushed_lock = threading.Lock()


def _update_all_eager():
    all_eager[0] = not _global["static"] and _pushed[0] == 0


def _count_push(n):
    with _pushed_lock:
        _pushed[0] += n
        _update_all_eager()


# Bumped whenever a Layer attribute holding a Tensor is assigned or deleted
# (nn.Layer.__setattr__ / __delattr__): programs that read layer tensors by
# attribute path look them up again only after it changed.
tensor_attributes_version = [0]

# Bumped whenever a Layer attribute is assigned or deleted with a value that
# is not a Tensor (nn.Layer.__setattr__ / __delattr__; jit.outliving when it
# puts entries back): the guards on plain values a program read from Layers
# (jit.read_guards) are checked again only after it changed.
plain_attributes_version = [0]

# While programs are traced, a recorder per trace (jit.guards) of the eager
# Tensors whose value the traced code turned into a Python value (`int(t)`,
# `bool(t)`, `t.item()`), with the value read: the program holds only while
# they still hold it. Each recorder keeps the reads of its own thread (an
# enclosing trace gets those of the traces inside it too). Empty: nothing is
# recorded and eager code pays one truth test.
value_reads = []


def read_value(tensor, value):
    for recorder in list(value_reads):
        recorder.append((tensor, value))

# Bumped whenever a Layer's `training` flag is set (nn.Layer.training): a
# `to_static` function reads the flags its programs depend on again only
# after it changed (jit.static_function, `_mode_flags`).
layer_modes_version = [0]

# Bumped (with layer_modes_version) whenever a forward hook is registered or
# removed (nn.Layer.register_forward_pre_hook / _post_hook): programs traced
# with other hooks are not reused (it is part of a `to_static` key once set).
forward_hooks_version = [0]


def enable_static():
    """Switch the process to static mode: ops build into the default program."""
    with _pushed_lock:
        _global["static"] = True
        _update_all_eager()


def disable_static():
    with _pushed_lock:
        _global["static"] = False
        _update_all_eager()


def in_dynamic_mode() -> bool:
    """True when ops run eagerly now (no program is being built)."""
    return current_builder() is None


def current_builder():
    """The builder receiving ops now, or None when ops run eagerly."""
    if _tls.builders:
        return _tls.builders[-1]
    if _global["static"]:
        from_hook = _default_builder_hook[0]
        return from_hook() if from_hook else None
    return None


# Set by d2s.static at import: returns the builder of the default main program.
_default_builder_hook = [None]


def set_default_builder_hook(fn):
    _default_builder_hook[0] = fn


@contextlib.contextmanager
def building(builder):
    _tls.builders.append(builder)
    _count_push(1)
    try:
        yield builder
    finally:
        _tls.builders.pop()
        _count_push(-1)


@contextlib.contextmanager
def eager_guard():
    """Ops inside run eagerly even while a program is being built (e.g. a
    Layer created under `program_guard` still gets eager parameters)."""
    _tls.builders.append(None)
    _count_push(1)
    try:
        yield
    finally:
        _tls.builders.pop()
        _count_push(-1)


def grad_enabled() -> bool:
    return _tls.grad_enabled


class _GradMode(contextlib.ContextDecorator):
    """Sets grad mode inside; re-entrant and thread-safe (the previous modes
    are kept per thread, so one decorated function may recurse or run in
    several threads)."""
    _enabled = None

    def __enter__(self):
        _tls.__dict__.setdefault("grad_stack", []).append(_tls.grad_enabled)
        _tls.grad_enabled = self._enabled
        return self

    def __exit__(self, *exc):
        _tls.grad_enabled = _tls.grad_stack.pop()
        return False

    def __call__(self, func):
        """As a decorator: the wrapper says what it wraps (`_d2s_grad_mode` and
        `__wrapped__`), so conversion can convert `func` and keep the mode."""
        wrapper = super().__call__(func)
        wrapper._d2s_grad_mode = self._enabled
        return wrapper


class no_grad(_GradMode):
    """Context manager and decorator: eager ops record no tape inside."""
    _enabled = False


class enable_grad(_GradMode):
    """Context manager and decorator: eager ops record the tape inside."""
    _enabled = True
