"""Eager state as a traced training step sees it: values and `.grad` of Tensors.

A function converted by `to_static` may call `loss.backward()`,
`optimizer.step()`, `clear_grad()`. Eagerly these change eager objects: a
parameter's value, its `.grad`, an optimizer's moments. While the function
is traced they must change nothing — the trace runs once, its program on
every call — so the trace functionalizes them. A `StateOverlay` keeps, per
Tensor, the Variable standing for its value and for its gradient at the
current point of the step; ops read those, and `finish()` lists what the
step changed (the writes a run commits to the eager objects) and what it
read of eager state (gradients that existed before the call: program
inputs). What the trace assumed and Python code may have branched on —
which Tensors had a gradient, which were trainable — the runner checks as
a guard on every call (`jit.train_step`).

While the trace runs, a tracked Tensor's gradient is kept where user code
looks for it, in `tensor.grad` (a Variable, or None once cleared); `restore`
puts the eager gradient back when the trace ends, also when it fails. The
overlay activates at the first backward / step / clear_grad (`activate`):
a trace that calls none of them is a plain forward program and never
touches a `.grad`.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..core import state
from ..core.ops import constant, full, ones_like
from ..core.tensor import Tensor
from .backward import _requires, backward_block, grad_ops
from .ir import Variable, user_origin

# Eager `backward()`'s error (core.autograd), for the same call in a traced step.
NO_GRAD_MESSAGE = ("backward() on a tensor that does not require grad: no input of the "
                   "computation had stop_gradient=False")


class GradSlot:
    """A leaf of the step whose gradient it reads or writes.

    `tensor` is the captured eager Tensor, or None for a tensor argument (the
    program reaches that by position, `input_index`). `versions`: every
    Variable that stood for its value in the step (the captured one, then the
    results of updates); a backward gives all of them to the same gradient.
    `entry_is_none`: it had no gradient when the trace began; else
    `entry_var` is the program input standing for that gradient.
    """
    __slots__ = ("tensor", "input_index", "label", "trainable", "versions", "entry",
                 "entry_is_none", "entry_var", "_grad")

    def __init__(self, tensor, input_index, label, trainable, var, entry, entry_is_none,
                 entry_var):
        self.tensor = tensor
        self.input_index = input_index
        self.label = label
        self.trainable = trainable
        self.versions = [var]
        self.entry = entry          # the eager `.grad` to put back (captured Tensors)
        self.entry_is_none = entry_is_none
        self.entry_var = entry_var
        self._grad = entry_var

    @property
    def grad(self):
        """The gradient at this point of the step: a Variable, or None."""
        return self.tensor._grad if self.tensor is not None else self._grad

    @grad.setter
    def grad(self, value):
        if self.tensor is not None:
            self.tensor._grad = value
        else:
            self._grad = value

    @property
    def leaf_var(self):
        return self.versions[0]


class StepEffects:
    """What a traced step reads of eager state and writes to it (see `finish`).

    `grad_inputs`: (program input name, GradSlot) — bound on each call to the
    slot's gradient. `value_writes`: (Tensor, Variable name) — the Tensor's
    new value. `grad_writes`: (GradSlot, Variable name or None) — its new
    gradient, None when cleared. `grad_present`: (GradSlot, bool Variable
    name) — a gradient written by `grad_writes` that a tensor `if` may have
    cleared on the path a run takes (`BranchState`): where the flag is
    False the gradient is None after the run, as eagerly. `slots`: every
    tracked leaf (their eager gradient state and trainability are the
    guard), as are `modes`.
    """

    def __init__(self, slots, grad_inputs, value_writes, grad_writes, modes=(),
                 grad_present=()):
        self.slots = slots
        self.grad_inputs = grad_inputs
        self.value_writes = value_writes
        self.grad_writes = grad_writes
        self.modes = list(modes)  # (Layer, its `training` flag as the trace read it)
        self.grad_present = list(grad_present)

    def written_names(self):
        return [n for _, n in self.value_writes] + [n for _, n in self.grad_writes
                                                      if n is not None] + \
            [n for _, n in self.grad_present]


class StateOverlay:
    """The functionalized eager state of one `to_static` trace (see module doc).

    `arguments`: (data Variable, the traced call's Tensor or None) in input order.
    """

    def __init__(self, program, arguments=()):
        self.program = program
        self.builder = program._builder
        self.active = False
        self._arguments = list(arguments)
        self._slots = {}            # id(Tensor) or id(data Variable) -> GradSlot
        self._values = {}           # id(Tensor) -> (Tensor, Variable): value after a write
        self._pending = []          # trainable Tensors read before activation
        self._born = {}             # id -> (weakref, user origin) of Tensors made while tracing
        self._modes = {}            # id(Layer) -> (Layer, `training` when first read)
        self._undo = []
        self._branch_blocks = set()  # blocks of tensor `if` branches being traced
        self._present = {}          # id(GradSlot) -> (its gradient, bool Variable: real)

    # ---- reading and writing values -------------------------------------------------------
    def read(self, tensor):
        """The Variable standing for `tensor`'s value at this point of the step."""
        written = self._values.get(id(tensor))
        if written is not None:
            return written[1]
        var = self.builder.capture(tensor)
        if not tensor.stop_gradient and id(tensor) not in self._slots:
            if self.active:
                self.track(tensor)
            else:
                self._pending.append(tensor)
        return var

    def assign(self, tensor, value):
        """From here on in the step, `tensor` holds `value` (an optimizer update's
        result, a new learning rate); the last value assigned is a write."""
        if not isinstance(value, Variable):
            value = self.read(value) if isinstance(value, Tensor) else \
                self._constant(value, tensor.dtype)
        if tuple(value.shape) != tuple(tensor.shape) or value.dtype != tensor.dtype:
            raise ValueError(f"cannot assign a {value.dtype.name}{list(value.shape)} value to "
                             f"{_describe(tensor)} ({tensor.dtype.name}{list(tensor.shape)})")
        self._values[id(tensor)] = (tensor, value)
        slot = self._slots.get(id(tensor))
        if slot is not None:
            slot.versions.append(value)

    def value_assigns(self):
        """(Tensor, Variable) per Tensor given a new value by `assign` (in a
        forward program: a buffer updated in place, jit.outliving)."""
        return [(t, v) for t, v in self._values.values()]

    def _constant(self, value, dtype):
        with state.building(self.builder), self.program._block_guard(
                self.program.global_block()):
            return constant(np.asarray(value, dtype=dtype), dtype)

    # ---- tracking gradients --------------------------------------------------------------
    def set_arguments(self, arguments):
        """(data Variable, the traced call's Tensor or None) per tensor argument."""
        self._arguments = list(arguments)

    def activate(self, what, instead=None, branch_ok=False):
        """A backward, step or gradient write (`what`, for errors) is being traced:
        from now on every trainable Tensor the step reads is tracked. Inside a
        tensor `if` or loop it is refused (`instead`: what to write there),
        except, with `branch_ok` (an update or a gradient clearing), directly
        in a branch of a tensor `if`, whose writes become the `cond`'s
        outputs (`BranchState`)."""
        block = self.program.current_block().idx
        if block != 0 and not (branch_ok and block in self._branch_blocks):
            where = ("a tensor-dependent loop (directly in a tensor `if` it is fine)"
                     if branch_ok else "a tensor-dependent `if` or loop")
            raise RuntimeError(
                f"{what} inside {where} is not supported: a traced step's backward, updates "
                "and gradient clearing run on every call. Move it out of the loop or branch "
                "(an `if` or `for` on Python values is fine)"
                + (f"; {instead}" if instead else ""))
        if self.active:
            return
        self.active = True
        for position, (var, tensor) in enumerate(self._arguments):
            if not var.stop_gradient:
                self._track_argument(position, var, tensor)
        pending, self._pending = self._pending, []
        for t in pending:
            self.track(t)

    def track_all(self, tensors):
        for t in tensors:
            self.track(t)

    def track(self, tensor):
        """From now on `tensor.grad` holds the Variable standing for its gradient."""
        slot = self._slots.get(id(tensor))
        if slot is not None:
            return slot
        if tensor._node is not None and not tensor.stop_gradient:
            raise RuntimeError(
                f"{_describe(tensor)} is the result of eager computation outside the traced "
                "step; the step's backward cannot reach its eager graph. Compute it inside "
                "the step function, or pass it detached (tensor.detach())")
        entry = tensor._grad
        entry_var = None
        if entry is not None:
            if not isinstance(entry, Tensor):
                raise TypeError(f"the .grad of {_describe(tensor)} is a "
                                f"{type(entry).__name__}, not a Tensor")
            entry_var = self._grad_input(tensor.name, entry.shape, entry.dtype)
        var = self.builder.capture(tensor)
        slot = GradSlot(tensor, None, _describe(tensor), not tensor.stop_gradient, var, entry,
                        entry is None, entry_var)
        written = self._values.get(id(tensor))
        if written is not None:
            slot.versions.append(written[1])
        self._slots[id(tensor)] = slot
        tensor._grad = entry_var
        return slot

    def assign_grad(self, tensor, value):
        """`tensor.grad = value` in the step (a Variable, an eager Tensor or
        None): from here on its gradient, and a write if it is the last.
        Tracked first, so the gradient the call found is what the guard and
        the program read (a Variable of a tensor `if` branch is the
        converter's to merge: it assigns the merged value after the `if`)."""
        if not self.active:
            self.activate(f"setting the .grad of {_describe(tensor)}")
        self.track(tensor)
        tensor._grad = value

    def _track_argument(self, position, var, tensor):
        entry = None if tensor is None else tensor.grad
        entry_var = None if entry is None else self._grad_input(var.name, entry.shape,
                                                                entry.dtype)
        self._slots[id(var)] = GradSlot(None, position, f"argument '{var.name}'", True, var,
                                        None, entry is None, entry_var)

    def _grad_input(self, base, shape, dtype):
        gb = self.program.global_block()
        name = f"{base}@GRAD" if base else None
        if name is None or name in gb.vars:
            name = self.program._unique_name("grad_in")
        return gb.create_var(shape, dtype, name=name, stop_gradient=True, persistable=True)

    # ---- backward ------------------------------------------------------------------------------
    def backward(self, target, grad=None):
        """`target.backward(grad)` in the step: gradient ops from the same vjp rules,
        in eager's order and sums, added to each leaf's gradient so far."""
        self.activate("backward()")
        if isinstance(target, Tensor):
            if target._node is not None:
                raise RuntimeError(
                    "backward() of an eager tensor computed outside the traced step: its "
                    "graph is on the eager tape, which the step's program cannot reach")
            if target.stop_gradient:
                raise RuntimeError(NO_GRAD_MESSAGE)
            target = self.read(target)
        program = self.program
        gb = program.global_block()
        if target.block is not gb:
            raise RuntimeError(f"backward() of '{target.name}', a value of a tensor-dependent "
                               "`if` or loop body: call it after the branch or loop")
        # As eager's backward, which skips a leaf frozen by then: a model the
        # step froze after tracking it (GAN-style) gets no gradient from here.
        leaves = [s for s in self._slots.values()
                  if (s.trainable if s.tensor is None else not s.tensor.stop_gradient)]
        wrt = [(slot, v) for slot in leaves for v in slot.versions]
        wrt_ids = {id(v) for _, v in wrt}
        if id(target) not in _requires(gb.ops, wrt_ids, through_grad_ops=False,
                                       floats_only=False):
            raise RuntimeError(NO_GRAD_MESSAGE)
        with state.building(self.builder), program._block_guard(gb), grad_ops(program):
            ct = _ones(target) if grad is None else self._cotangent(grad, target)
            # A gradient accumulates onto the one the leaf holds, as eagerly;
            # one held in another dtype (set by eager code) is added to after,
            # as eager adds the new gradient cast to the leaf's dtype to it.
            seeds, held = {}, {}
            for slot in leaves:
                current = slot.grad
                if current is not None:
                    current = self._as_var(current)
                    if current.dtype == slot.leaf_var.dtype:
                        seeds[id(slot.versions[-1])] = current
                    else:
                        held[id(slot)] = current
            grads = backward_block(gb, [target], [ct], [v for _, v in wrt], seeds=seeds,
                                   through_grad_ops=False)
            totals = {}
            for (slot, _), g in zip(wrt, grads):
                if g is not None:
                    prev = totals.get(id(slot))
                    totals[id(slot)] = (slot, g if prev is None else prev[1] + g)
            for slot, g in totals.values():
                g = self._as_leaf_grad(slot, g)
                slot.grad = g if id(slot) not in held else held[id(slot)] + g

    def _cotangent(self, grad, target):
        if isinstance(grad, Variable):
            return grad
        if isinstance(grad, Tensor):
            return self.read(grad)
        return constant(np.asarray(grad, dtype=target.dtype), target.dtype)

    def _as_var(self, value):
        if isinstance(value, Variable):
            return value
        if isinstance(value, Tensor):
            return self.read(value)
        raise TypeError(f"a gradient must be a Tensor, got {type(value).__name__}")

    def _as_leaf_grad(self, slot, g):
        """A backward's gradient of `slot`, cast to the leaf's dtype as eager
        casts it (a gradient the leaf held before keeps its own dtype)."""
        g = self._checked_shape(slot, g)
        if g.dtype != slot.leaf_var.dtype:
            g = g.astype(slot.leaf_var.dtype)
        return g

    @staticmethod
    def _checked_shape(slot, g):
        leaf = slot.leaf_var
        if tuple(g.shape) != tuple(leaf.shape):
            raise RuntimeError(f"gradient of shape {list(g.shape)} for {slot.label} of shape "
                               f"{list(leaf.shape)}")
        return g

    # ---- end of the trace ---------------------------------------------------------------------
    def note_new_tensor(self, tensor):
        # by id (Tensors compare by value: no set), with where the user made it
        self._born[id(tensor)] = (weakref.ref(tensor), user_origin())

    def note_mode(self, layer, flag):
        # the first read: what the code traced after it was built for
        self._modes.setdefault(id(layer), (layer, flag))

    def modes_read(self):
        """(Layer, its `training` flag when the trace first read it), per Layer
        read; a forward's program depends on them as a step's does."""
        return list(self._modes.values())

    def on_abort(self, undo):
        """`undo()` runs if the trace fails (eager objects created for the step)."""
        self._undo.append(undo)

    def finish(self):
        """The traced function returned: its reads and writes of eager state."""
        slots = list(self._slots.values())
        value_writes = [(t, v.name) for t, v in self._values.values()]
        grad_writes = []
        for slot in slots:
            final = slot.grad
            if final is slot.entry_var:
                continue
            if final is None:
                grad_writes.append((slot, None))
                continue
            var = self._as_var(final)
            if var.block.program is not self.program or var.block.idx != 0:
                raise RuntimeError(f"the gradient of {slot.label} is set to a value of "
                                   "another program or of a branch/loop body")
            grad_writes.append((slot, self._checked_shape(slot, var).name))
        for tensor in [t for t, _ in value_writes] + [s.tensor for s, _ in grad_writes]:
            if tensor is None or tensor.stop_gradient:
                continue  # optimizer state is made on the first step, eagerly as here
            born = self._born.get(id(tensor))
            if born is not None and born[0]() is tensor:
                where = f" (at {born[1][0]}, line {born[1][1]})" if born[1] else ""
                raise RuntimeError(
                    f"{_describe(tensor)} was created inside the traced step function"
                    f"{where} and is trained by it: the program would train the Tensor made "
                    "by its trace, eager code a new one on every call. Create parameters "
                    "(layers, optimizers) before the first call")
        grad_inputs = [(s.entry_var.name, s) for s in slots if s.entry_var is not None]
        grad_inputs += self._captured_entry_grads(slots)
        present = []
        for slot, name in grad_writes:
            held = self._present.get(id(slot))
            if name is not None and held is not None and held[0] is slot.grad:
                present.append((slot, self._as_var(held[1]).name))
        return StepEffects(slots, grad_inputs, value_writes, grad_writes,
                           self._modes.values(), present)

    def _captured_entry_grads(self, slots):
        """A gradient read (and captured as a constant) before its Tensor was
        tracked is a program input bound to that Tensor's gradient on each call."""
        program = self.program
        found = []
        for slot in slots:
            entry = slot.entry
            var = program._captured_ids.get(id(entry)) if entry is not None else None
            if var is not None:
                del program.captured[var.name]
                del program._captured_ids[id(entry)]
                var.persistable = True
                found.append((var.name, slot))
        return found

    def restore(self, failed):
        """Put every tracked Tensor's eager gradient back; after a failed trace,
        also undo what the trace created (optimizer state)."""
        for slot in self._slots.values():
            if slot.tensor is not None:
                slot.tensor._grad = slot.entry
            slot.entry = None  # the program must not keep the trace's gradient alive
        if failed:
            for undo in reversed(self._undo):
                undo()


class BranchState:
    """The overlay's state a tensor `if` carries through its `cond`: an
    `optimizer.step()` or `clear_grad()` in a branch writes parameters,
    optimizer state and gradients; after the `if` each of them is a choice
    between the branch's result and the value it had before (the other
    branch's), as running the taken branch eagerly leaves them.

    Made when the `if` starts (what the overlay holds then); after each
    branch `find()` takes in every value or gradient the branch changed, and
    the converter traces the `if` again carrying them (`restore()` first).
    A gradient that is None on one path and a Variable on the other is
    zeros on the path that has none, a choice needing a value on both, and
    a bool carried beside it says whether it is real: a run that took the
    clearing path leaves the gradient None, as eagerly (`grad_present`),
    unless later code writes it (a backward adds to the zeros)."""

    def __init__(self, overlay):
        self.overlay = overlay
        self.keys = []            # ("value", Tensor) or ("grad", GradSlot)
        self._have = set()
        self.zeroed = set()       # ids of GradSlots whose None becomes zeros
        self._values = dict(overlay._values)
        self._present = dict(overlay._present)
        self._grads = {id(s): s.grad for s in overlay._slots.values()}

    def _value_before(self, tensor):
        written = self._values.get(id(tensor))
        return written[1] if written is not None else self.overlay.builder.capture(tensor)

    def _grad_before(self, slot):
        return self._grads.get(id(slot), slot.entry_var)

    def _add(self, kind, obj):
        if (kind, id(obj)) not in self._have:
            self._have.add((kind, id(obj)))
            self.keys.append((kind, obj))
            return True
        return False

    def find(self):
        """After a branch: the values and gradients it changed join `keys`;
        True if there are new ones (trace the `if` again)."""
        ov, new = self.overlay, False
        for tensor, value in list(ov._values.values()):
            if value is not self._value_before(tensor):
                new = self._add("value", tensor) or new
        for slot in list(ov._slots.values()):
            if slot.grad is not self._grad_before(slot):
                new = self._add("grad", slot) or new
        return new

    def restore(self):
        """The overlay as it was before the `if` (it is traced again)."""
        ov = self.overlay
        ov._values.clear()
        ov._values.update(self._values)
        ov._present.clear()
        ov._present.update(self._present)
        for slot in ov._slots.values():
            slot.grad = self._grad_before(slot)
            _drop_branch_versions(slot)

    def labels(self):
        """Distinct names for messages and for the `cond`'s outputs (two
        unnamed Tensors of one shape get a number each)."""
        out, seen = [], set()
        for kind, obj in self.keys:
            base = text = (f"the value of {_describe(obj)}" if kind == "value" else
                           f"the gradient of {obj.label}" if kind == "grad" else
                           f"whether {obj.label} has a gradient")
            n = 2
            while text in seen:
                text, n = f"{base} ({n})", n + 1
            seen.add(text)
            out.append(text)
        return tuple(out)

    def get(self):
        ov = self.overlay
        out = []
        for kind, obj in self.keys:
            if kind == "value":
                written = ov._values.get(id(obj))
                out.append(written[1] if written is not None else self._value_before(obj))
            elif kind == "grad":
                out.append(obj.grad)
            else:
                held = ov._present.get(id(obj))
                out.append(held[1] if held is not None and held[0] is obj.grad else None)
        return tuple(out)

    def set(self, values):
        ov = self.overlay
        for (kind, obj), value in zip(self.keys, values):
            if kind == "grad":
                obj.grad = value
                continue
            if kind == "present":   # (after its gradient: keys keep that order)
                if value is None:
                    ov._present.pop(id(obj), None)
                else:
                    ov._present[id(obj)] = (obj.grad, value)
                continue
            if value is self._value_before(obj) and id(obj) not in self._values:
                ov._values.pop(id(obj), None)   # unwritten, as before the `if`
            else:
                ov._values[id(obj)] = (obj, value)
            slot = ov._slots.get(id(obj))
            if slot is not None:
                _drop_branch_versions(slot)
                if value is not slot.versions[-1]:
                    slot.versions.append(value)

    def finish_branch(self, start):
        """A branch's values (`get()`), with zeros for a None gradient where
        the `if` chooses between a gradient and none, and the flag saying
        which (`start`: the values before the `if`); and whether the `if`
        must be traced again (such a gradient, or its flag, newly found)."""
        values = list(self.get())
        again = False
        flags = {id(obj): i for i, (kind, obj) in enumerate(self.keys) if kind == "present"}
        for i, ((kind, obj), value) in enumerate(zip(self.keys, values)):
            if kind != "grad":
                continue
            if value is None and (start[i] is not None or id(obj) in self.zeroed) or \
                    value is not None and start[i] is None:
                self.zeroed.add(id(obj))
                if id(obj) not in flags:
                    again = self._add("present", obj) or again
                    continue
                real = value is not None
                if value is None:
                    var = obj.leaf_var
                    values[i] = full(var.shape, 0, var.dtype) if None not in var.shape \
                        else ones_like(var) * 0
                if values[flags[id(obj)]] is None or not real:
                    values[flags[id(obj)]] = full([], real, "bool")
            elif id(obj) in flags and values[flags[id(obj)]] is None:
                values[flags[id(obj)]] = full([], True, "bool")
        return tuple(values), again

    def enter(self):
        """A branch is being traced in the program's current block."""
        self.overlay._branch_blocks.add(self.overlay.program.current_block().idx)

    def leave(self):
        self.overlay._branch_blocks.discard(self.overlay.program.current_block().idx)


def _drop_branch_versions(slot):
    """Versions of a leaf made inside a branch are not the step's: only the
    `cond`'s result, in the program's top block, stands for it after."""
    slot.versions[:] = [v for v in slot.versions if v.block.idx == 0] or slot.versions[:1]


def _ones(target):
    """Eager backward's default cotangent, `ones(shape, dtype)`: a constant the
    compiler folds when the shape is known while building."""
    if None in target.shape:
        return ones_like(target)
    return full(target.shape, 1, target.dtype)


def _describe(tensor):
    if tensor.name:
        return f"tensor '{tensor.name}'"
    return f"a {tensor.dtype.name}{list(tensor.shape)} tensor"
