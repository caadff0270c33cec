"""A `to_static` program (`d2s.jit.ConcreteProgram`) on XLA.

The program is the backend's, not the other way round: one ConcreteProgram
per input signature whatever the backend, and this runner is attached to
it on its first call on XLA. It compiles up to three parts, each on first
need, each falling back to the numpy backend on its own (one warning):

* the forward (outputs only);
* the forward for gradients: the forward ops of the program's
  `BackwardProgram` (d2s's own backward, built from the vjp rules), which
  also *keeps* on the device what the backward ops read — cond scopes,
  loop histories, intermediates — as `Residuals`;
* the backward ops, per set of wanted gradients, *given* those residuals,
  the output cotangents, the inputs the backward reads, and the very
  parameter arrays the forward read.

Why d2s's backward and not `jax.vjp` of the lowered forward: JAX cannot
reverse-differentiate `lax.while_loop`, and d2s's backward already walks a
loop's history backwards; one mechanism serves every program, and the
gradients are the numpy backend's, rule for rule.

Inputs and parameters with placements (`d2s.distributed`) run each part
sharded (`feed_attrs`: the inputs' placements); the per-call fast path is
left while any value is placed, since it knows no layouts.
"""
from __future__ import annotations

import threading

import numpy as np

from ... import backends as registry
from ...core import dist_attr
from ...core.tensor import is_device_array
from ...static.executor import check_fed
from .errors import RaisesOnNumpy, Unsupported
from .program import XlaProgram
from .resident_inputs import input_arrays
from .runner import Lowered


def _on_numpy_when_checks_fail(fast, checked, numpy_fallback):
    """The forward's per-call path `fast`; for a program with run-time checks,
    one that runs the call on numpy when a kernel's check failed (numpy
    raises its error, as `forward` does: `errors.RaisesOnNumpy`)."""
    if fast is None or not checked:
        return fast

    def call(feeds, tensors):
        try:
            return fast(feeds, tensors)
        except RaisesOnNumpy:
            return numpy_fallback(on_host(feeds), tensors)
    return call


def on_host(arrays):
    """`arrays` as numpy arrays: what a numpy fallback reads (a feed may be a
    device-resident Tensor's device array; its host copy is made here)."""
    return [a if type(a) is np.ndarray or not is_device_array(a) else np.asarray(a)
            for a in arrays]


class _FallsBack:
    """The numpy backend's executable of the same parts: what a part that does
    not lower runs on (the registry's policy, `d2s.backends`)."""

    _numpy = None

    def _fallback(self):
        numpy = self._numpy
        if numpy is None:
            numpy = self._numpy = registry.fallback_executable(self._parts)
        return numpy


