"""`cond`: tracing a branch into one op with two sub-blocks, and what the
front ends of control-flow ops share.

With Python or eager values it is a plain `if` (so converted code keeps
Python semantics); once a static Variable is the predicate, both branches
are traced into sub-blocks and one `cond` op is appended. Its inputs are the
predicate followed by every outer Variable its blocks read (`external_reads`),
so passes and backward see the true data dependencies. What the op means
(running it, its code, gradient, lowering) is its home,
`control_ops.cond`. `while_loop` is in `loops.py`, built on the same helpers.
"""
from __future__ import annotations


import numpy as np

from ..core import state
from ..core.dispatch import Symbolic
from ..core.dtypes import DEFAULT_FLOAT, DEFAULT_INT, is_python_scalar
from ..core.ops import constant, full, full_like
from ..core.shapes import merge_dims
from ..core.tensor import Tensor
from .control_ops import sub_block_ids
from .control_ops.cond import append_cond
from .control_ops.undefined import append_cast_if_defined
from . import rebinding
from .ir import Variable
from .pytree import flatten, rebuild, unflatten
from .rebinding import latest, supersede
from .side_effects import abandon_block, unbound_read
from .tensor_array import PendingArray, array_init


class ControlFlowError(TypeError):
    """Branch or loop outputs that cannot form one static program.

    Raised out of a converted function, its message starts with the user's
    file and line (`file.py:12: ...`, `convert.tracebacks.for_user`)."""
    locate_in_message = True


def _builder_for(*values):
    b = state.current_builder()
    if b is not None:
        return b
    for v in values:
        if isinstance(v, Symbolic):
            return v._owning_builder()
    return None


def _label(names, i):
    """How messages name output `i`: a quoted variable (`'x'`, `'acc[0]'`), a
    description given as is (it has spaces: "the value returned by 'f' ..."),
    or its position."""
    if not names or i >= len(names):
        return f"output #{i}"
    return names[i] if " " in names[i] else f"'{names[i]}'"


def leaf_names(values, names):
    """One name per leaf of `values` (one value per name): a structured value
    (a returned tuple) names each of its leaves after the value."""
    if not names or len(names) != len(values):
        return names
    return flatten([_like(v, n) for v, n in zip(values, names)])[0]


def describe(x):
    """A value's kind for messages about structures that differ."""
    if x is None:
        return "None"
    if isinstance(x, (Variable, Tensor)):
        return "a tensor"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    if isinstance(x, dict):
        return f"a dict with keys {sorted(map(str, x))}"
    if isinstance(x, str):   # two strings that differ: "a str and a str" told nothing
        return f"the str {(x if len(x) <= 40 else x[:37] + '...')!r}"
    return f"a {type(x).__name__}"


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
    for b in blocks:
        _visit_reads(b, inside, seen, out)
    return out


def _visit_reads(block, inside, seen, out):
    # Module-level, not a closure calling itself: that would be a reference
    # cycle left for the cyclic collector.
    for op in block.ops:
        for v in op.inputs:
            if id(v) not in seen and id(v.block) not in inside:
                seen.add(id(v))
                out.append(v)
        if sub_block_ids(op):  # (the usual op has none: no list of blocks made)
            for sub in op.sub_blocks():
                inside.add(id(sub))
                _visit_reads(sub, inside, seen, out)


class _transaction:
    """`with _transaction(program, block):` undo every block, op and variable a
    failed build added: no broken state.

    What a build adds is a suffix of each list and dict it grows (blocks,
    ops, variables and captures are only appended while building; a nested
    rollback removes its own suffix), so the snapshot is a few lengths:
    copying the names would cost time in the size of the program for every
    branch and loop, a quadratic trace. (A class, not a generator: every
    branch and loop enters one or more.)"""

    __slots__ = ("program", "block", "n_blocks", "n_ops", "n_vars", "n_global_vars",
                 "n_captured", "current")

    def __init__(self, program, block):
        self.program, self.block = program, block

    def __enter__(self):
        program, block = self.program, self.block
        self.n_blocks, self.n_ops, self.n_vars = len(program.blocks), len(block.ops), len(block.vars)
        self.n_global_vars = len(program.global_block().vars)
        self.n_captured = len(program.captured)
        self.current = program._current

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            return False
        program, block = self.program, self.block
        gb = program.global_block()
        program._truncate_blocks(self.n_blocks)
        del block.ops[self.n_ops:]
        for name in list(block.vars)[self.n_vars:]:
            del block.vars[name]
        for name in list(program.captured)[self.n_captured:]:
            tensor = program.captured.pop(name)
            program._captured_ids.pop(id(tensor), None)
        for name in list(gb.vars)[self.n_global_vars:]:
            del gb.vars[name]
        program._current = self.current
        return False  # the error goes on


