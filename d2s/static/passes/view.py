"""`ProgramView`: what passes transform and the code generator emits.

It holds, per block index, the list of ops to emit (Operator objects of the
program, never mutated), the names of values that must survive (program
outputs), compile-time constants (folded values), and per-op notes such as
the buffer an op writes in place.
"""
from __future__ import annotations

from .. import control_ops
from ..ir import Operator
from ..printing import op_to_text


class ProgramView:
    def __init__(self, program, global_ops, outputs, inputs=()):
        self.program = program
        self.blocks = blocks = {0: list(global_ops)}
        todo = list(blocks[0])
        sub_block_ids, declared = control_ops.sub_block_ids, control_ops.CONTROL_OPS
        while todo:
            op = todo.pop()
            if op.type not in declared:
                continue  # a core op: no sub-blocks
            for idx in sub_block_ids(op):
                if idx not in blocks:
                    ops = blocks[idx] = list(program.blocks[idx].ops)
                    todo.extend(ops)
        self.outputs = list(outputs)        # names returned by the compiled function
        self.inputs = list(inputs)          # names passed in (feeds, then parameters)
        self.consts = {}                    # name -> array known at compile time
        self.inplace = {}                   # id(op) -> name of the buffer it writes
        self.rename = {}                    # dropped name -> the name that replaced it

    def copy(self):
        new = ProgramView.__new__(ProgramView)
        new.program = self.program
        new.blocks = {k: list(v) for k, v in self.blocks.items()}
        new.outputs = list(self.outputs)
        new.inputs = list(self.inputs)
        new.consts = dict(self.consts)
        new.inplace = dict(self.inplace)
        new.rename = dict(self.rename)
        return new

    def ops(self, idx=0):
        return self.blocks[idx]

    def sub_block_ids(self, op):
        return control_ops.sub_block_ids(op)

    def saved_names(self, op):
        """Names a forward `cond`/`while` keeps for its gradient (the scope
        variable and the values in it): live, and never overwritten."""
        return control_ops.saved_names(op)

    def block_results(self, op):
        """Names an op's sub-blocks hand back to it (branch / body outputs)."""
        return control_ops.block_results(op)

    def to_text(self):
        """One op per line (sub-blocks indented), constants and in-place notes."""
        lines = [f"inputs: {', '.join(self.inputs)}"]
        for name, value in self.consts.items():
            lines.append(f"const {name} = {value.dtype.name}{list(value.shape)}")

        def emit(idx, indent):
            for op in self.blocks[idx]:
                note = f"  [in place: {self.inplace[id(op)]}]" if id(op) in self.inplace else ""
                lines.append("  " * indent + op_to_text(op) + note)
                for sub in self.sub_block_ids(op):
                    lines.append("  " * (indent + 1) + f"block {sub}:")
                    emit(sub, indent + 2)
        emit(0, 1)
        lines.append(f"outputs: {', '.join(self.outputs)}")
        return "\n".join(lines)


def renamed_op(op, rename):
    """`op` with inputs and result-name attributes redirected (a new Operator)."""
    if not rename:
        return op
    results = None
    if control_ops.control_op(op.type) is not None:
        results = control_ops.renamed_results(
            op, lambda n: rename[n].name if n in rename else None)
    if results is None and not any(v.name in rename for v in op.inputs):
        return op
    return Operator(op.block, op.type, [rename.get(v.name, v) for v in op.inputs],
                    op.outputs, {**op.attrs, **(results or {})}, op.origin_record, op.is_grad)


def apply_renames(view, rename):
    """Redirect every use (op inputs, block results, outputs) through `rename`
    (dropped name -> surviving Variable); records it in `view.rename` for codegen."""
    if not rename:
        return  # nothing to redirect (the chains in view.rename are resolved already)
    for idx, ops in view.blocks.items():
        view.blocks[idx] = [renamed_op(op, rename) for op in ops]
    view.outputs = [rename[n].name if n in rename else n for n in view.outputs]
    # chains (a -> b, then b -> c) resolve to the final survivor
    view.rename.update({k: v.name for k, v in rename.items()})
    for k in list(view.rename):
        seen = {k}
        while view.rename[k] in view.rename and view.rename[k] not in seen:
            seen.add(view.rename[k])
            view.rename[k] = view.rename[view.rename[k]]
