"""`while_loop`: a loop as one `while` op whose body and condition are sub-blocks.

With Python or eager values it is a plain Python loop. Otherwise the body is
traced into a sub-block; loop variables whose known dims the body changes
are relaxed to unknown dims, names the body assigns first are carried from
an "undefined" value, Python lists appended to become tensor arrays, and
Python numbers (weakly typed) take the dtype the body gives them, each by
tracing the body again.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import Symbolic
from ..core.dtypes import is_python_scalar
from ..core.ops import constant
from ..core.shapes import merge_dims
from .control_flow import (ControlFlowError, _builder_for, _is_undefined, _is_value, _label,
                           _promote_scalar, _same_python, _transaction, external_reads)
from .pytree import flatten, unflatten
from .tensor_array import PendingArray, array_init


def while_loop(cond, body, loop_vars, names=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`.

    Returns the final loop values (a list). With Python / eager values this
    is a Python loop; otherwise one `while` op. A loop value whose dtype the
    body changes raises `ControlFlowError`; one whose known dims change is
    relaxed to an unknown dim (the body is traced again).
    """
    loop_vars = list(loop_vars)
    leaves, tree = flatten(loop_vars)
    builder = _builder_for(*leaves)
    if builder is None:
        while True:
            c = cond(*loop_vars)
            if isinstance(c, Symbolic):
                builder = c._owning_builder()
                break
            if not c:
                return loop_vars
            loop_vars = list(body(*loop_vars))
        leaves, tree = flatten(loop_vars)
    with _transaction(builder.program, builder.program.current_block()):
        return _build_while(builder, cond, body, leaves, tree, names)


def _init_var(builder, x, label):
    if _is_value(x):
        return builder.to_var(x)
    if is_python_scalar(x) or isinstance(x, np.ndarray):
        return builder.to_var(constant(x))
    # Undefined names and other Python objects are not carried; the body may
    # first assign the former, and must leave the latter unchanged.
    return None


