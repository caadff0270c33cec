"""The reference interpreter: runs a Program op by op over the registry kernels.

Values live in `Scope`s chained like the blocks: a sub-block runs in a
child scope of its parent's. `cond` / `while` can save the scopes they ran
(when a backward op needs the forward values), and `cond_grad` /
`while_grad` run their gradient blocks in children of those saved scopes.
"""
from __future__ import annotations

import os

import numpy as np

from ..core.registry import OPS
from . import backend as backend_state


_MODE = {"mode": os.environ.get("D2S_EXECUTOR", "compiled")}


def executor_mode():
    """"compiled" (generated code, the default) or "interpreter" (the reference)."""
    return _MODE["mode"]


def set_executor_mode(mode):
    """Choose how programs run; tests run the suite both ways and compare."""
    if mode not in ("compiled", "interpreter"):
        raise ValueError(f"executor mode must be 'compiled' or 'interpreter', not {mode!r}")
    _MODE["mode"] = mode


class MissingValue(KeyError):
    """A variable with no value in the scope chain (not a user's KeyError)."""


class Scope:
    __slots__ = ("vars", "parent")

    def __init__(self, parent=None):
        self.vars = {}
        self.parent = parent

    def get(self, name):
        s = self
        while s is not None:
            v = s.vars.get(name, _MISSING)
            if v is not _MISSING:
                return v
            s = s.parent
        raise MissingValue(name)

    def set(self, name, value):
        self.vars[name] = value


_MISSING = object()


class UndefinedValue:
    """Run-time value of a name no executed path assigned (a zero-trip loop's
    first assignment, the unused side of an early return). Any op reading it
    raises NameError naming the variable."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def error(self, op=None):
        where = _where(op) if op is not None else ""
        return NameError(f"name '{self.name}' is not defined: no path that ran assigned it "
                         f"(e.g. a loop that ran zero times){where}")


class ExecutionError(RuntimeError):
    pass


def _where(op):
    if op.origin:
        fn, line = op.origin[:2]
        text = f" (op '{op.type}' built at {fn}, line {line}"
        if len(op.origin) > 2 and op.origin[2]:
            text += f": {op.origin[2]}"
        return text + ")"
    return f" (op '{op.type}')"


def run_block(block, scope):
    run_ops(block.ops, block.program, scope)


def run_ops(ops, program, scope):
    for op in ops:
        handler = CONTROL_FLOW.get(op.type)
        try:
            if handler is not None:
                handler(op, program, scope)
                continue
            args = [scope.get(v.name) for v in op.inputs]
            result = OPS[op.type].kernel(*args, **op.attrs)
        except MissingValue as e:
            if e.args and isinstance(e.args[0], str) and not getattr(e, "_d2s_located", False):
                if e.args[0] in program.feed_vars:
                    raise ValueError(f"feed: data variable '{e.args[0]}' is needed by the "
                                     f"program but was not fed") from None
                err = ExecutionError(f"value of '{e.args[0]}' is not available{_where(op)}")
                raise err from None
            raise
        except Exception as e:
            undefined = _undefined_input(op, scope)
            if undefined is not None:
                if op.is_grad:
                    _symbolic_zero(op, scope)
                    continue
                raise undefined.error(op) from None
            if not getattr(e, "_d2s_located", False):
                e = _relocate(e, op)
            raise e
        if len(op.outputs) == 1:
            scope.set(op.outputs[0].name, result if type(result) is np.ndarray
                      else np.asarray(result))
        elif op.outputs:
            for v, r in zip(op.outputs, result):
                scope.set(v.name, np.asarray(r))


def _symbolic_zero(op, scope):
    """In gradient ops an undefined value is the cotangent of a name no path
    assigned: a zero. Sums drop it; anything else computed from it is zero too."""
    values = [scope.get(v.name) for v in op.inputs]
    defined = [v for v in values if type(v) is not UndefinedValue]
    if op.type == "add" and len(defined) == 1:
        result = defined[0]
    elif op.type == "subtract" and len(defined) == 1:
        result = values[0] if type(values[0]) is not UndefinedValue else np.negative(values[1])
    else:
        result = UndefinedValue("<zero cotangent>")
    for v in op.outputs:
        scope.set(v.name, result)


def _undefined_input(op, scope):
    for v in op.inputs:
        try:
            value = scope.get(v.name)
        except MissingValue:
            continue
        if type(value) is UndefinedValue:
            return value
    return None


def _relocate(e, op):
    """Same exception type, message extended with the op and the user's line."""
    msg = (str(e.args[0]) if e.args else str(e)) + _where(op)
    try:
        new = type(e)(msg)
    except Exception:
        new = e
        if hasattr(e, "add_note"):
            e.add_note(_where(op).strip())
    new._d2s_located = True
    new.__cause__ = e if new is not e else None
    return new


