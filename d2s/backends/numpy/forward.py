"""A to_static program (`ProgramParts`) on the numpy backend.

Each part — the forward, the forward that also returns what the backward
reads, the backward per mask of wanted gradients — runs on the reference
interpreter on its first calls and as generated Python (`codegen`) from its
second (tiered, see `tiering._Compiled.when_hot`); a part the generator
cannot handle, or `set_executor_mode("interpreter")`, stays interpreted.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from ...gc_pause import gc_paused
from ...static.executor import Scope, executor_mode, run_ops, write_back
from .codegen import NotCompilable, compile_program
from .tiering import Plan, _Compiled

_VALUE = operator.attrgetter("_value")  # a Tensor's array, read in C by `map`
_ndarray = np.ndarray


class ForwardExecutable:
    """`parts` (a ConcreteProgram) on numpy: see the module doc. Arrays in,
    values out (an output no path assigned is an `UndefinedValue`)."""

    text_needs_feeds = False  # the generated code serves every shape

    def __init__(self, parts):
        self.parts = parts
        self._lock = threading.Lock()
        self._forward_fn = _Compiled()
        self._grad_forward_fn = _Compiled()  # forward that also returns what backward reads
        self._backward_fns = {}              # gradient mask -> compiled backward
        self._saved_names = []
        self.plain_call = self._plain
        # Once the forward is compiled: its generated function itself (input
        # arrays, then the captured tensors' -> output values) and the error
        # locator `_plain` applies, for a caller inlining `_plain`
        # (jit.inline_cache); None before.
        self.direct_fn = self.direct_located = None

    # ---- forward -------------------------------------------------------------------
    def forward(self, feeds, captured, feed_attrs=None):
        """Output values for input arrays `feeds` and the captured Tensors."""
        arrays = list(feeds)
        arrays += map(_VALUE, captured)
        forward = self._forward_fn.fn  # set once the plan is COMPILED
        if forward is None and self._forward_fn.plan is Plan.UNDECIDED:
            forward = self._forward_fn.when_hot(self._lock, self._compile_forward)
        if forward is not None:
            if self.direct_fn is None:
                self.direct_located = forward.located
                self.direct_fn = forward.fn
            return forward(*arrays)
        return self._interpreted_outputs(arrays)

    def _plain(self, feeds, captured):
        """`forward` for the per-call path: arrays only (an output that is not
        one, a numpy scalar or an undefined value, is made one, or raises)."""
        forward = self._forward_fn.fn
        if forward is None:
            values = self.forward(feeds, captured)
        else:
            if captured:
                feeds += map(_VALUE, captured)
            try:  # (`forward(*feeds)` less its frame: the generated function itself)
                values = forward.fn(*feeds)
            except Exception as e:
                raise forward.located(e) from None
        for v in values:
            if type(v) is not _ndarray:
                return self.as_arrays(values)
        return values

    def as_arrays(self, values):
        """The forward's output values as arrays (`_plain`'s conversion)."""
        return [v if type(v) is _ndarray else self.parts._as_array(i, v)
                for i, v in enumerate(values)]

    def output_attrs(self, feeds, captured, feed_attrs, grad=False):
        return None  # placements are metadata on numpy: the output Variables'

    def text(self, feeds=None):
        """The generated Python of the forward."""
        forward = self._forward_fn.decide(self._lock, self._compile_forward)
        if forward is None:
            raise ValueError("this program runs on the reference interpreter: "
                             "it has no generated code")
        return forward.source

    def _compile_forward(self):
        program = self.parts.main_program
        return self._compile(program, program.global_block().ops, self.parts.input_names(),
                             [v.name for v in self.parts.outputs], "forward")

    def _interpreted_outputs(self, arrays):
        scope = self._run_interpreted(arrays)
        return [scope.get(v.name) for v in self.parts.outputs]

    def _compile(self, program, ops, inputs, outputs, name):
        if executor_mode() != "compiled" or self._writes_parameters():
            return None
        try:
            with gc_paused():
                return compile_program(program, ops, inputs, outputs, name)
        except NotCompilable:
            return None

    def _writes_parameters(self):
        main = self.parts.main_program
        captured = main.captured
        return any(v.name in captured for op in main.global_block().ops for v in op.outputs)

    def _run_interpreted(self, arrays, program=None, ops=None):
        """Run the forward ops (by default the main program's) on `arrays`."""
        if program is None:
            program = self.parts.main_program
            ops = program.global_block().ops
        scope = Scope()
        for name, a in zip(self.parts.input_names(), arrays):
            scope.vars[name] = a
        run_ops(ops, program, scope)
        write_back(program, scope)
        return scope

    # ---- gradients -----------------------------------------------------------------
    def forward_for_grad(self, feeds, captured, feed_attrs=None):
        """Output values, and what the backward needs: compiled saved values or a scope."""
        arrays = list(feeds)
        arrays += map(_VALUE, captured)
        return self._forward_for_grad(arrays)

    def _forward_for_grad(self, arrays):
        backward = self.parts.backward_program()
        fwd = self._grad_forward_fn.fn  # set once the plan is COMPILED
        if fwd is None and self._grad_forward_fn.plan is Plan.UNDECIDED:
            fwd = self._grad_forward_fn.when_hot(self._lock, self._compile_grad_forward)
        n = len(self.parts.outputs)
        if fwd is not None:
            results = fwd(*arrays)
            return results[:n], results[n:]
        scope = self._run_interpreted(arrays, backward.program, backward.forward_ops)
        values = [scope.get(v.name) for v in self.parts.outputs]
        # The tape keeps only the forward values the backward ops read.
        keep = backward.reads
        scope.vars = {k: v for k, v in scope.vars.items() if k in keep}
        return values, scope

    def _compile_grad_forward(self):
        """Forward returning outputs + the values backward reads (saved cond/while
        scopes included); None where only the interpreter can run it."""
        backward = self.parts.backward_program()
        grad_program = backward.program
        saved = self.parts.saved_for_backward()
        fwd = self._compile(grad_program, backward.forward_ops, self.parts.input_names(),
                            [v.name for v in self.parts.outputs] + saved, "forward_for_grad")
        if fwd is not None:
            self._saved_names = saved
        return fwd

    def _backward_fn(self, wanted):
        """The compiled backward computing only the gradients `wanted` (a mask
        over inputs + parameters): DCE drops the rest (e.g. a frozen input's)."""
        bwd = self._backward_fns.get(wanted)
        if bwd is None:
            backward = self.parts.backward_program()
            outs = [n for n, w in zip(backward.grad_names, wanted) if n is not None and w]
            bwd = self._compile(backward.program, backward.backward_ops,
                                self._saved_names + backward.ct_names, outs, "backward")
            self._backward_fns[wanted] = bwd
        return bwd

    def backward(self, saved, cts, wanted):
        """Per wrt: gradient array or None."""
        backward = self.parts.backward_program()
        grad_names = backward.grad_names
        if isinstance(saved, Scope):
            scope = Scope(saved)
            for name, ct in zip(backward.ct_names, cts):
                scope.vars[name] = ct
            run_ops(backward.backward_ops, backward.program, scope)
            return [None if n is None else scope.get(n) for n in grad_names]
        it = iter(self._backward_fn(wanted)(*saved, *cts))
        return [next(it) if n is not None and w else None for n, w in zip(grad_names, wanted)]

    def gradients_from(self, arrays, cts, wanted):
        """Gradients from the forward's input arrays (inputs, then captured),
        the forward run again: what another backend's backward falls back to."""
        _, saved = self._forward_for_grad(list(arrays))
        return self.backward(saved, cts, wanted)

    def step(self, tensors):
        raise TypeError("a forward program is no training step")
