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

Compiled runs update in place where that is safe (static.update_plan): each
update right after its gradient, writing into the parameter's own array.
An array written in place must be ours alone: one that anything else holds
(an array from `.numpy()`, a `detach()`ed Tensor, a view) is copied first,
so nobody sees a value change that eager mode, which rebinds arrays, would
not change. Otherwise (`check_finite`, a check op after the updates, numpy
told to raise on floating-point errors, the interpreter) every new value is
computed first and committed after the run.

The outputs are values: they do not join the eager tape (the step already
ran its backward). While a step is traced, its tracked Tensors' `.grad`
hold Variables; like two eager steps at once, two threads training the same
parameters at the same time race.
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from ..core import dist_attr, state
from ..core.dtypes import is_floating
from ..core.tensor import Tensor
from ..static.codegen import CompiledFunction, NotCompilable
from ..static.executor import Scope, executor_mode, run_ops
from ..static.passes import ProgramView, optimize
from ..static.update_plan import UpdateBuffers, plan_in_place
from .concrete_program import ConcreteProgram
from .step_call import GUARD, SOLE_REFS, build_step_call, numpy_raises

_getrefcount = sys.getrefcount
_value_of = operator.attrgetter("_value")
# References to an array held only by its Tensor, as a numpy plan's run counts
# them: those of a local read from the Tensor's slot, plus the list of arguments.
_SOLE_REFS = SOLE_REFS + 1


class RunEagerly(Exception):
    """Internal: this call must run the original function eagerly."""


