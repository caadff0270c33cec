"""Default programs, `program_guard` and `data`."""
from __future__ import annotations

import contextlib
import threading

from ..core import state
from ..core.dtypes import as_dtype
from .ir import Program


class _Programs(threading.local):
    def __init__(self):
        self.stack = []


_tls = _Programs()
_default = Program()


def default_main_program():
    return _tls.stack[-1] if _tls.stack else _default


def _default_builder():
    return default_main_program()._builder


state.set_default_builder_hook(_default_builder)


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Ops inside build into `main_program` (in either mode).

    `startup_program` is accepted for PaddlePaddle compatibility; d2s
    parameters are eager Tensors, so there is nothing to initialise.
    """
    if not isinstance(main_program, Program):
        raise TypeError("program_guard expects a d2s.static.Program")
    _tls.stack.append(main_program)
    try:
        with state.building(main_program._builder):
            yield main_program
    finally:
        _tls.stack.pop()


def data(name, shape, dtype="float32"):
    """Declare a feed Variable; `None` (or -1) marks a dim known only at run time."""
    prog = default_main_program()
    gb = prog.global_block()
    if name in gb.vars:
        raise ValueError(f"data: a variable named {name!r} already exists in the program")
    shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
    var = gb.create_var(shape, as_dtype(dtype), name=name, stop_gradient=True, is_data=True)
    prog.feed_vars[name] = var
    return var
