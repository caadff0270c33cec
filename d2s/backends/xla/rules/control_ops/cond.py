"""xla rules of `cond` and `cond_grad` (`d2s/static/control_ops/cond.py`): `rule(low,
op, env)`, `low` the lowering context (`backends.xla.control_flow`)."""
from __future__ import annotations

import numpy as np

from .....core.registry import register_lowering
from .....static.control_ops.cond import _BRANCHES, COND, COND_GRAD


def _lower_xla(low, op, env):
    """The branches read outer values by closure (as d2s sub-blocks read their
    parents' names); the run-time status (error code, rows needed) goes in
    and out. Each branch needs shapes from the other: a name one path never
    sets is a placeholder shaped like the other's value, and a cond whose
    gradient is needed also returns the values its gradient blocks read,
    per branch its kept values and zeros for the other side's. So each
    branch is traced once first (`low.trace`: nested conds and loops lower
    once, not 2 ** depth times), and `lax.cond` gets the traced steps with
    those placeholders added."""
    a, jnp = op.attrs, low.jnp
    pred = low.scalar_bool(low.read(env, op.inputs[0], op))
    flagged = [v.name in low.undefined for v in op.outputs]
    saves = bool(a.get("save_scope"))

    def branch(key):
        """The branch's outputs (None where it never sets one), their flags,
        its kept values."""
        kept = low.kept(op, [a[f"{key}_block"]]) if saves else ()

        def run(status):
            low.status = status
            child = low.Env(env)
            with low.branch_errors(op):
                low.lower_block(a[f"{key}_block"], child)
            values, flags = [], []
            for i, name in enumerate(a[f"{key}_outs"]):
                if name is None:  # this path never sets it: a placeholder, flagged
                    values.append(None)
                    flags.append(jnp.ones((), np.bool_))
                    continue
                values.append(low.carried(child.get(name)))
                f = child.flag(name) if flagged[i] and name in low.undefined else None
                flags.append((low.false() if f is None else jnp.asarray(f))
                             if flagged[i] else None)
            mine = {n: low.flagged(child, n) for n in kept}
            return values, flags, mine, low.status
        return low.trace(run, low.status)

    traced = {key: branch(key) for key in _BRANCHES}

    def completed(key):
        """`lax.cond`'s branch `key`: its traced step, with the other
        branch's shapes where this one has no value."""
        step, _ = traced[key]
        other = traced["false" if key == "true" else "true"][1]

        def run(status):
            values, flags, mine, low.status = step(status)
            for i, value in enumerate(values):
                like = other[0][i]
                if value is None:
                    shape = (tuple(d or 0 for d in op.outputs[i].shape) if like is None
                             else like.shape)
                    values[i] = jnp.zeros(shape, op.outputs[i].dtype)
                elif flagged[i] and low.undefined_stand_in(value, like, op.outputs[i]):
                    # the value an `undefined` op gave, empty where the program's
                    # shape is unknown: shaped like the other side's instead. If
                    # this run holds a real empty value there, numpy runs it.
                    low.ns.check_on_numpy(flags[i])
                    values[i] = jnp.zeros(like.shape, like.dtype)
                elif op.outputs[i].is_array:
                    values[i] = _common_array(low, value, like)
            theirs = low.zeros_like(other[2])
            saved = (mine, theirs) if key == "true" else (theirs, mine)
            return values, flags, saved, low.status
        return run

    try:
        values, flags, saved, status = low.lax.cond(pred, completed("true"),
                                                    completed("false"), low.status)
    except TypeError as e:
        raise low.Unsupported(f"the two branches give values of different types or shapes "
                              f"(XLA needs one): {e}", op) from None
    low.status = status
    for v, value, f in zip(op.outputs, values, flags):
        env.set(v.name, low.checked(v, value, op), f)
    if saves:
        env.set(a["save_scope"], (pred,) + tuple(saved))


def _common_array(low, value, like):
    """A tensor array one branch appends to and the other does not (`if c:
    outs.append(h)` outside a loop): plain arrays of different lengths, which
    `lax.cond` cannot return. Both become tensor arrays of one capacity (the
    longer one's rows plus the room appends get), holding their own length:
    the host reads `buf[:length]`, and a later loop appends to it as to any
    carried array. `base` (the rows it starts with, the same on both sides)
    is the longer length, so a loop's rows needed past it still compare with
    the room it was compiled with."""
    if (isinstance(value, low.TensorArray) or isinstance(like, low.TensorArray)
            or not hasattr(like, "shape") or tuple(value.shape) == tuple(like.shape)):
        return value
    jnp = low.jnp
    rows = max(value.shape[0], like.shape[0])
    row = like.shape[1:] if value.shape[0] == 0 else value.shape[1:]
    if value.shape[0] and like.shape[0] and tuple(like.shape[1:]) != tuple(row):
        return value  # not one array's rows: lax.cond's error says why
    buf = jnp.zeros((rows + low.room,) + tuple(row), value.dtype)
    if value.shape[0]:
        buf = buf.at[:value.shape[0]].set(value)
    return low.TensorArray(buf, jnp.asarray(value.shape[0], np.int64), rows)


def _lower_grad_xla(low, op, env):
    """`lax.cond` of the two gradient blocks. The cotangent of a list one
    branch appended to (`outs.append(h)` under a tensor `if`) has a row the
    other branch's gradient does not read, so the branches give gradients of
    different shapes (or the untaken one indexes past the rows): then the
    cotangents of run-time length are read as tensor arrays of all their
    rows (`g[:-1]` shortens the length, not the shape) and the cond lowered
    again. Other shape differences run on numpy (`Unsupported`)."""
    cts = low.cotangents(env, op, op.inputs)
    status = low.status
    try:
        grads = _lowered_grads(low, op, env, cts)
    except low.Unsupported:
        low.status = status
        arrays = [(low.as_tensor_array(value) if _run_time_rows(v) else value, flag)
                  for v, (value, flag) in zip(op.inputs, cts)]
        if all(a[0] is c[0] for a, c in zip(arrays, cts)):
            raise
        grads = _lowered_grads(low, op, env, arrays)
    for v, (g, flag) in zip(op.outputs, grads):
        env.set(v.name, low.checked(v, low.rows_if_known(v, g), op), flag)


def _run_time_rows(var):
    return bool(var.shape) and var.shape[0] is None


def _lowered_grads(low, op, env, cts):
    a = op.attrs
    pred, saved_true, saved_false = env.get(a["scope"])
    cts = list(zip(a["ct_vars"], cts))
    flagged = [v.name in low.undefined for v in op.outputs]

    def branch(key, saved):
        def run(status):
            low.status = status
            child = low.bind(env, list(saved.items()) + cts)
            with low.branch_errors(op):
                low.lower_block(a[f"{key}_block"], child)
            grads = []
            for name, fl in zip(a[f"{key}_grads"], flagged):
                value, flag = low.flagged(child, name)
                grads.append((value, (low.false() if flag is None else flag) if fl else None))
            return grads, low.status
        return run

    try:
        grads, low.status = low.lax.cond(pred, branch("true", saved_true),
                                         branch("false", saved_false), low.status)
    except TypeError as e:  # e.g. the gradient of a list one branch appends to
        raise low.Unsupported(f"the gradients of the two branches have different types or "
                              f"shapes (XLA needs one): {e}", op) from None
    return grads


register_lowering("xla", COND, _lower_xla)
register_lowering("xla", COND_GRAD, _lower_grad_xla)
