"""`StepProgram`: a traced function that is a whole training step, and how it runs.

A function converted by `to_static` that calls `loss.backward()`,
`optimizer.step()` or `clear_grad()` traces into one program holding the
forward, the backward (ops from the same vjp rules, in eager's order) and
the updates (`sgd_update`, `adam_update`). The trace changed no eager
object (static.state_overlay); the program is a pure function

    (inputs, parameters and optimizer state, gradients held before the call)
        -> (outputs, new parameters and state, new gradients)

and a run *commits* its results to the eager objects: parameter values,
`.grad` (accumulated or cleared, as the eager run leaves it), optimizer
state. The same pure function is what a compiling backend needs (XLA can
donate the buffers of the values it replaces).

Every call:

1. checks the guard: what the trace assumed of eager state that can change
   between calls and that Python code may have branched on — which tracked
   Tensors had a gradient, which were trainable, which layers were in
   training mode (`train()` / `eval()`: dropout) — and picks the program
   traced for that state (tracing another one for a state not seen yet:
   one program per signature and state, usually exactly one). A call made
   with gradients disabled runs the function eagerly (eager's behaviour,
   error included);
2. runs the program;
3. commits, only after the whole run succeeded: a run that raises (a failed
   `assert`, a `raise` under a tensor `if`, `check_finite`) changes nothing.

A cache hit runs those steps as one function generated for the program
(jit.step_call: the guard, array reads and commit unrolled, in one frame),
made after the first call that took its path; whenever its guard or
anything it assumed differs, it calls `StepProgram.__call__`, the general
path, which decides as described here.

The run is the backend's (its Executable's `step`, through the registry
`d2s.backends`): numpy updates in place where that is safe
(`d2s.backends.numpy.step`), XLA donates the buffers it replaces; either
commits only after the whole run succeeded.

The outputs are values: they do not join the eager tape (the step already
ran its backward). While a step is traced, its tracked Tensors' `.grad`
hold Variables; like two eager steps at once, two threads training the same
parameters at the same time race.
"""
from __future__ import annotations

import numpy as np

from .. import backends
from ..core import state
from ..core.dtypes import is_floating
from ..core.tensor import Tensor, rebind_value
from .concrete_program import ConcreteProgram
from .step_call import GUARD, build_step_call


class RunEagerly(Exception):
    """Internal: this call must run the original function eagerly."""


