"""`XlaProgram`: one Program (its ops, feeds and fetches) compiled by XLA.

The ops are lowered to one pure function of (feeds, parameters) and
`jax.jit`-compiled, once per concrete feed shapes/dtypes (a `None` dim
compiles per size seen). Results come back with the error code (see
`errors`): a capacity error recompiles with more room and runs again, any
other raises as the numpy backend would. An executable is cached only once
it is fully built.
"""
from __future__ import annotations

import threading

import numpy as np

from ...static.executor import UndefinedValue
from ...static.passes import ProgramView, dce
from ._jax import jax, jnp, x64
from .control_flow import CONTROL_FLOW
from .errors import CapacityExceeded, ErrorSites, Unsupported
from .lowering import Lowerer, lower_program, rule_for
from .params import DeviceParams
from .values import TensorArray
from . import persistent

# Rows a tensor array has free when its loop starts; grows 4x when exceeded.
INITIAL_ROOM = 16


class Executable:
    """One compiled shape signature, and what reading its results needs."""

    def __init__(self, compiled, lowered, sites, effects, fetch_labels):
        self.compiled = compiled
        self.lowered = lowered
        self.sites = sites
        self.effects = effects
        self.fetch_labels = fetch_labels  # per fetch: the variable name if it may be undefined


class XlaProgram:
    def __init__(self, program, feed_names, fetch_names, ops=None):
        gb = program.global_block()
        ops = list(gb.ops if ops is None else ops)
        self.program = program
        self.feed_names = list(feed_names)
        self.fetch_names = list(fetch_names)
        self.param_names = list(program.captured)
        self.written = sorted({v.name for op in ops for v in op.outputs
                               if v.name in program.captured})
        view = dce.run(ProgramView(program, ops, self.fetch_names + self.written,
                                   self.feed_names + self.param_names))
        self.blocks = view.blocks
        for block_ops in self.blocks.values():
            for op in block_ops:
                if op.type not in CONTROL_FLOW:
                    rule_for(op)  # an op with no XLA form: Unsupported before any tracing
        self.params = DeviceParams(program, self.param_names)
        self.room = INITIAL_ROOM
        self._executables = {}
        self._lock = threading.Lock()

    # ---- running ------------------------------------------------------------------
    def __call__(self, feeds):
        """Outputs (numpy arrays) for `feeds` (numpy arrays in `feed_names` order)."""
        while True:
            exe = self.executable(feeds)
            params = self.params.device_values()
            with x64():
                fetched, flags, written, err = exe.compiled(list(feeds), params)
                if exe.effects:
                    jax.effects_barrier()  # printed before we return
            code = int(err)
            if code:
                error = exe.sites.error(code)
                if isinstance(error, CapacityExceeded):
                    with self._lock:
                        self.room *= 4  # nothing was written back: run again, roomier
                    continue
                raise error
            for name, value in zip(self.written, written):
                self.params.write(name, value)
            return [_to_host(v, f, label)
                    for v, f, label in zip(fetched, flags, exe.fetch_labels)]

    def executable(self, feeds):
        key = (tuple((a.shape, a.dtype) for a in feeds), self.room)
        exe = self._executables.get(key)
        if exe is None:
            with self._lock:
                exe = self._executables.get(key)
                if exe is None:
                    exe = self._compile(feeds, key[1])
                    self._executables[key] = exe  # only a complete entry is cached
        return exe

    def lowered_text(self, feeds):
        """The StableHLO XLA compiles for these feeds' shapes."""
        return self.executable(feeds).lowered.as_text()

    # ---- compiling ---------------------------------------------------------------------
    def _compile(self, feeds, room):
        sites = ErrorSites()
        traced = {}

        def fn(feed_values, param_values):
            low = Lowerer(self.program, self.blocks, sites, room)
            env = lower_program(low, dict(zip(self.feed_names, feed_values)),
                                dict(zip(self.param_names, param_values)))
            fetched, flags, labels = [], [], []
            for name in self.fetch_names:
                fetched.append(env.get(name))
                flag = env.flag(name) if name in low.undefined else None
                flags.append(None if flag is None else jnp.asarray(flag))
                labels.append(low.undefined.get(name) if flag is not None else None)
            traced.update(effects=low.has_effects, labels=labels)
            return fetched, flags, [env.get(n) for n in self.written], low.err

        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in feeds]
        params = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in self.params.vars]
        with x64():
            lowered = jax.jit(fn).lower(specs, params)
            compiled = persistent.compile(lowered, cacheable=not traced["effects"])
        return Executable(compiled, lowered, sites, traced["effects"], traced["labels"])


def _to_host(value, flag, label):
    if flag is not None and bool(flag):
        return UndefinedValue(label)  # what the numpy backend hands out for it
    if isinstance(value, TensorArray):
        return value.to_host().copy()
    return np.array(value)  # a writable copy, as numpy results are
