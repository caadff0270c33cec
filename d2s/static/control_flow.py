"""`cond` and `while_loop`: control flow as ops with sub-blocks.

With Python or eager values they are plain `if` / `while` (so converted
code keeps Python semantics); once a static Variable is involved, both
branches (or the condition and body) are traced into sub-blocks and one
`cond` / `while` op is appended. The op's inputs are the predicate (or the
initial loop values) followed by every outer Variable its blocks read, so
passes and backward see the true data dependencies.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import state
from ..core.dispatch import Symbolic
from ..core.dtypes import DEFAULT_FLOAT, DEFAULT_INT, is_python_scalar
from ..core.ops import constant, full, full_like
from ..core.shapes import merge_dims
from ..core.tensor import Tensor
from .ir import Variable
from .pytree import flatten, unflatten
from .tensor_array import PendingArray, array_init


class ControlFlowError(TypeError):
    """Branch or loop outputs that cannot form one static program."""


def _builder_for(*values):
    b = state.current_builder()
    if b is not None:
        return b
    for v in values:
        if isinstance(v, Symbolic):
            return v._owning_builder()
    return None


def _label(names, i):
    return f"'{names[i]}'" if names and i < len(names) else f"output #{i}"


def _is_undefined(x):
    # A class attribute of the converter's UndefinedVar (static never imports it).
    return getattr(type(x), "_d2s_undefined", False)


def _origin_text():
    from .ir import user_origin
    o = user_origin()
    return f" ({o[0]}, line {o[1]})" if o else ""


def _python_scalar_dtype(*values):
    if any(isinstance(v, float) for v in values):
        return DEFAULT_FLOAT
    if any(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return DEFAULT_INT
    return np.dtype("bool")


def _promote_scalar(x, like_dtype):
    return constant(x, np.result_type(np.dtype(like_dtype), x))


def external_reads(blocks, local_ids=()):
    """Outer Variables read by `blocks` (and their sub-blocks), in first-use order."""
    inside = set(id(b) for b in blocks)
    seen, out = set(local_ids), []

    def visit(block):
        for op in block.ops:
            for v in op.inputs:
                if id(v) not in seen and id(v.block) not in inside:
                    seen.add(id(v))
                    out.append(v)
            for sub in op.sub_blocks():
                inside.add(id(sub))
                visit(sub)

    for b in blocks:
        visit(b)
    return out


@contextlib.contextmanager
def _transaction(program, block):
    """Undo every block, op and variable a failed build added: no broken state."""
    n_blocks, n_ops, names = len(program.blocks), len(block.ops), set(block.vars)
    current, captured = program._current, set(program.captured)
    gb = program.global_block()
    global_names = set(gb.vars)
    try:
        yield
    except BaseException:
        program._truncate_blocks(n_blocks)
        del block.ops[n_ops:]
        for name in set(block.vars) - names:
            del block.vars[name]
        for name in set(program.captured) - captured:
            tensor = program.captured.pop(name)
            program._captured_ids.pop(id(tensor), None)
        for name in set(gb.vars) - global_names:
            del gb.vars[name]
        program._current = current
        raise


# ---------------------------------------------------------------------------
# cond
# ---------------------------------------------------------------------------
def cond(pred, true_fn, false_fn, names=None):
    """`true_fn()` if `pred` else `false_fn()`; a `cond` op when pred is a Variable.

    Both functions take no arguments and return matching structures (tuples,
    lists, dicts) of values. A Python scalar facing a tensor in the other
    branch becomes a tensor of that shape, with the dtype NumPy 2 gives the
    pair (the scalar is weak: `x if c else 0` keeps x's dtype); differing dtypes or
    known dims raise `ControlFlowError` naming the output (`names` gives
    output names for messages).
    """
    builder = _builder_for(pred)
    if builder is None:
        return true_fn() if pred else false_fn()
    program = builder.program
    with _transaction(program, program.current_block()):
        return _build_cond(builder, pred, true_fn, false_fn, names)


def _build_cond(builder, pred, true_fn, false_fn, names):
    program = builder.program
    pred = builder.to_var(pred) if isinstance(pred, (Variable, Tensor)) else constant(bool(pred))
    if pred.size not in (1, None) or pred.dtype != np.bool_:
        raise ControlFlowError(
            f"cond: the predicate must be a bool tensor with one element, got "
            f"{pred.dtype.name}{list(pred.shape)}")
    parent = program.current_block()
    true_block = program._create_block(parent)
    with program._block_guard(true_block):
        t_out = true_fn()
    false_block = program._create_block(parent)
    with program._block_guard(false_block):
        f_out = false_fn()
    t_out, f_out = _expand_undefined(t_out, f_out)
    t_leaves, t_tree = flatten(t_out)
    f_leaves, f_tree = flatten(f_out)
    if names and isinstance(t_out, (tuple, list)) and len(names) == len(t_out):
        # one name per output; a structured output (a returned tuple) names its leaves
        names = flatten([_like(v, n) for v, n in zip(t_out, names)])[0]
    if t_tree != f_tree or len(t_leaves) != len(f_leaves):
        raise ControlFlowError(
            "cond: true_fn and false_fn return different structures "
            f"({len(t_leaves)} vs {len(f_leaves)} values)")

    outs, t_names, f_names, labels, results, branch_vars = [], [], [], [], [], []
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        label = _label(names, i)
        a, b = _settle_pending(builder, a, true_block, b, false_block)
        a_undef, b_undef = _is_undefined(a), _is_undefined(b)
        if a_undef and b_undef or not _is_value(a) and not _is_value(b) and _same_python(a, b):
            results.append(a)
            continue
        if a_undef or b_undef:
            name = names[i] if names and i < len(names) else ""
            undefined_block = true_block if a_undef else false_block
            if not (name.startswith("__ret_val") or getattr(undefined_block, "terminates", False)):
                # Python would leave it unbound on one path: reading it later is the error.
                where = _origin_text()
                results.append(type(a if a_undef else b)(
                    name or label, f"it is assigned in only one branch of an `if` on a "
                    f"tensor{where}; assign it before the `if` or in both branches"))
                continue
            # The other path never reaches a use (it returned or raised): that branch
            # yields an undefined marker at run time.
            python_number = is_python_scalar(b if a_undef else a)
            if a_undef:
                b = _to_branch_var(builder, false_block, b, b)
                out_names = (None, b.name)
            else:
                a = _to_branch_var(builder, true_block, a, a)
                out_names = (a.name, None)
            v = b if a_undef else a
            if not (false_block if a_undef else true_block).is_ancestor_of(v.block):
                branch_vars.append(v)
            out = parent.create_var(v.shape, v.dtype, prefix="cond", stop_gradient=v.stop_gradient)
            out.weak = python_number or getattr(v, "weak", False)
            outs.append(out)
            t_names.append(out_names[0])
            f_names.append(out_names[1])
            labels.append(name or label)
            results.append(out)
            continue
        for x in (a, b):
            if x is None or not (_is_value(x) or is_python_scalar(x) or isinstance(x, np.ndarray)):
                raise ControlFlowError(
                    f"{label} is {type(x).__name__} in one branch and "
                    f"{type(b if x is a else a).__name__} in the other; both branches must "
                    "give tensors (or equal Python values)")
        both_python = is_python_scalar(a) and is_python_scalar(b)
        a, b = _to_branch_var(builder, true_block, a, b), _to_branch_var(builder, false_block, b, a)
        a, b = _unify_weak(builder, a, true_block, b, false_block)
        _check_compatible(label, a, b)
        out = parent.create_var(merge_dims(a.shape, b.shape), a.dtype, prefix="cond")
        out.weak = both_python or (getattr(a, "weak", False) and getattr(b, "weak", False))
        out.stop_gradient = a.stop_gradient and b.stop_gradient
        out.is_array = getattr(a, "is_array", False) and getattr(b, "is_array", False)
        branch_vars += [x for x, blk in ((a, true_block), (b, false_block))
                        if not blk.is_ancestor_of(x.block)]
        outs.append(out)
        t_names.append(a.name)
        f_names.append(b.name)
        labels.append(names[i] if names and i < len(names) else out.name)
        results.append(out)

    free = external_reads([true_block, false_block])
    # Outer Variables a branch returns unchanged are reads of that branch too.
    free += [v for v in branch_vars if all(v is not u for u in free)]
    parent.append_op("cond", [pred] + free, outs, {
        "true_block": true_block.idx, "false_block": false_block.idx,
        "true_outs": t_names, "false_outs": f_names, "labels": labels})
    return unflatten(t_tree, results)


def _is_value(x):
    return isinstance(x, (Variable, Tensor))


def _same_python(a, b):
    if a is b:
        return True
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def _to_branch_var(builder, block, x, other):
    with builder.program._block_guard(block):
        if isinstance(x, (Variable, Tensor)):
            return builder.to_var(x)
        if is_python_scalar(x):
            if _is_value(other):
                # The scalar takes the other branch's shape and (weakly) its dtype.
                dtype = np.result_type(np.dtype(other.dtype), x)
                if isinstance(other, Tensor) or other.block.is_ancestor_of(block):
                    return builder.to_var(full_like(other, x, dtype))
                if None not in other.shape:
                    return builder.to_var(full(other.shape, x, dtype))
                raise ControlFlowError(
                    f"a branch gives the Python number {x!r} where the other gives a tensor "
                    f"of shape {list(other.shape)} computed inside that branch; return a "
                    "tensor in both branches (e.g. d2s.full_like)")
            return builder.to_var(constant(x, _python_scalar_dtype(x, other)))
        return builder.to_var(constant(np.asarray(x)))


def _expand_undefined(a, b):
    """An undefined value facing a tuple/list/dict (a returned tuple on one path)
    stands for that whole structure of undefined values."""
    if _is_undefined(a) and isinstance(b, (tuple, list, dict)):
        a = _like(b, a)
    elif _is_undefined(b) and isinstance(a, (tuple, list, dict)):
        b = _like(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) \
            and type(a) is type(b):
        pairs = [_expand_undefined(x, y) for x, y in zip(a, b)]
        return type(a)(p[0] for p in pairs), type(b)(p[1] for p in pairs)
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        pairs = {k: _expand_undefined(a[k], b[k]) for k in a}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    return a, b


def _like(structure, undefined):
    if isinstance(structure, dict):
        return {k: _like(v, undefined) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        return type(structure)(_like(v, undefined) for v in structure)
    return undefined


def _settle_pending(builder, a, a_block, b, b_block):
    """A list that one branch appended to (inside a loop's first trace) is an
    array in that branch; the other branch's still-pending list becomes an
    array of the same elements too."""
    for x, x_block, y in ((a, a_block, b), (b, b_block, a)):
        if isinstance(x, PendingArray) and getattr(y, "is_array", False):
            with builder.program._block_guard(x_block):
                settled = builder.to_var(array_init(x, y))
            if x is a:
                a = settled
            else:
                b = settled
    return a, b


def _unify_weak(builder, a, a_block, b, b_block):
    """A weakly typed side takes the other side's dtype (a Python number would)."""
    wa, wb = getattr(a, "weak", False), getattr(b, "weak", False)
    if wa != wb and a.dtype != b.dtype:
        from ..core.ops import cast
        if wa:
            with builder.program._block_guard(a_block):
                a = builder.to_var(cast(a, b.dtype))
        else:
            with builder.program._block_guard(b_block):
                b = builder.to_var(cast(b, a.dtype))
    return a, b


def _check_compatible(label, a, b, what="the two branches"):
    if a.dtype != b.dtype:
        raise ControlFlowError(f"{label} has dtype {a.dtype.name} and {b.dtype.name} in "
                               f"{what}; cast one so both agree")
    if len(a.shape) != len(b.shape):
        raise ControlFlowError(f"{label} has rank {len(a.shape)} and {len(b.shape)} in {what}")
    for i, (x, y) in enumerate(zip(a.shape, b.shape)):
        if x is not None and y is not None and x != y:
            raise ControlFlowError(f"{label} has shape {list(a.shape)} and {list(b.shape)} "
                                   f"in {what} (dim {i} differs)")


# ---------------------------------------------------------------------------
# while_loop
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# side effects of converted code: raise / print / assert as ops
# ---------------------------------------------------------------------------
def _building_block():
    builder = state.current_builder()
    return None if builder is None else builder.program.current_block()


def mark_block_terminates():
    """The block being traced ends the function (it returned): names it leaves
    undefined do not make the enclosing `cond` fail."""
    block = _building_block()
    if block is not None and block.idx != 0:
        block.terminates = True


def append_raise(exc):
    """Inside a sub-block (a branch or loop body being traced), append an op
    raising `exc`'s type with its arguments when the block runs; returns False
    (the caller raises now) anywhere else, where Python semantics apply."""
    block = _building_block()
    if block is None or block.idx == 0:
        return False
    block.append_op("raise", [], [], {"exception": type(exc), "args": tuple(exc.args)})
    # The rest of this block never runs past the raise: names it leaves
    # undefined do not make the enclosing `cond` fail.
    block.terminates = True
    return True


def append_print(args, sep=" ", end="\n"):
    from ..core.dispatch import bind
    builder = state.current_builder() or next(
        a._owning_builder() for a in args if isinstance(a, Symbolic))
    values, parts = [], []
    for a in args:
        if isinstance(a, (Variable, Tensor)):
            parts.append(("value", len(values), bool(a.stop_gradient)))
            values.append(builder.to_var(a))
        else:
            parts.append(("text", str(a)))
    with state.building(builder):
        bind("print", *values, parts=tuple(parts), sep=sep, end=end)


def append_assert(test, message):
    from ..core.dispatch import bind
    builder = state.current_builder() or test._owning_builder()
    with state.building(builder):
        bind("assert", test, message=str(message))
