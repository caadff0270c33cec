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
from .iteration import TensorBoundRange, is_static_iterable, static_iteration_plan
from .lists import check_list_aliases, enter_trace, exit_trace, sharing, tracing_paths
from .logical import check_truth_size, static_truth
from .targets import entries_read, writing_back
from .undefined import UndefinedVar

__all__ = ["ReturnSlots", "convert_ifelse", "convert_ifelse_expr", "convert_while_loop",
           "convert_for", "check_caught"]


class ReturnSlots:
    """The state names that hold a function's early return (given by the
    return_statements converter, never guessed from the spelling of names):
    `flag` is True once the function returned, `value` is what it returned,
    and is read only then; `label` is how messages call that value."""

    __slots__ = ("flag", "value", "label")

    def __init__(self, flag, value, label):
        self.flag = flag
        self.value = value
        self.label = label

    def __repr__(self):
        return f"ReturnSlots({self.flag!r}, {self.value!r}, {self.label!r})"


def _labels(names, returns):
    """Names for messages and undefined markers: the return value by its label."""
    if returns is None:
        return list(names)
    return [returns.label if n == returns.value else n for n in names]


def _optional(returns):
    return (returns.label,) if returns is not None else ()


def convert_ifelse(pred, true_fn, false_fn, get_state, set_state, state_names, out_names,
                   returns=None, targets=(), uncarried=(), lists=(), relax=False):
    """`if pred: true_fn() else: false_fn()`; with a static pred, a `cond` op.

    Roles of state entries that are not plain variables (given by the
    converter): `returns` (ReturnSlots), `targets` (attribute/subscript
    targets carried as state) and `uncarried` ((label, line) of targets that
    cannot be: an error when the predicate is static), `lists` (outputs a
    branch appends to: `lists.sharing`). `relax`: outputs may differ in
    known dims (a loop's trip: `static.control_flow.cond`).
    """
    if _is_static(pred):
        check_truth_size(pred)
        keyed = _check_carried(uncarried, "an `if`")
        with _traced("a branch of an `if` on a tensor"):
            return _static_ifelse(pred, true_fn, false_fn, get_state, set_state,
                                  state_names, out_names, returns, targets, lists, keyed,
                                  relax)
    if pred:
        true_fn()
    else:
        false_fn()


def convert_ifelse_expr(pred, true_fn, false_fn):
    """`true_fn() if pred else false_fn()`; with a static pred, a `cond` op."""
    if _is_static(pred):
        check_truth_size(pred)
        with _traced("a branch of a conditional expression on a tensor"):
            out = _static_nn().cond(static_truth(pred), lambda: (true_fn(),),
                                    lambda: (false_fn(),))
        return out[0] if isinstance(out, (list, tuple)) else out
    return true_fn() if pred else false_fn()


def convert_while_loop(cond_fn, body_fn, get_state, set_state, state_names, loop_vars,
                       returns=None, targets=(), uncarried=(), test_writes=()):
    """`while cond_fn(): body_fn()`.

    The test is evaluated in Python until it yields a static Variable (it may
    become one after some iterations, e.g. a break flag set by a tensor
    `if`); from then on the remaining iterations are one `while` op.
    `test_writes` are the names the test assigns (`while (y := f(x)) ...`).
    """
    while True:
        before = get_state() if test_writes else None
        pred = cond_fn()
        if _is_static(pred):
            check_truth_size(pred)
            keyed = _check_carried(uncarried, "a `while` loop")
            user_fns = (cond_fn, body_fn)
            if test_writes:
                # The op's condition evaluates the test again: undo what this
                # evaluation assigned (`while (i := i + 1) < n` counts once).
                set_state(before)
                body_fn = _after_test(cond_fn, body_fn)
            with _traced("the body of a `while` loop on a tensor"):
                _static_while(cond_fn, body_fn, get_state, set_state, state_names, loop_vars,
                              returns, user_fns, "a `while` loop", keyed)
            if test_writes:
                cond_fn()  # the names it assigns hold the last (failing) test's values
            return
        if not pred:
            return
        body_fn()


