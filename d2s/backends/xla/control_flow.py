"""`cond`, `while` and their companions on XLA, in one place.

* `cond` -> `lax.cond`: the branches read outer values by closure (as d2s
  sub-blocks read their parents' names); the error code goes in and out.
* `while` -> `lax.while_loop`. d2s tests the condition before every trip;
  here the first test runs before the loop and the next ones at the end of
  each trip, so that an error set while testing is carried like any other.
  The loop also stops once the error code is set (numpy would have stopped
  at that raise). Loop carries keep one shape: a value the body grows is a
  `TensorArray` (tensor arrays) or, otherwise, not lowerable.
* `undefined` -> a zero placeholder whose flag says "undefined"; `raise` ->
  an error site set where its block runs.

Gradients through `cond`/`while` (`cond_grad`, `while_grad`, the scopes the
forward ops save) do not lower yet: such programs run on numpy.
"""
from __future__ import annotations

import numpy as np

from ...static.executor import _relocate
from ._jax import jax, jnp, lax, strong
from .errors import Unsupported
from .values import Env, TensorArray


def _scalar_bool(x):
    """`bool(np.asarray(pred).reshape(()))`, as the numpy backend reads a predicate."""
    x = jnp.reshape(jnp.asarray(x), ())
    return x if x.dtype == np.bool_ else x != 0


def _false():
    return jnp.zeros((), np.bool_)


# ---- cond ------------------------------------------------------------------------
def lower_cond(low, op, env):
    a = op.attrs
    if a.get("save_scope"):
        raise Unsupported("gradients through an `if` on a tensor do not lower yet", op)
    pred = _scalar_bool(low.read(env, op.inputs[0], op))
    flagged = [v.name in low.undefined for v in op.outputs]

    def branch(key, placeholders):
        def run(err):
            child = Env(env)
            low.err = err
            low.lower_block(a[f"{key}_block"], child)
            values, flags = [], []
            for i, (v, name) in enumerate(zip(op.outputs, a[f"{key}_outs"])):
                if name is None:  # this path never sets it: a placeholder, flagged
                    values.append(placeholders(i))
                    flags.append(jnp.ones((), np.bool_))
                    continue
                values.append(strong(jnp.asarray(child.get(name))))
                if flagged[i]:
                    f = child.flag(name) if name in low.undefined else None
                    flags.append(_false() if f is None else jnp.asarray(f))
                else:
                    flags.append(None)
            return values, flags, low.err
        return run

    def placeholder_for(key):
        """Zeros shaped like the other branch's value of output i."""
        other = "false" if key == "true" else "true"
        avals = {}

        def make(i):
            v = op.outputs[i]
            if None not in v.shape:
                return jnp.zeros(v.shape, v.dtype)
            if not avals:  # the other branch's output shapes, traced abstractly
                err = low.err
                dummy = branch(other, lambda j: jnp.zeros(
                    tuple(d or 0 for d in op.outputs[j].shape), op.outputs[j].dtype))
                avals.update(enumerate(jax.eval_shape(dummy, err)[0]))
                low.err = err
            return jnp.zeros(avals[i].shape, avals[i].dtype)
        return make

    outer_err = low.err
    try:
        values, flags, err = lax.cond(pred, branch("true", placeholder_for("true")),
                                      branch("false", placeholder_for("false")), outer_err)
    except TypeError as e:
        low.err = outer_err
        raise Unsupported(f"the two branches give values of different types or shapes "
                          f"(XLA needs one): {e}", op) from None
    low.err = err
    for v, value, f in zip(op.outputs, values, flags):
        env.set(v.name, value, f)


# ---- while -----------------------------------------------------------------------
def lower_while(low, op, env):
    a = op.attrs
    if a.get("save_steps"):
        raise Unsupported("gradients through a loop on a tensor do not lower yet", op)
    n = a["num_loop_vars"]
    names = a["loop_vars"]
    placeholders = low.program.blocks[a["loop_scope"]].vars
    flagged = [name in low.undefined for name in names]
    values, flags, born_undefined = [], [], []
    for v, name, fl in zip(op.inputs[:n], names, flagged):
        value = env.get(v.name)  # carrying an undefined value is fine; reading it is not
        if placeholders[name].is_array and not isinstance(value, TensorArray):
            value = TensorArray.from_array(value, low.room)
        flag = env.flag(v.name) if v.name in low.undefined else None
        born_undefined.append(flag is True)
        values.append(value if isinstance(value, TensorArray) else strong(jnp.asarray(value)))
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
        values, flags, err, _ = state
        low.err = err
        child = bind(values, flags)
        low.lower_block(a["body_block"], child)
        new_values, new_flags = [], []
        for name, fl in zip(a["body_outs"], flagged):
            value = child.get(name)
            new_values.append(value if isinstance(value, TensorArray)
                              else strong(jnp.asarray(value)))
            f = child.flag(name) if fl and name in low.undefined else None
            new_flags.append((_false() if f is None else jnp.asarray(f)) if fl else None)
        c = test(new_values, new_flags)
        return new_values, new_flags, low.err, c

    c0 = test(values, flags)
    state = _settle(low, op, trip, [values, flags, low.err, c0], born_undefined)
    values, flags, err, _ = lax.while_loop(lambda s: s[3] & (s[2] == 0), trip, tuple(state))
    low.err = err
    for v, value, flag in zip(op.outputs, values, flags):
        env.set(v.name, value, flag)


def _settle(low, op, trip, state, born_undefined):
    """Loop carries need one shape. A name the loop assigns first starts as a
    placeholder shaped like the body's value; a value the body reshapes
    otherwise (e.g. `x = concat([x, y])`) cannot lower."""
    labels = op.attrs["loop_vars"]
    for _ in range(3):
        err = low.err
        out = jax.eval_shape(trip, tuple(state))
        low.err = err
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
            label = low.undefined.get(labels[i], labels[i])
            raise Unsupported(
                f"loop variable '{label}' changes shape in the loop "
                f"({[x.shape for x in b]} -> {[x.shape for x in f]}); XLA loops carry one "
                "shape", op)
        if not changed:
            return state
    raise Unsupported("loop variable shapes did not settle", op)  # pragma: no cover


# ---- undefined values, raise -------------------------------------------------------
def lower_undefined(low, op, env):
    v = op.outputs[0]
    shape = tuple(0 if d is None else d for d in v.shape)
    env.set(v.name, jnp.zeros(shape, v.dtype), flag=True)


def lower_raise(low, op, env):
    exc, args = op.attrs["exception"], tuple(op.attrs["args"])
    low.fail_if(True, lambda: _relocate(exc(*args), op))


def _not_yet(reason):
    def lower(low, op, env):
        raise Unsupported(reason, op)
    return lower


CONTROL_FLOW = {
    "cond": lower_cond,
    "while": lower_while,
    "undefined": lower_undefined,
    "raise": lower_raise,
    "cond_grad": _not_yet("gradients through an `if` on a tensor do not lower yet"),
    "while_grad": _not_yet("gradients through a loop on a tensor do not lower yet"),
}
