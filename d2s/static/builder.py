"""Building programs: what `bind` does when a program is being built.

It runs the op's shape rule and appends an Operator to the program's
current block. Eager Tensors used as inputs (parameters, constants made
eagerly) are captured into the global block by reference. While `to_static`
traces a function into the program, the builder holds the trace's
`StateOverlay` (static.state_overlay): a Tensor then reads as the Variable
standing for its value at that point of the step (after an optimizer
update, the update's result), and ops built under `no_grad()` give detached
results (no gradient flows back through them, as on the eager tape).
"""
from __future__ import annotations

from ..core import state
from ..core.tensor import Tensor
from .ir import Operator, Variable, user_frame


class Builder:
    def __init__(self, program):
        self.program = program
        self.overlay = None  # a StateOverlay while to_static traces into this program

    def to_var(self, x):
        if isinstance(x, Variable):
            if x.block.program is not self.program:
                raise ValueError(f"Variable '{x.name}' belongs to another program")
            while x._latest is not None:  # written in place since (static.rebinding)
                x = x._latest
            return x
        if isinstance(x, Tensor):
            if self.overlay is not None:
                return self.overlay.read(x)
            return self.capture(x)
        raise TypeError(f"cannot use {type(x).__name__} as an op input in a static program")

    def while_loop(self, cond, body, loop_vars):
        """A `while` op in this program (`static.loops.while_loop`), for library
        code that may not import the static layer (`core.control`)."""
        from .loops import while_loop
        return while_loop(cond, body, loop_vars)

    def capture(self, tensor):
        """The Variable standing for eager `tensor` (reference, never a copy)."""
        prog = self.program
        var = prog._captured_ids.get(id(tensor))
        if var is not None:
            return var
        gb = prog.global_block()
        name = tensor.name if tensor.name and tensor.name not in gb.vars else None
        var = gb.create_var(tensor.shape, tensor.dtype, name=name, prefix="param",
                            stop_gradient=tensor.stop_gradient, persistable=True)
        prog.captured[var.name] = tensor
        prog._captured_ids[id(tensor)] = var
        return var

    def append_op(self, opdef, inputs, attrs):
        # Every op of a trace comes here: the common cases (inputs that are
        # Variables of this program, computed in this block) are tested inline,
        # and the op and its results are made without the public
        # constructors' copies and keyword handling (`attrs` is the fresh
        # dict of `bind`'s keywords, owned by the op from now on).
        # (Loops, not comprehensions: each comprehension is a function call.)
        program = self.program
        block = program.blocks[program._current]  # current_block(), inline
        building_grad = program._building_grad
        ins = []
        stop = True
        for x in inputs:
            if type(x) is not Variable or x.block.program is not program \
                    or x._latest is not None:
                x = self.to_var(x)
            # gradient blocks read saved forward scopes
            if x.block is not block and not building_grad:
                check_visible(x, block)
            if not x.stop_gradient:
                stop = False
            ins.append(x)
        avals = opdef.infer(*ins, **attrs)
        if opdef.vjp is None:
            stop = True
        new_var = block._new_var
        n_out = opdef.num_outputs
        if n_out == 1:
            outs = [new_var(avals.shape, avals.dtype, opdef.name, stop)]
        else:
            outs = []
            for a in avals:
                outs.append(new_var(a.shape, a.dtype, opdef.name, stop))
        block.ops.append(Operator._owned(block, opdef.name, ins, outs, attrs,
                                         user_frame(), building_grad))
        if not stop and self.overlay is not None and not state._tls.grad_enabled \
                and not building_grad:
            outs = [self._detached(block, v) for v in outs]
        if n_out == 1:
            return outs[0]
        return None if n_out == 0 else tuple(outs)

    def _detached(self, block, var):
        """`var` through a `detach` op: built under `no_grad()`, a value that
        gradients do not flow back through."""
        out = block.create_var(var.shape, var.dtype, prefix="detach", stop_gradient=True)
        out.weak = var.weak
        block.append_op("detach", [var], [out], {})
        return out


def check_visible(var, block):
    """`var` must be computed in `block` or a block enclosing it. A value computed
    inside a branch or loop body, used where that block is not running, was
    written where the converter did not see it (and so could not carry it)."""
    if var.block is block or var.block.is_ancestor_of(block):
        return
    from .control_flow import ControlFlowError
    raise ControlFlowError(
        f"'{var.name}' was computed inside a branch or loop body on a tensor and is used "
        "outside it: it was stored where the converter could not see the write (an "
        "attribute, global or nonlocal name set by a function called inside the `if` or "
        "loop, or a Python list changed in place other than by `lst.append`, `lst.extend`, "
        "`lst += [...]` on a name: `insert`, an alias of `append`, a list inside a dict?); "
        "assign it in the converted function itself, or return it")
