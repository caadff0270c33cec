"""`while` and `while_grad`: every rule of a loop, in one place.

`while(inits..., reads...) -> outs` carries `num_loop_vars` values. Each
trip runs in a fresh child scope of the op's block where the placeholders
`loop_vars` (declared in the block `loop_scope`, the lexical parent of both
blocks) hold the carried values: `cond_block` computes `cond_out`; if it
is false the loop ends, else `body_block` runs and `body_outs` become the
next carried values. The outputs are the last carried values. The inputs
after the inits are the outer Variables the blocks read. Tracing a Python
loop into a `while` (widening types, tensor arrays, the user-facing errors)
is the front end `static.loops.while_loop`; this module is what the op means.

`while_grad(cts..., reads...) -> grads` is its gradient: when the forward's
gradient is needed it saves each trip's scope (`save_steps`, with only the
names in `save_steps_keep`); `grad_block` runs once per saved trip, last
first, with the carried cotangents bound to `ct_vars`; `loop_grads` are the
next carried cotangents, `free_grads` are summed over trips (cotangents of
the values the loop only read).
"""
from __future__ import annotations

import numpy as np

from ...core.ops import add
from ..scope import Scope, op_location
from .gradients import (NOT_EXPORTED, GradientError, ct_placeholder, is_float,
                        keep_for_backward, resolve, saved_var_for)
from ...core.attr_schema import int_range
from .registry import (ControlOpDef, SavedScope, block_results, register_control_op,
                       sub_block_ids, type_mismatch)
from .undefined import zero_cotangent


def append_while(parent, inits, reads, outs, blocks, loop_vars, cond_out, body_outs):
    """Append the op to `parent`: `blocks` are (loop scope, condition, body);
    `loop_vars` the placeholder names, `cond_out` and `body_outs` what the
    condition and the body hand back."""
    loop_block, cond_block, body_block = blocks
    return parent.append_op("while", list(inits) + list(reads), outs, {
        "cond_block": cond_block.idx, "body_block": body_block.idx,
        "loop_scope": loop_block.idx, "loop_vars": list(loop_vars),
        "cond_out": cond_out, "body_outs": list(body_outs),
        "num_loop_vars": len(loop_vars)})


def _true(value):
    return bool(np.asarray(value).reshape(()))


# ---- shape rule --------------------------------------------------------------------
def _check(op):
    a, blocks = op.attrs, op.block.program.blocks
    n = a["num_loop_vars"]
    if not (isinstance(n, int) and len(a["loop_vars"]) == len(a["body_outs"]) == n
            == len(op.outputs) and len(op.inputs) >= n):
        return (f"while: {n!r} loop variables, but {len(a['loop_vars'])} placeholders, "
                f"{len(a['body_outs'])} body results, {len(op.outputs)} outputs and "
                f"{len(op.inputs)} inputs")
    cond = blocks[a["cond_block"]].lookup(a["cond_out"])
    if cond is None or cond.dtype != np.bool_:
        return f"while: the condition {a['cond_out']!r} is not a bool value of its block"
    scope, body = blocks[a["loop_scope"]], blocks[a["body_block"]]
    for init, name, body_out, out in zip(op.inputs, a["loop_vars"], a["body_outs"],
                                         op.outputs):
        ph, result = scope.vars.get(name), body.lookup(body_out)
        if ph is None or result is None:
            return f"while: unknown loop variable {name!r} or body result {body_out!r}"
        problem = (type_mismatch("while loop variable (initial value)", ph, init)
                   or type_mismatch("while loop variable (body result)", ph, result)
                   or type_mismatch("while output", out, ph))
        if problem:
            return problem
    return None


