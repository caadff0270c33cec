"""`if`, ternary, `while` and `for` as called by converted code.

Converted code shares its variables with these helpers through closures:
`get_state()` returns the current values of `state_names` (every name the
construct may assign), `set_state(values)` assigns them.  `out_names` /
`loop_vars` (a subset of `state_names`) are the values that flow out of a
static `cond` / through a static `while` (exactly the analysed outputs).

Python values and eager Tensors run plain Python control flow: the branch
and body closures write their results straight into the caller's variables.
A static Variable predicate builds `d2s.static.nn.cond` / `while_loop`.
"""
from .dispatch import _is_static, _static_nn
from .iteration import StaticIterable, static_iteration_plan
from .undefined import UndefinedVar

__all__ = ["convert_ifelse", "convert_ifelse_expr", "convert_while_loop", "convert_for"]


def convert_ifelse(pred, true_fn, false_fn, get_state, set_state, state_names, out_names):
    """`if pred: true_fn() else: false_fn()`; with a static pred, a `cond` op."""
    if _is_static(pred):
        return _static_ifelse(pred, true_fn, false_fn, get_state, set_state,
                              state_names, out_names)
    if pred:
        true_fn()
    else:
        false_fn()


def convert_ifelse_expr(pred, true_fn, false_fn):
    """`true_fn() if pred else false_fn()`; with a static pred, a `cond` op."""
    if _is_static(pred):
        out = _static_nn().cond(pred, lambda: (true_fn(),), lambda: (false_fn(),))
        return out[0] if isinstance(out, (list, tuple)) else out
    return true_fn() if pred else false_fn()


def convert_while_loop(cond_fn, body_fn, get_state, set_state, state_names, loop_vars):
    """`while cond_fn(): body_fn()`.

    The test is evaluated in Python until it yields a static Variable (it may
    become one after some iterations, e.g. a break flag set by a tensor
    `if`); from then on the remaining iterations are one `while` op.
    """
    while True:
        pred = cond_fn()
        if _is_static(pred):
            _static_while(cond_fn, body_fn, get_state, set_state, state_names, loop_vars)
            return
        if not pred:
            return
        body_fn()


def convert_for(iterable, body_fn, get_state, set_state, state_names, loop_vars,
                cond_fn=None):
    """`for item in iterable: body_fn(item)`, stopping early when `cond_fn()` is false.

    `body_fn(item)` assigns the loop target itself.  `cond_fn` (from `break`)
    is checked before each item is taken, as Python's `break` would.
    Static iterables (a Variable, or range/enumerate/zip with a static
    bound) become one `while` op over an int64 counter.
    """
    if _is_static(iterable) or isinstance(iterable, StaticIterable):
        return _static_for(iterable, body_fn, get_state, set_state, state_names,
                           loop_vars, cond_fn)
    iterator = iter(iterable)
    while True:
        if cond_fn is not None:
            go_on = cond_fn()
            if _is_static(go_on):
                return _static_for_rest(iterator, go_on, body_fn, get_state, set_state,
                                        state_names, loop_vars, cond_fn)
            if not go_on:
                return
        try:
            item = next(iterator)
        except StopIteration:
            return
        body_fn(item)


# ---- static paths (finish against the core) --------------------------------
# Contract: cond(pred, true_fn, false_fn) -> flattened outputs, fns return a
# tuple; while_loop(cond, body, loop_vars) -> list of loop vars.
# TODO(core): promote Python scalars in outputs (weak types), check dtype /
# known-dim agreement between branches with an error naming the variable.

def _positions(state_names, names):
    return [state_names.index(n) for n in names]


def _with_values(base, positions, values):
    state = list(base)
    for pos, value in zip(positions, values):
        state[pos] = value
    return tuple(state)


