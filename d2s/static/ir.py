"""The static IR: Program -> Blocks -> Operators over Variables.

Small on purpose: a Variable is a typed name in a block, an Operator is an
op type with input/output Variables and attributes, sub-blocks (the bodies
of `cond` and `while`, declared in `control_ops`) are Blocks whose parent is
the enclosing block.
`str(program)` prints one op per line with sub-blocks indented beneath the
op that owns them.
"""
from __future__ import annotations

import itertools
import types

import numpy as np

from ..core.dispatch import Symbolic
from ..core.methods import TensorMethods
from ..core.shapes import numel
from .control_ops import sub_block_ids
# (re-exported: the builder, control flow and the converter ask ir for them)
from .origins import (ORIGIN_RESOLVERS, PendingOrigin, _lineno, code_line,  # noqa: F401
                      pending_user_origin, resolved, traceback_origin, user_frame,
                      user_origin)


def _uncatchable(exc):
    """`exc`, marked as an error of building, not of running: eagerly the same
    code has a value here, so an `except` in converted code must not take it
    as the run's own error (`convert.runtime.check_caught`)."""
    exc._d2s_uncatchable = ("eagerly this code does not raise: a static Variable was asked "
                            "for a Python value, which exists only when the program runs")
    return exc


class Variable(Symbolic, TensorMethods):
    """A value inside a program: name, shape (None = unknown dim), dtype, and
    `weak` (True where it stands for a Python number, see __init__)."""

    __slots__ = ("block", "name", "shape", "dtype", "stop_gradient", "persistable",
                 "is_data", "weak", "is_array", "dim_of", "may_be_undefined", "_latest", "_base",
                 "__weakref__")

    def __init__(self, block, name, shape, dtype, stop_gradient=False, persistable=False,
                 is_data=False):
        self.block = block
        self.name = name
        if type(shape) is tuple:  # the usual: a shape rule's tuple of ints (and None)
            for d in shape:
                if type(d) is not int and d is not None:
                    shape = _dims(shape)
                    break
            self.shape = shape
        else:
            self.shape = _dims(shape)
        self.dtype = dtype if type(dtype) in _DTYPE_CLASSES else _np_dtype(dtype)
        self.stop_gradient = stop_gradient
        self.persistable = persistable
        self.is_data = is_data
        # A weakly typed value stands for a Python number (a loop counter made
        # from `range`, a Python int carried by a loop): next to a tensor it
        # takes that tensor's dtype, as the Python number would in eager mode.
        self.weak = False
        self.is_array = False  # a tensor array (see static.tensor_array)
        # (value, axis) when this int64 scalar is `value.shape[axis]` (a dynamic
        # dim read by converted code): lets reshape cancel it against that dim.
        self.dim_of = None
        # True where a run may leave it with no value: a name a loop assigns
        # first (after zero trips), a `cond` output one path leaves undefined
        # (an early-return value nothing reads there), and what passes those
        # on. An op reading it may raise NameError, so it is never pruned
        # (passes.dce); no op may read it on a path where it is unset.
        self.may_be_undefined = False
        # Set by an in-place write on this value (static.rebinding): the Variable
        # holding its value since, which every later read takes.
        self._latest = None
        # (base, index, base's value then) for a view made by basic indexing:
        # an in-place write to it writes the base too (core.views).
        self._base = None

    def _latest_value(self):
        """The Variable holding this value now (static.rebinding)."""
        v = self
        while v._latest is not None:
            v = v._latest
        return v

    def __setitem__(self, index, value):
        """`v[index] = value` where no name is rebound to the result (an item
        of a list or dict the function made, `cache["k"][i] = v`; code that is
        not converted) while `to_static` traces: an in-place write, which every
        holder of this Variable reads from here on (static.rebinding). In a
        program built by hand, the error that asks for the functional form."""
        if self.block.program._builder.overlay is None:
            return TensorMethods.__setitem__(self, index, value)
        from ..core.ops import set_item
        from .rebinding import fresh, supersede
        supersede(self, set_item(fresh(self), index, value))

    def set_value(self, value):
        """Paddle's `set_value` on a program's value (`p.grad.set_value(g *
        scale)` in a converted training step, a local alias of it): new
        values of the same shape, cast to this dtype, with no gradient path
        to `value` -- an in-place write every holder reads from here on, as
        `__setitem__`. In a program built by hand, the functional form."""
        if self.block.program._builder.overlay is None:
            raise TypeError(
                f"set_value: the program value '{self.name}' cannot be changed in place in a "
                "program built by hand; write the functional form `x = d2s.assign(value)`")
        from ..core.ops import detach, lift
        value = lift(value, like=self)
        if len(value.shape) > len(self.shape) or any(
                a is not None and b is not None and a != b
                for a, b in zip(reversed(tuple(value.shape)), reversed(tuple(self.shape)))):
            raise ValueError(f"set_value: a value of shape {list(value.shape)} for '{self.name}' "
                             f"of shape {list(self.shape)}")
        self[...] = detach(value)
        return self

    def register_hook(self, hook):
        """`hook(grad)` rewrites the gradient reaching this value (converted
        code; static.grad_hooks). Returns a handle whose `remove()` drops it."""
        from .grad_hooks import register_hook
        return register_hook(self, hook)

    def _fresh(self):
        """The value an in-place write of this Variable starts from
        (static.rebinding.fresh: a stale view takes its base's values again)."""
        if self._base is None and self._latest is None:
            return self
        from .rebinding import fresh
        return fresh(self)

    def _write_in_place(self, new, through_view=True):
        """This value was written in place and `new` holds it now: every holder
        of this Variable reads `new` from here on (static.rebinding), and a
        view writes its base unless `through_view` is False (the caller
        writes the base itself)."""
        from .rebinding import supersede
        return supersede(self, new, through_view)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return numel(self.shape)

    def _owning_builder(self):
        return self.block.program._builder

    def __bool__(self):
        raise _uncatchable(TypeError(
            f"bool() of static Variable '{self.name}' is not known while the program is "
            "being built. Python control flow on a Variable needs conversion: decorate the "
            "function with @d2s.jit.to_static, or build the branch with "
            "d2s.static.nn.cond(pred, true_fn, false_fn) (and loops with "
            "d2s.static.nn.while_loop). Inside a converted function, only the code d2s "
            "converts can branch on a Variable: not library functions, generators, or "
            "builtins such as sorted()"))

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of 0-d Variable '{self.name}'")
        if self.shape[0] is None:
            raise TypeError(f"len() of Variable '{self.name}' whose first dim is unknown "
                            "until run time; use d2s.shape(x)[0] (or len() in converted code)")
        return self.shape[0]

    def __iter__(self):
        """Rows along axis 0, as an eager Tensor gives them, when their number is
        known while building (`a, b = row`, a comprehension over rows: unrolled).
        A converted `for x in v` never gets here: it becomes a `while` op."""
        if not self.shape:
            raise TypeError(f"iteration over 0-d Variable '{self.name}'")
        n = self.shape[0]
        if n is None:
            raise TypeError(
                f"cannot iterate over static Variable '{self.name}' here: its first dim is "
                "unknown until run time, and unpacking, a comprehension or list() needs the "
                "number of rows while the program is built. Use a `for` loop in converted "
                "code (it becomes a while op), or give that dim in the InputSpec")
        return (self[i] for i in range(n))

    def __index__(self):
        raise _uncatchable(TypeError(
            f"static Variable '{self.name}' cannot be used as a Python int (an index, a "
            "range bound): its value is known only when the program runs"))

    def _no_value(self, what):
        """A Python value of this Variable was asked for while building: an
        error of the build (`_uncatchable`: no `except` in converted code may
        take it for the run's own)."""
        raise _uncatchable(TypeError(
            f"{what} of static Variable '{self.name}': its value exists only when the program "
            "runs, not while it is built. Keep it a tensor (d2s.where, d2s.maximum, tensor "
            f"arithmetic) instead of a Python number, or return it from the converted function "
            f"and call {what} on the result (a training step's loss: log what it returns)"))

    def item(self):
        self._no_value(".item()")

    def __format__(self, spec):
        """`f"{loss:.4f}"` outside a print (a log line, a message built while
        tracing): its number exists only when the program runs. (An f-string
        printed by converted code is formatted at run time: convert.runtime.)"""
        if not spec:
            return repr(self)
        raise _uncatchable(TypeError(
            f"format spec {spec!r} for static Variable '{self.name}': its value exists only "
            "when the program runs, not while it is built. Print it with print(f\"...\") in "
            "the converted function (formatted on every run), or return it and format the "
            "result"))

    def numpy(self):
        self._no_value(".numpy()")

    def tolist(self):
        self._no_value(".tolist()")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def backward(self, grad=None, retain_graph=False):
        """In a function traced by `to_static`: the step's backward. Gradient ops
        are appended now; the gradients land on the parameters' `.grad` when a
        run of the program commits (static.state_overlay). `retain_graph`
        (Paddle's and PyTorch's) is accepted: the forward ops stay in the
        program, so a second backward through them always works."""
        overlay = self._owning_builder().overlay
        if overlay is None:
            raise RuntimeError(
                f"backward() of static Variable '{self.name}' works inside a function "
                "converted by d2s.jit.to_static (it becomes the backward of the step's "
                "program); in a hand-built Program use d2s.static.gradients(...) or "
                "optimizer.minimize(loss)")
        overlay.backward(self, grad)

    def __repr__(self):
        return f"Variable({self.name}: {format_type(self)})"