# ---- interpretation ----------------------------------------------------------------
def _interpret(op, scope, run_block):
    a = op.attrs
    values = [scope.get(v.name) for v in op.inputs[:a["num_loop_vars"]]]
    steps = [] if a.get("save_steps") else None
    keep = a.get("save_steps_keep")
    while True:
        sub = Scope(scope)
        for name, v in zip(a["loop_vars"], values):
            sub.vars[name] = v
        run_block(a["cond_block"], sub)
        if not _true(sub.get(a["cond_out"])):
            break
        run_block(a["body_block"], sub)
        values = [sub.get(name) for name in a["body_outs"]]
        if steps is not None:
            if keep is not None:  # only what the gradient block reads
                sub.vars = {k: sub.vars[k] for k in keep if k in sub.vars}
            steps.append(sub)
    for v, val in zip(op.outputs, values):
        scope.set(v.name, val)
    if steps is not None:
        scope.set(a["save_steps"], steps)


def _interpret_grad(op, scope, run_block):
    a = op.attrs
    n_ct = len(a["ct_vars"])
    carried = [scope.get(v.name) for v in op.inputs[:n_ct]]
    free = [np.zeros_like(scope.get(v.name)) for v in op.inputs[n_ct:]]
    for fwd in reversed(scope.get(a["steps"])):
        sub = Scope(fwd)
        for name, v in zip(a["ct_vars"], carried):
            sub.vars[name] = v
        run_block(a["grad_block"], sub)
        carried = [sub.get(name) for name in a["loop_grads"]]
        free = [acc + sub.get(name) for acc, name in zip(free, a["free_grads"])]
    for v, val in zip(op.outputs, carried + free):
        scope.set(v.name, val)


# ---- code generation: a Python `while`, one saved tuple per trip ----------------------
def _tuple(items):
    return f"{', '.join(items)}{',' if len(items) == 1 else ''}"


def _emit(em, op, indent):
    a = op.attrs
    n = a["num_loop_vars"]
    steps = em.ident(a["save_steps"]) if a.get("save_steps") else None
    if steps is not None:
        em.emit(f"{steps} = []", indent, op)
    phs = [em.ident(name) for name in a["loop_vars"]]
    inits = [em.ident(v.name) for v in op.inputs[:n]]
    if phs:
        em.emit(f"{_tuple(phs)} = {_tuple(inits)}", indent, op)
    em.emit("while True:", indent, op)
    em.block(a["cond_block"], indent + 1)
    em.emit(f"if not {em.ident(a['cond_out'])}:", indent + 1, op)
    em.emit("break", indent + 2, op)
    em.block(a["body_block"], indent + 1)
    if steps is not None:
        names = em.kept(op, [a["loop_scope"], a["body_block"]])
        em.emit(f"{steps}.append({em.pack(names)})", indent + 1, op)
    outs = [em.ident(name) for name in a["body_outs"]]
    if phs:
        em.emit(f"{_tuple(phs)} = {_tuple(outs)}", indent + 1, op)
    for v, ph in zip(op.outputs, phs):
        em.emit(f"{em.ident(v.name)} = {ph}", indent, op)


def _emit_grad(em, op, indent):
    a = op.attrs
    fwd = em.forward_op(op)
    n_ct = len(a["ct_vars"])
    carried, acc, step = em.temp("carried"), em.temp("acc"), em.temp("step")
    em.globals.setdefault("_zeros_like", np.zeros_like)
    em.emit(f"{carried} = [{', '.join(em.ident(v.name) for v in op.inputs[:n_ct])}]",
            indent, op)
    zeros = ", ".join(f"_zeros_like({em.ident(v.name)})" for v in op.inputs[n_ct:])
    em.emit(f"{acc} = [{zeros}]", indent, op)
    names = em.kept(fwd, [fwd.attrs["loop_scope"], fwd.attrs["body_block"]])
    em.emit(f"for {step} in reversed({em.ident(a['steps'])}):", indent, op)
    em.unpack(names, step, indent + 1, op)
    if n_ct:
        em.emit(f"{em.pack(a['ct_vars'])} = {carried}", indent + 1, op)
    em.block(a["grad_block"], indent + 1)
    em.emit(f"{carried} = [{', '.join(em.ident(n) for n in a['loop_grads'])}]",
            indent + 1, op)
    if a["free_grads"]:
        sums = ", ".join(f"{acc}[{i}] + {em.ident(n)}" for i, n in enumerate(a["free_grads"]))
        em.emit(f"{acc} = [{sums}]", indent + 1, op)
    outs = [f"{carried}[{i}]" for i in range(n_ct)] + \
           [f"{acc}[{i}]" for i in range(len(a["free_grads"]))]
    for v, src in zip(op.outputs, outs):
        em.emit(f"{em.ident(v.name)} = {src}", indent, op)