class StepProgram(ConcreteProgram):
    """A traced training step (see module doc). `effects` lists what it reads and
    writes of eager state (static.state_overlay.StepEffects)."""

    RUNNER = "step_runner"

    def __init__(self, main_program, inputs, outputs, output_structure, n_forward,
                 captured=None, *, effects, check_finite=False):
        super().__init__(main_program, inputs, outputs, output_structure, n_forward, captured)
        self.effects = effects
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
        self._plans = {}               # "in_place" / "commit" / "interpret" -> a _NumpyPlan
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
                + [("mode", layer, flag) for layer, flag in self.effects.modes])

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
    def __call__(self, tensors, backend="numpy"):
        """Run one step with eager input Tensors (in `inputs` order) on `backend`:
        commit its writes, return its outputs (values, not connected to the tape).
        The general path: a cache hit calls `fast_calls[backend]` (jit.step_call)
        once this program has one, which comes here when its guard fails."""
        if not state._tls.grad_enabled:
            raise RunEagerly()
        for variant in self._variants:
            if variant.matches(tensors):
                if backend == "numpy":  # (run's first case, a frame less per call)
                    plan = variant._numpy_plan()
                    if variant is self and backend not in self._step_calls:
                        self._make_step_call(backend, plan)
                    return plan.call(tensors)
                out = variant.run(tensors, backend)
                if variant is self and backend not in self._step_calls:
                    self._make_step_call(backend)
                return out
        return self._new_variant(tensors).run(tensors, backend)

    def _make_step_call(self, backend, plan=None):
        """Give this program its generated per-call function on `backend`
        (jit.step_call) after a general call that took the path it would
        take: a compiled numpy plan chosen with no finiteness check and numpy
        not raising, or another backend's runner. Other paths keep the
        general call."""
        step_call = None
        if not self.check_finite:
            if backend != "numpy":
                step_call = build_step_call(self, backend, runner=self._runner(backend))
            elif (plan.compiled is not None and executor_mode() == "compiled"
                  and not numpy_raises()):
                step_call = build_step_call(self, backend, plan.compiled, plan.in_place)
        with self._lock:
            if backend not in self._step_calls:
                self._step_calls[backend] = step_call
                if step_call is not None:
                    self.fast_calls[backend] = step_call.fn

    def step_call_source(self, backend="numpy"):
        """The generated per-call function's text on `backend` (None: not made
        yet, or this program takes the general path there)."""
        step_call = self._step_calls.get(backend)
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

    def run(self, tensors, backend="numpy"):
        if backend == "numpy":
            return self._numpy_plan().call(tensors)
        # parameters are the backend's to send (or keep)
        feeds = [t._value for t in tensors]
        feeds.extend(self._held_grads(tensors))
        attrs = None  # the inputs' placements (d2s.distributed): a sharded step
        if dist_attr.any_placed():
            attrs = [dist_attr.get(t) for t in tensors] + [None] * (len(feeds) - len(tensors))
        results = self._runner(backend).run(feeds, self._traced_tensors,
                                            lambda: self._numpy_values(tensors), attrs)
        return self._finish(tensors, results)

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
                out = new(v) if type(v) is ndarray else new(as_array(0, v))
            else:
                out = structure.restructure([new(v) if type(v) is ndarray else new(as_array(i, v))
                                             for i, v in enumerate(results[:n])])
            for tensor, value in zip(value_owners, results[n:]):
                tensor._value = value if type(value) is ndarray else np.asarray(value)
            for tensor in cleared:  # (commits write the slot: eager writes)
                tensor._grad = None
            for tensor, index, at in grad_sets:
                owner = tensors[index] if tensor is None else tensor
                owner._grad = None if at is None else new(_array(results[at]))
            for tensor, flag in flag_writes:
                tensor.stop_gradient = flag
            return out
        return finish

    def _numpy_values(self, tensors):
        """The values of `run_outputs` for `tensors` computed on numpy (what
        another backend falls back to)."""
        return self._numpy_plan().values(tensors)

    def _held_grads(self, tensors):
        """The gradients held before the call that the step reads (a generator:
        no list holds them, see _SOLE_REFS)."""
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

    # ---- plans -------------------------------------------------------------------------------
    def _numpy_plan(self):
        """The `_NumpyPlan` that applies now: the compiled in-place plan unless
        something may raise after an update began (`check_finite`, numpy told
        to raise); else the compiled plan that commits after the run; the
        interpreter where code cannot be generated or is not wanted."""
        if executor_mode() != "compiled":
            return self._built("interpret")
        if not self.check_finite and not numpy_raises():
            plan = self._built("in_place")
            if plan is not None:
                return plan
        return self._built("commit")

    def _built(self, kind):
        plan = self._plans.get(kind, _MISSING)
        if plan is _MISSING:
            with self._lock:
                plan = self._plans.get(kind, _MISSING)
                if plan is _MISSING:
                    plan = self._plans[kind] = self._build(kind)
        return plan

    def _build(self, kind):
        if kind == "interpret":
            return self._numpy_plan_of(lambda *arrays: self._interpret(arrays))
        program = self.main_program
        view = optimize(ProgramView(program, program.global_block().ops, self._run_outputs,
                                    self._run_inputs))
        in_place = ()
        if kind == "in_place":
            view = plan_in_place(view, self._overwrites())
            if view is None:
                return None
            buffers = {b for bufs in view.inplace.values() if isinstance(bufs, UpdateBuffers)
                       for b in bufs.out if b is not None}
            in_place = tuple(i for i, n in enumerate(self._run_inputs) if n in buffers)
        try:
            fn = CompiledFunction(view, f"train_step_{kind}")
        except NotCompilable:
            return self._build("interpret") if kind == "commit" else None
        return self._numpy_plan_of(fn, in_place, fn)

    def _numpy_plan_of(self, compute, in_place=(), compiled=None):
        """The _NumpyPlan computing the values of `run_outputs` with `compute`
        (one array per `run_inputs` name -> values), after copying each array
        written in place (positions `in_place`) that is not ours alone. Its
        functions bind what is fixed per program once: a call reads the
        arrays, runs and (`call`) finishes. A compiled plan calls the
        generated function itself (a frame less per call), raising what
        CompiledFunction would."""
        traced = self._traced_tensors
        held = self._held
        locate = None
        if compiled is not None:
            compute, locate = compiled.fn, compiled.located

        def runner(finish):
            def run(tensors):
                arrays = list(map(_value_of, tensors))
                arrays += map(_value_of, traced)
                for tensor, index in held:  # (appended one by one: see _SOLE_REFS)
                    arrays.append((tensors[index] if tensor is None else tensor)._grad._value)
                for i in in_place:  # an array written in place must be ours alone
                    a = arrays[i]
                    if _getrefcount(a) > _SOLE_REFS or a.base is not None \
                            or not a.flags.writeable:
                        arrays[i] = a.copy()
                try:
                    results = compute(*arrays)
                except Exception as e:
                    if locate is None:
                        raise
                    raise locate(e) from None
                return results if finish is None else finish(tensors, results)
            return run
        return _NumpyPlan(runner(None), runner(self._finish), compiled, in_place)

    def _overwrites(self):
        """New value's name -> name of the captured value it replaces."""
        ids = self.main_program._captured_ids
        out = {}
        for tensor, name in self.effects.value_writes:
            var = ids.get(id(tensor))
            if var is not None:
                out[name] = var.name
        return out

    def _interpret(self, arrays):
        program = self.main_program
        scope = Scope()
        for name, a in zip(self._run_inputs, arrays):
            scope.vars[name] = a
        run_ops(program.global_block().ops, program, scope)
        return [scope.get(n) for n in self._run_outputs]

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


_MISSING = object()


class _NumpyPlan:
    """How a step runs on numpy: `values` (tensors -> values of `run_outputs`:
    what another backend falls back to), `call` (tensors -> the step's
    outputs, writes committed), the CompiledFunction they call (None: the
    interpreter) and the input positions it writes in place."""
    __slots__ = ("values", "call", "compiled", "in_place")

    def __init__(self, values, call, compiled, in_place):
        self.values = values
        self.call = call
        self.compiled = compiled
        self.in_place = in_place


def _array(value):
    return value if type(value) is np.ndarray else np.asarray(value)


def _describe(tensor):
    return f"tensor '{tensor.name}'" if tensor.name else \
        f"a {tensor.dtype.name}{list(tensor.shape)} tensor"


def is_training_step(concrete):
    return isinstance(concrete, StepProgram)


__all__ = ["StepProgram", "RunEagerly", "is_training_step"]