class ConcreteRunner(_FallsBack):
    """How one ConcreteProgram runs on XLA (see the module docstring): its
    `d2s.backends.base.Executable` on the xla backend.

    `concrete` provides `main_program`, `inputs`, `outputs`,
    `backward_program()` (its BackwardProgram, built on first need) and
    `saved_for_backward()`."""

    def __init__(self, concrete):
        program = concrete.main_program
        self.concrete = self._parts = concrete
        self.input_names = [v.name for v in concrete.inputs]
        self.output_names = [v.name for v in concrete.outputs]
        check_fed(program, program.all_ops(), self.input_names)
        self._forward = None
        self._fast = None      # the forward's per-call path, once known (see fast_path)
        self._numpy_tier = False  # the last call ran on the numpy tier (see input_arrays)
        # Every call has the inputs' declared shapes (no None dim): one executable.
        self._fixed_shapes = all(d is not None for v in concrete.inputs for d in v.shape)
        self._grad_forward = None
        self._backwards = {}   # wanted-gradient mask -> Lowered backward
        self._lock = threading.Lock()

    # ---- forward -------------------------------------------------------------------
    def forward(self, feeds, tensors, feed_attrs=None):
        """Output values (arrays, or UndefinedValue) for input arrays `feeds`
        and the captured `tensors` to read now (`feed_attrs`: see module doc)."""
        fast = self._fast
        if fast is not None and not dist_attr.any_placed():
            return fast(feeds, tensors)
        part = self._forward or self._forward_part()
        xla = part.xla
        if xla is not None:
            try:
                rent = self._numpy_tier = xla.pending(feeds)
                if rent:  # compiling in the background (or not yet): numpy serves
                    with rent:
                        return self._fallback().forward(on_host(feeds), tensors)
                values = xla.run(feeds, tensors, feed_attrs=feed_attrs)[0]
            except Unsupported as e:
                part.fall_back(e)
            except RaisesOnNumpy:  # a kernel's check failed: numpy raises its error
                pass
            else:
                if self._fixed_shapes and not dist_attr.any_placed():
                    self._fast = _on_numpy_when_checks_fail(
                        xla.fast_path(feeds), xla.executable(feeds).checked,
                        self._fallback().forward)
                return values
        return self._fallback().forward(on_host(feeds), tensors)

    # Inputs are read as their Tensors hold them: device arrays stay on the device
    # (`d2s.core.tensor.DeviceTensor`), and so do the outputs.
    takes_device_arrays = True
    def input_arrays(self, tensors):
        """The per-call path's input reader (jit.concrete_program): host inputs
        move to the device as they are read (see resident_inputs); not while
        calls run on the numpy tier (see `_tier_inputs`)."""
        return _tier_inputs(self, tensors)

    @property
    def plain_call(self):
        """Once known, the forward's per-call path: a function (input arrays,
        captured tensors) -> output arrays serving every call that needs no
        gradient (see `XlaProgram.fast_path`); else None."""
        return self._fast

    def output_attrs(self, feeds, tensors, feed_attrs, grad=False):
        """Per output, the placements the forward (`grad`: the forward for
        gradients) gave it on XLA; None when that part runs on numpy."""
        part = self._grad_forward if grad else self._forward
        xla = None if part is None else part.xla
        if xla is None:
            return None
        return xla.output_attrs(feeds, feed_attrs, tensors)

    def lowered_text(self, feeds):
        """The StableHLO of the forward for these input arrays' shapes."""
        return (self._forward or self._forward_part()).lowered_text(feeds)

    text = lowered_text

    def step(self, tensors):
        raise TypeError("a forward program is no training step")

    def _forward_part(self):
        return self._part("_forward", lambda: _tiered(XlaProgram(
            self.concrete.main_program, self.input_names, self.output_names,
            device_results=True), self.concrete))

    # ---- gradients -----------------------------------------------------------------
    def forward_for_grad(self, feeds, tensors, feed_attrs=None):
        """(output values, what the backward needs): on XLA a `SavedOnDevice`,
        else what the numpy backend's `forward_for_grad` returns."""
        part = self._grad_forward
        if part is None:
            part = self._part("_grad_forward", self._build_grad_forward)
        return part.call(lambda xla: self._run_grad_forward(xla, feeds, tensors, feed_attrs),
                         lambda: self._fallback().forward_for_grad(on_host(feeds), tensors))

    def _build_grad_forward(self):
        backward = self.concrete.backward_program()
        program = backward.program
        fed = set(self.input_names) | set(program.captured)
        self.kept = [n for n in self.concrete.saved_for_backward() if n not in fed]
        self.backward_feeds = [n for n in self.input_names if n in backward.reads]
        return _tiered(XlaProgram(program, self.input_names, self.output_names,
                                  ops=backward.forward_ops, keep=self.kept), self.concrete)

    def _run_grad_forward(self, xla, feeds, tensors, feed_attrs=None):
        rent = xla.pending(feeds)
        if rent:  # compiling in the background (or not yet): numpy serves (and its backward)
            with rent:
                return self._fallback().forward_for_grad(on_host(feeds), tensors)
        values, kept, params = xla.run(feeds, tensors, feed_attrs=feed_attrs)
        by_name = dict(zip(self.input_names, feeds))
        saved = SavedOnDevice(self, kept, [by_name[n] for n in self.backward_feeds],
                              params, feeds, tensors)
        if feed_attrs is not None:  # the backward reads the inputs laid out alike
            attrs = dict(zip(self.input_names, feed_attrs))
            saved.feed_attrs = [attrs[n] for n in self.backward_feeds]
        return values, saved

    def backward(self, saved, cts, wanted):
        """Per `wrt` of the BackwardProgram: a gradient array, UndefinedValue (a
        zero cotangent) or None (not wanted / none exists). A forward that ran
        on numpy saved numpy's values: its backward runs there too."""
        if type(saved) is not SavedOnDevice:
            return self._fallback().backward(saved, cts, wanted)
        part = self._backwards.get(wanted)
        if part is None:
            part = self._part(None, lambda: self._build_backward(wanted), key=wanted)
        return part.call(
            lambda xla: self._run_backward(xla, saved, cts, wanted),
            lambda: self._fallback().gradients_from(on_host(saved.host_feeds + saved.host_params),
                                                    cts, wanted))

    def _build_backward(self, wanted):
        backward = self.concrete.backward_program()
        outs = [n for n, w in zip(backward.grad_names, wanted) if n is not None and w]
        return _tiered(XlaProgram(backward.program, backward.ct_names + self.backward_feeds,
                                  outs, ops=backward.backward_ops, given=self.kept),
                       self.concrete)

    def _run_backward(self, xla, saved, cts, wanted):
        rent = xla.pending(list(cts) + saved.feeds, given=saved.residuals)
        if rent:
            # compiling in the background (or not yet): the forward again, and
            # this backward, on numpy
            with rent:
                return self._fallback().gradients_from(saved.host_feeds + saved.host_params,
                                                       cts, wanted)
        attrs = None if saved.feed_attrs is None else [None] * len(cts) + saved.feed_attrs
        grads, _, _ = xla.run(list(cts) + saved.feeds, saved.tensors, given=saved.residuals,
                              params=saved.params, feed_attrs=attrs)
        it = iter(grads)
        names = self.concrete.backward_program().grad_names
        return [next(it) if n is not None and w else None for n, w in zip(names, wanted)]

    # ---- parts ---------------------------------------------------------------------
    def _part(self, attr, build, key=None):
        """The `Lowered` part stored at `attr` (or in `_backwards[key]`), built
        once under the lock; only a complete one is stored."""
        with self._lock:
            part = getattr(self, attr) if attr else self._backwards.get(key)
            if part is None:
                part = Lowered(build)
                if attr:
                    setattr(self, attr, part)
                else:
                    self._backwards[key] = part
        return part


