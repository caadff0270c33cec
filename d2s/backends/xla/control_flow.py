"""`cond`, `while`, their gradients and companions on XLA, in one place.

* `cond` -> `lax.cond`: the branches read outer values by closure (as d2s
  sub-blocks read their parents' names); the run-time status (error code,
  rows needed, see `Lowerer`) goes in and out.
* `while` -> `lax.while_loop`. d2s tests the condition before every trip;
  here the first test runs before the loop and the next ones at the end of
  each trip, so that an error set while testing is carried like any other.
  The loop also stops once the error code is set (numpy would have stopped
  at that raise). Loop carries keep one shape: a value the body grows is a
  `TensorArray` (tensor arrays) or, otherwise, not lowerable.
* Gradients are d2s's own backward ops, lowered like the forward: a `cond`
  whose gradient is needed also returns the values its gradient blocks read
  (the branch taken, and per branch its kept values: zeros on the other
  side); a `while` records its kept values per trip in a `History`, and
  `while_grad` walks it backwards in another `lax.while_loop`.
* `undefined` -> a zero placeholder whose flag says "undefined"; `raise` ->
  an error site set where its block runs.
"""
from __future__ import annotations

import numpy as np

from ...static.executor import _relocate
from ._jax import jax, jnp, lax, strong
from .errors import Unsupported
from .values import Env, History, TensorArray


def _scalar_bool(x):
    """`bool(np.asarray(pred).reshape(()))`, as the numpy backend reads a predicate."""
    x = jnp.reshape(jnp.asarray(x), ())
    return x if x.dtype == np.bool_ else x != 0


def _false():
    return jnp.zeros((), np.bool_)


def _carried(value):
    """A value as a lax carry or branch result: a strong JAX array (or structure)."""
    if isinstance(value, (TensorArray, History, tuple, dict)):
        return value
    return strong(jnp.asarray(value))


def _zeros_like(avals):
    return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), avals)


def _kept(low, op, key, block_ids):
    """The names (attribute `key`) a forward op keeps for its gradient that
    `block_ids` define (the others are read from the enclosing blocks)."""
    blocks = low.program.blocks
    return [n for n in op.attrs.get(key, ()) if any(n in blocks[b].vars for b in block_ids)]


def _flagged(low, env, name):
    """(value, flag) of `name` as a branch result or loop carry: the flag is a
    bool array for names that may be undefined (see `definedness`), else None."""
    value = _carried(env.get(name))
    if name not in low.undefined:
        return value, None
    flag = env.flag(name)
    return value, _false() if flag is None else jnp.asarray(flag)


def _bind(env, pairs):
    """A child environment of `env` holding `pairs` of name -> (value, flag)."""
    child = Env(env)
    for name, (value, flag) in pairs:
        child.set(name, value, flag)
    return child


def _abstract(low, fn, *args):
    """`jax.eval_shape(fn, *args)`, leaving the lowering's status as it was."""
    status = low.status
    try:
        return jax.eval_shape(fn, *args)
    finally:
        low.status = status


# ---- cond ------------------------------------------------------------------------
def lower_cond(low, op, env):
    a = op.attrs
    pred = _scalar_bool(low.read(env, op.inputs[0], op))
    flagged = [v.name in low.undefined for v in op.outputs]
    saves = bool(a.get("save_scope"))
    kept = {key: _kept(low, op, "save_scope_keep", [a[f"{key}_block"]])
            for key in ("true", "false")} if saves else None
    abstract = {}

    def other_avals(key):
        """Abstract results of branch `key` (traced with stand-ins for what it lacks)."""
        if key not in abstract:
            abstract[key] = _abstract(low, branch(key, stand_ins=True), low.status)
        return abstract[key]

    def branch(key, stand_ins=False):
        other = "false" if key == "true" else "true"

        def placeholder(i):
            v = op.outputs[i]
            if None not in v.shape or stand_ins:
                return jnp.zeros(tuple(d or 0 for d in v.shape), v.dtype)
            return _zeros_like(other_avals(other)[0][i])

        def run(status):
            low.status = status
            child = Env(env)
            low.lower_block(a[f"{key}_block"], child)
            values, flags = [], []
            for i, (v, name) in enumerate(zip(op.outputs, a[f"{key}_outs"])):
                if name is None:  # this path never sets it: a placeholder, flagged
                    values.append(placeholder(i))
                    flags.append(jnp.ones((), np.bool_))
                    continue
                values.append(_carried(child.get(name)))
                f = child.flag(name) if flagged[i] and name in low.undefined else None
                flags.append((_false() if f is None else jnp.asarray(f)) if flagged[i] else None)
            saved = None
            if saves:
                mine = {n: _flagged(low, child, n) for n in kept[key]}
                theirs = {} if stand_ins else _zeros_like(
                    other_avals(other)[2][0 if other == "true" else 1])
                saved = (mine, theirs) if key == "true" else (theirs, mine)
            return values, flags, saved, low.status
        return run

    outer = low.status
    try:
        values, flags, saved, status = lax.cond(pred, branch("true"), branch("false"), outer)
    except TypeError as e:
        low.status = outer
        raise Unsupported(f"the two branches give values of different types or shapes "
                          f"(XLA needs one): {e}", op) from None
    low.status = status
    for v, value, f in zip(op.outputs, values, flags):
        env.set(v.name, low.checked(v, value, op), f)
    if saves:
        env.set(a["save_scope"], (pred,) + tuple(saved))