def _static_ifelse(pred, true_fn, false_fn, get_state, set_state, state_names, out_names):
    """Trace both branches from the same starting state; outputs go through `cond`.

    A name undefined on one side only stays an UndefinedVar after the `cond`
    (with a reason naming it), so a later read fails clearly while an unused
    one costs nothing.  Return-value variables (`__ret_val_*`) take the
    defined side instead, since the return flag guards their use.
    """
    init = tuple(get_state())
    positions = _positions(state_names, out_names)

    def probe(fn):
        set_state(init)
        fn()
        values = get_state()
        return [values[p] for p in positions]

    keep, undefined, traced = list(range(len(out_names))), {}, None
    if any(isinstance(init[p], UndefinedVar) for p in positions):
        # Only a name unassigned before the `if` can come out undefined; a
        # first trace of both branches finds which.  TODO(core): the probe
        # leaves dead ops in the current block (DCE removes them); a cond
        # that reports undefined outputs would avoid it.
        traced = {"true": probe(true_fn), "false": probe(false_fn)}
        keep = []
        for i, name in enumerate(out_names):
            t, f = traced["true"][i], traced["false"][i]
            t_undef, f_undef = isinstance(t, UndefinedVar), isinstance(f, UndefinedVar)
            if t_undef and f_undef:
                undefined[i] = t
            elif (t_undef or f_undef) and not name.startswith("__ret_val"):
                undefined[i] = UndefinedVar(
                    name, "it is assigned in only one branch of an `if` on a tensor")
            else:
                keep.append(i)

    def select(fn, key, other):
        def run():
            set_state(init)
            fn()
            values = get_state()
            outs = []
            for i in keep:
                v = values[positions[i]]
                if isinstance(v, UndefinedVar):  # return value on the non-returning side
                    v = traced[other][i]
                outs.append(v)
            return tuple(outs)
        return run

    outs = _static_nn().cond(pred, select(true_fn, "true", "false"),
                             select(false_fn, "false", "true")) if keep else ()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    final = list(init)
    for i, value in zip(keep, outs):
        final[positions[i]] = value
    for i, placeholder in undefined.items():
        final[positions[i]] = placeholder
    set_state(tuple(final))


def _static_while(cond_fn, body_fn, get_state, set_state, state_names, loop_vars):
    """One `while` op; loop variables are exactly `loop_vars`."""
    init = tuple(get_state())
    positions = _positions(state_names, loop_vars)
    for name, p in zip(loop_vars, positions):
        if isinstance(init[p], UndefinedVar):
            # TODO(core): a loop var first assigned in the body needs an initial
            # value of its shape/dtype (trace the body once to learn it).
            raise NameError(
                f"variable '{name}' is used across iterations of a tensor-dependent "
                "while loop but has no value before the loop; assign it before the loop")

    def cond(*values):
        set_state(_with_values(init, positions, values))
        return cond_fn()

    def body(*values):
        set_state(_with_values(init, positions, values))
        body_fn()
        state = get_state()
        return [state[p] for p in positions]

    outs = _static_nn().while_loop(cond, body, [init[p] for p in positions])
    set_state(_with_values(init, positions, list(outs)))


def _static_for(iterable, body_fn, get_state, set_state, state_names, loop_vars, cond_fn):
    """`for` over a static iterable: a while loop over an int64 counter."""
    plan = static_iteration_plan(iterable)  # (start, stop, step, item_at(counter))
    counter_name = "__d2s_for_counter"
    names = tuple(state_names) + (counter_name,)
    holder = {"counter": plan.start}

    def get():
        return tuple(get_state()) + (holder["counter"],)

    def set_(values):
        set_state(tuple(values[:-1]))
        holder["counter"] = values[-1]

    def cond():
        c = holder["counter"]
        in_range = (c < plan.stop) if plan.step_positive else (c > plan.stop)
        if cond_fn is None:
            return in_range
        from .logical import convert_logical_and
        return convert_logical_and(in_range, cond_fn)

    def body():
        c = holder["counter"]
        body_fn(plan.item_at(c))
        holder["counter"] = c + plan.step

    _static_while(cond, body, get, set_, names, tuple(loop_vars) + (counter_name,))


def _static_for_rest(iterator, first_pred, body_fn, get_state, set_state, state_names,
                     loop_vars, cond_fn):
    """A Python iterable whose break flag became static: unroll the rest,
    each remaining iteration guarded by a `cond` on the flag."""
    pred = first_pred
    for item in iterator:
        convert_ifelse(pred, lambda item=item: body_fn(item), lambda: None,
                       get_state, set_state, state_names, state_names)
        pred = cond_fn()
