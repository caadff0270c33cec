"""Readable text for programs: one op per line, sub-blocks indented."""
from __future__ import annotations

from .control_ops import sub_block_attrs
from .ir import format_type


def _fmt_attr(v):
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, (int, float)):
        return f"array{tuple(v.shape)}"
    return repr(v)


def op_to_text(op):
    outs = ", ".join(f"{v.name}: {format_type(v)}" for v in op.outputs)
    ins = ", ".join(v.name for v in op.inputs)
    blocks = {key for key, _ in sub_block_attrs(op)}  # printed beneath the op instead
    attrs = {k: v for k, v in op.attrs.items() if k not in blocks}
    attr_text = ""
    if attrs:
        attr_text = " {" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in attrs.items()) + "}"
    lhs = f"{outs} = " if outs else ""
    return f"{lhs}{op.type}({ins}){attr_text}"


def block_to_lines(block, indent=1):
    pad = "  " * indent
    lines = []
    for op in block.ops:
        lines.append(pad + op_to_text(op))
        for key, idx in sub_block_attrs(op):
            sub = block.program.blocks[idx]
            lines.append(f"{pad}  {key} (block {idx}):")
            lines.extend(block_to_lines(sub, indent + 2))
    return lines


def program_to_text(program):
    gb = program.global_block()
    lines = ["program {"]
    for name, var in gb.vars.items():
        if var.is_data:
            lines.append(f"  data {name}: {format_type(var)}")
    for name in program.captured:
        lines.append(f"  param {name}: {format_type(gb.vars[name])}")
    lines.extend(block_to_lines(gb))
    lines.append("}")
    return "\n".join(lines)
