"""A mask after max pooling's gradient moves onto the pooled grid.

Backward through `max_pool(relu(x))` is `max_poolNd_grad(g, r, best) *
(r > 0)`: the pooling gradient sends each window's cotangent to the
window's first maximum, an element of `r` equal to the window's maximum
`best`, and the ReLU's mask then zeroes it where that value fails the
comparison. The mask of that element is the mask of `best`, so the same
values come from `max_poolNd_grad(g * (best > 0), r, best)`: the comparison
and the product run over the pooled grid (a quarter of the input for 2x2
windows) instead of twice over the input, and the input-sized mask is never
made. This is the one fusion the numpy backend does across ops because
ReLU followed by max pooling is how convolutional networks are written.

Any comparison of `r` with a one-element constant qualifies (the argument
uses only that the masked element equals `best`). It is done only where it
is exact bit for bit: windows that do not overlap (each input element takes
at most one window's cotangent, so no sum is reordered), and the gradient
and the mask read by the product alone. XLA fuses such chains itself; the
rewrite lives in the numpy backend's pipeline and leaves the Program as
built.
"""
from __future__ import annotations

from ...static.control_ops import control_op
from ...static.ir import Operator, Variable

_POOL_GRADS = frozenset({"max_pool2d_grad", "max_pool3d_grad"})
_COMPARISONS = frozenset({"greater_than", "greater_equal", "less_than", "less_equal",
                          "equal", "not_equal"})


def _uses(view):
    """How many times each name is read (op inputs in every block, the
    values control ops hand back or keep, the program's outputs)."""
    count = {}

    def add(name):
        count[name] = count.get(name, 0) + 1

    for ops in view.blocks.values():
        for op in ops:
            for v in op.inputs:
                add(v.name)
            if control_op(op.type) is not None:
                for name in list(view.block_results(op)) + list(view.saved_names(op)):
                    add(name)
    for name in view.outputs:
        add(name)
    return count


def _mask_of(op, r, consts):
    """The comparison `op` of `r` with a one-element constant, or None."""
    if op.type not in _COMPARISONS or len(op.inputs) != 2 or op.attrs:
        return None
    lhs, rhs = op.inputs
    value = consts.get(rhs.name)
    if lhs.name != r.name or value is None or value.size != 1:
        return None
    return op


def _disjoint(pool_op):
    kernel, stride = pool_op.attrs.get("kernel"), pool_op.attrs.get("stride")
    return kernel is not None and stride is not None and \
        all(s >= k for s, k in zip(stride, kernel))


def run(view):
    ops = view.blocks.get(0, ())
    if not any(op.type in _POOL_GRADS for op in ops):
        return view
    uses = _uses(view)
    producer = {v.name: op for op in ops for v in op.outputs}
    rewrites = {}   # id(pool grad op) -> its replacement ops
    dropped = set()
    for op in ops:
        if op.type != "multiply" or len(op.inputs) != 2 or op.attrs:
            continue
        for pos in (0, 1):
            grad, mask = op.inputs[pos], op.inputs[1 - pos]
            pool_op, mask_op = producer.get(grad.name), producer.get(mask.name)
            if pool_op is None or mask_op is None or pool_op.type not in _POOL_GRADS \
                    or id(pool_op) in rewrites or not _disjoint(pool_op):
                continue
            if uses.get(grad.name) != 1 or uses.get(mask.name) != 1:
                continue
            g, r, best = pool_op.inputs
            if _mask_of(mask_op, r, view.consts) is None:
                continue
            out = op.outputs[0]
            if out.dtype != grad.dtype or tuple(out.shape) != tuple(grad.shape):
                continue
            rewrites[id(pool_op)] = _replacement(view, pool_op, mask_op, g, best, out)
            dropped.update((id(mask_op), id(op)))
            break
    if not rewrites:
        return view
    view = view.copy()
    new_ops = []
    for op in ops:
        if id(op) in rewrites:
            new_ops.extend(rewrites[id(op)])
        elif id(op) not in dropped:
            new_ops.append(op)
    view.blocks[0] = new_ops
    return view


def _replacement(view, pool_op, mask_op, g, best, out):
    """[best's mask, g times it, the pooling gradient of that into `out`]."""
    block, program = pool_op.block, view.program
    pooled_mask = Variable(block, program._unique_name("pool_mask"), tuple(best.shape),
                           mask_op.outputs[0].dtype, stop_gradient=True)
    masked = Variable(block, program._unique_name("pool_masked_grad"), tuple(g.shape),
                      g.dtype, stop_gradient=True)
    origin = pool_op.origin_record
    return [
        Operator(block, mask_op.type, [best, mask_op.inputs[1]], [pooled_mask], {}, origin,
                 True),
        Operator(block, "multiply", [g, pooled_mask], [masked], {}, origin, True),
        Operator(block, pool_op.type, [masked] + list(pool_op.inputs[1:]), [out],
                 dict(pool_op.attrs), origin, True),
    ]