# ---- vjp: one gradient block for the body, one while_grad ---------------------------
def _vjp(op, out_cts, req, differentiate):
    program = op.block.program
    a = op.attrs
    n = a["num_loop_vars"]
    init, reads = op.inputs[:n], op.inputs[n:]
    body = program.blocks[a["body_block"]]
    loop_block = program.blocks[a["loop_scope"]]
    placeholders = [loop_block.vars[name] for name in a["loop_vars"]]
    body_outs = [resolve(body, name) for name in a["body_outs"]]
    loop_idx = [j for j in range(n) if is_float(placeholders[j])]
    diff_reads = [v for v in reads if id(v) in req and is_float(v)]
    if not loop_idx or not (diff_reads or any(id(init[j]) in req for j in loop_idx)):
        return [None] * len(op.inputs)
    if program._differentiable_grads:
        raise GradientError(
            f"d2s.grad(..., create_graph=True) through a tensor `while`{op_location(op)}: "
            "a loop's gradient is not differentiated again in converted code. Compute the "
            "second derivative eagerly (call the function without to_static), or loop over "
            "a Python `range` of fixed length (unrolled: differentiable again)")
    steps = saved_var_for(op, "while_steps")
    cur = program.current_block()
    cts_in = [out_cts[j] if out_cts[j] is not None else zero_cotangent(op.outputs[j])
              for j in loop_idx]
    gblock = program._create_block(cur)
    with program._block_guard(gblock):
        phs = [ct_placeholder(gblock, placeholders[j]) for j in loop_idx]
        wrt = [placeholders[j] for j in loop_idx] + diff_reads
        gs = differentiate(body, [body_outs[j] for j in loop_idx], phs, wrt)
        gs = [g if g is not None else zero_cotangent(v) for g, v in zip(gs, wrt)]
    keep_for_backward(op, [gblock])
    k = len(loop_idx)
    outs = ([cur.create_var(init[j].shape, init[j].dtype, prefix="grad") for j in loop_idx]
            + [cur.create_var(v.shape, v.dtype, prefix="grad") for v in diff_reads])
    # (the reads start the sums of their cotangents over the trips: one that
    # may hold no value starts from its zero instead)
    starts = [zero_cotangent(v) if v.may_be_undefined else v for v in diff_reads]
    cur.append_op("while_grad", cts_in + starts, outs, {
        "grad_block": gblock.idx, "steps": steps,
        "ct_vars": [p.name for p in phs], "loop_grads": [g.name for g in gs[:k]],
        "free_grads": [g.name for g in gs[k:]]}, origin=op.origin_record)
    result = {}
    for j, g in zip(loop_idx, outs[:k]):
        result.setdefault(id(init[j]), []).append(g)
    for v, g in zip(diff_reads, outs[k:]):
        result.setdefault(id(v), []).append(g)
    grads = []
    for v in op.inputs:
        gl = result.pop(id(v), None)
        if gl is None:
            grads.append(None)
        else:
            total = gl[0]
            for extra in gl[1:]:
                total = add(total, extra)
            grads.append(total)
    return grads


# ---- names that may be undefined -----------------------------------------------------
def _undefined_outputs(op, labels):
    a = op.attrs
    n = a["num_loop_vars"]
    for init, ph, body_out, out in zip(op.inputs[:n], a["loop_vars"], a["body_outs"],
                                       op.outputs):
        for src in (init.name, body_out):
            if src in labels:
                yield ph, labels[src]
                yield out.name, labels[src]