# ---- control flow -----------------------------------------------------------------
def _run_cond(op, program, scope):
    pred = scope.get(op.inputs[0].name)
    branch = bool(np.asarray(pred).reshape(()))
    key = "true" if branch else "false"
    sub = Scope(scope)
    run_block(program.blocks[op.attrs[f"{key}_block"]], sub)
    labels = op.attrs.get("labels") or [v.name for v in op.outputs]
    for v, name, label in zip(op.outputs, op.attrs[f"{key}_outs"], labels):
        scope.set(v.name, sub.get(name) if name is not None else UndefinedValue(label))
    saved = op.attrs.get("save_scope")
    if saved:
        keep = op.attrs.get("save_scope_keep")
        if keep is not None:  # only what the gradient blocks read
            sub.vars = {k: sub.vars[k] for k in keep if k in sub.vars}
        scope.set(saved, (branch, sub))


def _run_while(op, program, scope):
    a = op.attrs
    n = a["num_loop_vars"]
    values = [scope.get(v.name) for v in op.inputs[:n]]
    cond_block, body_block = program.blocks[a["cond_block"]], program.blocks[a["body_block"]]
    steps = [] if a.get("save_steps") else None
    keep = a.get("save_steps_keep")
    while True:
        sub = Scope(scope)
        for name, v in zip(a["loop_vars"], values):
            sub.vars[name] = v
        run_block(cond_block, sub)
        if not bool(np.asarray(sub.get(a["cond_out"])).reshape(())):
            break
        run_block(body_block, sub)
        values = [sub.get(name) for name in a["body_outs"]]
        if steps is not None:
            if keep is not None:  # only what the gradient block reads
                sub.vars = {k: sub.vars[k] for k in keep if k in sub.vars}
            steps.append(sub)
    for v, val in zip(op.outputs, values):
        scope.set(v.name, val)
    if steps is not None:
        scope.set(a["save_steps"], steps)


def _run_cond_grad(op, program, scope):
    a = op.attrs
    branch, fwd = scope.get(a["scope"])
    key = "true" if branch else "false"
    sub = Scope(fwd)
    for name, v in zip(a["ct_vars"], op.inputs):
        sub.vars[name] = scope.get(v.name)
    run_block(program.blocks[a[f"{key}_block"]], sub)
    for v, name in zip(op.outputs, a[f"{key}_grads"]):
        scope.set(v.name, sub.get(name))


def _run_while_grad(op, program, scope):
    a = op.attrs
    n_ct = len(a["ct_vars"])
    carried = [scope.get(v.name) for v in op.inputs[:n_ct]]
    free = [np.zeros_like(scope.get(v.name)) for v in op.inputs[n_ct:]]
    grad_block = program.blocks[a["grad_block"]]
    for fwd in reversed(scope.get(a["steps"])):
        sub = Scope(fwd)
        for name, v in zip(a["ct_vars"], carried):
            sub.vars[name] = v
        run_block(grad_block, sub)
        carried = [sub.get(name) for name in a["loop_grads"]]
        free = [acc if type(g) is UndefinedValue else acc + g
                for acc, g in ((acc, sub.get(name)) for acc, name in zip(free, a["free_grads"]))]
    for v, val in zip(op.outputs, carried + free):
        scope.set(v.name, val)


