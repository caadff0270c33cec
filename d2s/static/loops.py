"""`while_loop`: tracing a loop into one `while` op whose body and condition are
sub-blocks (what the op means is its home, `control_ops.while_`).

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
from .control_flow import (ControlFlowError, _builder_for, _expand_undefined, _is_undefined,
                           _is_value, _label, _promote_scalar, _same_python, _transaction,
                           cast_weak, describe, external_reads, leaf_names,
                           trace_path)
from .builder import check_visible
from .control_ops.undefined import append_undefined
from .control_ops.while_ import append_while
from . import rebinding
from .ir import Variable
from .rebinding import supersede
from .pytree import flatten, rebuild, unflatten
from .tensor_array import PendingArray, array_init


def while_loop(cond, body, loop_vars, names=None, optional=()):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`.

    Returns the final loop values (a list). With Python / eager values this
    is a Python loop; otherwise one `while` op. A loop value whose dtype the
    body changes raises `ControlFlowError`; one whose known dims change is
    relaxed to an unknown dim (the body is traced again). An undefined loop
    value the body makes a tuple (a `return a, b` inside the loop) is carried
    as a tuple of values. `optional` names values read only where they were
    set (as for `cond`): one the body sets to a Python value that is not a
    number (e.g. `return None`) is that value after the loop, not carried.
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
        return _build_while(builder, cond, body, leaves, tree, names, frozenset(optional))


def _init_var(builder, x, label):
    if _is_value(x):
        return builder.to_var(x)
    if is_python_scalar(x) or isinstance(x, np.ndarray):
        return builder.to_var(constant(x))
    # Undefined names and other Python objects are not carried; the body may
    # first assign the former, and must leave the latter unchanged.
    return None


class _Restructure(Exception):
    """The body made undefined loop values tuples/lists/dicts: start again with
    those values expanded into structures of undefined values."""

    def __init__(self, loop_vars):
        self.loop_vars = loop_vars


def _build_while(builder, cond_fn, body_fn, leaves, tree, names, optional):
    program = builder.program
    # Each restart expands an undefined value into a structure, which happens
    # at most once per undefined leaf.
    for _restart in range(len(leaves) + 1):
        try:
            with _transaction(program, program.current_block()):  # a restart leaves nothing
                return _LoopBuilder(builder, cond_fn, body_fn, leaves, tree, names,
                                    optional).build()
        except _Restructure as r:
            leaves, tree = flatten(r.loop_vars)
    raise ControlFlowError("while: loop variable structures did not settle")  # pragma: no cover


class _LoopBuilder:
    """Traces a loop's condition and body into sub-blocks, widening the loop
    variables' types until one more trace changes nothing, then emits the op."""

    def __init__(self, builder, cond_fn, body_fn, leaves, tree, names, optional):
        self.builder, self.program = builder, builder.program
        self.parent = self.program.current_block()
        self.cond_fn, self.body_fn = cond_fn, body_fn
        self.leaves, self.tree = leaves, tree
        self.top_names = names
        self.names = leaf_names(unflatten(tree, leaves), names) if names else names
        self.optional = {i for i in range(len(leaves))
                         if self.names and i < len(self.names) and self.names[i] in optional}
        self.init = {}   # leaf index -> initial Variable, for every loop-carried leaf
        for i, x in enumerate(leaves):
            v = _init_var(builder, x, _label(self.names, i))
            if v is not None:
                self.init[i] = v
        self.shapes = {i: v.shape for i, v in self.init.items()}
        self.weak_first = {}     # leaf index -> whether its first assigned value is weak
        self.python_results = {}  # optional leaf index -> the Python value the body sets
        self.still_undefined = {}  # leaf index -> the undefined value the body leaves
        self.undefined_by_body = set()  # leaf indices the body may leave undefined
        # Whether the loop variables need no gradient: as eagerly, when no initial
        # value and no value the body computes needs one (then `print` in the body
        # shows stop_gradient=True, as eager code does). Assumed from the initial
        # values; when the body makes one that needs a gradient (it reads a
        # parameter, say), the loop's values are marked as needing one, without
        # tracing again: the flags only inform what code and prints read (the
        # backward follows the program's data flow), and a `print` in the body
        # then shows the first trip's flags, as eager code prints them.
        self.no_grad_vars = all(v.stop_gradient for v in self.init.values())
        self.n_blocks = len(self.program.blocks)

    def label(self, i):
        return _label(self.names, i)

    def build(self):
        # Each retry either relaxes a dim that the body changed, starts carrying a
        # name first assigned in the body, fixes a Python number's dtype, or
        # marks a value the body may leave undefined; all only grow, so this
        # terminates.
        for _attempt in range(3 * len(self.leaves) + 2):
            self.trace()
            if not self.widen():
                return self.emit()
        raise ControlFlowError("while: loop variable shapes did not settle")  # pragma: no cover

    def _restructure_or_fail(self, body_out):
        """The body returned another structure than it took: an undefined value
        that became a tuple (a returned tuple) restarts with it expanded;
        anything else is an error naming the value."""
        start = unflatten(self.tree, self.leaves)
        expanded, _ = _expand_undefined(_unpend(start, body_out), body_out)
        if flatten(expanded)[1] == flatten(body_out)[1]:
            raise _Restructure(expanded)
        for i, (a, b) in enumerate(zip(start, body_out)):
            if flatten(a)[1] != flatten(b)[1]:
                raise ControlFlowError(
                    f"loop variable {_label(self.top_names, i)} is {describe(a)} before the "
                    f"loop body and {describe(b)} after it; it must keep one structure")
        raise ControlFlowError("while: the body must return as many values as it takes")

    def trace(self):
        program, builder = self.program, self.builder
        program._truncate_blocks(self.n_blocks)
        self.carried = sorted(self.init)
        # Placeholders live in a block of their own, the lexical parent of both
        # the condition and the body, so every nested block can resolve them.
        self.loop_block = program._create_block(self.parent)
        self.placeholders = {}
        for i in self.carried:
            ph = self.loop_block.create_var(self.shapes[i], self.init[i].dtype, prefix="loop_var")
            ph.weak = getattr(self.init[i], "weak", False)
            ph.is_array = getattr(self.init[i], "is_array", False)
            ph.may_be_undefined = self.init[i].may_be_undefined or i in self.undefined_by_body
            ph.stop_gradient = self.no_grad_vars
            self.placeholders[i] = ph
        args = unflatten(self.tree, [self.placeholders.get(i, x)
                                     for i, x in enumerate(self.leaves)])
        log = rebinding.begin(loop=True)
        try:
            self._trace_blocks(args)
        finally:
            written = rebinding.end(log)
        self._check_written(written)

    def _trace_blocks(self, args):
        program, builder = self.program, self.builder
        self.cond_block = program._create_block(self.loop_block)
        with program._block_guard(self.cond_block):
            c = self.cond_fn(*args)
            self.c = builder.to_var(c) if _is_value(c) else builder.to_var(constant(bool(c)))
        if self.c.dtype != np.bool_ or self.c.size not in (1, None):
            raise ControlFlowError(f"while: the loop condition must be a bool scalar, got "
                                   f"{self.c.dtype.name}{list(self.c.shape)}; reduce it to one "
                                   f"element, e.g. (x > 0).all(), (x > 0).any() or x.sum() > 0")
        self.body_block = program._create_block(self.loop_block)
        body_out, stop = trace_path(program, self.body_block, self.body_fn, *args)
        # A body that stops at a read of a name no path assigned raises there
        # when it runs: what it hands back is never read (keep the values).
        body_out = list(args if stop is not None else body_out)
        with program._block_guard(self.body_block):
            new_leaves, new_tree = flatten(body_out)
            if new_tree != self.tree:
                self._restructure_or_fail(body_out)
            self.outs = {i: _body_output(builder, new_leaves[i], self.placeholders[i],
                                         self.label(i)) for i in self.carried}
            self.first_assigned = {}
            for i, x in enumerate(self.leaves):
                new = new_leaves[i]
                if i in self.init or not _not_carried_yet(x) or _is_undefined(new) or new is x:
                    continue
                if i in self.optional and not _is_value(new) and not is_python_scalar(new):
                    self._python_result(i, new)
                    continue
                self.weak_first[i] = is_python_scalar(new) or getattr(new, "weak", False)
                self.first_assigned[i] = builder.to_var(_as_value(new, self.label(i)))
        for i, x in enumerate(self.leaves):
            if i in self.init or i in self.first_assigned or i in self.python_results \
                    or _same_python(new_leaves[i], x):
                continue
            if _is_undefined(x) and _is_undefined(new_leaves[i]):
                # Undefined before and after the body (e.g. assigned in one branch
                # of a tensor `if` in it): not carried; reading it after the loop
                # raises the body's reason.
                self.still_undefined[i] = new_leaves[i]
            else:
                raise ControlFlowError(
                    f"loop variable {self.label(i)} holds a {type(x).__name__} that the "
                    "loop body changes; only tensors and numbers can be carried by a loop on "
                    "a tensor: change it after the loop, or hold what changes in a tensor")

    def _check_written(self, written):
        """Values the condition or body wrote in place (static.rebinding): a
        loop variable whose body value is its own in-place writes is carried
        as a write of the Variable it starts from (aliases of it read the
        loop's result); any other outer Variable written in place cannot be
        carried (the loop does not hold it): a clear error, never a stale
        value."""
        self.written_in_place = set()
        for v, (end, origin) in written.items():
            i = next((i for i, ph in self.placeholders.items() if ph is v), None)
            what = rebinding.describe_write(v, origin)
            if i is None:
                raise ControlFlowError(
                    f"{what} inside a loop on a tensor, but the loop does not carry it: it "
                    "was written through a function's argument, an alias or a view that the "
                    "loop does not assign. Return the tensor from the function and assign it "
                    "(`y = helper(y)`), or write it through the name itself in the loop "
                    "(`y[i] = v`)")
            label = self.label(i)
            if self.outs.get(i) is not end:
                raise ControlFlowError(
                    f"loop variable {label} is written in place and then rebound in the loop "
                    f"body ({what}): eagerly only the first trip writes the tensor it held "
                    "before the loop, which a loop on a tensor cannot express; write "
                    f"`{label.strip(chr(39))} = {label.strip(chr(39))}.clone()` before the loop "
                    "or make the write functional (`y = d2s.set_item(y, i, v)`)")
            start = self.leaves[i]
            if isinstance(start, Variable) and any(
                    j != i and self.leaves[j] is start for j in self.placeholders):
                raise ControlFlowError(
                    f"loop variable {label} is written in place in the loop body and another "
                    "loop variable holds the same tensor; the loop carries them apart. Copy "
                    f"one before the loop (`z = y.clone()`) or use one name")
            self.written_in_place.add(i)

    def _python_result(self, i, value):
        """An optional value the body sets to a Python object (e.g. `return None`
        in the loop): the loop's result for it, as long as it is always the same."""
        if i in self.python_results and not _same_python(self.python_results[i], value):
            raise ControlFlowError(f"{self.label(i)} is {describe(self.python_results[i])} "
                                   f"and {describe(value)} in one loop on a tensor; give it one "
                                   f"value on every trip, or make it a tensor")
        self.python_results[i] = value

    def widen(self):
        """Update the loop variables from what the body did; True if that changed
        anything (trace again)."""
        program, builder, parent = self.program, self.builder, self.parent
        retry = False
        if self.no_grad_vars and not all(o.stop_gradient for o in self.outs.values()):
            self.no_grad_vars = False
            for ph in self.placeholders.values():
                ph.stop_gradient = False
        for i, v in self.first_assigned.items():
            if isinstance(self.leaves[i], PendingArray):
                # A list appended to in the body: carried as a tensor array.
                with program._block_guard(parent):
                    self.init[i] = builder.to_var(array_init(self.leaves[i], v))
                self.shapes[i] = (None,) + tuple(v.shape[1:])
            else:
                # A name first assigned in the body: carried from an "undefined"
                # value, which raises NameError at run time if read after a
                # zero-trip loop.
                undef = parent.create_var(v.shape, v.dtype, prefix="undefined")
                undef.weak = self.weak_first[i]  # a Python number: weakly typed
                append_undefined(parent, undef, self.label(i).strip("'"))
                self.init[i], self.shapes[i] = undef, v.shape
            retry = True
        for i in self.carried:
            ph, o, label = self.placeholders[i], self.outs[i], self.label(i)
            if o.may_be_undefined and not ph.may_be_undefined:
                # The next trip may start from a value with none (a one-sided
                # `if` in the body): its reads must know (dead-code elimination).
                self.undefined_by_body.add(i)
                retry = True
            if o.dtype != ph.dtype and ph.weak:
                # A Python number carried by the loop takes the dtype the body gives it.
                self.init[i] = cast_weak(builder, parent, self.init[i], o.dtype)
                retry = True
                continue
            if (o.dtype != ph.dtype and not ph.is_array and _widens(ph.dtype, o.dtype)
                    and getattr(builder, "overlay", None) is not None
                    and i not in getattr(self, "written_in_place", ())):
                # The body widens it (a float32 state mixed with a numpy float64
                # scalar, `np.sqrt(d)`; an int total given float64 values): eagerly
                # it holds the wider dtype from the first trip on. Converted code
                # (a to_static trace; a hand-built while_loop keeps Paddle's error)
                # carries it in that dtype from the start: the same values.
                self.init[i] = cast_weak(builder, parent, self.init[i], o.dtype)
                retry = True
                continue
            if o.dtype != ph.dtype:
                raise ControlFlowError(
                    f"loop variable {label} changes dtype from {ph.dtype.name} to "
                    f"{o.dtype.name} in the loop body; cast it so it keeps one dtype")
            if len(o.shape) != len(ph.shape):
                raise ControlFlowError(f"loop variable {label} changes rank from "
                                       f"{len(ph.shape)} to {len(o.shape)} in the loop body; "
                                       f"a loop on a tensor keeps each variable's rank: "
                                       f"reshape the new value, or collect the steps in a "
                                       f"list and d2s.stack it after the loop")
            merged = merge_dims(ph.shape, o.shape)
            if merged != ph.shape:
                self.shapes[i] = merged
                retry = True
        return retry

    def emit(self):
        carried, init = self.carried, self.init
        ph_list = [self.placeholders[i] for i in carried]
        out_list = [self.outs[i] for i in carried]
        out_vars = [self.parent.create_var(ph.shape, ph.dtype, prefix="while") for ph in ph_list]
        for v, ph, o in zip(out_vars, ph_list, out_list):
            v.weak = ph.weak and getattr(o, "weak", False)
            v.is_array = ph.is_array
            v.may_be_undefined = ph.may_be_undefined or o.may_be_undefined
            v.stop_gradient = self.no_grad_vars
        local = {id(p) for p in ph_list}
        free = external_reads([self.cond_block, self.body_block], local)
        free += [o for o in out_list if o.block is not self.body_block and id(o) not in local
                 and all(o is not u for u in free)]
        for i in self.written_in_place:
            if any(f is init[i] for f in free):
                raise ControlFlowError(
                    f"loop variable {self.label(i)} is written in place in a loop on a tensor "
                    "and read through another name (an alias made before the loop) inside "
                    "it; the loop carries the name it writes, not the alias: read the name "
                    "itself in the loop")
        append_while(self.parent, [init[i] for i in carried], free, out_vars,
                     (self.loop_block, self.cond_block, self.body_block),
                     [p.name for p in ph_list], self.c.name, [o.name for o in out_list])
        result = list(self.leaves)
        for i, v in zip(carried, out_vars):
            result[i] = v
            if i in self.written_in_place and isinstance(self.leaves[i], Variable):
                supersede(self.leaves[i], v)  # its aliases read the loop's result
        for i, value in self.python_results.items():
            result[i] = value
        for i, value in self.still_undefined.items():
            result[i] = value
        return unflatten(self.tree, result)