# ---- XLA: lax.while_loop ------------------------------------------------------------
def _lower_xla(low, op, env):
    """d2s tests the condition before every trip; here the first test runs
    before the loop and the next ones at the end of each trip, so that an
    error set while testing is carried like any other. The loop also stops
    once the error code is set (numpy would have stopped at that raise).
    Loop carries keep one shape: a value the body grows is a tensor array
    (capacity + length) or, otherwise, not lowerable. A loop whose gradient
    is needed records its kept values per trip in a `History`."""
    a, jnp = op.attrs, low.jnp
    n = a["num_loop_vars"]
    names = a["loop_vars"]
    placeholders = low.program.blocks[a["loop_scope"]].vars
    flagged = [name in low.undefined for name in names]
    saves = bool(a.get("save_steps"))
    kept = low.kept(op, [a["loop_scope"], a["body_block"]]) if saves else ()
    values, flags, born_undefined = [], [], []
    for v, name, fl in zip(op.inputs[:n], names, flagged):
        value = env.get(v.name)  # carrying an undefined value is fine; reading it is not
        if placeholders[name].is_array and not isinstance(value, low.TensorArray):
            value = low.TensorArray.from_array(value, low.room)
        flag = env.flag(v.name) if v.name in low.undefined else None
        born_undefined.append(flag is True)
        values.append(low.carried(value))
        flags.append((low.false() if flag is None else jnp.asarray(flag)) if fl else None)

    def bind(values, flags):
        return low.bind(env, [(name, (value, flag))
                              for name, value, flag in zip(names, values, flags)])

    def test(values, flags):
        child = bind(values, flags)
        low.lower_block(a["cond_block"], child)
        return low.scalar_bool(child.get(a["cond_out"]))

    def body(values, flags, status):
        """One trip: the body, then the next test; and the values it keeps
        for the gradient (None without one)."""
        low.status = status
        child = bind(values, flags)
        low.lower_block(a["body_block"], child)
        snapshot = {name: low.flagged(child, name) for name in kept} if saves else None
        new_values, new_flags = [], []
        for name, fl in zip(a["body_outs"], flagged):
            new_values.append(low.carried(child.get(name)))
            f = child.flag(name) if fl and name in low.undefined else None
            new_flags.append((low.false() if f is None else jnp.asarray(f)) if fl else None)
        c = test(new_values, new_flags)
        return new_values, new_flags, low.status, c, snapshot

    c0 = test(values, flags)
    step, snapshot = _settle(low, op, body, values, flags, born_undefined,
                             [placeholders[name] for name in names])

    def trip(state):
        values, flags, status, _, history = state
        values, flags, low.status, c, snapshot = step(values, flags, status)
        if saves:
            history, trips = history.record(snapshot)
            low.needs(trips)
        return values, flags, low.status, c, history

    history = low.History.empty(snapshot, low.room) if saves else None
    values, flags, low.status, _, history = low.lax.while_loop(
        lambda s: s[3] & (s[2][0] == 0), trip, (values, flags, low.status, c0, history))
    for v, value, flag in zip(op.outputs, values, flags):
        env.set(v.name, low.checked(v, value, op), flag)
    if saves:
        env.set(a["save_steps"], history)