# ---------------------------------------------------------------------------
# cond
# ---------------------------------------------------------------------------
def cond(pred, true_fn, false_fn, names=None, optional=(), relax=False):
    """`true_fn()` if `pred` else `false_fn()`; a `cond` op when pred is a Variable.

    Both functions take no arguments and return matching structures (tuples,
    lists, dicts) of values. A Python scalar facing a tensor in the other
    branch becomes a tensor of that shape, with the dtype NumPy 2 gives the
    pair (the scalar is weak: `x if c else 0` keeps x's dtype); differing dtypes or
    known dims raise `ControlFlowError` naming the output (`names` gives
    output names for messages).

    `optional` names outputs that one branch may leave undefined because the
    caller reads them only on paths that set them (a function's early-return
    value, read only once its return flag is set): no error, and a Python
    value set by the other branch is the result as it is.

    `relax`: outputs whose known dims differ get an unknown dim there instead
    of the error. The trips of a Python loop unrolled after a `break` on a
    tensor are such `cond`s, and a value a loop carries may change shape per
    trip (`ids = concat([ids, tok], 1)`), as a `while` op's carried values
    may: there the dim holds whichever path ran.
    """
    builder = _builder_for(pred)
    if builder is None:
        return true_fn() if pred else false_fn()
    program = builder.program
    with _transaction(program, program.current_block()):
        return _build_cond(builder, pred, true_fn, false_fn, names, frozenset(optional),
                           relax)


def trace_path(program, block, fn, *args):
    """`fn(*args)` traced into `block` (a branch or a loop body): (result, None),
    or (None, error) when the code stopped at a read of a name that no path
    assigned (`side_effects.unbound_read`). Eager Python raises that error
    only if this path runs, so the block raises it when it runs instead."""
    with program._block_guard(block):
        try:
            return fn(*args), None
        except Exception as e:
            if not unbound_read(e):
                raise
            abandon_block(block, e)
            return None, e


def _structure_error(t_out, f_out, names):
    """Branch outputs must have one structure; the error names the first output
    whose structure differs (e.g. a tuple returned on one path only)."""
    pairs = (list(enumerate(zip(t_out, f_out)))
             if isinstance(t_out, (tuple, list)) and isinstance(f_out, (tuple, list))
             and len(t_out) == len(f_out) else [(None, (t_out, f_out))])
    for i, (a, b) in pairs:
        if flatten(a)[1] != flatten(b)[1]:
            what = _label(names, i) if i is not None else "the branch result"
            raise ControlFlowError(
                f"{what} is {describe(a)} in one branch and {describe(b)} in the other "
                f"of an `if` on a tensor{_origin_text()}; both must have one structure")