def _run_raise(op, program, scope):
    raise op.attrs["exception"](*op.attrs["args"])


def _run_undefined(op, program, scope):
    scope.set(op.outputs[0].name, UndefinedValue(op.attrs["name"]))


CONTROL_FLOW = {
    "undefined": _run_undefined,
    "raise": _run_raise,
    "cond": _run_cond,
    "while": _run_while,
    "cond_grad": _run_cond_grad,
    "while_grad": _run_while_grad,
}


# ---- Executor -------------------------------------------------------------------------
class Executor:
    """Runs programs: `run(program, feed={name: array}, fetch_list=[vars or names])`.

    `backend` is "numpy", "xla" or None (the global default, see
    `static.backend`). On numpy a program is compiled once per (feeds,
    fetches) into generated Python (`static.codegen`) and rerun from that;
    programs the compiler does not handle, and
    `set_executor_mode("interpreter")`, run op by op here. On xla it is
    lowered through JAX (`d2s.backends.xla`), or runs on numpy after a
    warning when it cannot be."""

    def __init__(self, place=None, backend=None):
        self.place = place
        self.backend = None if backend is None else backend_state.resolve(backend)

    def run(self, program=None, feed=None, fetch_list=None, return_numpy=True):
        program, scope, fetch_names = self._prepare(program, feed, fetch_list)
        impl = backend_state.implementation(self.backend)
        if impl is None:
            return self._run_numpy(program, scope, fetch_names)
        runner = impl.runner_for(program, tuple(scope.vars), tuple(fetch_names))
        return runner.run(list(scope.vars.values()),
                          lambda: self._run_numpy(program, scope, fetch_names))

    def lowered_text(self, program=None, feed=None, fetch_list=None):
        """The text of what runs for these feeds: the generated Python on numpy,
        the StableHLO on xla (the xla analogue of a StaticFunction's `.code`)."""
        program, scope, fetch_names = self._prepare(program, feed, fetch_list)
        impl = backend_state.implementation(self.backend)
        if impl is None:
            from .codegen import compile_program
            gb = program.global_block()
            return compile_program(program, gb.ops, list(scope.vars) + list(program.captured),
                                   fetch_names, "executor").source
        runner = impl.runner_for(program, tuple(scope.vars), tuple(fetch_names))
        return runner.lowered_text(list(scope.vars.values()))

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

    def _run_numpy(self, program, scope, fetch_names):
        feed = scope.vars
        gb = program.global_block()
        compiled = _compiled_for(program, tuple(feed), tuple(fetch_names))
        if compiled is not None:
            fn, written = compiled
            params = [t._value for t in program.captured.values()]
            results = fn(*[scope.vars[n] for n in feed], *params)
            n = len(fetch_names)
            for name, value in zip(written, results[n:]):
                program.captured[name]._value = np.asarray(value)
            return [np.asarray(r) for r in results[:n]]
        for name, tensor in program.captured.items():
            scope.vars[name] = tensor._value
        run_block(gb, scope)
        write_back(program, scope)
        return [scope.get(n) for n in fetch_names]


def _compiled_for(program, feed_names, fetch_names):
    """(compiled function, captured names it writes) or None (interpret)."""
    if executor_mode() != "compiled":
        return None
    version = (len(program.blocks), sum(len(b.ops) for b in program.blocks))
    cache = program.__dict__.setdefault("_compiled", {})
    key = (version, feed_names, fetch_names)
    if key not in cache:
        from .codegen import NotCompilable, compile_program
        gb = program.global_block()
        check_fed(program, program.all_ops(), feed_names)
        written = sorted({v.name for op in gb.ops for v in op.outputs
                          if v.name in program.captured})
        try:
            fn = compile_program(program, gb.ops, list(feed_names) + list(program.captured),
                                 list(fetch_names) + written, "executor")
            cache[key] = (fn, written)
        except NotCompilable:
            cache[key] = None
    return cache[key]


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