def convert_for(iterable, body_fn, get_state, set_state, state_names, loop_vars,
                cond_fn=None, returns=None, targets=(), uncarried=(), lists=()):
    """`for item in iterable: body_fn(item)`, stopping early when `cond_fn()` is false.

    `body_fn(item)` assigns the loop target itself.  `cond_fn` (from `break`)
    is checked before each item is taken, as Python's `break` would.
    Static iterables (a Variable, or range/enumerate/zip with a static
    bound) become one `while` op over an int64 counter. `lists`: the loop
    variables the body appends to (guarded trips carry them as arrays).
    """
    if is_static_iterable(iterable):
        keyed = _check_carried(uncarried, "a `for` loop")
        with _traced("the body of a `for` loop on a tensor"):
            return _static_for(iterable, body_fn, get_state, set_state, state_names,
                               loop_vars, cond_fn, returns, keyed)
    iterator = iter(iterable)
    while True:
        if cond_fn is not None:
            go_on = cond_fn()
            if _is_static(go_on) and isinstance(iterable, TensorBoundRange):
                keyed = _check_carried(uncarried, "a `for` loop")
                with _traced("the body of a `for` loop on a tensor"):
                    return _static_for(iterable.rest(iterator), body_fn, get_state, set_state,
                                       state_names, loop_vars, cond_fn, returns, keyed)
            if _is_static(go_on):
                with _traced("a `for` loop after a `break` on a tensor"):
                    return _static_for_rest(iterator, go_on, body_fn, get_state, set_state,
                                            state_names, cond_fn, returns, targets, uncarried,
                                            lists)
            if not go_on:
                return
        try:
            item = next(iterator)
        except StopIteration:
            return
        body_fn(item)


class _traced:
    """Mark an error escaping the trace of `construct` (innermost first): it was
    raised by code that, in the program, runs only on some paths or trips, so
    no `except` may take it as the run's own error (`check_caught`). (A class,
    not contextlib: the user's line is the first frame outside d2s.)"""

    __slots__ = ("construct",)

    def __init__(self, construct):
        self.construct = construct

    def __enter__(self):
        enter_trace()
        return self

    def __exit__(self, kind, exc, tb):
        exit_trace()
        if isinstance(exc, RecursionError) and not tracing_paths.depth:
            _explain_recursion(exc, self.construct)
        if exc is not None and isinstance(exc, Exception) \
                and getattr(exc, "_d2s_uncatchable", None) is None:
            from d2s.static.ir import user_origin
            origin = user_origin()
            where = f" ({origin[0]}, line {origin[1]})" if origin else ""
            try:
                exc._d2s_uncatchable = (
                    f"it was raised while tracing {self.construct}{where}: both branches of "
                    "a tensor `if` (and a loop body) are traced while the program is built, "
                    "so whether that code raises is known only when it runs, where the "
                    "`except` cannot catch it; check the condition before the `if`, or "
                    "compute both results and choose with d2s.where")
            except AttributeError:  # an exception type with __slots__: left unmarked
                pass
        return False


def _explain_recursion(exc, construct):
    """A RecursionError leaving the outermost traced construct: most likely a
    function calling itself until a tensor condition holds (`if x.sum() > 10:
    return x` then `return f(x * 2)`). Eagerly the condition stops it; the
    trace follows both paths of every such `if`, so it never stops. Said in
    the message (the type stays: an `except RecursionError` still takes it);
    here the stack is unwound, so finding the user's line cannot recurse."""
    from d2s.static.ir import user_origin
    origin = user_origin()
    where = f" ({origin[0]}, line {origin[1]})" if origin else ""
    exc.args = (f"{exc.args[0] if exc.args else 'maximum recursion depth exceeded'} while "
                f"tracing {construct}{where}: a function that calls itself until a tensor "
                "condition holds is traced down both paths of that condition, so the trace "
                "never ends (eagerly the condition stops it); write the recursion as a "
                "`while` loop on the tensor",) + exc.args[1:]