def _build_while(builder, cond_fn, body_fn, leaves, tree, names):
    program = builder.program
    parent = program.current_block()
    init = {}   # leaf index -> initial Variable, for every loop-carried leaf
    for i, x in enumerate(leaves):
        v = _init_var(builder, x, _label(names, i))
        if v is not None:
            init[i] = v
    shapes = {i: v.shape for i, v in init.items()}
    n_blocks = len(program.blocks)
    # Each retry either relaxes a dim that the body changed or starts carrying
    # a name first assigned in the body; both only grow, so this terminates.
    for _attempt in range(2 * len(leaves) + 2):
        program._truncate_blocks(n_blocks)
        carried = sorted(init)
        # Placeholders live in a block of their own, the lexical parent of both
        # the condition and the body, so every nested block can resolve them.
        loop_block = program._create_block(parent)
        placeholders = {i: loop_block.create_var(shapes[i], init[i].dtype, prefix="loop_var")
                        for i in carried}
        for i in carried:
            placeholders[i].weak = getattr(init[i], "weak", False)
            placeholders[i].is_array = getattr(init[i], "is_array", False)
        cond_block = program._create_block(loop_block)
        current = [placeholders.get(i, x) for i, x in enumerate(leaves)]
        args = unflatten(tree, current)
        with program._block_guard(cond_block):
            c = cond_fn(*args)
            c = builder.to_var(c) if _is_value(c) else builder.to_var(constant(bool(c)))
        if c.dtype != np.bool_ or c.size not in (1, None):
            raise ControlFlowError(f"while: the loop condition must be a bool scalar, got "
                                   f"{c.dtype.name}{list(c.shape)}")
        body_block = program._create_block(loop_block)
        with program._block_guard(body_block):
            new_leaves, new_tree = flatten(list(body_fn(*args)))
            if new_tree != tree:
                raise ControlFlowError("while: the body must return as many values as it takes")
            outs = {i: _body_output(builder, new_leaves[i], placeholders[i],
                                    _label(names, i)) for i in carried}
            first_assigned = {i: builder.to_var(_as_value(new_leaves[i], _label(names, i)))
                              for i in range(len(leaves))
                              if i not in init and _not_carried_yet(leaves[i])
                              and not _is_undefined(new_leaves[i])
                              and new_leaves[i] is not leaves[i]}
        for i in range(len(leaves)):
            if i not in init and i not in first_assigned and \
                    not _same_python(new_leaves[i], leaves[i]):
                raise ControlFlowError(
                    f"loop variable {_label(names, i)} holds a {type(leaves[i]).__name__} "
                    "that the loop body changes; only tensors and numbers can be carried "
                    "by a loop on a tensor")
        retry = False
        for i, v in first_assigned.items():
            if isinstance(leaves[i], PendingArray):
                # A list appended to in the body: carried as a tensor array.
                with program._block_guard(parent):
                    init[i] = builder.to_var(array_init(leaves[i], v))
                shapes[i] = (None,) + tuple(v.shape[1:])
            else:
                # A name first assigned in the body: carried from an "undefined"
                # value, which raises NameError at run time if read after a
                # zero-trip loop.
                undef = parent.create_var(v.shape, v.dtype, prefix="undefined")
                parent.append_op("undefined", [], [undef],
                                 {"name": _label(names, i).strip("'")})
                init[i], shapes[i] = undef, v.shape
            retry = True
        for i in carried:
            ph, o, label = placeholders[i], outs[i], _label(names, i)
            if o.dtype != ph.dtype and ph.weak:
                # A Python number carried by the loop takes the dtype the body gives it.
                from ..core.ops import cast
                with program._block_guard(parent):
                    init[i] = builder.to_var(cast(init[i], o.dtype))
                retry = True
                continue
            if o.dtype != ph.dtype:
                raise ControlFlowError(
                    f"loop variable {label} changes dtype from {ph.dtype.name} to "
                    f"{o.dtype.name} in the loop body; cast it so it keeps one dtype")
            if len(o.shape) != len(ph.shape):
                raise ControlFlowError(f"loop variable {label} changes rank from "
                                       f"{len(ph.shape)} to {len(o.shape)} in the loop body")
            merged = merge_dims(ph.shape, o.shape)
            if merged != ph.shape:
                shapes[i] = merged
                retry = True
        if not retry:
            break
    else:  # pragma: no cover - see the comment above the loop
        raise ControlFlowError("while: loop variable shapes did not settle")

    ph_list = [placeholders[i] for i in carried]
    out_list = [outs[i] for i in carried]
    out_vars = [parent.create_var(ph.shape, ph.dtype, prefix="while") for ph in ph_list]
    for v, ph, o in zip(out_vars, ph_list, out_list):
        v.weak = ph.weak and getattr(o, "weak", False)
        v.is_array = ph.is_array
        v.stop_gradient = o.stop_gradient and all(
            init[i].stop_gradient for i in carried)
    local = {id(p) for p in ph_list}
    free = external_reads([cond_block, body_block], local)
    free += [o for o in out_list if o.block is not body_block and id(o) not in local
             and all(o is not u for u in free)]
    parent.append_op("while", [init[i] for i in carried] + free, out_vars, {
        "cond_block": cond_block.idx, "body_block": body_block.idx,
        "loop_scope": loop_block.idx, "loop_vars": [p.name for p in ph_list], "cond_out": c.name,
        "body_outs": [o.name for o in out_list], "num_loop_vars": len(carried)})
    result = list(leaves)
    for i, v in zip(carried, out_vars):
        result[i] = v
    return unflatten(tree, result)


def _not_carried_yet(x):
    return _is_undefined(x) or isinstance(x, PendingArray)


def _as_value(x, label):
    if _is_value(x):
        return x
    if is_python_scalar(x) or isinstance(x, np.ndarray):
        return constant(x)
    raise ControlFlowError(f"loop variable {label} becomes a {type(x).__name__} in the loop "
                           "body; only tensors and numbers can be carried by a loop on a tensor")


def _body_output(builder, x, placeholder, label):
    if _is_undefined(x):
        raise ControlFlowError(f"loop variable {label} is undefined after the loop body")
    if not _is_value(x):
        if not (is_python_scalar(x) or isinstance(x, np.ndarray)):
            raise ControlFlowError(f"loop variable {label} becomes a {type(x).__name__} in "
                                   "the loop body")
        x = _promote_scalar(x, placeholder.dtype)
    return builder.to_var(x)


