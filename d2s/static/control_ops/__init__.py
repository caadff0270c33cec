"""One home per control-flow op: each module declares one op (or an op and
its gradient) with every interpretation side by side (see `registry`).

* `cond`     — `cond`, `cond_grad`: a branch and its gradient
* `while_`   — `while`, `while_grad`: a loop and its gradient
* `undefined` — the value of a name no path has assigned yet, and
  `cast_if_defined`, a cast that leaves such a value undefined
* `raise_`   — a `raise` inside a traced branch or loop body
* `py_layer` — a user's `PyLayer`: its forward's values, its own backward

Tensor arrays (`array_append`) are an ordinary registry op: their home is
`static.tensor_array`. Tracing Python code into these ops (the front ends
with the user-facing errors) is `static.control_flow` (`cond`) and
`static.loops` (`while_loop`).
"""
from .registry import (CONTROL_OPS, ControlOpDef, SavedScope, always_kept, block_ref_attrs,
                       block_results, control_op, kept_names, names_read, register_control_op,
                       renamed_results, restored_var, result_attrs, saved_names, saved_values,
                       saved_var, sub_block_attrs, sub_block_ids, type_mismatch)
from . import cond, py_layer, raise_, undefined, while_  # noqa: E402  (each registers its op)

__all__ = ["CONTROL_OPS", "ControlOpDef", "SavedScope", "always_kept", "block_ref_attrs",
           "block_results", "control_op", "kept_names", "names_read", "register_control_op",
           "renamed_results", "restored_var", "result_attrs", "saved_names", "saved_values", "saved_var",
           "sub_block_attrs", "sub_block_ids", "type_mismatch",
           "cond", "py_layer", "raise_", "undefined", "while_"]