def _cotangents(low, env, op, variables):
    """(value, flag) of each cotangent input: a flag where it may be a zero cotangent."""
    out = []
    for v in variables:
        value, flag = low.read_flagged(env, v, op)
        out.append((_carried(value), None if flag is None else jnp.asarray(flag)))
    return out


def lower_cond_grad(low, op, env):
    a = op.attrs
    pred, saved_true, saved_false = env.get(a["scope"])
    cts = list(zip(a["ct_vars"], _cotangents(low, env, op, op.inputs)))
    flagged = [v.name in low.undefined for v in op.outputs]

    def branch(key, saved):
        def run(status):
            low.status = status
            child = _bind(env, list(saved.items()) + cts)
            low.lower_block(a[f"{key}_block"], child)
            grads = []
            for name, fl in zip(a[f"{key}_grads"], flagged):
                value, flag = _flagged(low, child, name)
                grads.append((value, (_false() if flag is None else flag) if fl else None))
            return grads, low.status
        return run

    grads, low.status = lax.cond(pred, branch("true", saved_true),
                                 branch("false", saved_false), low.status)
    for v, (g, flag) in zip(op.outputs, grads):
        env.set(v.name, low.checked(v, g, op), flag)


# ---- while -----------------------------------------------------------------------
def lower_while(low, op, env):
    a = op.attrs
    n = a["num_loop_vars"]
    names = a["loop_vars"]
    placeholders = low.program.blocks[a["loop_scope"]].vars
    flagged = [name in low.undefined for name in names]
    saves = bool(a.get("save_steps"))
    kept = _kept(low, op, "save_steps_keep", [a["loop_scope"], a["body_block"]]) \
        if saves else ()
    values, flags, born_undefined = [], [], []
    for v, name, fl in zip(op.inputs[:n], names, flagged):
        value = env.get(v.name)  # carrying an undefined value is fine; reading it is not
        if placeholders[name].is_array and not isinstance(value, TensorArray):
            value = TensorArray.from_array(value, low.room)
        flag = env.flag(v.name) if v.name in low.undefined else None
        born_undefined.append(flag is True)
        values.append(_carried(value))
        flags.append((_false() if flag is None else jnp.asarray(flag)) if fl else None)

    def bind(values, flags):
        child = Env(env)
        for name, value, flag in zip(names, values, flags):
            child.set(name, value, flag)
        return child

    def test(values, flags):
        child = bind(values, flags)
        low.lower_block(a["cond_block"], child)
        return _scalar_bool(child.get(a["cond_out"]))

    def trip(state):
        """One trip: the body, then the next test. Without a history yet
        (`None`), the kept values themselves stand in its place (for shapes)."""
        values, flags, status, _, history = state
        low.status = status
        child = bind(values, flags)
        low.lower_block(a["body_block"], child)
        if saves:
            snapshot = {name: _flagged(low, child, name) for name in kept}
            if history is None:
                history = snapshot
            else:
                history, trips = history.record(snapshot)
                low.needs(trips)
        new_values, new_flags = [], []
        for name, fl in zip(a["body_outs"], flagged):
            new_values.append(_carried(child.get(name)))
            f = child.flag(name) if fl and name in low.undefined else None
            new_flags.append((_false() if f is None else jnp.asarray(f)) if fl else None)
        c = test(new_values, new_flags)
        return new_values, new_flags, low.status, c, history

    c0 = test(values, flags)
    state = [values, flags, low.status, c0, None]
    _settle(low, op, trip, state, born_undefined)
    if saves:
        avals = _abstract(low, trip, tuple(state))[4]
        state[4] = History.empty(avals, low.room)
    values, flags, low.status, _, history = lax.while_loop(
        lambda s: s[3] & (s[2][0] == 0), trip, tuple(state))
    for v, value, flag in zip(op.outputs, values, flags):
        env.set(v.name, low.checked(v, value, op), flag)
    if saves:
        env.set(a["save_steps"], history)


