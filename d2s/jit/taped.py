"""How a `ConcreteProgram`'s outputs join the eager tape when a gradient is
wanted (a mixin of ConcreteProgram, kept apart from the forward path).

The forward runs in a variant that also returns what the backward reads
(the values it saves); the outputs are joined to the tape by one node whose
vjp runs the backward ops. The backward is built once per program from the
same vjp rules on a copy of the program (a `BackwardProgram`), so
`main_program` stays the forward that users print and save; its compiled
form is built per mask of wanted gradients (DCE drops the others). Each
part runs on the program's backend (its Executable: `forward_for_grad`,
`backward`); the tape keeps the executable with what its forward saved.
"""
from __future__ import annotations

import numpy as np

from ..core import autograd, dist_attr, state
from ..core.tensor import Tensor
from ..static.backward import BackwardProgram, output_sources
from ..static.control_ops import saved_var
from ..static.executor import UndefinedValue
from ..static.scope import op_location


class TapedRuns:
    """Gradient support of ConcreteProgram: `_needs_grad`, the taped call and
    the backward it records (see module doc)."""

    def _needs_grad(self, tensors, captured):
        if not state._tls.grad_enabled:
            return False
        for t in tensors:
            if not t.stop_gradient:
                return True
        for i in self._captured.floating:
            if not captured[i].stop_gradient:
                return True
        return False

    def _taped(self, tensors, captured, values, saved, attrs=None):
        """Outputs joined to the eager tape (their vjp runs the backward);
        `saved`: (the executable, what its forward saved); `attrs`: their
        placements, see `_placed`."""
        values = [v if type(v) is np.ndarray else self._as_array(i, v)
                  for i, v in enumerate(values)]
        outs = [Tensor._from_array(v) for v in values]
        if attrs is not None or dist_attr.any_placed():
            self._placed(outs, attrs)
        sources = self._output_sources()
        watched = list(tensors) + captured
        for o, srcs in zip(outs, sources):
            # as eagerly: an output requires a gradient when an input it is
            # computed from (differentiably) does
            o.stop_gradient = not any(not watched[k].stop_gradient for k in srcs)
        if outs:
            autograd.record(self._tape_op, list(tensors) + captured,
                            {"_saved": saved}, outs, values)
        return self.output_structure.restructure(outs)

    def _output_sources(self):
        """Per output: positions in (inputs + captured tensors) it is computed
        from through differentiable ops (see `static.backward.output_sources`)."""
        sources = self._out_sources
        if sources is None:
            block = self.main_program.global_block()
            keys = {id(v): i for i, v in enumerate(self.inputs)}
            n = len(self.inputs)
            for j, name in enumerate(self._captured.names):
                keys[id(block.vars[name])] = n + j
            sources = self._out_sources = output_sources(
                block.ops[:self._n_forward], keys, self.outputs)
        return sources

    def _not_differentiable_again(self):
        where = next((op_location(op) for op in self.main_program.global_block().ops
                      if op.origin), "")
        return ("d2s.grad(..., create_graph=True) through a call of a to_static function"
                f"{where}: the gradient of a converted call runs as a program and is not "
                "differentiated again (it would be silently missing from a second "
                "derivative). Call d2s.grad(..., create_graph=True) inside the converted "
                "function (its second derivative is then built from ops of its program), "
                "or call the function without to_static")

    def saved_for_backward(self):
        """The names the backward ops read that the forward has (inputs,
        parameters, values it computes, the scopes cond/while save), sorted."""
        fwd_ops = self.backward_program().forward_ops
        produced = set(self.input_names()) | {v.name for op in fwd_ops for v in op.outputs}
        produced |= {saved_var(op) for op in fwd_ops if saved_var(op)}
        return sorted(n for n in self._backward.reads if n in produced)

    # ---- backward ------------------------------------------------------------------------
    def _ensure_backward(self):
        with self._lock:
            if self._backward is not None:
                return
            program = self.main_program
            params = [program._captured_ids[id(t)] for t in program.captured.values()]
            self._backward = BackwardProgram(program, self.outputs, self.inputs + params)

    def backward_program(self):
        """The BackwardProgram (forward copy + backward ops), built on first need."""
        if self._backward is None:
            self._ensure_backward()
        return self._backward

    def _vjp(self, g, out, *inputs, _saved):
        if state._tls.grad_enabled:  # d2s.grad(create_graph=True) walks with gradients on
            raise RuntimeError(self._not_differentiable_again())
        backward = self._backward
        single = self._tape_op.num_outputs == 1
        gs, outs = ((g,), (out,)) if single else (g, out)
        # An output the loss does not use has no cotangent: it contributes zero.
        cts = [np.zeros_like(outs[i]._value, dtype=self.outputs[i].dtype) if gs[i] is None
               else gs[i]._value.astype(self.outputs[i].dtype, copy=False)
               for i in backward.diff_outs]
        # as eagerly: an input that no output with a cotangent is computed from
        # gets no gradient (None, not zeros: an optimizer skips a None gradient
        # but moves a parameter whose gradient is zero by its momentum or decay)
        sources = self._output_sources()
        used = set()
        for i, gi in enumerate(gs):
            if gi is not None:
                used.update(sources[i])
        wanted = tuple(not t.stop_gradient and k in used for k, t in enumerate(inputs))
        exe, saved = _saved  # the backward runs where the forward ran
        values = exe.backward(saved, cts, wanted)
        return tuple(None if v is None or type(v) is UndefinedValue or not w
                     else Tensor._from_array(np.asarray(v)) for v, w in zip(values, wanted))