def check_caught(exc):
    """First statement of every `except` in converted code: an error marked
    `_d2s_uncatchable` (by `_traced`, or by a static Variable asked for a
    Python value) is not the run's own error, so no handler may take it (it
    would run for every input, a silent wrong answer): a clear error instead."""
    reason = getattr(exc, "_d2s_uncatchable", None)
    if reason is None:
        return
    from d2s.static import ControlFlowError
    raise ControlFlowError(f"an `except` caught {type(exc).__name__}: {exc}; but {reason}") \
        from exc


# ---- static paths ----------------------------------------------------------
# d2s.static.nn.cond(pred, true_fn, false_fn) -> flattened outputs (the fns
# return tuples; it promotes Python scalars and checks that branches agree);
# while_loop(cond, body, loop_vars) -> the list of loop vars.

def _after_test(cond_fn, body_fn):
    """The body of a static loop whose test assigns names (`:=`) that the body
    reads: the test's own sub-block is not visible to the body's, so the body
    evaluates the test again first (same loop values, same results)."""
    def body():
        cond_fn()
        body_fn()
    return body


def _positions(state_names, names):
    return [state_names.index(n) for n in names]


def _with_values(base, positions, values):
    state = list(base)
    for pos, value in zip(positions, values):
        state[pos] = value
    return tuple(state)


def _check_carried(uncarried, construct):
    """A construct on a tensor cannot carry these targets: say so, naming them,
    rather than lose the write. The items a target whose key varies reaches
    are found while the construct is traced (`loop_items`): not reported;
    returns their labels (for messages)."""
    keyed = tuple(u[0] for u in uncarried if len(u) > 2 and u[2])
    uncarried = [u for u in uncarried if len(u) < 3 or not u[2]]
    if not uncarried:
        return keyed
    from d2s.static import ControlFlowError
    label, line = uncarried[0][:2]
    if label.startswith("global "):
        from d2s.static.ir import user_origin
        origin = user_origin()
        where = f'"{origin[0]}", line {line}' if origin else f"line {line}"
        raise ControlFlowError(
            f"{label} is assigned ({where}) inside {construct} on a tensor: both "
            "paths are traced while the program is built, so the module global cannot "
            "get the run's value; assign a local name inside (d2s.where chooses "
            "between tensors) and assign the global after the construct, or return "
            "the value")
    raise ControlFlowError(
        f"'{label}' (line {line}) is written inside {construct} on a tensor: d2s carries "
        "an attribute or subscript target only when it can read and write it again after "
        "the construct: its container is a name (not a call's result) and it is assigned, "
        "not deleted (a write is never silently lost); assign the value to a local name "
        "inside and store it after the construct")


def _check_one_sided_targets(state_names, targets, values):
    """A target assigned in one branch of a tensor `if` only, with no value
    before it, cannot be set on one path only: an error, not a lost write."""
    for name, value in zip(state_names, values):
        if name in targets and type(value) is UndefinedVar and value.reason:
            from d2s.static import ControlFlowError
            raise ControlFlowError(f"'{name}': {value.reason} (it has no value before the "
                                   "`if`, and a write is never silently lost)")


