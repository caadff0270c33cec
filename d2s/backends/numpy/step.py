"""A whole training step (`StepParts`, jit.train_step) on the numpy backend.

The step's pure function runs as one of three plans, each built once: the
compiled plan that updates in place (`update_plan`: each update right after
its gradient, into the parameter's own array), the compiled plan that
commits after the run, and the interpreter. In-place is taken unless
something may raise after an update began (`check_finite`, numpy told to
raise on floating-point errors). An array written in place must be ours
alone: one that anything else holds (an array from `.numpy()`, a
`detach()`ed Tensor, a view) is copied first, so nobody sees a value change
that eager mode, which rebinds arrays, would not change.

`step_call_hooks` gives jit's generated per-call function (jit.step_call)
the numpy half of its text: the extra guard terms (executor mode, numpy's
error state) and the array reads and compute call.
"""
from __future__ import annotations

import operator
import sys
import threading

import numpy as np

from ...static.executor import Scope, executor_mode, run_ops
from ...static.passes import ProgramView
from .passes import optimize
from .codegen import CompiledFunction, NotCompilable
from .update_plan import UpdateBuffers, plan_in_place

_getrefcount = sys.getrefcount
_value_of = operator.attrgetter("_value")

try:  # numpy's error state object: a new one whenever np.errstate / np.seterr change it
    from numpy._core._ufunc_config import _extobj_contextvar as _NUMPY_ERR_STATE
except ImportError:  # pragma: no cover - other numpy layouts: ask np.geterr every call
    _NUMPY_ERR_STATE = None
# [(numpy's error state object, whether it raises)]: one tuple, replaced whole,
# so a reader on another thread never pairs a state with another's answer.
_RAISES_SEEN = [(None, False)]


def numpy_raises():
    """numpy is told to raise (or call back) on floating-point errors: a kernel
    may raise in the middle of the updates. Asked on every call, answered from
    the last answer while numpy's error state object is the same one."""
    err_state = _NUMPY_ERR_STATE.get() if _NUMPY_ERR_STATE is not None else None
    seen, answer = _RAISES_SEEN[0]
    if err_state is None or err_state is not seen:
        answer = any(v in ("raise", "call") for v in np.geterr().values())
        _RAISES_SEEN[0] = (err_state, answer)
    return answer


class _Holder:
    __slots__ = ("_value",)


def _refs_of_held_local(holder):
    value = holder._value
    return sys.getrefcount(value)


def _sole_refs():
    """What `getrefcount` says of an array that only a Tensor's slot holds,
    read into a local (the generated code's pattern): measured, as the count
    of the argument's own reference differs between Python versions."""
    holder = _Holder()
    holder._value = np.empty(0)
    return _refs_of_held_local(holder)


SOLE_REFS = _sole_refs()
# References to an array held only by its Tensor, as a plan's run counts
# them: those of a local read from the Tensor's slot, plus the list of arguments.
_SOLE_REFS = SOLE_REFS + 1
_MISSING = object()


