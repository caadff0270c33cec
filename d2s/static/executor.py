"""The reference interpreter: runs a Program op by op over the registry kernels.

Values live in `Scope`s chained like the blocks (`static.scope`): a
sub-block runs in a child scope of its parent's. Control-flow ops interpret
themselves (`control_ops`): `cond` / `while` can save the scopes they ran
(when a backward op needs the forward values), and `cond_grad` /
`while_grad` run their gradient blocks in children of those saved scopes.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from ..core import dist_attr
from ..core.registry import OPS
from ..core.tensor import Tensor
from . import backend as backend_state
from .control_ops import CONTROL_OPS
from .scope import MissingValue, Scope, UndefinedValue
from .scope import op_location as _where
from .scope import relocate as _relocate


_MODE = {"mode": os.environ.get("D2S_EXECUTOR", "compiled")}


def executor_mode():
    """"compiled" (generated code, the default) or "interpreter" (the reference)."""
    return _MODE["mode"]


def set_executor_mode(mode):
    """Choose how programs run; tests run the suite both ways and compare."""
    if mode not in ("compiled", "interpreter"):
        raise ValueError(f"executor mode must be 'compiled' or 'interpreter', not {mode!r}")
    _MODE["mode"] = mode


def _calls_from_environment():
    """`D2S_INTERPRETED_CALLS` (default 1); a value that is no count warns and
    gives the default (an environment variable should not stop `import d2s`)."""
    value = os.environ.get("D2S_INTERPRETED_CALLS", "1")
    try:
        calls = int(value)
    except ValueError:
        calls = -1
    if calls < 0:
        warnings.warn(f"D2S_INTERPRETED_CALLS={value!r} is not a count of calls (0, 1, ...): "
                      "using 1", stacklevel=2)
        calls = 1
    return calls


_TIER = {"interpreted_calls": _calls_from_environment()}


def interpreted_calls():
    """How many calls of a `to_static` program's forward run on the
    interpreter before it is compiled, in "compiled" mode (1 by default;
    `D2S_INTERPRETED_CALLS`). Tiered as JITs tier, compiling what is hot:
    the first call costs the trace plus one interpreted run (the same
    kernels, so the same values and errors), the second pays the passes,
    generating and compiling the code (on benchmarks/first_call.py's
    functions about 40% of what the trace cost with it), later calls run
    it. A function called once never pays for code it would not reuse. 0
    compiles on the first call (the test suite does, so that each
    test exercises the generated code).

    Applies to a traced forward, with or without the values its backward
    reads (the backward follows: it is compiled when its forward was).
    Training steps (`jit.train_step`) compile at once: a step is called in
    a loop by nature, its in-place update plan and its generated per-call
    function are built from the compiled plan after the first call, and
    tiering would only move that cost to the second step. `Executor.run`
    compiles on its first run, as before: its programs are built by hand
    to be run, usually in a loop, and were not measured for this."""
    return _TIER["interpreted_calls"]


def set_interpreted_calls(calls):
    """Set `interpreted_calls()`; returns the previous value."""
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ValueError(f"interpreted calls must be an int >= 0, not {calls!r}")
    previous, _TIER["interpreted_calls"] = _TIER["interpreted_calls"], calls
    return previous


class ExecutionError(RuntimeError):
    pass


_ABSENT = object()  # no value in this scope's own dict (see run_ops)


def run_block(block, scope):
    run_ops(block.ops, block.program, scope)


def run_ops(ops, program, scope):
    """Run `ops` of `program` in `scope`: core ops call their kernel, control-flow
    ops interpret themselves (their homes in `control_ops`), running their
    sub-blocks through `run_block`."""
    def run_sub_block(idx, sub_scope):
        run_ops(program.blocks[idx].ops, program, sub_scope)

    # Every op of an interpreted run passes here (a to_static program's first
    # call is one, see `interpreted_calls`): names bound once, an input read
    # from this scope's own values first (where most are), the chain of
    # enclosing scopes only when it is not there.
    controls, kernels, ndarray, asarray = CONTROL_OPS, OPS, np.ndarray, np.asarray
    values, get, missing = scope.vars, scope.get, _ABSENT
    for op in ops:
        decl = controls.get(op.type)  # control_op(op.type), inline
        try:
            if decl is not None:
                decl.interpret(op, scope, run_sub_block)
                continue
            args = []
            for v in op.inputs:
                value = values.get(v.name, missing)
                args.append(get(v.name) if value is missing else value)
            result = kernels[op.type].kernel(*args, **op.attrs)
        except MissingValue as e:
            if e.args and isinstance(e.args[0], str) and not getattr(e, "_d2s_located", False):
                if e.args[0] in program.feed_vars:
                    raise ValueError(f"feed: data variable '{e.args[0]}' is needed by the "
                                     f"program but was not fed") from None
                err = ExecutionError(f"value of '{e.args[0]}' is not available{_where(op)}")
                raise err from None
            raise
        except Exception as e:
            # A control-flow op passes undefined values on (never reads them):
            # what its blocks raise is theirs. (A gradient op never meets one:
            # backward makes real zeros, `control_ops.undefined.zero_cotangent`.)
            undefined = _undefined_input(op, scope) if decl is None else None
            if undefined is not None:
                raise undefined.error(op) from None
            if not getattr(e, "_d2s_located", False):
                e = _relocate(e, op)
            raise e
        outs = op.outputs
        if len(outs) == 1:  # scope.set, inline
            values[outs[0].name] = result if type(result) is ndarray else asarray(result)
        elif outs:
            for v, r in zip(outs, result):
                values[v.name] = asarray(r)


def _undefined_input(op, scope):
    for v in op.inputs:
        try:
            value = scope.get(v.name)
        except MissingValue:
            continue
        if type(value) is UndefinedValue:
            return value
    return None


# ---- Executor -------------------------------------------------------------------------
class Executor:
    """Runs programs: `run(program, feed={name: array}, fetch_list=[vars or names])`.

    `backend` is a registered backend's name or None (the global default,
    see `d2s.backends`); the backend's runner runs the program (numpy:
    generated Python, `d2s.backends.numpy`, or op by op here on the
    reference interpreter; xla: lowered through JAX, or on numpy after a
    warning when it cannot be).

    Fed Tensors with placements (`d2s.distributed.shard_tensor`) are sharded
    inputs on xla, metadata on numpy. `return_numpy=False` returns Tensors
    that report the placements the program gave them."""

    def __init__(self, place=None, backend=None):
        self.place = place
        self.backend = None if backend is None else backend_state.resolve(backend)

    def _runner(self, program, scope, fetch_names):
        """The backend's runner of (program, feeds, fetches) (`d2s.backends`)."""
        return backend_state.registry().runner(self.backend, program, tuple(scope.vars),
                                               tuple(fetch_names))

    def run(self, program=None, feed=None, fetch_list=None, return_numpy=True):
        program, scope, fetch_names = self._prepare(program, feed, fetch_list)
        runner = self._runner(program, scope, fetch_names)
        values = list(scope.vars.values())
        feed_attrs = [dist_attr.get(feed[n]) for n in scope.vars] \
            if dist_attr.any_placed() else None
        results = runner.run(values, feed_attrs)
        if return_numpy:
            return results
        out_attrs = runner.output_attrs(values, feed_attrs)
        if out_attrs is None:  # placements as metadata: the fetched Variables'
            out_attrs = [dist_attr.get(program.global_block().vars[n]) for n in fetch_names]
        return [dist_attr.attach(Tensor._from_array(np.asarray(r)), a)
                for r, a in zip(results, out_attrs)]

    def lowered_text(self, program=None, feed=None, fetch_list=None):
        """The text of what runs for these feeds: the generated Python on numpy,
        the StableHLO on xla (the xla analogue of a StaticFunction's `.code`)."""
        program, scope, fetch_names = self._prepare(program, feed, fetch_list)
        runner = self._runner(program, scope, fetch_names)
        return runner.text(list(scope.vars.values()),
                           feed_attrs=[dist_attr.get(feed[n]) for n in scope.vars])

    def _prepare(self, program, feed, fetch_list):
        from .framework import default_main_program
        program = program or default_main_program()
        feed = dict(feed or {})
        scope = Scope()
        bind_feeds(program, feed, scope)
        gb = program.global_block()
        fetch_names = []
        for f in list(fetch_list or []):
            name = f if isinstance(f, str) else f.name
            if name not in gb.vars:
                raise ValueError(f"fetch: the program has no variable named {name!r}")
            fetch_names.append(name)
        return program, scope, fetch_names