def _settle(low, op, body, values, flags, born_undefined, variables):
    """The body traced once (`low.trace`): `(step, the shapes of its kept values)`.
    Loop carries need one shape. A name the loop assigns first starts as a
    placeholder shaped like the body's value (`values` is updated, and the
    body traced again). So does a carry that may be undefined and holds
    `undefined`'s empty stand-in (an inner loop carrying an outer loop's
    early-return value): if it holds a real empty value at run time, the
    run goes to numpy. A value the body reshapes otherwise (e.g.
    `x = concat([x, y])`) cannot lower."""
    leaves = low.jax.tree_util.tree_leaves
    for _ in range(3 + len(values)):
        try:
            step, out = low.trace(body, values, flags, low.status)
        except low.EmptyRowShape as e:
            if not _reshape_empty_array(low, values, variables, e.row_shape):
                raise
            continue
        changed = False
        for i, (before, after) in enumerate(zip(values, out[0])):
            b, f = leaves(before), leaves(after)
            if [(x.shape, x.dtype) for x in b] == [(x.shape, x.dtype) for x in f]:
                continue
            if born_undefined[i] and not isinstance(before, low.TensorArray):
                values[i] = low.jnp.zeros(after.shape, after.dtype)
                changed = True
                continue
            if flags[i] is not None and low.undefined_stand_in(before, after, variables[i]):
                low.ns.check_on_numpy(flags[i])  # (outside the loop: its first value)
                values[i] = low.jnp.zeros(after.shape, after.dtype)
                changed = True
                continue
            raise low.Unsupported(
                f"a loop variable changes shape in the loop (#{i}: "
                f"{' '.join(str(x.shape) for x in b)} -> {' '.join(str(x.shape) for x in f)}); "
                "XLA loops carry one shape", op)
        if not changed:
            return step, out[4]
    raise low.Unsupported("loop variable shapes did not settle", op)  # pragma: no cover


def _reshape_empty_array(low, values, variables, row):
    """An array carry that starts empty and whose placeholder row dims
    (`array_init`: unknown dims are 0) can hold rows of shape `row` is
    re-made with that row shape. False when no carry can."""
    for i, (value, var) in enumerate(zip(values, variables)):
        if not (isinstance(value, low.TensorArray) and value.base == 0
                and tuple(value.buf.shape[1:]) != tuple(row) and len(var.shape) == len(row) + 1):
            continue
        if all(d is None or d == r for d, r in zip(var.shape[1:], row)):
            values[i] = low.TensorArray.from_array(low.jnp.zeros((0,) + tuple(row),
                                                                 value.buf.dtype), low.room)
            return True
    return False


def _lower_grad_xla(low, op, env):
    """The grad block once per recorded trip, last trip first. Loop-variable
    cotangents are carried from trip to trip; the cotangents of values the
    loop only read are summed (a zero cotangent adds nothing)."""
    a, jnp = op.attrs, low.jnp
    history = env.get(a["steps"])
    n_ct = len(a["ct_vars"])
    carried = low.cotangents(env, op, op.inputs[:n_ct])
    arrays = _array_cotangents(low, op, n_ct)
    carried = [(low.as_tensor_array(value) if i in arrays else value,
                low.false() if v.name in low.undefined and flag is None else flag)
               for i, ((value, flag), v) in enumerate(zip(carried, op.outputs))]
    sums = [_zero_cotangent(low, low.read(env, v, op)) for v in op.inputs[n_ct:]]

    def trip(state):
        k, carried, sums, status = state
        low.status = status
        child = low.bind(env, list(history.trip(k).items())
                         + list(zip(a["ct_vars"], carried)))
        low.lower_block(a["grad_block"], child)
        new = []
        for name, (_, old_flag) in zip(a["loop_grads"], carried):
            value, flag = low.flagged(child, name)
            if old_flag is None:
                flag = None
            elif flag is None:
                flag = low.false()
            new.append((value, flag))
        for i, name in enumerate(a["free_grads"]):
            g, flag = low.flagged(child, name)
            if isinstance(sums[i], low.TensorArray):  # a list the loop reads (`for o in outs`)
                sums[i] = sums[i].plus(g, None if flag is None else ~flag)
            else:
                sums[i] = sums[i] + g if flag is None else jnp.where(flag, sums[i], sums[i] + g)
        return k - 1, new, sums, low.status

    state = (history.count - 1, carried, sums, low.status)
    step, out = low.trace(trip, state)  # the grad block lowered once, see `trace`
    _check_grad_carries(low, op, state, out)
    _, carried, sums, low.status = low.lax.while_loop(
        lambda s: (s[0] >= 0) & (s[3][0] == 0), step, state)
    for v, (g, flag) in zip(op.outputs, carried):
        g = _empty_start_cotangent(low, v, g)
        env.set(v.name, low.checked(v, low.rows_if_known(v, g), op), flag)
    for v, g in zip(op.outputs[n_ct:], sums):
        env.set(v.name, low.checked(v, g, op))