class SavedOnDevice:
    """What a backward on XLA needs from its forward: the kept residuals (on
    the device), the input arrays it reads, the parameters' device arrays
    the forward read; and, should the backward not lower, the forward's
    host arrays to run both on numpy instead."""
    __slots__ = ("runner", "residuals", "feeds", "params", "host_feeds", "tensors",
                 "host_params", "feed_attrs")

    def __init__(self, runner, residuals, feeds, params, host_feeds, tensors):
        self.runner = runner
        self.residuals = residuals
        self.feeds = feeds
        self.params = params
        self.host_feeds = list(host_feeds)
        self.tensors = tensors
        self.host_params = [t._raw for t in tensors]  # (made host arrays if needed)
        self.feed_attrs = None  # the backward feeds' placements, in a sharded run


class StepRunner(_FallsBack):
    """A whole training step (`d2s.jit.train_step.StepProgram`) on XLA.

    The step is a pure program (inputs, parameters and state, gradients held
    before) -> (outputs, new values, new gradients). Parameters stay on the
    device; the new value of a captured one is written back by the run
    itself (its device array kept for the next step: nothing is sent again),
    computed into the old value's donated buffer (see `params.DeviceParams.
    donate`), unless the step checks finiteness first (then everything is
    committed by the step after its check). A run that fails writes back
    nothing new (`XlaProgram.donated_for`). Falls back to numpy as a whole:
    for good when it does not lower, for one call when a kernel's check
    failed (numpy raises the error: `errors.RaisesOnNumpy`)."""

    def __init__(self, step):
        program = step.main_program
        self._step = self._parts = step
        n_captured = len(program.captured)
        n_inputs = len(step.inputs)
        names = step.run_inputs
        self.feed_names = names[:n_inputs] + names[n_inputs + n_captured:]
        self.output_names = step.run_outputs
        writes = {} if step.check_finite else step.captured_writes()
        self.fetch_names = [n for n in self.output_names if n not in writes]
        check_fed(program, program.all_ops(), self.feed_names)
        # The step's outputs must be defined: checked before the write-back.
        # (An output that is a write, a parameter's or the rate's new value
        # returned, is not fetched: it is the value written back.)
        outputs = [v.name for v in step.outputs if v.name not in writes]
        self._part = Lowered(lambda: _tiered(XlaProgram(
            program, self.feed_names, self.fetch_names, writes=writes, donate=True,
            defined=outputs, device_results=True), step))
        # (position in `run_outputs`, the captured Tensor whose new value goes there)
        self._writes = [(i, program.captured[writes[n]]) for i, n in enumerate(self.output_names)
                        if n in writes]
        # Every call has the inputs' declared shapes: one executable, whose
        # per-call path is `_fast`, taken while the held gradients (set by
        # eager code, not by the signature) have the types it was made for.
        self._fixed_shapes = all(d is not None for v in step.inputs for d in v.shape)
        self._n_inputs = n_inputs
        self._fast = None
        self._held_types = ()
        self._numpy_tier = False  # the last call ran on the numpy tier (see _tier_inputs)

    plain_call = None
    takes_device_arrays = True  # (see ConcreteRunner)

    def step_values(self, tensors):
        """Values of the step's `run_outputs`, nothing committed yet (on XLA,
        or on numpy when it does not lower)."""
        step = self._step
        placed = dist_attr.any_placed()
        # (unplaced inputs move to the device as they are read: see resident_inputs)
        feeds = [t._raw for t in tensors] if placed else _tier_inputs(self, tensors)
        feeds.extend(step._held_grads(tensors))
        attrs = None  # the inputs' placements (d2s.distributed): a sharded step
        if placed:
            attrs = [dist_attr.get(t) for t in tensors] + [None] * (len(feeds) - len(tensors))
        # parameters are the backend's to send (or keep)
        return self.run(feeds, step._traced_tensors, lambda: self._fallback().values(tensors),
                        attrs)

    # (a training step runs whole: its parts are not called one by one)
    def forward(self, feeds, tensors, feed_attrs=None):
        raise TypeError("a training step runs whole (step)")

    forward_for_grad = forward

    def backward(self, saved, cts, wanted):
        raise TypeError("a training step runs whole (step)")

    def step(self, tensors):
        """One step on eager input Tensors, committed: its outputs."""
        return self._step._finish(tensors, self.step_values(tensors))

    def lowered_text(self, feeds):
        """The StableHLO of the whole step for these input arrays' shapes."""
        return self._part.lowered_text(self._step_feeds(feeds))

    text = lowered_text

    def _step_feeds(self, feeds):
        """`feeds` (the step's inputs) and the gradients it holds before, as a
        call passes them (`step_values`)."""
        out = list(feeds)
        for _, slot in self._step._grad_inputs:
            owner = slot.tensor if slot.tensor is not None else None
            if owner is not None and owner._grad is not None:
                out.append(owner._grad._value)
            else:  # a gradient of the shape of what it is the gradient of
                like = owner._value if owner is not None else feeds[slot.input_index]
                out.append(np.zeros(np.shape(like), np.asarray(like).dtype))
        return out

    def step_call_hooks(self, step):
        """The xla half of the step's generated call (jit.step_call)."""
        return _StepCallHooks(self)

    def run(self, feeds, tensors, numpy_fallback, feed_attrs=None):
        """Values of the step's `run_outputs` (those written back already: the
        parameter's new array); `feed_attrs`: the feeds' placements."""
        fast = self._fast
        if fast is not None and not dist_attr.any_placed() and self._held_as_made(feeds):
            try:
                fetched = fast(feeds, tensors)
            except RaisesOnNumpy:  # a kernel's check failed: numpy raises its error
                return numpy_fallback()
        else:
            part = self._part
            xla = part.xla
            if xla is None:
                return numpy_fallback()
            try:
                # Not compiled yet: this whole step runs on numpy (the tier is
                # chosen once per call, before anything is donated or written)
                rent = self._numpy_tier = xla.pending(feeds)
                if rent:
                    with rent:
                        return numpy_fallback()
                fetched = xla.run(feeds, tensors, feed_attrs=feed_attrs)[0]
            except Unsupported as e:
                part.fall_back(e)
                return numpy_fallback()
            except RaisesOnNumpy:
                return numpy_fallback()
            if self._fixed_shapes and not dist_attr.any_placed():
                self._held_types = [(a.shape, a.dtype) for a in feeds[self._n_inputs:]]
                self._fast = xla.fast_path(feeds)
        if not self._writes:
            return fetched
        values = list(fetched)
        for i, tensor in self._writes:
            values.insert(i, tensor._raw)  # (a device array: no host copy)
        return values

    def _held_as_made(self, feeds):
        for a, (shape, dtype) in zip(feeds[self._n_inputs:], self._held_types):
            if a.dtype != dtype or a.shape != shape:
                return False
        return True