def _settle(low, op, trip, state, born_undefined):
    """Loop carries need one shape. A name the loop assigns first starts as a
    placeholder shaped like the body's value; a value the body reshapes
    otherwise (e.g. `x = concat([x, y])`) cannot lower."""
    for _ in range(3):
        out = _abstract(low, trip, tuple(state))
        changed = False
        for i, (before, after) in enumerate(zip(state[0], out[0])):
            b = jax.tree_util.tree_leaves(before)
            f = jax.tree_util.tree_leaves(after)
            if [(x.shape, x.dtype) for x in b] == [(x.shape, x.dtype) for x in f]:
                continue
            if born_undefined[i] and not isinstance(before, TensorArray):
                state[0][i] = jnp.zeros(after.shape, after.dtype)
                changed = True
                continue
            raise Unsupported(
                f"a loop variable changes shape in the loop (#{i}: "
                f"{' '.join(str(x.shape) for x in b)} -> {' '.join(str(x.shape) for x in f)}); "
                "XLA loops carry one shape", op)
        if not changed:
            return
    raise Unsupported("loop variable shapes did not settle", op)  # pragma: no cover


def lower_while_grad(low, op, env):
    """The grad block once per recorded trip, last trip first. Loop-variable
    cotangents are carried from trip to trip; the cotangents of values the
    loop only read are summed (a zero cotangent adds nothing)."""
    a = op.attrs
    history = env.get(a["steps"])
    n_ct = len(a["ct_vars"])
    carried = _cotangents(low, env, op, op.inputs[:n_ct])
    carried = [(value, _false() if v.name in low.undefined and flag is None else flag)
               for (value, flag), v in zip(carried, op.outputs)]
    sums = [jnp.zeros_like(_carried(low.read(env, v, op))) for v in op.inputs[n_ct:]]

    def trip(state):
        k, carried, sums, status = state
        low.status = status
        child = _bind(env, list(history.trip(k).items()) + list(zip(a["ct_vars"], carried)))
        low.lower_block(a["grad_block"], child)
        new = []
        for name, (_, old_flag) in zip(a["loop_grads"], carried):
            value, flag = _flagged(low, child, name)
            if old_flag is None:
                flag = None
            elif flag is None:
                flag = _false()
            new.append((value, flag))
        for i, name in enumerate(a["free_grads"]):
            g, flag = _flagged(low, child, name)
            sums[i] = sums[i] + g if flag is None else jnp.where(flag, sums[i], sums[i] + g)
        return k - 1, new, sums, low.status

    _, carried, sums, low.status = lax.while_loop(
        lambda s: (s[0] >= 0) & (s[3][0] == 0), trip,
        (history.count - 1, carried, sums, low.status))
    for v, (g, flag) in zip(op.outputs, carried):
        env.set(v.name, low.checked(v, g, op), flag)
    for v, g in zip(op.outputs[n_ct:], sums):
        env.set(v.name, low.checked(v, g, op))


# ---- undefined values, raise -------------------------------------------------------
def lower_undefined(low, op, env):
    v = op.outputs[0]
    shape = tuple(0 if d is None else d for d in v.shape)
    env.set(v.name, jnp.zeros(shape, v.dtype), flag=True)


def lower_raise(low, op, env):
    exc, args = op.attrs["exception"], tuple(op.attrs["args"])
    low.fail_if(True, lambda: _relocate(exc(*args), op))


CONTROL_FLOW = {
    "cond": lower_cond,
    "while": lower_while,
    "cond_grad": lower_cond_grad,
    "while_grad": lower_while_grad,
    "undefined": lower_undefined,
    "raise": lower_raise,
}
