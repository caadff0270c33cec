"""ConcreteProgram: one traced program for one input signature, and how it runs.

Tracing replaces every tensor argument by a `data` Variable and calls the
converted function under `program_guard`; parameters it touches are
captured by reference; ops nothing needs are then pruned. Running in
dynamic mode feeds the eager Tensors' arrays, runs the forward ops, and
wraps outputs as eager Tensors. When a gradient is wanted, the outputs are
joined to the eager tape by one node whose vjp runs the backward ops, built
once per program from the same vjp rules on a copy of the program (a
`BackwardProgram`): `main_program` stays the forward that users print and save.
"""
from __future__ import annotations

import threading

import numpy as np

from ..core import autograd, state
from ..core.dtypes import is_floating
from ..core.registry import OpDef
from ..core.tensor import Tensor
from ..static import framework
from ..static.backward import BackwardProgram
from ..static.codegen import NotCompilable, compile_program
from ..static.executor import Scope, UndefinedValue, executor_mode, run_ops, write_back
from ..static.input_spec import InputSpec
from ..static.ir import Program, Variable
from ..static.passes.dce import prune_program
from ..static.pytree import flatten, unflatten


_UNSET = object()


class ConcreteProgram:
    """`main_program`, `inputs` (data Variables) and `outputs` (output Variables)."""

    def __init__(self, main_program, inputs, outputs, out_tree, out_leaves, n_forward):
        self.main_program = main_program
        self.inputs = inputs
        self.outputs = outputs
        self._out_tree = out_tree
        self._out_leaves = out_leaves      # Python constants; None where an output goes
        self._n_forward = n_forward
        self._backward = None              # a BackwardProgram, built on first need
        self._compiled_forward = _UNSET
        self._float_params = [t for t in main_program.captured.values() if is_floating(t.dtype)]
        self._grad_fns = None
        self._lock = threading.Lock()
        self._tape_op = OpDef("run_program", None, None, vjp=self._vjp,
                              num_outputs=len(outputs))

    # ---- tracing ----------------------------------------------------------------
    @classmethod
    def trace(cls, converted_fn, signature, bound_self=None):
        program = Program()
        inputs, leaves, taken = [], [], set()
        with framework.program_guard(program):
            for leaf, spec, name in zip(signature.leaves, signature.specs, signature.names):
                if spec is None:
                    leaves.append(leaf)
                    continue
                unique = name
                while unique in taken:
                    unique += "_"
                taken.add(unique)
                var = framework.data(unique, spec.shape, spec.dtype)
                var.stop_gradient = getattr(leaf, "stop_gradient", True)
                inputs.append(var)
                leaves.append(var)
            args, kwargs = unflatten(signature.tree, leaves)
            # Arguments holding no tensor are passed as they are (a list the
            # function appends to is the caller's list, as in Python).
            args = tuple(orig if _tensor_free(orig) else new
                         for orig, new in zip(signature.args, args))
            kwargs = {k: signature.kwargs[k] if _tensor_free(signature.kwargs[k]) else v
                      for k, v in kwargs.items()}
            if bound_self is not None:
                args = (bound_self,) + tuple(args)
            result = converted_fn(*args, **kwargs)
            out_leaves, out_tree = flatten(result)
            outputs, consts = [], []
            for leaf in out_leaves:
                if isinstance(leaf, (Variable, Tensor)):
                    outputs.append(program._builder.to_var(leaf))
                    consts.append(None)
                else:
                    consts.append(leaf)
        prune_program(program, [v.name for v in outputs])
        n_forward = len(program.global_block().ops)
        return cls(program, inputs, outputs, out_tree, consts, n_forward)

    # ---- running ---------------------------------------------------------------------
    def _needs_grad(self, tensors):
        if not state._tls.grad_enabled:
            return False
        for t in tensors:
            if not t.stop_gradient:
                return True
        for t in self._float_params:
            if not t.stop_gradient:
                return True
        return False

    def __call__(self, tensors):
        """Run with eager input Tensors (in `inputs` order); eager outputs."""
        captured = self.main_program.captured
        arrays = [t._value for t in tensors]
        for t in captured.values():
            arrays.append(t._value)
        if self._needs_grad(tensors):
            values, saved = self._forward_for_grad(arrays)
            outs = [Tensor._from_array(v) for v in values]
            for o, v in zip(outs, self.outputs):
                o.stop_gradient = not is_floating(v.dtype)
            if outs:
                autograd.record(self._tape_op, list(tensors) + list(captured.values()),
                                {"_saved": saved}, outs, values)
            return self._restructure(outs)
        forward = self._compiled_forward
        if forward is _UNSET:
            forward = self._forward()
        if forward is not None:
            values = forward(*arrays)
            new = Tensor._from_array
            outs = [new(v if type(v) is np.ndarray else np.asarray(v)) for v in values]
        else:
            scope = self._run_interpreted(arrays)
            outs = [Tensor._from_array(scope.get(v.name)) for v in self.outputs]
        return self._restructure(outs)

    def _restructure(self, outs):
        if self._out_tree is None and outs:  # a single tensor: the common case, kept fast
            return outs[0]
        it = iter(outs)
        leaves = [next(it) if c is None else c for c in self._out_leaves]
        return unflatten(self._out_tree, leaves)

    # ---- execution strategies ----------------------------------------------------------------
    def _input_names(self):
        return [v.name for v in self.inputs] + list(self.main_program.captured)

    def _forward(self):
        """The compiled forward (None where only the interpreter can run it)."""
        if self._compiled_forward is _UNSET:
            with self._lock:
                if self._compiled_forward is _UNSET:
                    self._compiled_forward = self._compile(
                        self.main_program, self.main_program.global_block().ops,
                        self._input_names(), [v.name for v in self.outputs], "forward")
        return self._compiled_forward

    def _compile(self, program, ops, inputs, outputs, name):
        if executor_mode() != "compiled" or self._writes_parameters():
            return None
        try:
            return compile_program(program, ops, inputs, outputs, name)
        except NotCompilable:
            return None

    def _writes_parameters(self):
        captured = self.main_program.captured
        return any(v.name in captured for op in self.main_program.global_block().ops
                   for v in op.outputs)

    def _run_interpreted(self, arrays, program=None, ops=None):
        """Run the forward ops (by default the main program's) on `arrays`."""
        if program is None:
            program = self.main_program
            ops = program.global_block().ops
        scope = Scope()
        for name, a in zip(self._input_names(), arrays):
            scope.vars[name] = a
        run_ops(ops, program, scope)
        write_back(program, scope)
        return scope

    def _forward_for_grad(self, arrays):
        """Outputs, and what the backward needs: (compiled saved values) or a scope."""
        self._ensure_backward()
        if self._grad_fns is None:
            with self._lock:
                if self._grad_fns is None:
                    self._grad_fns = self._compile_grad() or False
        if self._grad_fns:
            fwd, _ = self._grad_fns
            results = fwd(*arrays)
            n = len(self.outputs)
            values = [np.asarray(v) for v in results[:n]]
            return values, results[n:]
        scope = self._run_interpreted(arrays, self._backward.program, self._backward.forward_ops)
        values = [scope.get(v.name) for v in self.outputs]
        # The tape keeps only the forward values the backward ops read.
        keep = self._backward.reads
        scope.vars = {k: v for k, v in scope.vars.items() if k in keep}
        return values, scope

    def _compile_grad(self):
        """Forward returning outputs + the values backward reads (saved cond/while
        scopes included), and the backward; None where only the interpreter can."""
        grad_program = self._backward.program
        fwd_ops = self._backward.forward_ops
        if any(op.type == "undefined" and is_floating(op.outputs[0].dtype)
               for op in grad_program.all_ops()):
            return None  # undefined floats may meet cotangents (symbolic zeros): interpreter
        produced = set(self._input_names()) | {v.name for op in fwd_ops for v in op.outputs}
        produced |= {op.attrs[k] for op in fwd_ops for k in ("save_scope", "save_steps")
                     if op.attrs.get(k)}
        saved = sorted(n for n in self._backward.reads if n in produced)
        fwd = self._compile(grad_program, fwd_ops, self._input_names(),
                            [v.name for v in self.outputs] + saved, "forward_for_grad")
        if fwd is None:
            return None
        self._saved_names = saved
        return fwd, {}

    def _backward_fn(self, wanted):
        """The compiled backward computing only the gradients `wanted` (a mask
        over inputs + parameters): DCE drops the rest (e.g. a frozen input's)."""
        fwd, by_mask = self._grad_fns
        bwd = by_mask.get(wanted)
        if bwd is None:
            backward = self._backward
            outs = [n for n, w in zip(backward.grad_names, wanted) if n is not None and w]
            bwd = self._compile(backward.program, backward.backward_ops,
                                self._saved_names + backward.ct_names, outs, "backward")
            by_mask[wanted] = bwd
        return bwd

    # ---- backward ------------------------------------------------------------------------
    def _ensure_backward(self):
        with self._lock:
            if self._backward is not None:
                return
            program = self.main_program
            params = [program._captured_ids[id(t)] for t in program.captured.values()]
            self._backward = BackwardProgram(program, self.outputs, self.inputs + params)

    def _vjp(self, g, out, *inputs, _saved):
        backward = self._backward
        grad_names = backward.grad_names
        gs = (g,) if self._tape_op.num_outputs == 1 else g
        cts = [gs[i]._value.astype(self.outputs[i].dtype, copy=False)
               for i in backward.diff_outs]
        if isinstance(_saved, Scope):
            scope = Scope(_saved)
            for name, ct in zip(backward.ct_names, cts):
                scope.vars[name] = ct
            run_ops(backward.backward_ops, backward.program, scope)
            values = [None if n is None else scope.get(n) for n in grad_names]
        else:
            wanted = tuple(not t.stop_gradient for t in inputs)
            it = iter(self._backward_fn(wanted)(*_saved, *cts))
            values = [next(it) if n is not None and w else None
                      for n, w in zip(grad_names, wanted)]
        return tuple(None if v is None or type(v) is UndefinedValue
                     else Tensor._from_array(np.asarray(v)) for v in values)

    def __repr__(self):
        return (f"<ConcreteProgram: {len(self.inputs)} inputs, {len(self.outputs)} outputs, "
                f"{self._n_forward} ops>")


def _tensor_free(value):
    leaves, _ = flatten(value)
    return not any(isinstance(x, (Tensor, np.ndarray, InputSpec))
                   for x in leaves)