# The classes of numpy dtype objects met so far: `isinstance(x, np.dtype)`
# goes through numpy's metaclass and costs as much as making a Variable's
# other fields; a set lookup of the class answers for every Variable after
# the first of its dtype.
_DTYPE_CLASSES = set()


def _np_dtype(dtype):
    if isinstance(dtype, np.dtype):
        _DTYPE_CLASSES.add(type(dtype))
        return dtype
    return np.dtype(dtype)


def _dims(shape):
    """`shape` as a tuple of Python ints and None (numpy ints converted). Every
    Variable made while tracing passes here: dims that are ints already (the
    usual case) are checked, not rebuilt."""
    dims = tuple(shape)
    for d in dims:
        if type(d) is not int and d is not None:
            return tuple(None if d is None else int(d) for d in dims)
    return dims


def format_type(v):
    dims = ", ".join("?" if d is None else str(d) for d in v.shape)
    return f"{v.dtype.name}[{dims}]"


class Operator:
    """One op in a block. `origin` is the user's (file, line, text) that built
    it; `is_grad` marks ops that backward appended (they compute cotangents)."""

    # An op traced from user code holds where it was built, unresolved, as
    # its code object in `_origin` and the instruction offset in `_lasti`:
    # two slots, not a record object per op (a program keeps every op, and
    # each object it keeps is one more for the cyclic collector to scan
    # after the build; code objects are not tracked by it).
    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "_origin", "_lasti",
                 "is_grad")

    def __init__(self, block, type, inputs, outputs, attrs=None, origin=None, is_grad=False):
        self.block = block
        self.type = type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self.origin_record = origin
        self.is_grad = is_grad

    @classmethod
    def _owned(cls, block, type, inputs, outputs, attrs, frame, is_grad):
        """An Operator that takes `inputs`, `outputs` and `attrs` as they are
        (fresh lists and dict its maker hands over: no copies). The builder
        makes every traced op this way; `frame`: the user's frame that built
        it (`user_frame()`), or None."""
        op = _new_operator(cls)
        op.block = block
        op.type = type
        op.inputs = inputs
        op.outputs = outputs
        op.attrs = attrs
        if frame is None:
            op._origin = None
        else:
            op._origin = frame.f_code
            op._lasti = frame.f_lasti
        op.is_grad = is_grad
        return op

    @property
    def origin(self):
        """(file, line, text) or None. Ops traced from user code hold where
        they were built until this is first read (errors, export, saving)."""
        origin = self._origin
        if type(origin) is _CodeType:
            origin = self._origin = resolved(origin.co_filename,
                                             code_line(origin, self._lasti))
        return origin

    @origin.setter
    def origin(self, value):
        self.origin_record = value

    @property
    def origin_record(self):
        """What `origin` is made from, unresolved (a `PendingOrigin`) if not
        read yet: what an op built as a copy of this one (a clone, a rewrite,
        its gradient) passes on as origin."""
        origin = self._origin
        if type(origin) is _CodeType:
            return PendingOrigin(origin, self._lasti)
        return origin

    @origin_record.setter
    def origin_record(self, value):
        if type(value) is PendingOrigin:
            self._origin = value.code
            self._lasti = value.lasti
        else:
            self._origin = value

    def sub_blocks(self):
        """The blocks this op runs (its declaration in `control_ops` says which
        attributes name them); none for core ops."""
        ids = sub_block_ids(self)
        if not ids:
            return []
        blocks = self.block.program.blocks
        return [blocks[i] for i in ids]

    def __repr__(self):
        return f"Operator({self.type})"


