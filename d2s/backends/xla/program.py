"""`XlaProgram`: one Program (its ops, feeds and fetches) compiled by XLA.

The ops are lowered to one pure function of (feeds, parameters) and
`jax.jit`-compiled, once per concrete feed shapes/dtypes (a `None` dim
compiles per size seen). Results come back with the error code (see
`errors`): an error raises as the numpy backend would; tensor arrays or loop
histories that needed more rows than compiled for recompile with room for
them and run again (nothing was written back; a `print` in the program
prints again). An executable is cached only once it is fully built.

A program can also be split in two executables that hand values to each
other on the device (a forward whose backward runs later): the first
*keeps* some names (returned as a device structure, `Residuals`, never
copied to the host), the second is *given* them.

Feeds and parameters with placements (`d2s.distributed`) make a sharded run
(`sharding.RunLayout`): the executable is compiled for their shardings (also
part of its cache key), XLA's partitioner inserts the collectives, and each
fetch reports the placements XLA gave it (`output_attrs`).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ...core import dist_attr
from ...core import random as d2s_random
from ...core.interrupts import defer as defer_interrupts, resume as resume_interrupts
from ...core.registry import OPS
from ...gc_pause import gc_paused
from ...static.passes import ProgramView, dce
from ...static.scope import UndefinedValue
from ._jax import call_x64, jax, jnp, x64
from .cache_warnings import folded_cache_warnings
from .errors import ErrorSites
from .lowering import Lowerer, lower_program, rule_for
from .params import DeviceParams
from .sharding import RunLayout, agree_on_program, placements_of, put, to_host
from .values import TensorArray
from . import background, lowered_cache, persistent

# Rows a tensor array has free when its loop starts, and trips a loop history
# holds; when a run needs more, the next power of two that fits (recompiled).
INITIAL_ROOM = 64


class Residuals:
    """Values one executable kept for another, left on the device: `values`
    maps a name to (value, undefined flag or None); `labels` names the ones
    that may be undefined (for the NameError / zero-cotangent rules); `key`
    is the producing executable's, which fixes their shapes (an executable
    given them is compiled per key)."""
    __slots__ = ("values", "labels", "key")

    def __init__(self, values, labels, key):
        self.values = values
        self.labels = labels
        self.key = key


def _host_arrays(values):
    """`values` as writable host arrays, as numpy results are."""
    return list(map(np.array, values))


def _scalar(value):
    """A scalar result (an error code, the rows needed) as a Python number,
    waited for first: `np.asarray` of a value XLA is still computing hands
    the wait and the copy to XLA's worker threads, one more thread switch
    per call than waiting here and copying the ready value (the fast paths
    below do the same inline)."""
    wait = getattr(value, "block_until_ready", None)
    if wait is not None:
        wait()
    return np.asarray(value).item()


class Executable:
    """One compiled shape signature, and how to read its flat results.

    Results, flat (the cheapest call): per fetch its value (a tensor array:
    buffer and length) and, if it may be undefined, its flag; then the new
    values of written parameters; then the error code when any site exists,
    and the rows needed when tensor arrays or loop histories exist; then the
    kept values (one structure, left on the device)."""

    def __init__(self, key, compiled, lowered, sites, traced, n_written):
        self.key = key
        self.compiled = compiled
        self.lowered = lowered
        self.sites = sites
        self.effects = traced["effects"]
        self.layout = traced["layout"]  # per fetch: (is tensor array, label if may be undefined)
        self.kept_labels = traced["kept_labels"]
        self.n_written = n_written
        self.uses_room = traced["uses_room"]
        # Every fetch a plain array, then the written parameters, then the
        # error code if `checked`, nothing else: read without a walk (`plain`:
        # nothing written, nothing checked either).
        self.checked = bool(len(sites))
        self.lean = (not any(a or lab for a, lab in self.layout)
                     and not self.uses_room and self.kept_labels is None)
        self.plain = self.lean and not n_written and not self.checked
        # 64-bit arguments (complex128's 64-bit parts too) lose their width unless
        # x64 is on when they are passed.
        self.needs_x64 = any(np.dtype(a.dtype).itemsize >= 8 for a in traced["args"])
        self.out_attrs = None  # per fetch: the DistAttr XLA gave it (sharded runs)
        self.donates = ()  # positions of the parameters whose buffers a call donates
        # (draw, shape, dtype) per value drawn on the host before a call, in
        # program order: the last arguments (see `OpDef.draws`)
        self.draws = traced.get("draws", ())

    def drawn(self):
        """This call's host draws, in program order (d2s's generator advances)."""
        return [draw() for draw, _, _ in self.draws]

    def call(self, args):
        """The raw results for `args` (the compiled function's fast C++ entry)."""
        call = self.compiled._call or self.compiled
        if self.needs_x64:
            return call_x64(call, args)
        return call(*args)

    def read(self, outs, on_device=False):
        """(fetch values, written device arrays, error code, rows needed, kept).
        `on_device`: plain fetches stay device arrays (see `XlaProgram`)."""
        if self.plain:
            return (list(outs) if on_device else [np.array(v) for v in outs]), (), 0, 0, None
        it = iter(outs)
        fetched = []
        host = np.asarray if self.out_attrs is None else to_host  # one process: a view
        on_device = on_device and self.out_attrs is None
        for is_array, label in self.layout:
            value = next(it)
            if is_array:
                length = host(next(it)).item()
                value = np.moveaxis(host(value)[:length], 0, is_array - 1).copy()
            elif not on_device:
                value = np.array(host(value))  # a writable copy, as numpy results are
            if label is not None and _scalar(next(it)):
                value = UndefinedValue(label)  # what the numpy backend hands out for it
            fetched.append(value)
        written = [next(it) for _ in range(self.n_written)]
        code = _scalar(next(it)) if len(self.sites) else 0
        need = _scalar(next(it)) if self.uses_room else 0
        kept = None
        if self.kept_labels is not None:
            kept = Residuals(next(it), self.kept_labels, self.key)
        return fetched, written, code, need, kept


class XlaProgram:
    """`program`'s `ops` (default: block 0) as XLA executables.

    `keep`: names returned on the device as `Residuals` (see the module
    docstring); `given`: names this program reads from a `Residuals`
    passed to each call. Captured parameters are written back after a
    successful run — those ops write, and `writes` ({value name: captured
    name}: a pure program's new value of a parameter) — their device arrays
    kept for the next run. `defined`: fetches the caller reads as values (a
    training step's outputs): one a run left undefined raises its NameError
    before anything is written, as reading it after the numpy backend's run
    does, before its commit."""

    def __init__(self, program, feed_names, fetch_names, ops=None, keep=(), given=(),
                 writes=None, donate=False, defined=(), device_results=False):
        gb = program.global_block()
        # Fetches are left on the device (device arrays, which the caller keeps
        # in device-resident Tensors: `d2s.core.tensor.DeviceTensor`) rather
        # than copied to the host: a forward's or a step's results. Others (the
        # static Executor's fetches, a taped forward's) are host arrays.
        self.device_results = device_results
        ops = list(gb.ops if ops is None else ops)
        self.program = program
        self.feed_names = list(feed_names)
        self.fetch_names = list(fetch_names)
        self.keep = list(keep)
        self.given = list(given)
        self.param_names = list(program.captured)
        # (captured name, name of its new value)
        self.written = [(n, n) for n in sorted({v.name for op in ops for v in op.outputs
                                                if v.name in program.captured})]
        self.written += [(param, value) for value, param in (writes or {}).items()]
        self.written_at = [self.param_names.index(n) for n, _ in self.written]
        view = dce.run(ProgramView(program, ops, self.fetch_names + self.keep
                                   + [value for _, value in self.written],
                                   self.feed_names + self.param_names + self.given))
        self.blocks = view.blocks
        for block_ops in self.blocks.values():
            for op in block_ops:
                rule_for(op)  # an op with no XLA form: Unsupported before any tracing
        # random ops: their values are drawn on the host before each call
        self.has_draws = any(getattr(OPS.get(op.type), "draws", False)
                             for block_ops in self.blocks.values() for op in block_ops)
        self.params = DeviceParams(program, self.param_names)
        # `donate`: the written parameters' buffers are donated to the run that
        # replaces them (see `_call_donating`); positions in `param_names`.
        self.donated = tuple(sorted({self.param_names.index(n) for n, _ in self.written})) \
            if donate and not self.given else ()
        # (position in `fetch_names`, the op defining it: where its NameError points)
        self.defined = [(self.fetch_names.index(n), _producer(gb, n)) for n in defined]
        self.room = INITIAL_ROOM
        self._executables = {}
        self._lock = threading.Lock()
        # Tiered compilation (see `background`): `compile_mode` is to_static's
        # `compile=` (None: D2S_XLA_SYNC decides); `tiers` made on first need.
        self.compile_mode = None
        self.label = "a program"
        self.tiers = None

    # ---- running ------------------------------------------------------------------
    def __call__(self, feeds, tensors=None, feed_attrs=None):
        """Outputs (numpy arrays) for `feeds` (numpy arrays in `feed_names` order).
        `tensors`: the captured Tensors to read now (default: the program's);
        `feed_attrs`: per feed its placements (a DistAttr) or None."""
        return self.run(feeds, tensors, feed_attrs=feed_attrs)[0]

    def run(self, feeds, tensors=None, given=None, params=None, feed_attrs=None):
        """(outputs, kept `Residuals` or None, the parameters' device arrays used).
        `given`: the `Residuals` this program reads (when it has `given` names);
        `params`: device arrays to read instead of the parameters' current ones
        (a backward reads what its forward read); `feed_attrs`: see `__call__`."""
        layout = self.layout(feeds, feed_attrs, tensors)
        args = list(feeds) if layout is None else [
            put(a, s) for a, s in zip(feeds, layout.feeds)]
        if given is not None:
            args.insert(0, given.values)
        if not self.has_draws:
            return self._run(feeds, args, tensors, given, params, layout, [])
        saved = d2s_random.snapshot()
        try:
            drawn = self.executable(feeds, given, layout).drawn()
            return self._run(feeds, args, tensors, given, params, layout, drawn)
        except BaseException:
            # not run (an error, or numpy runs the call again): the generator
            # as it was, as if nothing was drawn
            d2s_random.restore(saved)
            raise

    def _run(self, feeds, args, tensors, given, fixed, layout, drawn):
        """`run` with the call's host draws made (`drawn`, the last arguments)."""
        while True:
            exe = self.executable(feeds, given, layout)
            if exe.donates:  # Ctrl-C held back from the donation to the write-back
                token = defer_interrupts()
                try:
                    out = self._try(exe, feeds, args, tensors, fixed, layout, drawn)
                finally:
                    resume_interrupts(token)
            else:
                out = self._try(exe, feeds, args, tensors, fixed, layout, drawn)
            if out is not None:
                return out

    def _try(self, exe, feeds, args, tensors, fixed, layout, drawn):
        """One run of `exe`: (outputs, kept, parameters), or None when it must
        run again with more room."""
        params = fixed if fixed is not None else self.params.device_values(
            tensors, None if layout is None else layout.params)
        if exe.donates:
            outs = self._call_donating(exe, args, params, drawn)
        else:
            outs = exe.call(args + params + drawn)
        if exe.effects:
            jax.effects_barrier()  # printed before we return
        fetched, written, code, need, kept = exe.read(outs, self.device_results)
        if need > self.room:
            # Rows were dropped (and anything computed from them, errors
            # included, is void): run again with room for them all.
            with self._lock:
                self.room = max(self.room, 1 << (int(need) - 1).bit_length())
            return None
        if code:
            if exe.donates:  # the old values, in the buffers donated to the run
                self.params.write(self.written_at, written)
            raise exe.sites.error(code)
        for i, op in self.defined:
            if type(fetched[i]) is UndefinedValue:
                raise fetched[i].error(op)  # (nothing donated: see `donated_for`)
        self.params.write(self.written_at, written)
        return fetched, kept, params

    def _call_donating(self, exe, args, params, drawn=()):
        """`exe.call` donating the written parameters' device arrays: each one
        only the run reads (see `DeviceParams.donate`) goes in as its device
        array, which XLA reuses for the new value; any other as its host
        array (JAX donates a copy of it). Such an executable needs no room
        and prints nothing, and a run that fails returns the old values
        (`donated_for`): once it ran, nothing needs the old buffers."""
        params = list(params)
        released = self.params.donate(exe.donates, params)
        try:
            return exe.call(args + params + list(drawn))
        except BaseException as e:
            self.params.restore(released, e)
            raise

    def fast_path(self, feeds):
        """A function (feeds, tensors) -> output arrays for programs whose every
        call compiles to this one executable (fixed feed shapes) and returns
        plain arrays, then the written parameters' new values, then the
        error code if it has error sites (no tensor arrays, room to grow,
        printing or kept values), or None: the per-call path of small
        programs and of training steps, without `run`'s executable lookup,
        loop and walk of the results. Made after a run on `feeds` (which
        compiled the executable and called it once). A failed check raises
        as in `run` (a kernel's: `RaisesOnNumpy`, for the caller)."""
        exe = self.executable(feeds)
        if not exe.lean or exe.effects or exe.draws:
            return None
        if exe.n_written:
            return self._fast_step(exe)
        return self._fast_checked(exe) if exe.checked else self._fast_forward(exe)

    def _fast_forward(self, exe):
        """(Results read by `map`: no comprehension frame per call.)"""
        compiled, array = exe.compiled, np.array
        device_values = self.params.device_values
        call = compiled._call or compiled  # (its C++ entry, set by the run before)
        if self.device_results:  # the results as XLA returned them (see `__init__`)
            if exe.needs_x64:
                def forward(feeds, tensors):
                    return call_x64(call, feeds + device_values(tensors))
            elif self.param_names:
                def forward(feeds, tensors):
                    return call(*feeds, *device_values(tensors))
            else:
                def forward(feeds, tensors):
                    return call(*feeds)
            if not exe.needs_x64:
                # What an inline cache (d2s.jit.inline_cache) calls itself, in
                # its own frame: the executable's C++ entry, fed the inputs and
                # then (when it has any) `device_values` of the parameters.
                forward.exe_call = call
                forward.param_values = device_values if self.param_names else None
            return forward
        if exe.needs_x64:
            def forward(feeds, tensors):
                return list(map(array, call_x64(call, feeds + device_values(tensors))))
        elif self.param_names:
            def forward(feeds, tensors):
                return list(map(array, call(*feeds, *device_values(tensors))))
        else:
            def forward(feeds, tensors):
                return list(map(array, call(*feeds)))
        return forward

    def _fast_checked(self, exe):
        """A forward with run-time checks: its error code comes last."""
        call, asarray = exe.call, np.asarray
        fetch = list if self.device_results else _host_arrays  # (list: no call per value)
        device_values, error = self.params.device_values, exe.sites.error

        def forward(feeds, tensors):
            *outs, code = call(feeds + device_values(tensors))
            code.block_until_ready()  # (then copied: see `_scalar`)
            code = asarray(code).item()
            if code:
                raise error(code)
            return fetch(outs)
        return forward

    def _fast_step(self, exe):
        """A program writing parameters (a training step): the new values are
        written back, then the fetches read; a checked program's error code
        raises as in `run` (a failed run that selects wrote the old values)."""
        if exe.donates:
            return self._fast_donating_step(exe)
        device_values, write = self.params.device_values, self.params.write
        fetch = list if self.device_results else _host_arrays  # (list: no call per value)
        asarray = np.asarray
        n_fetched, written_at = len(self.fetch_names), self.written_at

        def call(feeds, tensors):
            return exe.call(feeds + device_values(tensors))

        if exe.checked:  # the error code comes last (see `run`)
            selects = bool(self.donated)  # a failed run returns the old values (`_compile`)

            def checked_step(feeds, tensors):
                *outs, code = call(feeds, tensors)
                if selects:  # (written first, the code read last: measured cheaper)
                    write(written_at, outs[n_fetched:])
                    fetched = fetch(outs[:n_fetched])
                    code.block_until_ready()  # (then copied: see `_scalar`)
                    code = asarray(code).item()
                else:
                    code.block_until_ready()
                    code = asarray(code).item()
                    if not code:
                        write(written_at, outs[n_fetched:])
                        fetched = fetch(outs[:n_fetched])
                if code:
                    raise exe.sites.error(code)
                return fetched
            return checked_step

        def step(feeds, tensors):
            outs = call(feeds, tensors)
            write(written_at, outs[n_fetched:])
            return fetch(outs[:n_fetched])
        return step

    def _fast_donating_step(self, exe):
        """`_fast_step` for an executable donating the written parameters'
        buffers, as one function (a training step's per-call path): Ctrl-C
        held back from the donation to the write-back (d2s.core.interrupts), the
        buffers donated as `_call_donating` does, the executable called, the
        new values written back, then the fetches (and the error code) read."""
        params = self.params
        device_values, write, donate, restore = (params.device_values, params.write,
                                                 params.donate, params.restore)
        fetch = list if self.device_results else _host_arrays  # (list: no call per value)
        asarray = np.asarray
        n_fetched, written_at, positions = len(self.fetch_names), self.written_at, exe.donates
        checked = exe.checked
        # A checked run that selects returns the old values when a check fails
        # (`_compile`): written back first, the code read last.
        selects = checked and bool(self.donated)
        token_of, resume = defer_interrupts, resume_interrupts

        def step(feeds, tensors):
            token = token_of()
            try:
                args = list(device_values(tensors))
                released = donate(positions, args)
                try:
                    outs = exe.call(feeds + args)
                except BaseException as e:
                    restore(released, e)
                    raise
                if not checked:
                    write(written_at, outs[n_fetched:])
                    return fetch(outs[:n_fetched])
                code = outs[-1]
                if selects:
                    write(written_at, outs[n_fetched:-1])
                    code.block_until_ready()  # (then copied: see `_scalar`)
                    code = asarray(code).item()
                else:
                    code.block_until_ready()
                    code = asarray(code).item()
                    if not code:
                        write(written_at, outs[n_fetched:-1])
                if code:
                    raise exe.sites.error(code)
                return fetch(outs[:n_fetched])
            finally:
                resume(token)
        return step

    def layout(self, feeds, feed_attrs=None, tensors=None):
        """The RunLayout of a run on `feeds`, or None when nothing is placed."""
        if not dist_attr.any_placed():  # the common case
            return None
        tensors = self.params.tensors if tensors is None else tensors
        return RunLayout.plan(self.feed_names, feeds,
                              feed_attrs or [None] * len(self.feed_names), self.params.vars,
                              [dist_attr.get(t) for t in tensors])

    def pending(self, feeds, given=None):
        """True when a call on `feeds` should run on numpy now: its executable
        is not compiled yet and compiles in the background (tiered, see
        `background`; never for placed values, nor when compiles are
        synchronous). A whole call decides once, before it runs: a step
        switches tiers only between calls. Truthy: a context the caller's
        numpy run goes in (`with rent:`), which counts its time towards the
        compile budget."""
        tiers = self.tiers
        if tiers is not None and tiers.finished:
            tiers.report()  # (on this thread: warnings point at the caller)
        key = (tuple((a.shape, a.dtype) for a in feeds), self.room,
               None if given is None else given.key, None)
        if key in self._executables or background.sync_compiles(self.compile_mode) \
                or dist_attr.any_placed():
            return False
        if tiers is None:
            with self._lock:
                tiers = self.tiers = self.tiers or background.Tiers(
                    self.label, sum(map(len, self.blocks.values())))
        stubs = [_Spec(a.shape, a.dtype) for a in feeds]
        return tiers.pending(key, [list(a.shape) for a in feeds],
                             lambda: self.executable(stubs, given))

    def executable(self, feeds, given=None, layout=None):
        key = (tuple((a.shape, a.dtype) for a in feeds), self.room,
               None if given is None else given.key, None if layout is None else layout.key)
        exe = self._executables.get(key)
        if exe is None:
            with self._lock:
                exe = self._executables.get(key)
                if exe is None:
                    try:
                        # Collector paused: in a fresh process holding JAX, the full
                        # collections a trace and lowering trigger cost 60-200 ms
                        # of a first call, finding nothing to free.
                        with gc_paused():
                            exe = self._compile(key, feeds, given, layout)
                    except Exception as e:
                        _drop_jax_note(e)
                        raise
                    self._executables[key] = exe  # only a complete entry is cached
        return exe

    def lowered_text(self, feeds, given=None, feed_attrs=None):
        """The StableHLO XLA compiles for these feeds' shapes (and placements)."""
        return self.executable(feeds, given, self.layout(feeds, feed_attrs)).lowered.as_text()

    def compiled_text(self, feeds, feed_attrs=None):
        """The optimized HLO after XLA's SPMD partitioning: where its collectives
        (all-reduce, all-gather, ...) can be read."""
        return self.executable(feeds, None, self.layout(feeds, feed_attrs)).compiled.as_text()

    def output_attrs(self, feeds, feed_attrs=None, tensors=None):
        """Per fetch, the placements XLA gave it (None: unsharded run or not known)."""
        exe = self.executable(feeds, None, self.layout(feeds, feed_attrs, tensors))
        return exe.out_attrs or [None] * len(self.fetch_names)

    # ---- compiling ---------------------------------------------------------------------
    def _compile(self, key, feeds, given, run_layout=None):
        room = key[1]
        sites = ErrorSites()
        traced = {}
        n_feeds, n_params = len(self.feed_names), len(self.param_names)
        has_given = bool(self.given)

        def fn(*args, _sites=sites, _discover=None):
            # `_discover`: a list the host draws are added to (their values
            # zeros), for a trace that only finds what a run draws
            low = Lowerer(self.program, self.blocks, _sites, room)
            start = 0
            residual = {}
            if has_given:
                residual, start = args[0], 1
                low.undefined.update((n, given.labels[n]) for n in self.given
                                     if n in given.labels)
            if self.has_draws and _discover is None:
                low.drawn = args[start + n_feeds + n_params:]
            env = lower_program(low, dict(zip(self.feed_names, args[start:start + n_feeds])),
                                dict(zip(self.param_names, args[start + n_feeds:])), residual)
            outs, layout = [], []
            for name in self.fetch_names:
                value = env.get(name)
                # a tensor array: its rows and length, and 1 + the axis they lie along
                is_array = 1 + value.axis if isinstance(value, TensorArray) else 0
                outs.extend([value.rows(), value.length] if is_array else [value])
                flag = env.flag(name) if name in low.undefined else None
                if flag is not None:
                    outs.append(jnp.asarray(flag))
                layout.append((is_array, None if flag is None else low.undefined[name]))
            written = [env.get(value) for _, value in self.written]
            if len(sites) and self.donated:  # a failed run gives the old values back
                ok, old = low.err == 0, args[start + n_feeds:]
                written = [jnp.where(ok, w, old[i]) for i, w in zip(self.written_at, written)]
            if run_layout is not None:  # a parameter keeps its layout from step to step
                written = [jax.lax.with_sharding_constraint(w, run_layout.params[
                    self.param_names.index(n)]) for (n, _), w in zip(self.written, written)]
            outs.extend(written)
            if len(sites):
                outs.append(low.err)
            if low.uses_room:
                outs.append(low.need)
            kept_labels = None
            if self.keep:
                outs.append({n: (env.get(n), _flag_array(env, low, n)) for n in self.keep})
                kept_labels = {n: low.undefined[n] for n in self.keep if n in low.undefined}
            if _discover is not None:
                _discover.extend(low.draws)
            traced.update(draws=low.draws, effects=low.has_effects, layout=layout,
                          uses_room=low.uses_room,
                          has_sites=bool(len(sites)), sites_on_numpy=sites.only_on_numpy,
                          kept_labels=kept_labels, args=jax.tree_util.tree_leaves(args))
            return tuple(outs)

        shardings = [None] * (len(feeds) + len(self.params.vars)) if run_layout is None \
            else list(run_layout.feeds) + list(run_layout.params)
        shapes = [(a.shape, a.dtype) for a in feeds] + [(v.shape, v.dtype) for v in self.params.vars]
        specs = [jax.ShapeDtypeStruct(shape, dtype, sharding=s)
                 for (shape, dtype), s in zip(shapes, shardings)]
        if has_given:  # residuals stay where their forward left them
            specs.insert(0, jax.tree_util.tree_map(
                lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=None if run_layout
                                               is None else getattr(a, "sharding", None)),
                given.values))
        # (JAX's warnings about its cache in d2s's folder: d2s's one warning)
        with folded_cache_warnings(persistent.SUBFOLDER), x64():
            if self.has_draws:  # the values drawn on the host: the last arguments
                found = []
                jax.eval_shape(functools.partial(fn, _sites=ErrorSites(), _discover=found),
                               *specs)
                specs += [jax.ShapeDtypeStruct(shape, dtype) for _, shape, dtype in found]
            # (a program drawing on the host is left to JAX's own cache)
            cached = None if run_layout is not None or self.has_draws else \
                lowered_cache.lower_and_compile(self, fn, specs, traced, n_feeds, given, sites)
            if cached is not None:
                lowered, compiled, donates = cached
            else:
                lowered, donates = self._lower(fn, specs, traced, run_layout, n_feeds)
                if run_layout is not None:
                    agree_on_program(lowered.as_text())
                compiled = persistent.compile(lowered, cacheable=not traced["effects"])
        exe = Executable(key, compiled, lowered, sites, traced, len(self.written))
        exe.donates = donates
        if run_layout is not None:
            exe.plain = False  # results may live in other processes too: read via to_host
            exe.out_attrs = _output_attrs(compiled, traced["layout"], run_layout.mesh,
                                          self.fetch_names, self.program)
        return exe

    def _lower(self, fn, specs, traced, run_layout, n_feeds):
        """(jax Lowered of `fn` for `specs`, positions in `param_names` of the
        parameters it donates): see `donated_for`; one device only (sharded
        runs keep their layouts). A traced program that may not donate is
        traced again without donation."""
        if self.donated and run_layout is None:
            first = jax.jit(fn, donate_argnums=tuple(n_feeds + i for i in self.donated))
            trace = first.trace(*specs)
            if self.donated_for(traced):
                return trace.lower(), self.donated
        return jax.jit(fn).lower(*specs), ()

    def donated_for(self, traced):
        """The positions of the parameters a run of this program, traced as
        `traced` says, donates. The buffers given to a run are gone after
        it, so a run that fails must still hand back every value it
        replaces. A run with error sites does: each new value it returns is
        `where(no error, new, old)` (XLA fuses the select into the update),
        and a failed run writes those old values back before raising — a
        failed step changes nothing, and checked steps keep donation. A run
        that may repeat (room to grow), prints, or has a fetch that may be
        undefined (`defined`, and the training step's commit, raise for one
        after the run, where no error code says so) donates nothing: it
        writes nothing back when it fails, and its parameters' buffers are
        intact. (Those are rarer programs; the copy is their only cost.)"""
        if (traced["effects"] or traced["uses_room"]
                or any(label is not None for _, label in traced["layout"])):
            return ()
        return self.donated


