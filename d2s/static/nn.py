"""`d2s.static.nn`: control-flow builders (PaddlePaddle's names).

`case` and `switch_case` are chains of `cond`: in converted code (or on
static Variables) each choice is a `cond` op; on eager values the chosen
function runs."""
from .control_flow import cond
from .loops import while_loop

__all__ = ["cond", "while_loop", "case", "switch_case"]


def case(pred_fn_pairs, default=None, name=None):
    """The function of the first true predicate of `pred_fn_pairs` (a list of
    `(pred, fn)`), called; `default()` when none is true. Without `default`,
    the last pair's function is the default (PaddlePaddle's rule)."""
    pairs = list(pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs is empty")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"case: item {i} of pred_fn_pairs must be a (pred, fn) tuple")
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    if not callable(default):
        raise TypeError("case: default must be a function")
    return _chain(pairs, default)


def switch_case(branch_index, branch_fns, default=None, name=None):
    """`branch_fns[branch_index]()`: `branch_fns` a dict `{int: fn}`, a list
    of `(int, fn)` or a list of functions (indexed by position). An index
    with no function calls `default()`; without `default`, the function of
    the largest index (PaddlePaddle's rule)."""
    if isinstance(branch_fns, dict):
        items = list(branch_fns.items())
    else:
        items = [f if isinstance(f, tuple) else (i, f) for i, f in enumerate(branch_fns)]
    if not items:
        raise ValueError("switch_case: branch_fns is empty")
    for key, fn in items:
        if isinstance(key, bool) or not isinstance(key, int) or not callable(fn):
            raise TypeError(f"switch_case: branch {key!r}: branches must map ints to "
                            f"functions")
    if len({k for k, _ in items}) != len(items):
        raise ValueError("switch_case: an index has two functions")
    items.sort(key=lambda kv: kv[0])
    if default is None:
        default = items[-1][1]
    index = branch_index
    if hasattr(index, "shape") and tuple(index.shape) not in ((), (1,)):
        raise ValueError(f"switch_case: branch_index must hold one integer, got shape "
                         f"{list(index.shape)}")
    if hasattr(index, "reshape") and tuple(index.shape) == (1,):
        index = index.reshape([])
    return _chain([(index == key, fn) for key, fn in items], default)


def _chain(pairs, default):
    if not pairs:
        return default()
    (pred, fn), rest = pairs[0], pairs[1:]
    return cond(pred, fn, lambda: _chain(rest, default))