def _build_cond(builder, pred, true_fn, false_fn, names, optional, relax=False):
    program = builder.program
    pred = builder.to_var(pred) if isinstance(pred, (Variable, Tensor)) else constant(bool(pred))
    if pred.size not in (1, None) or pred.dtype != np.bool_:
        raise ControlFlowError(
            f"cond: the predicate must be a bool tensor with one element, got "
            f"{pred.dtype.name}{list(pred.shape)}; reduce it to one, e.g. (x > 0).all(), "
            f"(x > 0).any() or x.sum() > 0")
    parent = program.current_block()
    true_block = program._create_block(parent)
    t_out, t_stop, t_written = _trace_branch(program, true_block, true_fn)
    false_block = program._create_block(parent)
    f_out, f_stop, f_written = _trace_branch(program, false_block, false_fn)
    if t_stop is not None and f_stop is not None:
        raise t_stop  # every path stops there: so does the code around the `if`
    # Outer Variables a branch wrote in place (static.rebinding): carried out
    # as more outputs, after the branch results, each linked to its output.
    written = list(t_written) + [v for v in f_written if v not in t_written]
    # A path that stopped at such a read gives no results (its block raises):
    # each of them is the other path's.
    if t_stop is not None:
        t_out = _like(f_out, t_stop._d2s_unbound_read)
    if f_stop is not None:
        f_out = _like(t_out, f_stop._d2s_unbound_read)
    t_out, f_out = _expand_undefined(t_out, f_out)
    t_leaves, tree = flatten(t_out)
    f_leaves, f_tree = flatten(f_out)
    if f_tree != tree:
        _structure_error(t_out, f_out, names)
    if names and isinstance(t_out, (tuple, list)):
        names = leaf_names(t_out, names)
    n_results = len(t_leaves)
    if written or any(type(x) is Variable and x._latest is not None
                      for x in t_leaves + f_leaves):
        t_leaves = [_at_end(x, t_written) for x in t_leaves]
        f_leaves = [_at_end(x, f_written) for x in f_leaves]
    # each written Variable's output: a result whose values on both paths are
    # its own (the usual: the name it was written through), else one more
    written_at = []
    for v in written:
        a = t_written[v][0] if v in t_written else latest(v)
        b = f_written[v][0] if v in f_written else latest(v)
        k = next((k for k in range(n_results) if t_leaves[k] is a and f_leaves[k] is b), None)
        if k is None:
            k = len(t_leaves)
            t_leaves, f_leaves = list(t_leaves) + [a], list(f_leaves) + [b]
        written_at.append(k)

    outs, t_names, f_names, labels, results, branch_vars = [], [], [], [], [], []
    blocks = (true_block, false_block)
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        label = _label(names, i)
        name = names[i] if names and i < len(names) else ""
        a, b = _settle_pending(builder, a, true_block, b, false_block)
        a_undef, b_undef = _is_undefined(a), _is_undefined(b)
        if a_undef and b_undef or not _is_value(a) and not _is_value(b) and _same_python(a, b):
            results.append(a)  # the same Python value (or unset) on both paths
            continue
        if (a_undef or b_undef) and not _is_value(b if a_undef else a) and (
                name in optional or (true_block if a_undef else false_block).terminates):
            results.append(b if a_undef else a)  # read only where set: the Python value
            continue
        if a_undef or b_undef:
            merged = _one_sided_output(builder, parent, blocks, a, b, name, label, optional)
        else:
            merged = _merged_output(builder, parent, blocks, a, b, label, relax)
        if not isinstance(merged, tuple):  # an UndefinedVar: reading it is the error
            results.append(merged)
            continue
        out, (ta, fb), reads = merged
        outs.append(out)
        t_names.append(ta)
        f_names.append(fb)
        labels.append(name or (label if a_undef or b_undef else out.name))
        branch_vars += reads
        results.append(out)

    free = external_reads([true_block, false_block])
    # Outer Variables a branch returns unchanged are reads of that branch too;
    # each is one input however many branches return it (a Variable listed
    # twice would get its gradient twice).
    for v in branch_vars:
        if all(v is not u for u in free):
            free.append(v)
    append_cond(parent, pred, free, outs, (true_block, false_block), (t_names, f_names), labels)
    for v, k in zip(written, written_at):
        supersede(v, results[k])
    return unflatten(tree, results[:n_results])


def _trace_branch(program, block, fn):
    """`trace_path` of a branch, its results read as they are at its end
    (values written in place since: static.rebinding), and the outer
    Variables it wrote in place, their links undone: {Variable: (value at
    the branch's end, origin)}."""
    log = rebinding.begin()
    try:
        out, stop = trace_path(program, block, fn)
    finally:
        written = rebinding.end(log)
    return out, stop, written


def _at_end(x, written):
    """A branch's result `x` as it is at the branch's end: written in place
    since (static.rebinding), the value the branch left it (`written`: the
    branch's writes on outer Variables, whose links are undone)."""
    if type(x) is not Variable or x._latest is None and x not in written:
        return x
    x = latest(x)
    return written[x][0] if x in written else x