_new_operator = object.__new__
_CodeType = types.CodeType


class Block:
    def __init__(self, program, idx, parent_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.ops = []
        self.vars = {}
        self.terminates = False  # ends in a `raise` op (see side_effects.append_raise)

    @property
    def parent(self):
        return None if self.parent_idx < 0 else self.program.blocks[self.parent_idx]

    def create_var(self, shape, dtype, name=None, prefix="tmp", **kw):
        if not name:
            name = f"{prefix}_{next(self.program._names)}"  # Program._unique_name, inline
        if name in self.vars:
            raise ValueError(f"a variable named {name!r} already exists in block {self.idx}")
        var = Variable(self, name, shape, dtype, **kw)
        self.vars[name] = var
        return var

    def _new_var(self, shape, dtype, prefix, stop_gradient):
        """`create_var(shape, dtype, prefix=prefix, stop_gradient=...)`, for the
        builder: positional, no other options (one per traced op result)."""
        name = f"{prefix}_{next(self.program._names)}"
        if name in self.vars:
            raise ValueError(f"a variable named {name!r} already exists in block {self.idx}")
        var = self.vars[name] = Variable(self, name, shape, dtype, stop_gradient)
        return var

    def append_op(self, type, inputs, outputs, attrs=None, origin=None):
        """`origin`: the user's (file, line, text); by default the calling user
        frame; `()` for none (e.g. ops of a loaded program without origins)."""
        if origin is None:
            origin = pending_user_origin()
        op = Operator(self, type, inputs, outputs, attrs, origin or None,
                      self.program._building_grad)
        self.ops.append(op)
        return op

    def lookup(self, name):
        """The Variable `name` as seen from this block (its own, then its
        ancestors'), or None."""
        b = self
        while b is not None:
            v = b.vars.get(name)
            if v is not None:
                return v
            b = b.parent
        return None

    def is_ancestor_of(self, other):
        b = other
        while b is not None:
            if b is self:
                return True
            b = b.parent
        return False

    def __repr__(self):
        return f"Block({self.idx}, {len(self.ops)} ops)"


class Program:
    """A static program. Block 0 is global; sub-blocks hold control-flow bodies.

    `captured` maps parameter Variables to the eager Tensors they stand for:
    the executor reads the Tensor's current value on every run (capture by
    reference), and writes in-place updates (optimizer ops) back to it.
    """

    def __init__(self):
        from .builder import Builder
        self.blocks = [Block(self, 0)]
        self._current = 0
        self._names = itertools.count()
        self.captured = {}        # var name -> Tensor
        self._captured_ids = {}   # id(Tensor) -> Variable
        self.feed_vars = {}       # name -> data Variable
        self._building_grad = False  # set while backward appends ops
        # set while backward builds gradients that will be differentiated again
        # (`gradients(create_graph=True)`): see control_ops.recompute
        self._differentiable_grads = False
        # set while `gradients` walks: reaching a cond_grad / while_grad raises
        self._refuse_grad_ops = False
        # (outputs, op count) when `passes.dce.prune_program` last pruned it
        self._pruned_for = None
        self._builder = Builder(self)

    def _unique_name(self, prefix):
        return f"{prefix}_{next(self._names)}"

    def global_block(self):
        return self.blocks[0]

    def current_block(self):
        return self.blocks[self._current]

    def _create_block(self, parent=None):
        parent = self.current_block() if parent is None else parent
        block = Block(self, len(self.blocks), parent.idx)
        self.blocks.append(block)
        return block

    def _truncate_blocks(self, n):
        del self.blocks[n:]

    def _block_guard(self, block):
        """`with program._block_guard(block):` ops go to `block`, then back."""
        return _BlockGuard(self, block)

    def all_ops(self):
        return [op for b in self.blocks for op in b.ops]

    def clone(self):
        """An independent copy (new blocks, Variables and Operators; the same
        captured Tensors, by reference). What is appended to the copy, or written
        into its ops' attributes, leaves this program as it is: the backward of a
        traced function is built on a copy, so the forward program that users
        print, save and run never depends on whether a gradient was asked for."""
        new = Program()
        new._names = itertools.count(next(self._names))
        new.blocks = [Block(new, b.idx, b.parent_idx) for b in self.blocks]
        for old, block in zip(self.blocks, new.blocks):
            block.terminates = old.terminates
            for name, v in old.vars.items():
                var = Variable(block, name, v.shape, v.dtype, v.stop_gradient, v.persistable,
                               v.is_data)
                var.weak, var.is_array = v.weak, v.is_array
                var.may_be_undefined = v.may_be_undefined
                block.vars[name] = var
        for old, block in zip(self.blocks, new.blocks):
            for op in old.ops:
                block.ops.append(Operator(
                    block, op.type, [new.counterpart(v) for v in op.inputs],
                    [new.counterpart(v) for v in op.outputs],
                    {k: list(a) if isinstance(a, list) else a for k, a in op.attrs.items()},
                    op.origin_record, op.is_grad))
        new.captured = dict(self.captured)
        new._captured_ids = {id(t): new.global_block().vars[name]
                             for name, t in self.captured.items()}
        new.feed_vars = {name: new.global_block().vars[name] for name in self.feed_vars}
        return new

    def counterpart(self, var):
        """This program's Variable for `var` of the program it was cloned from."""
        return self.blocks[var.block.idx].vars[var.name]

    def __str__(self):
        from .printing import program_to_text
        return program_to_text(self)

    def __repr__(self):
        return f"<Program: {len(self.blocks)} blocks, {len(self.global_block().ops)} ops>"


class _BlockGuard:
    """The context of `Program._block_guard` (a class: every branch and loop
    body of a trace enters a few, and a generator-based one costs more)."""

    __slots__ = ("program", "block", "prev")

    def __init__(self, program, block):
        self.program = program
        self.block = block

    def __enter__(self):
        self.prev = self.program._current
        self.program._current = self.block.idx
        return self.block

    def __exit__(self, *exc):
        self.program._current = self.prev
        return False