def _unpend(a, b):
    """A list carried into the loop (a `PendingArray`, in case the body
    appends to it) that the body rebinds to a new list of as many items (a
    list of per-layer caches replaced each trip) is carried as that list of
    values, not as a tensor array."""
    if isinstance(a, PendingArray) and type(b) is list and len(a) == len(b):
        return [_unpend(x, y) for x, y in zip(a.items, b)]
    if isinstance(a, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        return rebuild(type(a), [_unpend(x, y) for x, y in zip(a, b)])
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: _unpend(a[k], b[k]) for k in a}
    return a


def _widens(before, after):
    """`after` is `before` promoted (float32 -> float64, int32 -> int64,
    bool -> int64): no value of `before` changes when cast to it."""
    before, after = np.dtype(before), np.dtype(after)
    return after.kind in "iuf" and np.promote_types(before, after) == after


def _not_carried_yet(x):
    return _is_undefined(x) or isinstance(x, PendingArray)


def _as_value(x, label):
    if _is_value(x):
        return x
    if is_python_scalar(x) or isinstance(x, np.ndarray):
        return constant(x)
    raise ControlFlowError(f"loop variable {label} becomes a {type(x).__name__} in the loop "
                           "body; only tensors and numbers can be carried by a loop on a tensor: "
                           "give it a tensor or number on every trip")


def _body_output(builder, x, placeholder, label):
    if isinstance(x, Variable):
        check_visible(x, builder.program.current_block())
    if _is_undefined(x):
        raise ControlFlowError(f"loop variable {label} is undefined after the loop body; "
                               f"assign it on every path of the body (or before the loop)")
    if not _is_value(x):
        if not (is_python_scalar(x) or isinstance(x, np.ndarray)):
            raise ControlFlowError(f"loop variable {label} becomes a {type(x).__name__} in "
                                   "the loop body; give it a tensor or number on every trip")
        weak = is_python_scalar(x)
        x = builder.to_var(_promote_scalar(x, placeholder.dtype))
        x.weak = weak or getattr(x, "weak", False)  # a Python number stays weakly typed
        return x
    return builder.to_var(x)