def _one_sided_output(builder, parent, blocks, a, b, name, label, optional):
    """An output one branch leaves undefined. If that branch returned or raised,
    or the output is `optional`, its value is never read: the op yields an
    undefined marker on that path. Otherwise Python would leave the name
    unbound: an UndefinedVar saying why."""
    true_block, false_block = blocks
    a_undef = _is_undefined(a)
    undefined_block = true_block if a_undef else false_block
    if not (name in optional or undefined_block.terminates):
        where = _origin_text()
        return type(a if a_undef else b)(
            name or label, f"it is assigned in only one branch of an `if` on a "
            f"tensor{where}; assign it before the `if` or in both branches")
    defined, block = (b, false_block) if a_undef else (a, true_block)
    python_number = is_python_scalar(defined)
    v = _to_branch_var(builder, block, defined, defined)
    out = parent.create_var(v.shape, v.dtype, prefix="cond", stop_gradient=v.stop_gradient)
    out.weak = python_number or getattr(v, "weak", False)
    out.may_be_undefined = not undefined_block.terminates or v.may_be_undefined
    reads = [] if block.is_ancestor_of(v.block) else [v]
    return out, ((None, v.name) if a_undef else (v.name, None)), reads


def _merged_output(builder, parent, blocks, a, b, label, relax=False):
    """An output both branches give: promoted, checked, merged into one Variable."""
    true_block, false_block = blocks
    # The usual pair, two Variables, passes the checks on kinds of values at once.
    both_variables = type(a) is Variable and type(b) is Variable
    for x in () if both_variables else (a, b):
        if x is None or not (_is_value(x) or is_python_scalar(x) or isinstance(x, np.ndarray)):
            raise ControlFlowError(
                f"{label} is {describe(a)} in one branch and {describe(b)} in the other "
                f"of an `if` on a tensor{_origin_text()}; both branches must give tensors "
                "(or equal Python values)")
    for x, other in ((a, false_block), (b, true_block)):
        if isinstance(x, Variable) and other.is_ancestor_of(x.block):
            # e.g. a Python list mutated by one branch and seen by both
            raise ControlFlowError(
                f"{label} holds a value computed inside the other branch of an `if` on a "
                f"tensor{_origin_text()} (a Python list or dict changed inside a branch?); a "
                "branch can only hand out what it computes itself")
    for x, other in () if both_variables else ((a, b), (b, a)):
        if is_python_scalar(x) and isinstance(other, Variable) and other.may_be_undefined \
                and None in other.shape:
            # Its shape is known only where it is defined, not on the number's path.
            raise ControlFlowError(
                f"{label} is the Python number {x!r} on one path and a tensor of shape "
                f"{list(other.shape)} (unknown dims) on another{_origin_text()}; give a "
                "tensor on every path (e.g. d2s.zeros_like(x) for 0)")
    # A Python number is weakly typed, like a weak Variable (one carried by a loop).
    both_weak = all(is_python_scalar(x) or getattr(x, "weak", False) for x in (a, b))
    a, b = _to_branch_var(builder, true_block, a, b), _to_branch_var(builder, false_block, b, a)
    a, b = _unify_weak(builder, a, true_block, b, false_block)
    _check_compatible(label, a, b, relax=relax)
    out = parent.create_var(merge_dims(a.shape, b.shape), a.dtype, prefix="cond")
    out.weak = both_weak
    out.may_be_undefined = a.may_be_undefined or b.may_be_undefined
    out.stop_gradient = a.stop_gradient and b.stop_gradient
    out.is_array = getattr(a, "is_array", False) and getattr(b, "is_array", False)
    reads = [x for x, blk in ((a, true_block), (b, false_block)) if not blk.is_ancestor_of(x.block)]
    return out, (a.name, b.name), reads


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
    if type(x) is Variable and x.block.program is builder.program:
        return x  # what `to_var` gives (the usual: a branch computed it)
    with builder.program._block_guard(block):
        if isinstance(x, (Variable, Tensor)):
            return builder.to_var(x)
        if is_python_scalar(x):
            if _is_value(other):
                # The scalar takes the other branch's shape and (weakly) its dtype.
                dtype = np.result_type(np.dtype(other.dtype), x)
                if None not in other.shape:
                    # No run-time read of `other` (it may be an early-return
                    # value that is undefined on this path).
                    return builder.to_var(full(other.shape, x, dtype))
                if isinstance(other, Tensor) or other.block.is_ancestor_of(block):
                    return builder.to_var(full_like(other, x, dtype))
                raise ControlFlowError(
                    f"a branch gives the Python number {x!r} where the other gives a tensor "
                    f"of shape {list(other.shape)} computed inside that branch; return a "
                    "tensor in both branches (e.g. d2s.full_like)")
            return builder.to_var(constant(x, _python_scalar_dtype(x, other)))
        return builder.to_var(constant(np.asarray(x)))