def check_fed(program, ops, feed_names):
    """Every data variable `ops` read is fed (a clear error naming it otherwise)."""
    for op in ops:
        for v in op.inputs:
            if v.is_data and v.name not in feed_names:
                raise ValueError(f"feed: data variable '{v.name}' is needed by the "
                                 f"program but was not fed")


def write_back(program, scope):
    """In-place updates of captured parameters become visible to eager code."""
    for name, tensor in program.captured.items():
        v = scope.vars.get(name)
        if v is not None and v is not tensor._value:
            tensor._value = v


def bind_feeds(program, feed, scope):
    for name, value in feed.items():
        var = program.feed_vars.get(name)
        if var is None:
            raise ValueError(f"feed: the program has no data variable named {name!r} "
                             f"(data variables: {sorted(program.feed_vars)})")
        scope.vars[name] = check_feed(var, value)


def check_feed(var, value):
    """Validate a fed value against its data Variable; return it as an ndarray."""
    if hasattr(value, "_value"):
        value = value._value
    if isinstance(value, np.ndarray) or np.isscalar(value) and isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype != var.dtype:
            raise ValueError(f"feed '{var.name}': expected dtype {var.dtype.name}, "
                             f"got {arr.dtype.name}")
    else:
        try:
            arr = np.asarray(value, dtype=var.dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"feed '{var.name}': cannot convert {type(value).__name__} to "
                             f"{var.dtype.name}: {e}") from None
    if arr.ndim != len(var.shape):
        raise ValueError(f"feed '{var.name}': expected rank {len(var.shape)} "
                         f"(shape {_fmt(var.shape)}), got shape {list(arr.shape)}")
    for i, (want, got) in enumerate(zip(var.shape, arr.shape)):
        if want is not None and want != got:
            raise ValueError(f"feed '{var.name}': expected shape {_fmt(var.shape)}, got "
                             f"{list(arr.shape)} (dim {i} is {got}, not {want})")
    return arr


def _fmt(shape):
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"