class StepProgram(ConcreteProgram):
    """A traced training step (see module doc). `effects` lists what it reads and
    writes of eager state (static.state_overlay.StepEffects). It is the
    `StepParts` (d2s.backends.base) a backend makes its Executable of."""

    def __init__(self, main_program, inputs, outputs, output_structure, n_forward,
                 captured=None, *, effects, check_finite=False, read_guards=None):
        super().__init__(main_program, inputs, outputs, output_structure, n_forward, captured)
        self.effects = effects
        self.read_guards = read_guards  # jit.read_guards.ReadGuards, or None
        self.check_finite = check_finite
        gb = main_program.global_block()
        # The captured tensors as traced: a layer attribute replaced since gives
        # CapturedTensors a new list, and this program is then not the one to run.
        self._traced_tensors = self._captured.current()
        self._grad_inputs = [(name, slot) for name, slot in effects.grad_inputs
                             if name in gb.vars]
        # per gradient read: (its Tensor, or None for argument `index`, index)
        self._held = [(slot.tensor, slot.input_index) for _, slot in self._grad_inputs]
        self._run_inputs = ([v.name for v in inputs] + list(main_program.captured)
                            + [name for name, _ in self._grad_inputs])
        self._run_outputs = [v.name for v in outputs] + effects.written_names()
        # The guard: per watched Tensor, whether it is frozen and whether it has a
        # gradient; per tensor argument the step differentiates, whether it has one.
        watched = {id(s.tensor): s.tensor for s in effects.slots if s.tensor is not None}
        for t in self._traced_tensors:
            if is_floating(t.dtype):
                watched.setdefault(id(t), t)
        self._watched = list(watched.values())
        self._argument_slots = [s.input_index for s in effects.slots if s.tensor is None]
        self._expected = self._state_of([None] * len(inputs), traced=True)
        self.guard = self._guard_terms()
        self._variants = [self]        # programs of this signature, one per eager state
        self._retrace = None           # set by StaticFunction: traces another variant
        self._step_calls = {}          # backend -> its StepCall (None: the general path only)
        self._flag_writes = []         # (Tensor, stop_gradient) each run commits: _entered_with
        self._finish = self._finisher()

    # ---- guard ------------------------------------------------------------------------
    def _guard_terms(self):
        """The guard's terms, in order (see jit.step_call.GUARD): per watched
        Tensor and per differentiated argument what the trace saw; then the
        dtype of each gradient held before the call that it reads (eager code
        may leave one in another dtype than its tensor's)."""
        gb = self.main_program.global_block()
        return ([("watched", t, sg, none) for t, (sg, none) in zip(self._watched, self._expected)]
                + [("argument", i, none) for i, none in zip(self._argument_slots,
                                                           self._expected[len(self._watched):])]
                + [("held_dtype", slot.tensor, slot.input_index, gb.vars[name].dtype)
                   for name, slot in self._grad_inputs]
                + [("mode", layer, flag) for layer, flag in self.effects.modes]
                + ([("reads", self.read_guards.holds)] if self.read_guards is not None
                   else []))

    def _entered_with(self, frozen):
        """The trace began with `frozen` ({id: stop_gradient} of Tensors before
        it): a Tensor the step itself froze or unfroze (`stop_gradient = ...`,
        a Python side effect, done once by the trace) is expected as the call
        finds it, not as the trace left it. Else a step that sets a model's
        trainability (a GAN's two steps, each freezing the other model) would
        match none of its programs on the next call and trace again, call
        after call."""
        for i, t in enumerate(self._watched):
            sg = frozen.get(id(t))
            if sg is not None and sg != t.stop_gradient:
                self._expected[i] = (sg, self._expected[i][1])
                # and each run leaves it as the step does (as the trace did)
                self._flag_writes.append((t, t.stop_gradient))
        self.guard = self._guard_terms()

    def _state_of(self, tensors, traced=False):
        key = [(t.stop_gradient, t._grad is None) for t in self._watched]
        if traced:  # the trace's own view: the arguments' gradients as it saw them
            key += [s.entry_is_none for s in self.effects.slots if s.tensor is None]
        else:
            key += [tensors[i]._grad is None for i in self._argument_slots]
        return key

    def matches(self, tensors):
        """The eager state now is the one this program was traced for."""
        if self._captured.current() is not self._traced_tensors:
            return False
        # (the general path: a cache hit checks the same terms in generated code)
        for kind, *term in self.guard:
            if not GUARD[kind][0](tensors, *term):
                return False
        return True

    # ---- calling --------------------------------------------------------------------------
    def __call__(self, tensors, backend=None):
        """Run one step with eager input Tensors (in `inputs` order) on `backend`:
        commit its writes, return its outputs (values, not connected to the tape).
        The general path: a cache hit calls `fast_calls[backend]` (jit.step_call)
        once this program has one, which comes here when its guard fails."""
        if not state._tls.grad_enabled:
            raise RunEagerly()
        if backend is None:
            backend = backends.get_backend()
        for variant in self._variants:
            if variant.matches(tensors):
                exe = variant._runners.get(backend) or variant.executable(backend)
                out = exe.step(tensors)
                if variant is self and backend not in self._step_calls:
                    self._make_step_call(backend, exe)
                return out
        return self._new_variant(tensors).run(tensors, backend)

    def _make_step_call(self, backend, exe):
        """Give this program its generated per-call function on `backend`
        (jit.step_call) after a general call that took the path it would
        take (no finiteness check; the executable's own conditions, e.g. a
        compiled numpy plan with numpy not raising). Other paths keep the
        general call."""
        step_call = None
        if not self.check_finite:
            hooks_of = getattr(exe, "step_call_hooks", None)
            hooks = hooks_of(self) if hooks_of is not None else None
            if hooks is not None:
                step_call = build_step_call(self, backend, hooks)
        with self._lock:
            if backend not in self._step_calls:
                self._step_calls[backend] = step_call
                if step_call is not None:
                    self.fast_calls[backend] = step_call.fn

    def step_call_source(self, backend=None):
        """The generated per-call function's text on `backend` (default: the
        global one; None: not made yet, or this program takes the general path
        there)."""
        step_call = self._step_calls.get(backends.resolve(backend))
        return step_call.source if step_call is not None else None

    def _new_variant(self, tensors):
        with self._lock:
            for variant in self._variants:
                if variant.matches(tensors):
                    return variant
            if self._retrace is None:
                raise RuntimeError("this training step's program was traced for another state "
                                   "of the gradients and cannot trace again")
            watched = {id(t): t for v in self._variants for t in v._watched}
            frozen = {key: t.stop_gradient for key, t in watched.items()}
            variant = self._retrace(tensors)
            if not isinstance(variant, StepProgram):
                raise RunEagerly()  # in this state the function is no training step
            if not variant.matches(tensors):
                raise RuntimeError("tracing the step again gave a program for another state "
                                   "of the gradients (a trace changed eager state?)")
            variant._entered_with(frozen)
            self._variants.append(variant)
            return variant

    @property
    def variants(self):
        """The programs built for this signature (one per eager gradient state seen)."""
        return list(self._variants)

    def run(self, tensors, backend=None):
        """One step on `backend` (None: the global default), its guard not checked."""
        return self.executable(backends.resolve(backend)).step(tensors)

    def _finisher(self):
        """`finish(tensors, results)`: the outputs of a run that returned
        `results` (the values of `run_outputs`), after committing its writes
        to the eager objects. Every call of a step ends here, so what is fixed
        per program is resolved once: the Tensors given new values, the
        tracked tensors whose gradient is cleared, and every other gradient
        write as (Tensor or None for argument `index`, index, position in
        `results` or None to clear)."""
        n = len(self.outputs)
        value_owners = [t for t, _ in self.effects.value_writes]
        cleared = [slot.tensor for slot, name in self.effects.grad_writes
                   if name is None and slot.tensor is not None]
        grad_sets, at = [], n + len(value_owners)
        for slot, name in self.effects.grad_writes:
            if name is not None:
                grad_sets.append((slot.tensor, slot.input_index, at))
                at += 1
            elif slot.tensor is None:
                grad_sets.append((None, slot.input_index, None))
        # gradients a tensor `if` cleared on the path a run took (their flag False)
        present = [(slot.tensor, slot.input_index, at + i)
                   for i, (slot, _) in enumerate(self.effects.grad_present)]
        structure, check = self.output_structure, self.check_finite
        flag_writes = self._flag_writes  # (filled by _entered_with before any run)
        new, ndarray, as_array = Tensor._from_array, np.ndarray, self._as_array
        single = structure.single

        def finish(tensors, results):
            if check:
                self._check_finite(results)
            # (an undefined output raises here: before the commit)
            if single:  # one Tensor returned, as most steps (the loss)
                v = results[0]
                out = new(v) if type(v) is ndarray else self._as_tensor(0, v)
            else:
                out = structure.restructure([new(v) if type(v) is ndarray else self._as_tensor(i, v)
                                             for i, v in enumerate(results[:n])])
            for tensor, value in zip(value_owners, results[n:]):
                if type(value) is ndarray:
                    tensor._value = value
                else:  # (a device array, a backend's write-back, stays on the device)
                    rebind_value(tensor, value)
            for tensor in cleared:  # (commits write the slot: eager writes)
                tensor._grad = None
            for tensor, index, at in grad_sets:
                owner = tensors[index] if tensor is None else tensor
                owner._grad = None if at is None else new(_array(results[at]))
            for tensor, index, at in present:
                if not bool(_array(results[at])):
                    (tensors[index] if tensor is None else tensor)._grad = None
            for tensor, flag in flag_writes:
                tensor.stop_gradient = flag
            return out
        return finish

    def _held_grads(self, tensors):
        """The gradients held before the call that the step reads (a generator:
        no list holds them, see d2s.backends.numpy.step._SOLE_REFS)."""
        for _, slot in self._grad_inputs:
            owner = slot.tensor if slot.tensor is not None else tensors[slot.input_index]
            yield owner._grad._value

    # ---- what another backend runs ---------------------------------------------------------
    @property
    def run_inputs(self):
        """Names the pure step reads: inputs, captured tensors, gradients held."""
        return list(self._run_inputs)

    @property
    def run_outputs(self):
        """Names it returns: outputs, then the new values and gradients it writes."""
        return list(self._run_outputs)

    def captured_writes(self):
        """{name of a new value: the captured name it replaces}."""
        return self._overwrites()

    def _overwrites(self):
        """New value's name -> name of the captured value it replaces."""
        ids = self.main_program._captured_ids
        out = {}
        for tensor, name in self.effects.value_writes:
            var = ids.get(id(tensor))
            if var is not None:
                out[name] = var.name
        return out

    # ---- results -----------------------------------------------------------------------------
    def _write_labels(self):
        labels = [f"the new value of {_describe(t)}" for t, _ in self.effects.value_writes]
        labels += [f"the gradient of {slot.label}" for slot, name in self.effects.grad_writes
                   if name is not None]
        return labels

    def _check_finite(self, results):
        labels = [f"output {i}" for i in range(len(self.outputs))] + self._write_labels()
        for label, value in zip(labels, results):
            a = np.asarray(value)
            if a.dtype.kind in "fc" and not np.isfinite(a).all():
                what = "NaN" if np.isnan(a).any() else "infinite"
                raise FloatingPointError(
                    f"{label} is {what} (to_static(check_finite=True)): the step changed "
                    "no parameter, gradient or optimizer state")

    def __repr__(self):
        return (f"<StepProgram: {len(self.inputs)} inputs, {len(self.outputs)} outputs, "
                f"{self._n_forward} ops, writes {len(self.effects.value_writes)} values and "
                f"{len(self.effects.grad_writes)} gradients>")


def _array(value):
    return value if type(value) is np.ndarray else np.asarray(value)


def _describe(tensor):
    return f"tensor '{tensor.name}'" if tensor.name else \
        f"a {tensor.dtype.name}{list(tensor.shape)} tensor"


def is_training_step(concrete):
    return isinstance(concrete, StepProgram)


__all__ = ["StepProgram", "RunEagerly", "is_training_step"]
