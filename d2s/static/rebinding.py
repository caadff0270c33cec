"""In-place writes on a program's values: the Variable object is rebound.

A program's value is immutable: `y[0] = 5`, `y.add_(1)` on a static
Variable compute the functional result (`set_item`, `add`). Eagerly the
write changes the Tensor *object*, so every name holding it -- an alias
`z = y`, the caller's name when a called function wrote its argument, a
list holding it -- reads the new value. Here the written Variable takes a
link to its new value (`_latest`, "superseded by"), and everything that
reads a Variable as an op's input (`Builder.to_var`, `append_op`: ops, the
converted function's outputs, state written back, loop and branch values)
reads the end of that chain. The Variable's own fields never change (the
ops that read it before the write keep reading the old value), so the
Program/Block/Variable structures stay as they are.

Inside a tensor `if`/`while` a link may point into the body's block, which
does not run when the construct is not taken: each construct logs the
links it makes on Variables of enclosing blocks and undoes them when its
body is traced. A `cond` carries each such Variable out as one more output
of the op and links it to that output; a `while` carries the loop
variables written in place (their initial Variables are linked to the
loop's results) and refuses any other outer write with a
`ControlFlowError` naming the write's line (no stale value, and no
Variable of a sub-block reachable after the construct).
"""
from __future__ import annotations

import threading

_tls = threading.local()


def latest(var):
    """The Variable holding `var`'s value now (`var` if never written)."""
    while var._latest is not None:
        var = var._latest
    return var


def supersede(old, new, through_view=True):
    """`old` (a Variable) was written in place; `new` holds its value now.
    A view (`old._base`, core.views) writes its base as well, unless
    `through_view` is False."""
    from .ir import Variable, user_origin
    head = latest(old)
    if head is new:
        return new
    logs = getattr(_tls, "logs", None)
    if logs:
        log = logs[-1]
        block = head.block.program.current_block()
        if head.block is not block and head not in log.saved:
            log.saved[head] = (head._latest, user_origin())
    head._latest = new
    view = head if head._base is not None else old  # (the head's record is the newest)
    if view._base is not None and through_view and type(new) is Variable:
        _write_base(view, new)
    return new


def written_inputs(inputs, starts):
    """[(position, value now)] of the data Variables `inputs` (a to_static
    trace's, in input order) that in-place writes rebound (itself, or through
    a view of it): eagerly the caller's Tensor changes, so the value becomes
    one more output of the program, written into the running call's Tensor
    after each successful run (jit.outliving, "input" effects).
    `starts`: the Variable each input stood for when the trace began (itself,
    or for a Tensor passed twice, the first input holding it)."""
    return [(i, latest(v)) for i, (v, start) in enumerate(zip(inputs, starts))
            if latest(v) is not start]


def entry_writes_begin():
    """Start recording, for a to_static trace, the list and dict entries whose
    input tensor a tensor loop writes in place (`xs[0][i] = v`: the loop
    carries the entry, not a link on the input; jit.outliving then writes
    the entry's final value back into the caller's Tensor)."""
    before = getattr(_tls, "entry_writes", None)
    _tls.entry_writes = {}
    return before


def entry_writes_end(before):
    _tls.entry_writes = before


def entry_written(container):
    """{(key): input Variable} of `container`'s entries whose input was written
    in place through the entry (see `entry_writes_begin`)."""
    marks = getattr(_tls, "entry_writes", None) or {}
    return {k: v for (c, k), v in marks.items() if c == id(container)}


def mark_entry(container, key, var, written):
    """`container[key]`, holding the input `var`, was written in place
    (`written`), or rebound (not `written`)."""
    marks = getattr(_tls, "entry_writes", None)
    if marks is None:
        return
    try:
        if written:
            marks[(id(container), key)] = var
        else:
            marks.pop((id(container), key), None)
    except TypeError:  # (an unhashable key)
        pass


def fresh(var):
    """The value of `var` to write in place: a view (core.views) whose base
    was written since by another route (the base itself, a sibling view)
    first takes the base's values again, from the root of its chain down, so
    the write starts from them and writing it back undoes nothing."""
    from ..core.ops import getitem
    from .ir import Variable
    head = latest(var)
    view = head if head._base is not None else var
    if view._base is None:
        return head
    base, index, token = view._base
    if type(base) is not Variable:
        return head
    fresh(base)
    now = latest(base)
    if token is None or now is token:
        return head
    again = getitem(now, index)
    supersede(var, again, through_view=False)
    again._base = (base, index, now)
    return again


def _write_base(view, new):
    from ..core.ops import set_item
    from .ir import Variable
    base, index, token = view._base
    if type(base) is Variable:
        if token is not None and latest(base) is not token:
            from .control_flow import ControlFlowError
            raise ControlFlowError(
                f"'{view.name}' is a view `base[{index!r}]` of a tensor that was written after "
                f"the view was taken (directly, or through another view of it){_where()}: its "
                "values are stale, and writing them back would undo that write. Take the view "
                "again after writing the base (`row = y[i]`), or write the base itself "
                "(`y[i, j] = v`)")
        written = set_item(latest(base), index, new)
        supersede(base, written)
        new._base = (base, index, latest(base))
    else:  # an eager Tensor (a buffer, written through the trace's overlay)
        base[index] = new
        new._base = (base, index, None)


def _where():
    from .ir import user_origin
    o = user_origin()
    return f" ({o[0]}, line {o[1]})" if o else ""


class _Log:
    __slots__ = ("saved", "loop")

    def __init__(self, loop):
        self.saved = {}  # head Variable -> (its _latest before, origin of the first write)
        self.loop = loop


def begin(loop=False):
    """Start logging the writes of a construct's body (a loop's: `loop`) on
    outer Variables."""
    logs = getattr(_tls, "logs", None)
    if logs is None:
        logs = _tls.logs = []
    log = _Log(loop)
    logs.append(log)
    return log


def in_loop():
    """Whether a tensor loop's body is being traced (its writes on outer
    Variables must be carried by the loop)."""
    return any(log.loop for log in getattr(_tls, "logs", None) or ())


def end(log):
    """Stop logging; undo the body's links on outer Variables. Returns
    {Variable: (its value at the end of the body, origin of the write)}."""
    _tls.logs.remove(log)
    found = {v: (latest(v), origin) for v, (_, origin) in log.saved.items()}
    for v, (before, _) in log.saved.items():
        v._latest = before
    return found


def describe_write(var, origin):
    where = f" ({origin[0]}, line {origin[1]}: `{origin[2]}`)" if origin and len(origin) > 2 \
        else (f" ({origin[0]}, line {origin[1]})" if origin else "")
    return f"the tensor '{display_name(var)}' written in place{where}"


def display_name(var):
    """`var`'s name for messages: an input of a to_static trace as the user
    wrote it (`args[2]`, `caches[0]['k']`, see jit.signature.input_labels),
    not its data Variable's name (`args_2`)."""
    labels = var.block.program.__dict__.get("_d2s_input_labels")
    return labels.get(var.name, var.name) if labels and var.is_data else var.name