class StepExecutable:
    """`step` (a StepParts) on numpy: `step(tensors)` runs and commits,
    `values(tensors)` only computes (what another backend falls back to)."""

    plain_call = None

    def __init__(self, step):
        self.parts = step
        self._lock = threading.Lock()
        self._plans = {}  # "in_place" / "commit" / "interpret" -> a _NumpyPlan

    def step(self, tensors):
        return self.plan().call(tensors)

    def values(self, tensors):
        """The values of `run_outputs` for `tensors`, nothing committed."""
        return self.plan().values(tensors)

    # (a training step runs whole: its parts are not called one by one)
    def forward(self, feeds, captured, feed_attrs=None):
        raise TypeError("a training step runs whole (step)")

    forward_for_grad = forward

    def backward(self, saved, cts, wanted):
        raise TypeError("a training step runs whole (step)")

    def text(self, feeds=None):
        plan = self.plan()
        if plan.compiled is None:
            raise ValueError("this step runs on the reference interpreter: "
                             "it has no generated code")
        return plan.compiled.source

    # ---- plans -------------------------------------------------------------------------
    def plan(self):
        """The `_NumpyPlan` that applies now: the compiled in-place plan unless
        something may raise after an update began (`check_finite`, numpy told
        to raise); else the compiled plan that commits after the run; the
        interpreter where code cannot be generated or is not wanted."""
        if executor_mode() != "compiled":
            return self._built("interpret")
        if not self.parts.check_finite and not numpy_raises():
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
        step = self.parts
        if kind == "interpret":
            return self._plan_of(lambda *arrays: self._interpret(arrays))
        program = step.main_program
        view = optimize(ProgramView(program, program.global_block().ops, step.run_outputs,
                                    step.run_inputs))
        in_place = ()
        if kind == "in_place":
            view = plan_in_place(view, step.captured_writes())
            if view is None:
                return None
            buffers = {b for bufs in view.inplace.values() if isinstance(bufs, UpdateBuffers)
                       for b in bufs.out if b is not None}
            in_place = tuple(i for i, n in enumerate(step.run_inputs) if n in buffers)
        try:
            fn = CompiledFunction(view, f"train_step_{kind}")
        except NotCompilable:
            return self._build("interpret") if kind == "commit" else None
        return self._plan_of(fn, in_place, fn)

    def _plan_of(self, compute, in_place=(), compiled=None):
        """The _NumpyPlan computing the values of `run_outputs` with `compute`
        (one array per `run_inputs` name -> values), after copying each array
        written in place (positions `in_place`) that is not ours alone. Its
        functions bind what is fixed per program once: a call reads the
        arrays, runs and (`call`) finishes. A compiled plan calls the
        generated function itself (a frame less per call), raising what
        CompiledFunction would."""
        step = self.parts
        traced = step._traced_tensors
        held = step._held
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
        return _NumpyPlan(runner(None), runner(step._finish), compiled, in_place)

    def _interpret(self, arrays):
        step = self.parts
        program = step.main_program
        scope = Scope()
        for name, a in zip(step.run_inputs, arrays):
            scope.vars[name] = a
        run_ops(program.global_block().ops, program, scope)
        return [scope.get(n) for n in step.run_outputs]

    # ---- the generated per-call function's numpy half ------------------------------------
    def step_call_hooks(self, step):
        """What jit.step_call writes for this backend, or None when this call's
        plan is not the generated function's (interpreted, numpy raising)."""
        plan = self.plan()
        if plan.compiled is None or executor_mode() != "compiled" or numpy_raises():
            return None
        return _StepCallHooks(plan.compiled, plan.in_place)


class _StepCallHooks:
    """The numpy half of a step's generated call (see jit.step_call)."""

    def __init__(self, compiled, in_place):
        self.compiled = compiled
        self.in_place = in_place

    def first_checks(self, w):
        w.globals["_mode"] = executor_mode
        return ['_mode() != "compiled"']

    def guard(self, w, general):
        g = w.globals
        if _NUMPY_ERR_STATE is not None:
            g.update(_err_state=_NUMPY_ERR_STATE.get, _raises_seen=_RAISES_SEEN)
            w.emit("seen = _raises_seen[0]")
            w.emit("if _err_state() is not seen[0] or seen[1]:")
        else:  # pragma: no cover - other numpy layouts
            g["_numpy_raises"] = numpy_raises
            w.emit("if _numpy_raises():")
        w.emit(general, 2)

    def conditions(self, w):
        return []

    def run(self, w, step, arrays):
        """Emit the run: `arrays` are the reads of the inputs and held gradients;
        the captured tensors' values are read here (numpy reads them per call)."""
        g = w.globals
        n_inputs = len(step.inputs)
        arrays = (arrays[:n_inputs]
                  + [f"{w.global_name('t', t)}._value" for t in step._traced_tensors]
                  + arrays[n_inputs:])
        names = [f"a{i}" for i in range(len(arrays))]
        for name, read in zip(names, arrays):
            w.emit(f"{name} = {read}")
        if self.in_place:  # an array written in place must be ours alone
            g.update(_refs=sys.getrefcount)
            for i in self.in_place:
                a = names[i]
                w.emit(f"if _refs({a}) > {SOLE_REFS} or {a}.base is not None "
                       f"or not {a}.flags.writeable:")
                w.emit(f"{a} = {a}.copy()", 2)
        g.update(_compute=self.compiled.fn, _locate=self.compiled.located)
        w.emit("try:")
        w.emit(f"r = _compute({', '.join(names)})", 2)
        w.emit("except Exception as e:")
        w.emit("raise _locate(e) from None", 2)


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