class _Spec:
    """A feed's shape and dtype: what a background compile needs of it (the
    array itself is not kept alive by the queue)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype


def _output_attrs(compiled, fetch_layout, mesh, fetch_names, program):
    """Per fetch, the placements of the sharding XLA chose for it (a tensor
    array, whose rows are cut to its length, reports none)."""
    shardings = iter(jax.tree_util.tree_leaves(
        compiled.output_shardings, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding)))
    gb = program.global_block()
    attrs = []
    for name, (is_array, label) in zip(fetch_names, fetch_layout):
        sharding = next(shardings)
        if is_array:
            next(shardings)
            attrs.append(None)
        else:
            ndim = len(gb.vars[name].shape) if name in gb.vars else 0
            attrs.append(placements_of(sharding, mesh, ndim))
        if label is not None:
            next(shardings)
    return attrs


def _producer(block, name):
    """The op of `block` that defines `name` (None: a feed or a parameter)."""
    return next((op for op in block.ops if any(v.name == name for v in op.outputs)), None)


def _drop_jax_note(error):
    """Drop from `error` (a d2s error raised while JAX traced) the note JAX adds
    about its hidden frames: the same text as on the numpy backend."""
    notes = getattr(error, "__notes__", None)
    if notes:
        error.__notes__ = [n for n in notes if "JAX has removed its internal frames" not in n]
        if not error.__notes__:
            del error.__notes__


def _flag_array(env, low, name):
    """`name`'s undefined flag as an array, or None when it is surely defined."""
    if name not in low.undefined:
        return None
    flag = env.flag(name)
    return jnp.zeros((), np.bool_) if flag is None else jnp.asarray(flag)
