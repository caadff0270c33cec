"""xla rules of `while` and `while_grad` (`d2s/static/control_ops/while_.py`):
`rule(low, op, env)`, `low` the lowering context (`backends.xla.control_flow`)."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.gradients import is_float
from .....static.control_ops.while_ import WHILE, WHILE_GRAD


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

    writes = []  # per trace of `body`: whether it wrote the status

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
        writes.append(any(now is not before for now, before in zip(low.status, status)))
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

    if not saves and not writes[-1]:
        values, flags = _loop_without_status(low, step, values, flags, c0)
    else:
        history = low.History.empty(snapshot, low.room) if saves else None
        values, flags, low.status, _, history = low.lax.while_loop(
            lambda s: s[3] & (s[2][0] == 0), trip, (values, flags, low.status, c0, history))
    for v, value, flag in zip(op.outputs, values, flags):
        env.set(v.name, low.checked(v, value, op), flag)
    if saves:
        env.set(a["save_steps"], history)


def _loop_without_status(low, step, values, flags, c0):
    """The loop of a body that sets no error and needs no rows (most loops):
    the status is not carried. Nothing in the loop changes it, so the test
    "no error yet" is made once, before the first trip, and the loop carries
    only the user's values and the condition, as a hand-written
    `lax.while_loop` does."""
    status = low.status

    def trip(state):
        values, flags, _ = state
        values, flags, _, c, _ = step(values, flags, status)
        return values, flags, c
    values, flags, _ = low.lax.while_loop(
        lambda s: s[2], trip, (values, flags, c0 & (status[0] == 0)))
    return values, flags


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


register_lowering("xla", WHILE, _lower_xla)
register_lowering("xla", WHILE_GRAD, _lower_grad_xla)