def _empty_start_cotangent(low, var, g):
    """The cotangent of an array that started empty with placeholder row dims
    of 0 (`array_init`), whose rows the forward loop re-made with their real
    shape (`_reshape_empty_array`): any value of the program's shape has no
    elements, so it is that empty value."""
    if not (isinstance(g, low.TensorArray) and 0 in tuple(var.shape[1:])
            and tuple(g.buf.shape[1:]) != tuple(var.shape[1:])):
        return g
    return low.jnp.zeros((0,) + tuple(0 if d is None else d for d in var.shape[1:]), g.dtype)


def _zero_cotangent(low, value):
    """The start of the sum of a read-only value's cotangents over the trips."""
    if isinstance(value, low.TensorArray):
        return value.zeros()
    return low.jnp.zeros_like(low.carried(value))


def _array_cotangents(low, op, n_ct):
    """The indices of the cotangents (of the loop's float values, in order: see
    `_vjp`) that belong to tensor arrays the loop appends to. They are
    carried as tensor arrays of all their rows (`TensorArray.of_rows`): each
    trip's `g[:-1]` shortens the length, not the shape."""
    fwd = low.forward_op(op)
    if fwd is None:
        return set()
    scope = low.program.blocks[fwd.attrs["loop_scope"]]
    floats = [scope.vars[name] for name in fwd.attrs["loop_vars"]
              if is_float(scope.vars[name])]
    if len(floats) != n_ct:  # pragma: no cover - the grad op says otherwise
        return set()
    return {i for i, ph in enumerate(floats) if ph.is_array}


def _check_grad_carries(low, op, before, after):
    """The cotangent of a tensor array the loop appended to loses a row per trip
    (`array_append`'s vjp): XLA loops carry one shape, so such a gradient runs
    on numpy (`Unsupported`), never a JAX type error."""
    leaves = low.jax.tree_util.tree_leaves
    b, f = leaves(before[1]), leaves(after[1])
    if [(x.shape, x.dtype) for x in b] != [(x.shape, x.dtype) for x in f]:
        raise low.Unsupported("the gradient of a tensor array appended to in the loop changes "
                              "shape on every trip; XLA loops carry one shape", op)