def _static_ifelse(pred, true_fn, false_fn, get_state, set_state, state_names, out_names,
                   returns, targets, lists=(), keyed=(), relax=False):
    """Trace both branches from the same starting state; outputs go through `cond`.

    `cond` receives every output by name: a name left undefined by one branch
    comes back as an UndefinedVar naming it (an error only if read later),
    unless that branch returned or raised, in which case its value is unused.
    Items of reachable dicts, lists and objects that a branch writes through
    other names (a called function's `cache["k"] = v`: `loop_items`) are
    outputs too, found by tracing the branches (then traced again).
    """
    from .loop_items import LoopItems
    start = tuple(get_state())
    again = _Again(LoopItems((true_fn, false_fn), state_names, keyed))
    steps = _step_state()
    while True:  # each retry carries more items; there are finitely many
        try:
            return _static_ifelse_with(again.items, pred, true_fn, false_fn, get_state,
                                       set_state, state_names, out_names, returns, targets,
                                       lists, again, relax, steps)
        except _Again:
            again.items.restore()
            if steps is not None:
                steps.restore()
            set_state(start)


def _step_state():
    """The traced training step's state (parameters, optimizer state,
    gradients) a branch may update: `optimizer.step()` / `clear_grad()` in
    a tensor `if` (static.state_overlay.BranchState); None outside a step."""
    from d2s.core import effects
    from d2s.static.state_overlay import BranchState
    overlay = effects.overlay()
    return None if overlay is None else BranchState(overlay)


def _static_ifelse_with(items, pred, true_fn, false_fn, get_state, set_state, state_names,
                        out_names, returns, targets, lists, again, relax=False, steps=None):
    n = len(state_names)
    k = n + len(items.labels())
    get_names, set_names = get_state, set_state
    step_labels = steps.labels() if steps is not None else ()

    def get_state():
        return tuple(get_names()) + items.get() + (steps.get() if step_labels else ())

    def set_state(values):
        set_names(tuple(values[:n]))
        items.set(values[n:k])
        if step_labels:
            steps.set(values[k:])

    state_names = tuple(state_names) + items.labels() + step_labels
    out_names = tuple(out_names) + items.labels() + step_labels
    targets = tuple(targets) + items.labels()
    covered = entries_read(get_names)
    init = tuple(get_state())
    positions = _positions(state_names, out_names)
    flag = (state_names.index(returns.flag)
            if returns is not None and returns.flag in state_names else None)
    # Python lists both branches start from: an append in one branch must not
    # change the list the other branch (and the code after) sees (`lists.sharing`).
    # A list a branch leaves as it was is given to `cond` as one pending array
    # on both paths: facing a branch's appends it becomes an array too.
    shared = {}
    appended = [p for p in _positions(state_names, lists) if type(init[p]) is list]
    check_list_aliases([(state_names[p], init[p]) for p in appended], "an `if` on a tensor")
    if appended:
        from d2s.static.tensor_array import PendingArray
        shared = {p: PendingArray(init[p]) for p in appended}
    originals = {id(pending): init[p] for p, pending in shared.items()}

    def branch(fn):
        def run():
            set_state(init)
            if steps is not None:
                steps.enter()
            try:
                with sharing(originals.values()):
                    fn()
            finally:
                if steps is not None:
                    steps.leave()
            if items.find(covered, "an `if`"):
                raise again
            if steps is not None and steps.find():
                raise again   # the branch updated the step's state: carry it
            values = get_state()
            if step_labels:
                carried, retrace = steps.finish_branch(init[k:])
                if retrace:
                    raise again
                values = values[:k] + carried
            if flag is not None and values[flag] is True:
                # This branch returned: names it leaves unset are never read.
                from d2s.static.side_effects import mark_block_terminates
                mark_block_terminates()
            return tuple(shared[p] if p in shared and values[p] is init[p] else values[p]
                         for p in positions)
        return run

    pred = static_truth(pred)
    outs = _static_nn().cond(pred, branch(true_fn), branch(false_fn),
                             names=_labels(out_names, returns),
                             optional=_optional(returns), relax=relax) if positions else ()
    if not positions:
        # Side effects only (print / assert / raise ops): still one cond op.
        _static_nn().cond(pred, branch(true_fn), branch(false_fn))
    outs = [originals.get(id(v), v) for v in outs] if originals else outs
    final = _with_values(init, positions, list(outs))
    if targets:
        _check_one_sided_targets(state_names, targets, final)
    with writing_back(_changed(state_names, positions, init, final)):
        set_state(final)


