"""`XlaProgram`: one Program (its ops, feeds and fetches) compiled by XLA.

The ops are lowered to one pure function of (feeds, parameters) and
`jax.jit`-compiled, once per concrete feed shapes/dtypes (a `None` dim
compiles per size seen). Results come back with the error code (see
`errors`): an error raises as the numpy backend would; tensor arrays or loop
histories that needed more rows than compiled for recompile with room for
them and run again (nothing was written back; a `print` in the program
prints again). An executable is cached only once it is fully built.
"""
from __future__ import annotations

import threading

import numpy as np

from ...static.passes import ProgramView, dce
from ...static.scope import UndefinedValue
from ._jax import jax, jnp, x64
from .errors import ErrorSites, Unsupported
from .lowering import Lowerer, lower_program, rule_for
from .params import DeviceParams
from .values import TensorArray
from . import persistent

# Rows a tensor array has free when its loop starts, and trips a loop history
# holds; when a run needs more, the next power of two that fits (recompiled).
INITIAL_ROOM = 64


class Executable:
    """One compiled shape signature, and how to read its flat results.

    Results, flat (the cheapest call): per fetch its value (a tensor array:
    buffer and length) and, if it may be undefined, its flag; then the new
    values of written parameters; then the error code when any site exists,
    and the rows needed when tensor arrays or loop histories exist."""

    def __init__(self, compiled, lowered, sites, effects, layout, n_written, uses_room):
        self.compiled = compiled
        self.lowered = lowered
        self.sites = sites
        self.effects = effects
        self.layout = layout          # per fetch: (is tensor array, label if it may be undefined)
        self.n_written = n_written
        self.uses_room = uses_room

    def read(self, outs):
        """(fetch values, written device arrays, error code, rows needed)."""
        it = iter(outs)
        fetched = []
        for is_array, label in self.layout:
            value = next(it)
            if is_array:
                length = np.asarray(next(it)).item()
                value = np.asarray(value)[:length].copy()
            else:
                value = np.asarray(value).copy()  # writable, as numpy results are
            if label is not None and np.asarray(next(it)).item():
                value = UndefinedValue(label)  # what the numpy backend hands out for it
            fetched.append(value)
        written = [next(it) for _ in range(self.n_written)]
        code = np.asarray(next(it)).item() if len(self.sites) else 0
        need = np.asarray(next(it)).item() if self.uses_room else 0
        return fetched, written, code, need


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
                outs = exe.compiled(*feeds, *params)
                if exe.effects:
                    jax.effects_barrier()  # printed before we return
            fetched, written, code, need = exe.read(outs)
            if need > self.room:
                # Rows were dropped (and anything computed from them, errors
                # included, is void): run again with room for them all.
                with self._lock:
                    self.room = max(self.room, 1 << (int(need) - 1).bit_length())
                continue
            if code:
                raise exe.sites.error(code)
            for name, value in zip(self.written, written):
                self.params.write(name, value)
            return fetched

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
        n_feeds = len(self.feed_names)

        def fn(*args):
            low = Lowerer(self.program, self.blocks, sites, room)
            env = lower_program(low, dict(zip(self.feed_names, args[:n_feeds])),
                                dict(zip(self.param_names, args[n_feeds:])))
            outs, layout = [], []
            for name in self.fetch_names:
                value = env.get(name)
                is_array = isinstance(value, TensorArray)
                outs.extend([value.buf, value.length] if is_array else [value])
                flag = env.flag(name) if name in low.undefined else None
                if flag is not None:
                    outs.append(jnp.asarray(flag))
                layout.append((is_array, None if flag is None else low.undefined[name]))
            outs.extend(env.get(n) for n in self.written)
            if len(sites):
                outs.append(low.err)
            if low.uses_room:
                outs.append(low.need)
            traced.update(effects=low.has_effects, layout=layout, uses_room=low.uses_room)
            return tuple(outs)

        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in feeds]
        specs += [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in self.params.vars]
        with x64():
            lowered = jax.jit(fn).lower(*specs)
            compiled = persistent.compile(lowered, cacheable=not traced["effects"])
        return Executable(compiled, lowered, sites, traced["effects"], traced["layout"],
                          len(self.written), traced["uses_room"])
