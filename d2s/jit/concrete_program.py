"""ConcreteProgram: one traced program for one input signature, and how it runs.

Tracing replaces every tensor argument by a `data` Variable and calls the
converted function under `program_guard`; parameters it touches are
captured by reference; ops nothing needs are then pruned. Running in
dynamic mode feeds the eager Tensors' arrays, runs the forward ops, and
wraps outputs as eager Tensors. How the program runs is its backend's: a
call asks the registry (`d2s.backends`) for the program's `Executable` on
the backend chosen and runs its parts, whatever backend it is (numpy
interprets the first call and compiles the second: `d2s.backends.numpy`).
When a gradient is wanted, the outputs are joined to the eager tape
(jit.taped). What a program reads besides its inputs and how its outputs
are returned live in jit.program_parts.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from .. import backends
from ..core import dist_attr, state
from ..core.registry import OpDef
from ..core.tensor import Tensor, device_tensor, is_device_array, new_device_tensor
from ..static import framework
from ..static.builder import check_visible
from ..static.executor import UndefinedValue
from ..static.input_spec import InputSpec
from ..static.ir import Program, Variable
from ..static.passes.dce import prune_program
from ..static.rebinding import entry_writes_begin, entry_writes_end, written_inputs
from ..static.state_overlay import StateOverlay
from ..static.pytree import flatten, unflatten
from ..static.tensor_array import is_tensor_array
from ..convert import generators_held, is_generator, layer_writes, recording_reads
from ..gc_pause import gc_paused
from ..static.origins import warn_in_user_code
from . import read_guards
from .guards import locate, reading_values, too_many_variants
from .outliving import Watch, function_roots, swap_in, swap_out
from .signature import input_labels, tensor_aliases
from .program_parts import CapturedTensors, OutputStructure
from .taped import TapedRuns


_VALUE = operator.attrgetter("_value")  # a Tensor's array, read in C by `map`
_RAW = operator.attrgetter("_raw")  # the same, a device array left as it is


class ConcreteProgram(TapedRuns):
    """`main_program`, `inputs` (data Variables) and `outputs` (output Variables):
    the `ProgramParts` (d2s.backends.base) a backend makes its Executable of."""

    def __init__(self, main_program, inputs, outputs, output_structure, n_forward,
                 captured=None):
        self.main_program = main_program
        self.inputs = inputs
        self.outputs = outputs
        self.output_structure = output_structure
        self._n_forward = n_forward
        self._backward = None              # a BackwardProgram, built on first need
        self._out_sources = None           # see _output_sources
        self._captured = captured if captured is not None else CapturedTensors(main_program)
        self._lock = threading.Lock()
        self._runners = {}                 # backend name -> its Executable (see executable)
        # backend name -> its per-call path (see `_fast_call`), once the backend's
        # executable has one; StaticFunction's cache hits call it directly.
        self.fast_calls = {}
        # (Layer, `training` as the trace read it): the flags this forward was
        # built for (StaticFunction keys its programs by them; a StepProgram
        # guards them itself, see jit.train_step)
        self.modes_read = []
        self._tape_op = OpDef("run_program", None, None, vjp=self._vjp,
                              num_outputs=len(outputs))

    # ---- tracing ----------------------------------------------------------------
    @classmethod
    def trace(cls, converted_fn, signature, bound_self=None, check_finite=False, passes=()):
        """Trace `converted_fn` for `signature`. A function that calls backward,
        an optimizer's step or clear_grad is a whole training step: its
        program also computes the new parameters, gradients and optimizer
        state, and it comes back as a `StepProgram` (jit.train_step) that
        commits them to the eager objects on each run.

        `passes`: functions `pass_(program)` that rewrite the traced forward
        program in place before anything reads it (`StaticFunction.add_program_pass`;
        weight-only quantization is one). A training step refuses them: a pass
        changes what the step would differentiate and update."""
        with gc_paused(), layer_writes():
            return cls._trace(converted_fn, signature, bound_self, check_finite, passes)

    @classmethod
    def _trace(cls, converted_fn, signature, bound_self, check_finite, passes=()):
        program = Program()
        inputs, leaves, taken, arguments = [], [], set(), []
        first_var, starts = {}, []  # id(Tensor) -> its data Variable; per input, its own
        overlay = program._builder.overlay = StateOverlay(program)
        effects, failed, writes, watch, swapped = None, True, None, None, []
        marks = entry_writes_begin()
        # Traced with gradients on: the caller's grad mode decides at run time
        # whether outputs join the tape; only no_grad() inside detaches.
        try:
            with framework.program_guard(program), state.enable_grad():
                for leaf, spec, name in zip(signature.leaves, signature.specs, signature.names):
                    if spec is None:
                        leaves.append(leaf)
                        continue
                    unique = name
                    while unique in taken:
                        unique += "_"
                    taken.add(unique)
                    var = framework.data(unique, spec.shape, spec.dtype)
                    var.stop_gradient = getattr(leaf, "stop_gradient", True)
                    if isinstance(leaf, Tensor):
                        same = first_var.setdefault(id(leaf), var)
                        if same is not var:  # `f(a, a)`: one value, as eagerly (each
                            var._latest = same  # name reads the other's writes)
                        starts.append(same)
                    else:
                        starts.append(var)
                    inputs.append(var)
                    leaves.append(var)
                    arguments.append((var, leaf if isinstance(leaf, Tensor) else None))
                overlay.set_arguments(arguments)
                labels = input_labels(signature)  # (for messages: static.rebinding)
                program.__dict__["_d2s_input_labels"] = {
                    v.name: label for v, label in zip(inputs, labels)}
                args, kwargs = unflatten(signature.tree, leaves)
                # Arguments holding no tensor are passed as they are (a list the
                # function appends to is the caller's list, as in Python).
                # A caller's list or dict holding tensors is passed itself, its
                # tensors standing in for their inputs while the trace runs
                # (jit.outliving.swap_in), so that writes into it reach it.
                args = tuple(orig if _tensor_free(orig) else
                             swap_in(orig, new, swapped) for orig, new in zip(signature.args, args))
                kwargs = {k: signature.kwargs[k] if _tensor_free(signature.kwargs[k]) else
                          swap_in(signature.kwargs[k], v, swapped) for k, v in kwargs.items()}
                if bound_self is not None:
                    args = (bound_self,) + tuple(args)
                # what the trace may write that outlives the call (jit.outliving)
                watch = Watch(_roots(converted_fn, signature, bound_self),
                              _argument_roots(signature, bound_self))
                with reading_values() as value_guards, recording_reads() as reads, \
                        generators_held(_held_generators(watch)):
                    result = converted_fn(*args, **kwargs)
                writes = watch.collect(program, read_guards.grown_only(reads, watch))
                if value_guards:
                    locate(value_guards, watch.before.values())
                writes.value_guards = value_guards
                # the plain values it read from state the caller keeps (jit.read_guards)
                writes.read_guards = read_guards.build(reads, watch)
                # what each entry held when the trace first read it (jit.save)
                writes.first_reads = {k: e[3] for k, e in reads.entries.items()}
                writes.first_reads.update((k, _FOUND_MISSING) for k in reads.absent)
                if not overlay.active:  # buffers updated in place (F.batch_norm)
                    writes.add_assigns(overlay.value_assigns(), program)
                # the inputs written in place: written into the call's Tensors
                writes.add_input_writes(written_inputs(inputs, starts), program,
                                        labels, _aliases(signature))
                if writes and overlay.active:
                    writes = _step_writes(overlay, writes)
                # lists the trace filled in tensor loops (tensor arrays): lists again
                lists = [pos for pos, leaf in enumerate(flatten(result)[0])
                         if is_tensor_array(leaf)]
                if writes.effects if not overlay.active else writes.replays():
                    # their values come back after the function's result
                    result = (result, tuple(writes.variables))
                out_leaves, out_tree = flatten(result)
                outputs, positions, constants = [], [], list(out_leaves)
                for pos, leaf in enumerate(out_leaves):
                    if isinstance(leaf, (Variable, Tensor)):
                        var = program._builder.to_var(leaf)
                        check_visible(var, program.global_block())
                        outputs.append(var)
                        positions.append(pos)
                        constants[pos] = None  # replaced by the output's value on each run
                if writes.writes_inputs and not overlay.active:
                    writes.returned = _returned_inputs(writes, outputs, positions, out_tree)
                if overlay.active:
                    effects = overlay.finish()
            failed = False
        finally:
            overlay.restore(failed)
            program._builder.overlay = None
            if failed and watch is not None:
                watch.rollback()
            swap_out(swapped)
            entry_writes_end(marks)
        kept = [v.name for v in outputs] + (effects.written_names() if effects else [])
        prune_program(program, kept)
        if passes:
            if effects is not None:
                raise RuntimeError(
                    "a program pass (e.g. d2s.quantization.weight_only) was added to a function "
                    "that trains (backward / optimizer step): passes rewrite inference programs "
                    "only; add it to the inference function instead")
            for pass_ in passes:
                pass_(program)
        n_forward = len(program.global_block().ops)
        layers = [x for x in (bound_self,) + tuple(signature.args)
                  if hasattr(x, "named_sublayers")]
        captured = CapturedTensors.from_layers(program, layers)
        if writes:
            captured.add_paths(writes.read_paths)
        args = (program, inputs, outputs, OutputStructure(out_tree, constants, positions, lists),
                n_forward, captured)
        if effects is not None:
            from .train_step import StepProgram  # (it builds on this module)
            if writes.replays():
                from .effect_step import EffectStep
                return EffectStep(*args, effects=effects, check_finite=check_finite,
                                  writes=writes)
            # (only its reads guarded: a term of its own guard, jit.step_call)
            return StepProgram(*args, effects=effects, check_finite=check_finite,
                               read_guards=writes.read_guards)
        if writes.effects:
            concrete = EffectProgram(*args, writes=writes)
        elif writes:  # guards only: the program writes nothing back
            concrete = GuardedProgram(*args, writes=writes)
        else:
            concrete = cls(*args)
        concrete.modes_read = overlay.modes_read()
        return concrete

    def result_outputs(self):
        """The output Variables of the function's result and their positions
        among its leaves (`EffectProgram` leaves its written values out)."""
        return self.outputs, self.output_structure.positions

    def captured_tensors(self):
        """The eager tensors the program reads now, `main_program.captured`
        updated first for layer attributes replaced since (see CapturedTensors)."""
        return self._captured.current()

    # ---- running ---------------------------------------------------------------------
    def __call__(self, tensors, backend=None):
        """Run with eager input Tensors (in `inputs` order) on `backend` (a
        registered name; None: the global default); eager outputs."""
        if backend is None:
            backend = backends.get_backend()
        fast = self.fast_calls.get(backend)
        if fast is not None:
            return fast(tensors)
        return self._call_on(backend, tensors)

    def _call_on(self, backend, tensors):
        """`__call__`'s general path: the backend's executable runs each part
        (handing a part it cannot run to numpy: the registry's policy)."""
        exe = self._runners.get(backend) or self.executable(backend)
        captured = self._captured.current()
        # (a backend taking device arrays reads each input as it is held: a
        # device-resident Tensor is fed without a host copy)
        feeds = ([t._raw for t in tensors] if getattr(exe, "takes_device_arrays", False)
                 else [t._value for t in tensors])
        if dist_attr.any_placed():  # placements: sharded inputs (d2s.distributed)
            return self._call_placed(exe, tensors, captured, feeds)
        if self._needs_grad(tensors, captured):
            values, saved = exe.forward_for_grad(feeds, captured)
            return self._taped(tensors, captured, values, (exe, saved))
        arrays = getattr(exe, "input_arrays", None)  # (as `_fast_call` reads them)
        if arrays is not None:
            del feeds
            feeds = arrays(tensors)
        values = exe.forward(feeds, captured)
        plain = exe.plain_call
        if plain is not None:
            self.fast_calls[backend] = self._fast_call(backend, plain)
        new = Tensor._from_array
        if self.output_structure.single and type(values[0]) is np.ndarray:
            return new(values[0])
        return self._wrap(values)

    def _fast_call(self, backend, plain):
        """The per-call path on `backend` once its executable has one (`plain`:
        (input arrays, captured tensors) -> output arrays): `_call_on` in
        one frame, for calls that need no gradient and have no placed
        values; the others take `_call_on`. Small programs cost little more
        than their executable, so each step here is one a call pays for: the
        arrays are read and wrapped by `map` (no comprehension frames) and
        the returned structure's common shapes are built inline."""
        captured, tls, needs_grad = self._captured, state._tls, self._needs_grad
        structure, new, slow = self.output_structure, Tensor._from_array, self._call_on
        placed = dist_attr.any_placed  # placed values take `_call_on` (their placements)
        value, version = _VALUE, state.tensor_attributes_version
        runner = self._runners.get(backend)
        if getattr(runner, "takes_device_arrays", False):
            # inputs read as held, outputs kept as the backend made them (device arrays)
            value, new = _RAW, new_device_tensor
        # (a backend may read the inputs itself: xla moves inputs passed again to the device)
        arrays = getattr(runner, "input_arrays", None)
        single, flat_tuple = structure.single, structure.flat_tuple

        def call(tensors):
            params = captured.tensors  # `captured.current()` inline:
            if captured.paths and version[0] != captured.version:
                params = captured.current()  # a layer attribute was replaced
            if placed() or tls.grad_enabled and needs_grad(tensors, params):
                return slow(backend, tensors)
            outs = plain(list(map(value, tensors)) if arrays is None else arrays(tensors), params)
            if single:
                return new(outs[0])
            if flat_tuple:
                return tuple(map(new, outs))
            return structure.restructure(list(map(new, outs)))
        return call

    def inline_parts(self, backend):
        """What an inline cache (jit.inline_cache) needs to run `_fast_call`'s
        path itself, in its own frame: a dict, or None where the program is
        not a plain forward on `backend` (writes, no per-call path)."""
        runner = self._runners.get(backend)
        plain = getattr(runner, "plain_call", None)
        if type(self) not in (ConcreteProgram, GuardedProgram) or plain is None \
                or backend not in self.fast_calls:
            return None
        raw = getattr(runner, "takes_device_arrays", False)
        structure = self.output_structure
        return {"captured": self._captured, "plain": plain, "exe": runner,
                # the backend's executable entry `plain` calls (feeds..., then
                # param_values(captured tensors)...), when it names one
                "call": getattr(plain, "exe_call", None),
                "param_values": getattr(plain, "param_values", None),
                "arrays": getattr(runner, "input_arrays", None), "raw": raw,
                "new": new_device_tensor if raw else Tensor._from_array,
                "structure": structure, "slow": self._call_on,
                "version": state.tensor_attributes_version, "placed": dist_attr.placed_values(),
                "floating": tuple(self._captured.floating),
                # a GuardedProgram's conditions: while they fail, its own per-call
                # path picks the program for the state now
                "holds": getattr(self, "_holds", None)}

    def _call_placed(self, exe, tensors, captured, feeds):
        """`_call_on` with the inputs' placements: outputs report the ones the
        backend gave them."""
        attrs = [dist_attr.get(t) for t in tensors]
        grad = self._needs_grad(tensors, captured)
        if grad:
            values, saved = exe.forward_for_grad(feeds, captured, attrs)
        else:
            values = exe.forward(feeds, captured, attrs)
        out_attrs = exe.output_attrs(feeds, captured, attrs, grad)
        if grad:
            return self._taped(tensors, captured, values, (exe, saved), out_attrs)
        return self._wrap(values, out_attrs)

    def _placed(self, outs, attrs):
        """`outs` with placements: `attrs` (a backend's), else those of the
        output Variables (a `reshard` result: metadata on numpy)."""
        if attrs is None:
            attrs = [dist_attr.get(v) for v in self.outputs]
        for o, a in zip(outs, attrs):
            if a is not None:
                dist_attr.attach(o, a)

    def executable(self, backend):
        """This program's Executable on `backend` (a registered name), made by
        the registry on first use and kept."""
        exe = self._runners.get(backend)
        if exe is None:
            # (made outside the lock: a backend refusing the program asks for
            # numpy's executable of it, through this method)
            exe = backends.executable(backend, self)
            with self._lock:
                exe = self._runners.setdefault(backend, exe)
        return exe

    def _wrap(self, values, attrs=None):
        """Eager Tensors of the forward's output values, in the returned
        structure; `attrs`: their placements, see `_placed`."""
        new = Tensor._from_array
        outs = [new(v) if type(v) is np.ndarray else
                device_tensor(v) if is_device_array(v) else new(self._as_array(i, v))
                for i, v in enumerate(values)]
        if attrs is not None or dist_attr.any_placed():
            self._placed(outs, attrs)
        structure = self.output_structure
        return outs[0] if structure.single else structure.restructure(outs)

    def _as_array(self, i, value):
        """Output `i`'s value as an array; an undefined value (a name that no
        path which ran assigned, e.g. after a loop that ran zero times) is the
        NameError Python would raise on reading it."""
        if type(value) is UndefinedValue:
            producer = next((op for op in self.main_program.global_block().ops
                             if any(v is self.outputs[i] for v in op.outputs)), None)
            raise value.error(producer)
        return np.asarray(value)

    def _as_tensor(self, i, value):
        """Output `i` as a Tensor: a backend's device array stays on the device
        (a device-resident Tensor), anything else as `_as_array` reads it."""
        if is_device_array(value):
            return device_tensor(value)
        return Tensor._from_array(self._as_array(i, value))

    # ---- what a backend reads (ProgramParts) ------------------------------------------
    def input_names(self):
        """The feeds' names in order: the inputs, then the captured tensors."""
        return [v.name for v in self.inputs] + list(self.main_program.captured)

    # ---- inspection ----------------------------------------------------------------------
    def lowered_text(self, examples=None, backend=None):
        """What runs the forward on `backend` (default: the global one), as text:
        the backend's (the StableHLO XLA compiles for the shapes of `examples`,
        one Tensor, array or InputSpec per input, default: the inputs' declared
        shapes, which must then be fully known; numpy's generated Python)."""
        exe = self.executable(backends.resolve(backend))
        feeds = None
        if getattr(exe, "text_needs_feeds", True):
            feeds = [_example_array(var, ex) for var, ex in
                     zip(self.inputs,
                         examples if examples is not None else [None] * len(self.inputs))]
        return exe.text(feeds)

    def __repr__(self):
        return (f"<ConcreteProgram: {len(self.inputs)} inputs, {len(self.outputs)} outputs, "
                f"{self._n_forward} ops>")


def _example_array(var, example):
    """An array with the shape and dtype input `var` gets from `example`."""
    if isinstance(example, Tensor):
        return example._value
    if isinstance(example, np.ndarray):
        return example
    shape = var.shape if example is None else tuple(example.shape)
    if any(d is None for d in shape):
        raise ValueError(f"input '{var.name}' has shape {list(shape)}: pass example inputs "
                         "(Tensors) to see what runs for a concrete shape")
    return np.zeros(shape, var.dtype)


def _tensor_free(value):
    leaves, _ = flatten(value)
    return not any(isinstance(x, (Tensor, np.ndarray, InputSpec))
                   for x in leaves)


def _returned_inputs(writes, outputs, positions, out_tree):
    """[(leaf position in the function's result, input position)] of the
    result's leaves that are an input written in place (`x.add_(1); return
    x`): eagerly that is the caller's Tensor itself, so the call returns it
    (written) rather than a new Tensor of the same value."""
    written = {id(writes.variables[e.template.index]): e.key for e in writes.effects
               if e.kind == "input"}
    n = _count_leaves(out_tree[1][0])
    return [(p, written[id(v)]) for v, p in zip(outputs, positions)
            if p < n and id(v) in written]


def _with_inputs(result, returned, tensors):
    """`result` with the leaves `returned` (see `_returned_inputs`) replaced by
    the call's input Tensors at those positions."""
    if not isinstance(result, (tuple, list, dict)) and returned[0][0] == 0:
        return tensors[returned[0][1]]  # (the result is that one tensor)
    leaves, tree = flatten(result)
    for p, k in returned:
        leaves[p] = tensors[k]
    return unflatten(tree, leaves)


def _aliases(signature):
    """`tensor_aliases` of the traced call's tensor inputs."""
    return tensor_aliases([leaf for leaf, spec in zip(signature.leaves, signature.specs)
                           if spec is not None])


def _roots(converted_fn, signature, bound_self):
    """(label, object) of what the caller still holds after the call: the
    bound Layer, the arguments, the closure cells and the globals the
    function names (jit.outliving walks them)."""
    roots = []
    if bound_self is not None:
        roots.append(("self", bound_self))
    code = getattr(converted_fn, "__code__", None)
    names = list(code.co_varnames[:code.co_argcount]) if code is not None else []
    if bound_self is not None:
        names = names[1:]
    for i, a in enumerate(signature.args):
        roots.append((f"argument '{names[i]}'" if i < len(names) else f"argument {i}", a))
    for k, v in signature.kwargs.items():
        roots.append((f"argument '{k}'", v))
    roots.extend(function_roots(converted_fn))
    return roots


def _held_generators(watch):
    """ids of the random generators the caller holds before the trace: roots
    (an argument, a closure cell, a global) and entries of the containers the
    watch recorded (`self.rng`, `cfg["rng"]`). Their draws in converted code
    are replayed per run (convert.runtime.python_random)."""
    found = {id(v) for _, v in watch.roots if is_generator(v)}
    for _, copy, _, _ in watch.before.values():
        for v in (copy.values() if isinstance(copy, dict) else copy):
            if is_generator(v):
                found.add(id(v))
    return found


def _argument_roots(signature, bound_self):
    """{index in `_roots`: ("pos", i) / ("kw", name)} of the call's arguments:
    the containers reached through them are written per call (outliving)."""
    first = 0 if bound_self is None else 1
    found = {first + i: ("pos", i) for i in range(len(signature.args))}
    found.update({first + len(signature.args) + j: ("kw", k)
                  for j, k in enumerate(signature.kwargs)})
    return found


def _step_writes(overlay, writes):
    """In a training step, a parameter or buffer updated in place joins the
    step's value writes (committed with the parameters, jit.train_step); the
    other writes stay writes to replay after each step (`EffectStep`)."""
    from .outliving import Effects
    for e in writes.effects:
        if e.kind == "assign":
            overlay.assign(e.container, writes.variables[e.template.index])
    rest = [e for e in writes.effects if e.kind != "assign"]
    kept = Effects(rest, writes.variables if rest else [], writes.guards, writes.read_paths)
    kept.guard_routes = writes.guard_routes
    kept.value_guards = writes.value_guards
    kept.read_guards = writes.read_guards
    kept.writes_inputs, kept.aliases = writes.writes_inputs, writes.aliases
    return kept


class _NoFastCalls(dict):
    """A program with writes to replay has no per-call shortcut: every call goes
    through `EffectProgram.__call__`."""

    def __setitem__(self, key, value):
        pass


_FOUND_MISSING = object()  # (writes.first_reads: an attribute `hasattr` found missing)


def _count_leaves(tree):
    """How many leaves a `static.pytree` tree definition holds."""
    if tree is None:
        return 1
    return sum(_count_leaves(sub) for sub in tree[-1])


class GuardedProgram(ConcreteProgram):
    """A program built for Python values its trace read from state the caller
    keeps (`writes`: a jit.outliving.Effects; its guards, jit.guards and
    jit.read_guards): it runs while they hold; otherwise the function is
    traced again for the state now (`_retrace`, set by StaticFunction) and
    the programs of this signature are kept side by side, each with its own
    condition. Its per-call path checks the guards first."""

    MAX_VARIANTS = 8

    def __init__(self, *args, writes):
        super().__init__(*args)
        self.writes = writes
        # whether its conditions hold now: the compiled read guards alone when
        # they are its only ones (one call per run)
        self._holds = (writes.read_guards.holds
                       if writes.read_guards is not None and not writes.replays()
                       else writes.hold)
        self._variants = [self]
        self._retrace = None
        self._warned_variants = False

    def _guard_labels(self):
        labels = []
        for v in self._variants:
            if isinstance(v, GuardedProgram):
                labels += [g[3] for g in v.writes.guards]
                labels += [g.label for g in v.writes.value_guards]
                if v.writes.read_guards is not None:
                    labels += v.writes.read_guards.failing()
        return labels

    def __call__(self, tensors, backend=None):
        if self._holds():
            return ConcreteProgram.__call__(self, tensors, backend)
        return _run_chosen(self._variant(tensors), tensors, backend)

    def _run(self, tensors, backend):
        """Run this program, chosen for the state now (its guards hold)."""
        return ConcreteProgram.__call__(self, tensors, backend)

    def _fast_call(self, backend, plain):
        inner = super()._fast_call(backend, plain)
        hold, variant = self._holds, self._variant

        def call(tensors):
            if hold():
                return inner(tensors)
            return _run_chosen(variant(tensors), tensors, backend)
        return call

    def _variant(self, tensors):
        with self._lock:
            for v in self._variants:
                if not isinstance(v, GuardedProgram) or (
                        v.writes.hold() and v.writes.aliases_hold(tensors)):
                    return v
            if self._retrace is None:
                from ..static.control_flow import ControlFlowError
                labels = self._guard_labels()
                raise ControlFlowError(
                    f"{', '.join(dict.fromkeys(labels))}: the program of this call was "
                    "built for the value these held before, and they changed: give them a "
                    "tensor value before the first call (e.g. self.count = d2s.zeros([1]))")
            if len(self._variants) >= self.MAX_VARIANTS:
                if not self._warned_variants:
                    self._warned_variants = True
                    warn_in_user_code(too_many_variants(self._guard_labels(),
                                                        self.MAX_VARIANTS), UserWarning)
                del self._variants[1]  # the oldest retraced one (this one stays first)
            variant = self._retrace(tensors)
            self._variants.append(variant)
            return variant


class EffectProgram(GuardedProgram):
    """A program whose trace wrote traced values into objects that outlive the
    call (jit.outliving): its result is `(the function's result, the written
    values)`; each call returns the first and, after the whole run
    succeeded, performs the writes with the second.

    A write that replaced a Python value (`self.count += 1` under a tensor
    `if`, with `count` an int) leaves a Tensor where the trace read the int,
    and one that replaced a tensor the program reads may change its shape:
    the program holds only while those entries are what the trace found
    (the same Python value, a tensor of the same shape and dtype:
    `Effects.hold`), as a `GuardedProgram`."""

    def result_outputs(self):
        """The output Variables of the function's own result, without the
        written values, and their positions among that result's leaves: what
        an exported model computes (it cannot write back, as `torch.onnx`
        leaves out buffers a forward mutates)."""
        n = _count_leaves(self.output_structure.tree[1][0])
        kept = [(v, p) for v, p in zip(self.outputs, self.output_structure.positions) if p < n]
        return [v for v, _ in kept], [p for _, p in kept]

    def __init__(self, *args, writes):
        super().__init__(*args, writes=writes)
        # A program whose only writes are its own inputs' (no guards: nothing
        # else to check) keeps a per-call path: `_fast_call` writes back after it.
        self._inputs_only = (not writes.guards and not writes.value_guards
                             and writes.read_guards is None
                             and all(e.kind == "input" for e in writes.effects))
        if not self._inputs_only:
            self.fast_calls = _NoFastCalls()

    def _fast_call(self, backend, plain):
        if not self._inputs_only:  # (never asked: fast_calls keeps nothing then)
            return super()._fast_call(backend, plain)
        inner = ConcreteProgram._fast_call(self, backend, plain)
        writes, general = self.writes, self.__call__
        aliases_hold, check, replay = writes.aliases_hold, writes.check_inputs, writes.replay

        def call(tensors):
            if not aliases_hold(tensors):  # (the program for this aliasing)
                return general(tensors, backend)
            check(tensors)
            result, values = inner(tensors)
            replay(values, tensors)
            if writes.returned:
                return _with_inputs(result, writes.returned, tensors)
            return result
        return call

    def __call__(self, tensors, backend=None):
        writes = self.writes
        aliased = writes.aliases_hold(tensors)
        if not aliased and self._retrace is None:  # (a loaded program: jit.load)
            raise ValueError(
                f"{', '.join(writes.input_labels())}: this program writes its inputs in "
                "place and was saved for calls passing a different Tensor to each input; "
                "this call passes one Tensor for several (as eagerly, a write through one "
                "name would change the other): pass a copy (`t.clone()`) for one of them")
        program = self if writes.hold() and aliased else self._variant(tensors)
        return _run_chosen(program, tensors, backend)

    def _run(self, tensors, backend):
        self.writes.check_inputs(tensors)
        # (not through `fast_calls`: its per-call path writes back itself)
        result, values = self._call_on(backend or backends.get_backend(), tensors)
        self.writes.replay(values, tensors)
        if self.writes.returned:
            return _with_inputs(result, self.writes.returned, tensors)
        return result


def _run_chosen(program, tensors, backend):
    """Run `program`, a variant `GuardedProgram._variant` chose (or the
    program itself, its guards holding), without checking its guards again."""
    if isinstance(program, GuardedProgram):
        return program._run(tensors, backend)
    return program(tensors, backend)