def _static_while(cond_fn, body_fn, get_state, set_state, state_names, loop_vars, returns,
                  user_fns=None, construct="a loop", keyed=()):
    """One `while` op; loop variables are exactly `loop_vars` (a name first
    assigned in the body is carried from an undefined value), and the items of
    reachable dicts, lists and objects that the body writes through other
    names (`loop_items`: a callee's `cache["k"] = ...`), found by tracing it.
    `user_fns`: the user's condition and body, whose closures reach those.

    A loop variable holding a list or dict that the body writes items of but
    leaves bound to the same object (`cache["k"] = v` rewritten as
    `cache = set_item(cache, "k", v)`) is not carried as a structure of new
    containers: the name keeps its object, whose items are carried (as eager
    code leaves them, and what a caller holding it sees). A list name the
    body binds to a new list (`caches = new_caches`) is carried as a list,
    not as a tensor array."""
    from .loop_items import LoopItems
    start = tuple(get_state())
    again = _Again(LoopItems(user_fns or (cond_fn, body_fn), state_names, keyed))
    while True:  # each retry carries more; there are finitely many items and names
        try:
            return _static_while_with(again, construct, cond_fn, body_fn, get_state,
                                      set_state, state_names, loop_vars, returns, start)
        except _Again:
            again.items.restore()
            set_state(start)


class _Again(Exception):
    """A trace of a loop body (or a branch) found what the construct must carry
    otherwise: more `items`, list names `rebuilt` (bound to new lists), names
    `kept` (their list or dict keeps its identity; its items are carried).
    Build it again."""

    def __init__(self, items):
        super().__init__("trace the loop again")
        self.items, self.rebuilt, self.kept = items, set(), set()


def _static_while_with(again, construct, cond_fn, body_fn, get_state, set_state, state_names,
                       loop_vars, returns, start):
    from d2s.static.tensor_array import PendingArray
    items = again.items
    n = len(state_names)
    names = tuple(state_names) + items.labels()
    loop_vars = tuple(v for v in loop_vars if v not in again.kept) + items.labels()

    def get():
        return tuple(get_state()) + items.get()

    def set_(values):
        set_state(tuple(values[:n]))
        items.set(values[n:])

    # Python lists a static loop carries (they are appended to in the body)
    # become tensor arrays; their current items start the array.
    check_list_aliases([(name, v) for name, v in zip(state_names, start) if name in loop_vars],
                       "a loop on a tensor")
    init = tuple(PendingArray(v) if type(v) is list and name in loop_vars
                 and name not in again.rebuilt else v
                 for name, v in zip(state_names, start)) + items.get()
    positions = _positions(names, loop_vars)
    containers = [p for p in positions if p < n and type(start[p]) in (list, dict)]
    kept = _positions(names, sorted(again.kept))
    known = set(again.rebuilt), set(again.kept)
    covered = entries_read(get_state)

    def cond(*values):
        set_(_with_values(init, positions, values))
        pred = cond_fn()
        return static_truth(pred) if _is_static(pred) else pred

    def body(*values):
        set_(_with_values(init, positions, values))
        bound = get()
        body_fn()
        state = get()
        for p in kept:
            if state[p] is not start[p]:
                raise _rebound_error(names[p], construct)
        for p in containers:
            if state[p] is not bound[p]:
                if type(state[p]) is list and isinstance(bound[p], PendingArray):
                    again.rebuilt.add(names[p])       # `caches = new_caches`
            elif type(bound[p]) in (list, dict) or getattr(bound[p], "indexed", False):
                again.kept.add(names[p])               # `cache = set_item(cache, k, v)`
        if items.find(covered, construct) or (again.rebuilt, again.kept) != known:
            raise again
        return [state[p] for p in positions]

    outs = _static_nn().while_loop(cond, body, [init[p] for p in positions],
                                   names=_labels(loop_vars, returns),
                                   optional=_optional(returns))
    final = _with_values(init, positions, list(outs))
    with writing_back(_changed(names, positions, start + init[n:], final)):
        set_(final)