# ---- ONNX: Loop ------------------------------------------------------------------------
def _lower_onnx(ex, op, graph, env):
    """d2s tests the condition before every trip; ONNX takes the first test as
    an input and the next ones from the end of the body. So the condition
    block is emitted twice — before the loop, on the initial values, and at
    the end of the body, on the new ones — under fresh names (ONNX names are
    SSA across nested graphs). Carried values keep the shapes the program
    gives them (unknown dims stay unknown: a value may grow). A tensor array
    the body only appends to is a scan output (see `_scanned_arrays`)."""
    a = op.attrs
    n = a["num_loop_vars"]
    scope = ex.program.blocks[a["loop_scope"]]
    placeholders = [scope.vars[name] for name in a["loop_vars"]]
    scans = _scanned_arrays(ex, op, placeholders)
    carried = [k for k in range(n) if k not in scans]

    def test(g, values):
        """The condition block on `values` (emitted into graph `g`)."""
        child = ex.Env(env)
        for k, value in zip(carried, values):
            child.set(placeholders[k].name, value)
        ex.emit_block(a["cond_block"], g, child)
        return ex.scalar_bool(ex.namespace(g, op), child.get(a["cond_out"]))

    initial = [env.get(v.name) for v in op.inputs[:n]]
    first = test(graph, [initial[k] for k in carried])

    body = ex.Graph(graph.names, parent=graph)
    body.add_input("trip", np.int64, ())
    body.add_input("running", np.bool_, ())
    child = ex.Env(env)
    for k in carried:
        ph = placeholders[k]
        child.set(ph.name, body.add_input(ph.name, ph.dtype, ph.shape))
    ex.emit_block(a["body_block"], body, child, skip=set(map(id, scans.values())))
    new = [child.get(a["body_outs"][k]).with_shape(placeholders[k].shape) for k in carried]
    rows = [ex.namespace(body, app).cast(child.get(app.inputs[1].name), placeholders[k].dtype)
            for k, app in scans.items()]
    again = test(body, new)
    body_proto = body.to_proto(f"{ex.label(op)}_body", [again] + new + rows)

    outs = [ex.Value(graph.names.fresh(op.outputs[k].name), op.outputs[k].dtype,
                     op.outputs[k].shape) for k in carried + list(scans)]
    graph.add_node("Loop", [None, first] + [initial[k] for k in carried], outs,
                   {"body": body_proto}, ex.doc(op))
    for k, value in zip(carried, outs):
        env.set(op.outputs[k].name, value)
    for (k, app), stacked in zip(scans.items(), outs[len(carried):]):
        env.set(op.outputs[k].name, _joined(ex.namespace(graph, app), initial[k], stacked,
                                            op.outputs[k].shape))


def _scanned_arrays(ex, op, placeholders):
    """{loop value index: its append op} for the tensor arrays the body only
    appends to (one `array_append` per trip, outside any branch, and nothing
    else reading the array in the loop): ONNX scan outputs, which the Loop
    stacks itself, instead of a carried tensor copied into a longer one on
    every trip."""
    a = op.attrs
    body = ex.blocks[a["body_block"]]
    read = _names_read(ex.blocks, [a["cond_block"], a["body_block"]])
    scans = {}
    for k, ph in enumerate(placeholders):
        if not ph.is_array:
            continue
        out = a["body_outs"][k]
        append = next((o for o in body if o.type == "array_append"
                       and o.outputs[0].name == out and o.inputs[0].name == ph.name), None)
        if append is not None and read.count(ph.name) == 1 and out not in read:
            scans[k] = append  # the array is read by the append only, its result by nothing
    return scans


def _names_read(blocks, block_ids):
    """Every read of a name by the ops of these blocks (`blocks`: index -> the
    ops exported) and the blocks nested in them (op inputs and the results
    sub-blocks hand back), with repeats."""
    names = []
    for idx in block_ids:
        for o in blocks[idx]:
            names += [v.name for v in o.inputs] + block_results(o)
            names += _names_read(blocks, sub_block_ids(o))
    return names


def _joined(ns, buf, rows, shape):
    """The array after the loop: what it held before (usually nothing) and the
    rows the loop stacked."""
    rows = rows.with_shape(shape)
    if buf.shape is not None and buf.shape[:1] == (0,):
        return rows
    return ns.concat_rows(buf, rows, shape)


WHILE = register_control_op(ControlOpDef(
    "while", _interpret, _emit, _vjp,
    blocks=("cond_block", "body_block"), scope_blocks=("loop_scope",), shared_scope=True,
    results=("body_outs", "cond_out"), binds=("loop_vars",), values=("num_loop_vars",),
    value_types={"num_loop_vars": int_range(0, 1 << 20)},
    saves=SavedScope("save_steps", "save_steps_keep"),
    check=_check, undefined_outputs=_undefined_outputs,
)).lowering(xla=_lower_xla, onnx=_lower_onnx)

WHILE_GRAD = register_control_op(ControlOpDef(
    "while_grad", _interpret_grad, _emit_grad,
    blocks=("grad_block",), results=("loop_grads", "free_grads"),
    binds=("ct_vars",), restores="steps", always_kept=True,
)).lowering(xla=_lower_grad_xla, onnx=NOT_EXPORTED)