def _tier_inputs(runner, tensors):
    """The input arrays of a call of `runner`, moved to the device as read
    (`resident_inputs.input_arrays`), unless its last call ran on the numpy
    tier (its compile pending): numpy would read each moved input back to
    the host, a copy each way on every call until the executable is ready.
    (A call that then runs on XLA takes host arrays as any call may.)"""
    if runner._numpy_tier:
        return [t._raw for t in tensors]
    return input_arrays(tensors)


def _tiered(xla, parts):
    """`xla` told how its function compiles (to_static's `compile=`, see
    `background`) and its name, for the reports."""
    xla.compile_mode = getattr(parts, "compile_mode", None)
    xla.label = getattr(parts, "label", None) or xla.label
    return xla


class _StepCallHooks:
    """What jit.step_call writes for a step on XLA: placed values take the
    general path; the run is the runner's, numpy's values its fallback."""

    takes_device_arrays = True  # inputs read as held (see ConcreteRunner)

    def __init__(self, runner):
        self.runner = runner

    def first_checks(self, w):
        return []

    def guard(self, w, general):
        pass

    def conditions(self, w):
        w.globals["_any_placed"] = dist_attr.any_placed  # placements: the general path's
        return ["_any_placed()"]

    def run(self, w, step, arrays):
        """`r = runner.run(...)`, and once the runner has its per-call path
        (`_fast`, made after the first run on XLA) that path's part of `run`
        written out: placements were checked by the guard (`conditions`),
        the held gradients' types are checked here, and the values written
        back are read from the Tensors holding them."""
        runner = self.runner
        n = len(step.inputs)  # (the inputs' arrays come first; then held gradients)
        w.globals.update(_run=runner.run, _traced=step._traced_tensors, _runner=runner,
                         _values=lambda tensors: runner._fallback().values(tensors),
                         _inputs=lambda tensors: _tier_inputs(runner, tensors),
                         _RaisesOnNumpy=RaisesOnNumpy)
        rest = f" + [{', '.join(arrays[n:])}]" if arrays[n:] else ""
        w.emit(f"feeds = _inputs(tensors){rest}")
        w.emit("f = _runner._fast")
        held = " and _runner._held_as_made(feeds)" if arrays[n:] else ""
        w.emit(f"if f is not None{held}:")
        w.emit("try:", 2)
        w.emit("fetched = f(feeds, _traced)", 3)
        w.emit("except _RaisesOnNumpy:  # a kernel's check failed: numpy raises its error", 2)
        w.emit("r = _values(tensors)", 3)
        w.emit("else:", 2)
        writes = dict(runner._writes)  # position in run_outputs -> the Tensor written
        items, k = [], 0
        for i in range(len(runner.output_names)):
            if i in writes:  # (written back by the run: the array its Tensor holds)
                items.append(f"{w.global_name('t', writes[i])}._raw")
            else:
                items.append(f"fetched[{k}]")
                k += 1
        w.emit(f"r = [{', '.join(items)}]", 3)
        w.emit("else:")
        w.emit("r = _run(feeds, _traced, lambda: _values(tensors), None)", 2)