def _rebound_error(name, construct):
    from d2s.static import ControlFlowError
    return ControlFlowError(f"'{name}' is bound to another object by the body of "
                            f"{construct} on a tensor than by an earlier trace of it, which "
                            "kept its list or dict; bind it to one object in the loop")


def _changed(state_names, positions, init, final):
    """{name: (value, value before)} of the static outputs a construct
    changed (`targets.writing_back`)."""
    return {state_names[p]: (final[p], init[p]) for p in positions
            if final[p] is not init[p] and _is_static(final[p])}


def _static_for(iterable, body_fn, get_state, set_state, state_names, loop_vars, cond_fn,
                returns, keyed=()):
    """`for` over a static iterable: a while loop over an int64 counter."""
    plan = static_iteration_plan(iterable)  # counter from plan.start to plan.stop by 1
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
        in_range = c < plan.stop
        if cond_fn is None:
            return in_range
        from .logical import convert_logical_and
        return convert_logical_and(in_range, cond_fn)

    def body():
        c = holder["counter"]
        body_fn(plan.item_at(c))
        holder["counter"] = c + 1

    _static_while(cond, body, get, set_, names, tuple(loop_vars) + (counter_name,), returns,
                  (body_fn, cond_fn), "a `for` loop", keyed)


def _static_for_rest(iterator, first_pred, body_fn, get_state, set_state, state_names,
                     cond_fn, returns, targets, uncarried, lists=()):
    """A Python iterable whose break flag became static: unroll the rest,
    each remaining iteration guarded by a `cond` on the flag (the loop target
    keeps its Python value). The lists the body appends to (`lists`) are
    carried through each `cond` as tensor arrays: how many items they get is
    known only at run time (a greedy decoder's tokens).

    A name the body binds to another Python object (the loop target over a
    LayerList) would hold a different object on each path of that `cond`:
    after it, the name is undefined, and reading it raises a NameError saying
    why (no tensor can stand for a Layer)."""
    pred = first_pred
    for item in iterator:
        diverged = {}  # state position -> UndefinedVar, filled by the taken path

        def taken(item=item):
            before = get_state()
            body_fn(item)
            after = list(get_state())
            for i, (old, new) in enumerate(zip(before, after)):
                if new is not old and _python_object(new):
                    after[i] = diverged.setdefault(i, _diverged_name(state_names[i]))
            set_state(tuple(after))

        def skipped():
            # `cond` traces the taken path first: the same names are undefined here
            state = list(get_state())
            for i, undefined in diverged.items():
                state[i] = undefined
            set_state(tuple(state))

        # a value the loop carries may change shape per trip (relax: as a `while` op's)
        convert_ifelse(pred, taken, skipped, get_state, set_state, state_names, state_names,
                       returns, targets, uncarried, lists, relax=True)
        pred = cond_fn()


def _python_object(value):
    """A value no tensor can stand for (a Layer, a function), unlike tensors,
    numbers, arrays, strings and containers (which `cond` merges or compares)."""
    import numbers

    import numpy as np
    from d2s.core.tensor import Tensor
    from .undefined import UndefinedVar
    return not (value is None or _is_static(value) or isinstance(value, (
        Tensor, UndefinedVar, numbers.Number, np.ndarray, str, bytes, tuple, list, dict)))


def _diverged_name(name):
    from d2s.static.ir import user_origin
    from .undefined import UndefinedVar
    origin = user_origin()
    where = f" ({origin[0]}, line {origin[1]})" if origin else ""
    return UndefinedVar(name, f"after a `break` on a tensor in the loop{where}, it holds a "
                              "different Python object on each path, and no tensor can stand for "
                              "it; read it inside the loop, or keep what you need in a tensor")
