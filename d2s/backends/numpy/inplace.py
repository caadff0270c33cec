"""In-place elementwise fusion and buffer reuse: choose `out=` buffers.

An elementwise op whose kernel takes `out=` (a numpy ufunc, or a kernel
registered with `writes_out`) may write its result into a buffer the program
owns once every value held in that buffer is dead: the buffer of one of its
own inputs (so a chain like `tanh(a @ w + b)` runs in one buffer: fusion),
else any dead buffer of the same shape and dtype (reuse). A buffer is owned
when a fresh op (registered `fresh`: numpy ufuncs, matmul among them, and
cross_entropy) of the same block allocated it and every reader of its values makes fresh results (no view aliases it).
Inputs, parameters, constants, block results and program outputs are
pinned: never written. Shapes must be fully known. Sub-blocks are left
alone (they run zero or many times).
"""
from __future__ import annotations

from ...core.registry import OPS
from ...static.control_ops import control_op


def is_ufunc_op(op):
    """An elementwise op whose kernel can write into a given buffer (`out=`)."""
    opdef = OPS.get(op.type)
    if opdef is None or not opdef.writes_out or len(op.outputs) != 1 or op.attrs:
        return False
    # generalized ufuncs (matmul) would need a temporary copy to write over an input
    return getattr(opdef.kernel, "signature", None) is None


def _fresh(op):
    """An op whose results are buffers the program owns: new arrays aliasing no
    input (cross_entropy's probabilities: its gradient, which writes `out=`,
    takes them over)."""
    if is_ufunc_op(op):
        return True
    opdef = OPS.get(op.type)
    if opdef is not None and opdef.fresh:
        return True
    when = _FRESH_WHEN.get(op.type)
    return when is not None and when(op)


def _sums_something(op):
    """`sum_to_like(g, x)` returns `g` itself where the shapes are equal and a
    new array of sums otherwise: fresh where the shapes, known when the
    program is built, differ (a bias or batch norm gradient's sums), so the
    cotangent it reads can still be overwritten after it."""
    g, x = op.inputs
    return None not in g.shape and None not in x.shape and tuple(g.shape) != tuple(x.shape)


# ops whose results are fresh for some operand shapes only
_FRESH_WHEN = {"sum_to_like": _sums_something}


def _aval(v):
    # 0-d results of ufuncs are numpy scalars, which cannot be `out=` targets.
    return None if None in v.shape or not v.shape else (tuple(v.shape), v.dtype)


def _reads(view, op):
    names = {v.name for v in op.inputs}
    for sub in view.sub_block_ids(op):
        for inner in view.blocks.get(sub, ()):
            names |= _reads(view, inner)
    return names


def run(view):
    view = view.copy()
    plannable = [ops for ops in view.blocks.values() if _plannable(ops)]
    if not plannable:
        return view  # (the usual branch or loop body; often a whole small program)
    pinned = set(view.outputs) | set(view.inputs) | set(view.consts) | set(view.program.captured)
    produced_in = {}
    for idx, ops in view.blocks.items():
        for op in ops:
            if control_op(op.type) is not None:
                pinned.update(view.block_results(op))
                pinned.update(view.saved_names(op))  # kept for backward: never overwritten
            for v in op.outputs:
                produced_in[v.name] = idx
    # names dropped by CSE / simplification live on in their survivors
    pinned |= {view.rename[n] for n in list(pinned) if n in view.rename}
    # A value read by another block (a branch, a loop body) is never overwritten:
    # only reads inside the block that made it are tracked below.
    for idx, ops in view.blocks.items():
        for op in ops:
            for v in op.inputs:
                if produced_in.get(v.name, idx) != idx:
                    pinned.add(v.name)
    for ops in plannable:
        _plan(view, ops, pinned)
    return view


def _plannable(ops):
    """Whether `_plan` can choose anything in this block: a buffer is one a
    fresh op of the block allocated for a result of known shape (not 0-d),
    and only a later such op can take it over, so it takes two of them."""
    found = 0
    for op in ops:
        if _fresh(op) and any(_aval(v) is not None for v in op.outputs):
            found += 1
            if found == 2:
                return True
    return False


def _plan(view, ops, pinned):
    fresh_ops = [_fresh(op) for op in ops]
    last_use, fresh_readers = {}, {}
    for i, op in enumerate(ops):
        fresh = fresh_ops[i]
        if view.sub_block_ids(op):
            names = _reads(view, op)
        else:
            names = [v.name for v in op.inputs]
        for name in names:
            last_use[name] = i
            fresh_readers[name] = fresh_readers.get(name, True) and fresh

    holds = {}      # buffer -> names of the values living in it
    buffer_of = {}  # value name -> buffer
    aval_of = {}    # buffer -> (shape, dtype)
    # (shape, dtype) -> the buffers of that type that may still be reused, in
    # the order they were made: one whose value is pinned or read by a
    # non-fresh op is never free again and leaves (scanning every buffer
    # ever made for each op would be quadratic in the block's length).
    candidates = {}

    def never_free(buf):
        return any(n in pinned or not fresh_readers.get(n, True) for n in holds[buf])

    def free_at(buf, i):
        return all(last_use.get(n, -1) <= i and n not in pinned and fresh_readers.get(n, True)
                   for n in holds[buf])

    for i, op in enumerate(ops):
        if not fresh_ops[i]:
            continue
        out = op.outputs[0]
        want = _aval(out)
        choice = None
        if is_ufunc_op(op) and want is not None:
            own = [buffer_of[v.name] for v in op.inputs if v.name in buffer_of]
            for buf in own:
                if aval_of[buf] == want and free_at(buf, i):
                    choice = buf
                    break
            else:
                for buf in candidates.get(want, ()):
                    if buf not in own and free_at(buf, i):
                        choice = buf
                        break
        if choice is None:
            for v in op.outputs:
                buffer_of[v.name] = v.name
                holds[v.name] = [v.name]
                aval_of[v.name] = aval = _aval(v)
                if aval is not None and not never_free(v.name):
                    candidates.setdefault(aval, {})[v.name] = None
        else:
            view.inplace[id(op)] = choice
            buffer_of[out.name] = choice
            holds[choice] = [out.name]  # the old values are dead
            if never_free(choice):
                del candidates[want][choice]