def _expand_undefined(a, b):
    """An undefined value facing a tuple/list/dict (a returned tuple on one path)
    stands for that whole structure of undefined values; a pending carried list
    facing a list, for its items."""
    if type(a) is Variable and type(b) is Variable:
        return a, b  # the usual leaves: nothing to expand
    if _is_undefined(a) and isinstance(b, (tuple, list, dict)):
        a = _like(b, a)
    elif _is_undefined(b) and isinstance(a, (tuple, list, dict)):
        b = _like(a, b)
    # A list a loop carries (pending while its body is first traced) facing a
    # list the other path made (`h = [f(s) for s in h]` after a tensor `break`):
    # the carried list is its items, nothing appended to it on this path.
    if isinstance(a, PendingArray) and type(b) is list and not a.indexed:
        a = list(a.items)
    elif isinstance(b, PendingArray) and type(a) is list and not b.indexed:
        b = list(b.items)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) \
            and type(a) is type(b):
        pairs = [_expand_undefined(x, y) for x, y in zip(a, b)]
        return rebuild(type(a), [p[0] for p in pairs]), rebuild(type(b), [p[1] for p in pairs])
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        pairs = {k: _expand_undefined(a[k], b[k]) for k in a}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    return a, b


def _like(structure, undefined):
    if isinstance(structure, dict):
        return {k: _like(v, undefined) for k, v in structure.items()}
    if isinstance(structure, (tuple, list)):
        return rebuild(type(structure), [_like(v, undefined) for v in structure])
    return undefined


def _settle_pending(builder, a, a_block, b, b_block):
    """A list that one branch appended to (inside a loop's first trace) is an
    array in that branch; the other branch's still-pending list becomes an
    array of the same elements too."""
    if type(a) is Variable and type(b) is Variable:
        return a, b  # the usual pair: neither is a pending list
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
    """A weakly typed side takes the other side's dtype (a Python number would).
    Two Python numbers of different kinds (an int on one path, a float on the
    other) meet at their common kind, still weak: `s = 0`, then `s += 0.5` on
    one path of a tensor `if`, is a float64 number after it."""
    wa, wb = getattr(a, "weak", False), getattr(b, "weak", False)
    if a.dtype != b.dtype:
        if wa and wb:
            common = np.result_type(a.dtype, b.dtype)
            a = a if a.dtype == common else cast_weak(builder, a_block, a, common)
            b = b if b.dtype == common else cast_weak(builder, b_block, b, common)
        elif wa:
            a = cast_weak(builder, a_block, a, b.dtype)
        elif wb:
            b = cast_weak(builder, b_block, b, a.dtype)
    return a, b


def cast_weak(builder, block, x, dtype):
    """`x` cast in `block`; a value that may be undefined there (a number a
    loop may have returned, passed through) stays undefined: no read.

    A weak `x` stays weak: a Python number that a loop makes a float (`s = 0`,
    then `s += 0.5`) is still a Python number, and `x * s` keeps x's dtype."""
    if x.may_be_undefined:
        out = append_cast_if_defined(block, x, dtype)
    else:
        from ..core.ops import cast
        with builder.program._block_guard(block):
            out = builder.to_var(cast(x, dtype))
    out.weak = x.weak
    return out


def _check_compatible(label, a, b, what="the two branches", relax=False):
    """Outputs of two paths must agree in dtype, rank and (unless `relax`: see
    `cond`) known dims."""
    if a.dtype != b.dtype:
        raise ControlFlowError(f"{label} has dtype {a.dtype.name} and {b.dtype.name} in "
                               f"{what}; cast one so both agree")
    fix = ("; after a tensor `if` a name has one shape, whichever path ran: make both give "
           "the same shape (reshape, slice, pad or broadcast one of them)")
    if len(a.shape) != len(b.shape):
        raise ControlFlowError(f"{label} has rank {len(a.shape)} and {len(b.shape)} in "
                               f"{what}{fix}")
    for i, (x, y) in enumerate(() if relax else zip(a.shape, b.shape)):
        if x is not None and y is not None and x != y:
            raise ControlFlowError(f"{label} has shape {list(a.shape)} and {list(b.shape)} "
                                   f"in {what} (dim {i} differs){fix}")
