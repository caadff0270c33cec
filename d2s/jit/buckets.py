"""Shape buckets: `InputSpec([None, 8], buckets=[16, 32, 64])` pads a call's
length on a `None` dim up to the next bucket, so that a compiling backend
builds one executable per bucket instead of one per length (JAX users pad
by hand for the same reason; PaddlePaddle's InputSpec names the dim).

Padding is only honest where the padded rows cannot reach the real ones. A
pad-safety analysis walks the traced program once, tracking on which axis
each variable carries the padded dim:

* elementwise ops (broadcasting), `matmul` over other axes, reductions and
  `softmax` over other axes, slices that keep the padded axis whole,
  transpose, (un)squeeze and concat on other axes, reshapes that keep the
  padded dim and the dims before it, `x.shape[i]` of another dim: the padded
  rows stay rows of their own;
* `sum`/`mean`/`max`/`min`, `softmax` and a `matmul` contracting two
  padded operands over the padded axis are rewritten
  to read a mask the program carries as one more input (`mean` divides by
  the true length);
* anything else reading the padded dim (reading its length, a reshape merging
  it, cumsum, sort, a matmul contracting it, control flow, tensor arrays,
  random ops, ...) is not pad-safe: the
  function then compiles per length as without buckets, with one warning
  naming the op and the user's line.

Outputs carrying the padded axis are sliced back to the true length
eagerly (a differentiable slice), and the inputs are padded eagerly with
copies of the last real row (see `pad_args`), so gradients flow to the
caller's tensors as in the unpadded run.
"""
from __future__ import annotations

import numpy as np

from ..core import ops as core_ops, state
from ..core.registry import OPS
from ..core.tensor import Tensor
from ..static.input_spec import InputSpec
from ..static.ir import Operator

MASK_NAME = "_d2s_bucket_mask"

# Elementwise ops the registry does not flag (they take attributes, not shapes).
_ALSO_ELEMENTWISE = frozenset((
    "gelu", "silu", "scale", "leaky_relu", "elu", "softplus", "hardtanh", "square",
    "reciprocal", "assign", "identity", "relu6", "hardswish", "hardsigmoid", "swish",
    "mish", "selu", "celu", "softsign", "tanhshrink", "logsigmoid", "isnan", "isinf",
    "isfinite"))
_MASKED_REDUCTIONS = {"sum": 0.0, "mean": 0.0, "max": -np.inf, "min": np.inf}
_LAYOUT = frozenset(("shape", "transpose", "unsqueeze", "squeeze", "concat", "reshape"))
_OTHER_REDUCTIONS = frozenset(("prod", "any", "all", "logsumexp", "amax", "amin", "argmax",
                               "argmin", "std", "var", "norm"))


class NotPadSafe(Exception):
    """The op that reads the padded dim in a way padding would change."""

    def __init__(self, op, why):
        self.op, self.why = op, why
        origin = op.origin
        where = f" at {origin[0]}:{origin[1]}" if origin else ""
        super().__init__(f"op '{op.type}'{where} {why}")


def bucketed_specs(input_spec):
    """{argument position: InputSpec} for the specs that ask for buckets."""
    if not input_spec:
        return {}
    return {i: s for i, s in enumerate(input_spec)
            if isinstance(s, InputSpec) and s.buckets is not None}


def plan(specs, args):
    """(true length, bucket length) of a call, or None if no bucketed argument
    is a tensor here. Every bucketed argument of one call must have the same
    length (the program carries one mask)."""
    lengths = {}
    for i, spec in specs.items():
        if i < len(args) and isinstance(args[i], (Tensor, np.ndarray)):
            shape = args[i].shape
            if len(shape) != len(spec.shape):
                return None  # the signature's own check names the mismatch
            lengths[i] = int(shape[spec.bucket_axis])
    if not lengths:
        return None
    if len(set(lengths.values())) > 1:
        raise ValueError(
            "bucketed inputs of one call must have the same length on their bucketed axis "
            f"(one mask per program), got {sorted(set(lengths.values()))} for "
            + ", ".join(repr(specs[i]) for i in lengths))
    length = next(iter(lengths.values()))
    first = specs[next(iter(lengths))]
    buckets = {specs[i].bucket_for(length) for i in lengths}
    if len(buckets) > 1:
        raise ValueError(f"bucketed inputs pad length {length} to different buckets "
                         f"{sorted(buckets)}; give them the same buckets ({first!r})")
    return length, buckets.pop()


def pad_args(specs, args, length, bucket, mask=None):
    """`args` with each bucketed tensor padded to `bucket`, and the mask (bool
    [bucket], True on real rows; `mask`: one made before for this length and
    bucket).

    The padding repeats the last real row (zeros only for an empty input):
    a padded row then computes what a real row does, so it never makes an
    inf or nan that a real row would not (`log` of a zero pad would), and
    the zero cotangents the sliced outputs give it stay zero through every
    local derivative on the way back: gradients equal the unpadded ones.
    Eager (a differentiable gather) when a gradient may flow to the input."""
    out = list(args)
    index = None
    for i, spec in specs.items():
        if i < len(args) and isinstance(args[i], (Tensor, np.ndarray)):
            t = args[i] if isinstance(args[i], Tensor) else Tensor(args[i])
            out[i] = t
            if bucket == length:
                continue
            axis = spec.bucket_axis
            if length == 0:
                shape = list(t.shape)
                shape[axis] = bucket
                out[i] = Tensor._from_array(np.zeros(shape, np.dtype(t.dtype)))
                continue
            if index is None:
                index = np.minimum(np.arange(bucket), length - 1)
            if t.stop_gradient or not state.grad_enabled():  # no tape: plain arrays
                out[i] = Tensor._from_array(np.take(np.asarray(t._value), index, axis=axis))
            else:
                out[i] = core_ops.gather(t, Tensor(index), axis=axis)
    if mask is None:
        mask = Tensor(np.arange(bucket) < length)
    return out, mask


def slice_outputs(result, leaf_axes, length):
    """`result` (the program's eager result) with every leaf that carries the
    padded dim (`leaf_axes`: leaf position -> axis) sliced back to `length`."""
    if not leaf_axes:
        return result
    from ..static.pytree import flatten, unflatten
    leaves, tree = flatten(result)
    for pos, axis in leaf_axes.items():
        index = (slice(None),) * axis + (slice(0, length),)
        leaf = leaves[pos]
        if leaf.stop_gradient:  # not on the tape: slice its array
            leaves[pos] = Tensor._from_array(leaf._value[index])
        else:
            leaves[pos] = leaf[index]
    return unflatten(tree, leaves)


# ---- the analysis and the masked rewrites ----------------------------------------------
def _axes_of(attrs, ndim):
    axes = attrs.get("axes", attrs.get("axis"))
    if axes is None or axes == () or axes == []:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def _ndim(var):
    return len(var.shape)


class _Rewriter:
    """Walks block 0 (`analyse`), rewriting masked reductions in place."""

    def __init__(self, program, mask):
        self.program = program
        self.block = program.global_block()
        self.mask = mask
        self.axis = {}  # var name -> axis carrying the padded dim
        self.shape_of = {}  # `x.shape` vectors of padded vars: name -> (x's name, axis)
        self.dim_of = {}    # a dim read from one: name -> (x's name, index)

    def var(self, shape, dtype, prefix):
        return self.block.create_var(tuple(shape), dtype, prefix=f"bucket_{prefix}",
                                     stop_gradient=False)

    def op(self, type, inputs, outputs, attrs, like):
        return Operator(self.block, type, inputs, outputs, attrs, like.origin_record)

    def run(self, input_axes):
        self.axis.update(input_axes)
        new_ops = []
        for op in list(self.block.ops):
            new_ops.extend(self.visit(op))
        self.block.ops[:] = new_ops
        return self.axis

    def tainted(self, op):
        return [(v, self.axis[v.name]) for v in op.inputs
                if v is not None and hasattr(v, "name") and v.name in self.axis]

    def visit(self, op):
        shapes = [v for v in op.inputs if getattr(v, "name", None) in self.shape_of]
        if shapes:
            return self.shape_read(op, shapes)
        tainted = self.tainted(op)
        if not tainted:
            return [op]
        if op.type in _LAYOUT:
            return getattr(self, op.type)(op, tainted)
        if op.sub_blocks():
            raise NotPadSafe(op, "runs control flow on the padded dim")
        opdef = OPS.get(op.type)
        if opdef is not None and opdef.stateful:
            raise NotPadSafe(op, "draws random numbers (padding would change the draws)")
        t = op.type
        if (opdef is not None and opdef.elementwise) or t in _ALSO_ELEMENTWISE:
            return self.elementwise(op, tainted)
        if t == "matmul":
            return self.matmul(op, tainted)
        if t in _MASKED_REDUCTIONS or t in _OTHER_REDUCTIONS:
            return self.reduction(op, tainted)
        if t in ("softmax", "log_softmax"):
            return self.softmax(op, tainted)
        if t == "getitem":
            return self.getitem(op, tainted)
        raise NotPadSafe(op, "is not known to be pad-safe on the padded dim")

    # ---- reading the shape, layout ops --------------------------------------------------
    def shape(self, op, tainted):
        (x, a), = tainted
        self.shape_of[op.outputs[0].name] = (x.name, a, _ndim(x))
        return [op]

    def shape_read(self, op, shapes):
        source, a, ndim = self.shape_of[shapes[0].name]
        spec = op.attrs.get("spec")
        if op.type == "getitem" and len(op.inputs) == 1 and isinstance(spec, tuple) \
                and len(spec) == 1 and spec[0][0] == "int" and spec[0][1] % ndim != a:
            self.dim_of[op.outputs[0].name] = (source, spec[0][1] % ndim)
            return [op]
        raise NotPadSafe(op, "reads the padded length from a shape")

    def same_dim(self, d, x, i, a):
        """Whether the dim tensor `d` is `v.shape[i]` of `x` itself, or of a
        padded `v` of x's rank, padded on the same axis, whose dims before it
        agree with x's where both are known: taken to name x's dim `i` (the
        usual `b = x.shape[0]` of an input before reshaping what it became)."""
        source = self.dim_of.get(getattr(d, "name", None))
        if source is None or source[1] != i:
            return False
        if source[0] == x.name:
            return True
        v = self.block.vars.get(source[0])
        if v is None or _ndim(v) != _ndim(x) or self.axis.get(v.name) != a:
            return False
        return all(p is None or q is None or p == q for p, q in zip(v.shape[:a], x.shape[:a]))

    def transpose(self, op, tainted):
        (x, a), = tainted
        perm = [p % _ndim(x) for p in op.attrs["perm"]]
        self.axis[op.outputs[0].name] = perm.index(a)
        return [op]

    def unsqueeze(self, op, tainted):
        (x, a), = tainted
        n = _ndim(op.outputs[0])
        new = {b % n for b in op.attrs["axes"]}
        kept = [i for i in range(n) if i not in new]
        self.axis[op.outputs[0].name] = kept[a]
        return [op]

    def squeeze(self, op, tainted):
        (x, a), = tainted
        axes = op.attrs.get("axes")
        if axes is None or axes == ():
            raise NotPadSafe(op, "squeezes every size-1 dim (the padded one may be one)")
        axes = {b % _ndim(x) for b in axes}
        if a in axes:
            raise NotPadSafe(op, "squeezes the padded dim")
        self.axis[op.outputs[0].name] = a - sum(1 for b in axes if b < a)
        return [op]

    def concat(self, op, tainted):
        axes = {a for _, a in tainted}
        axis = op.attrs["axis"] % _ndim(op.inputs[0])
        if len(tainted) != len(op.inputs) or len(axes) != 1 or axis in axes:
            raise NotPadSafe(op, "joins along the padded dim or with unpadded inputs")
        self.axis[op.outputs[0].name] = axes.pop()
        return [op]

    def reshape(self, op, tainted):
        (x, a), = tainted
        if x is not op.inputs[0]:
            raise NotPadSafe(op, "takes its shape from a padded tensor")
        target = list(op.attrs["shape"])
        dims = iter(op.inputs[1:])
        given = [next(dims, None) if d is None else d for d in target]
        shape = x.shape
        if len(target) <= a:
            raise NotPadSafe(op, "merges the padded dim with others")
        for i in range(a):
            d = given[i]
            same = (isinstance(d, int) and (d == 0 or d == shape[i])) or (
                not isinstance(d, int) and self.same_dim(d, x, i, a))
            if not same:
                raise NotPadSafe(op, "reshapes the dims before the padded one")
        tail_in = shape[a + 1:]
        tail = given[a + 1:]
        if not isinstance(given[a], int) or given[a] not in (0, -1) or \
                any(d is None for d in tail_in) or \
                any(not isinstance(d, int) or d == 0 for d in tail):
            raise NotPadSafe(op, "merges or splits the padded dim")
        size_in = int(np.prod(tail_in, dtype=np.int64))
        known = int(np.prod([d for d in tail if d != -1], dtype=np.int64))
        free = sum(1 for d in tail if d == -1) + (given[a] == -1)
        ok = (known == size_in) if free == (given[a] == -1) else \
            (free == 1 and given[a] == 0 and size_in % known == 0)
        if not ok:
            raise NotPadSafe(op, "merges or splits the padded dim")
        self.axis[op.outputs[0].name] = a
        return [op]

    def elementwise(self, op, tainted):
        out = op.outputs[0]
        n = _ndim(out)
        axes = {a + n - _ndim(v) for v, a in tainted}
        if len(axes) != 1 or len(op.outputs) != 1:
            raise NotPadSafe(op, "combines the padded dim with another axis")
        axis = axes.pop()
        padded = {id(v) for v, _ in tainted}
        for v in op.inputs:  # an unpadded input must broadcast along the padded dim
            if id(v) not in padded and hasattr(v, "shape"):
                at = axis - (n - _ndim(v))
                if at >= 0 and v.shape[at] != 1:
                    raise NotPadSafe(op, f"meets the unpadded '{v.name}' on the padded dim")
        self.axis[out.name] = axis
        return [op]

    def matmul(self, op, tainted):
        if op.attrs.get("transpose_x") or op.attrs.get("transpose_y") \
                or op.attrs.get("trans_x") or op.attrs.get("trans_y"):
            raise NotPadSafe(op, "transposes a padded operand")
        x, y = op.inputs[:2]
        out = op.outputs[0]
        n = _ndim(out)
        contract = {}
        for v, a in tainted:
            k = _ndim(v)
            if a == (k - 1 if v is x else max(k - 2, 0)):
                contract[id(v)] = a
        if contract:
            # a sum over the padded dim: both operands padded on it, their
            # padded rows zeroed (so no inf or nan from them reaches the sum)
            if len(contract) != 2 or len(tainted) != 2 or x is y:
                raise NotPadSafe(op, "contracts over the padded dim with an unpadded operand")
            ops = []
            for v, a in tainted:
                more, masked = self.masked(v, a, 0.0, op)
                ops += more
                op.inputs[0 if v is x else 1] = masked
            return ops + [op]
        axes = set()
        for v, a in tainted:
            k = _ndim(v)
            if v is y and a == k - 1:
                axes.add(n - 1)
            else:
                axes.add(a + n - k)
        if len(axes) != 1:
            raise NotPadSafe(op, "combines the padded dim with another axis")
        self.axis[out.name] = axes.pop()
        return [op]

    def reduction(self, op, tainted):
        (x, a), = tainted if len(tainted) == 1 else [(None, None)]
        if x is None or x is not op.inputs[0]:
            raise NotPadSafe(op, "reads the padded dim through a second input")
        axes = _axes_of(op.attrs, _ndim(x))
        keep = bool(op.attrs.get("keepdim", False))
        out = op.outputs[0]
        if a not in axes:
            self.axis[out.name] = a if keep else a - sum(1 for b in axes if b < a)
            return [op]
        if op.type not in _MASKED_REDUCTIONS or len(op.outputs) != 1:
            raise NotPadSafe(op, "reduces over the padded dim (masked sum, mean, max, min "
                             "and softmax are supported)")
        if op.type != "mean":
            ops, masked = self.masked(x, a, _MASKED_REDUCTIONS[op.type], op)
            op.inputs[0] = masked
            return ops + [op]
        # mean over `axes` = (masked sum over `axes` of the mean over the
        # other reduced axes) / the true length: one scalar count, no mask
        # the size of x
        attrs = {"axes": axes, "keepdim": keep}
        others = tuple(b for b in axes if b != a)
        ops, src = [], x
        if others:
            kept = tuple(1 if i in others else d for i, d in enumerate(x.shape))
            src = self.var(kept, x.dtype, "mean")
            ops.append(self.op("mean", [x], [src], {"axes": others, "keepdim": True}, op))
        more, masked = self.masked(src, a, 0.0, op)
        ops += more
        total = self.var(out.shape, out.dtype, "sum")
        maskf = self.var(self.mask.shape, x.dtype, "maskf")
        count = self.var((), x.dtype, "count")
        ops += [self.op("sum", [masked], [total], attrs, op),
                self.op("cast", [self.mask], [maskf], {"dtype": np.dtype(x.dtype).name}, op),
                self.op("sum", [maskf], [count], {"axes": (0,), "keepdim": False}, op),
                self.op("divide", [total, count], [out], {}, op)]
        return ops

    def softmax(self, op, tainted):
        (x, a), = tainted
        axis = op.attrs.get("axis", -1) % _ndim(x)
        out = op.outputs[0]
        self.axis[out.name] = a
        if axis != a:
            return [op]
        if op.type != "softmax":
            raise NotPadSafe(op, "normalises over the padded dim (masked softmax only)")
        ops, masked = self.masked(x, a, -np.inf, op)
        op.inputs[0] = masked
        return ops + [op]

    def getitem(self, op, tainted):
        (x, a), = tainted
        spec = op.attrs.get("spec")
        if len(op.inputs) != 1 or not isinstance(spec, tuple) or \
                any(not (isinstance(s, tuple) and s and s[0] == "slice") for s in spec):
            raise NotPadSafe(op, "indexes with other than slices")
        if a < len(spec) and tuple(spec[a][1:]) != (None, None, None):
            raise NotPadSafe(op, "slices the padded dim")
        self.axis[op.outputs[0].name] = a
        return [op]

    def masked(self, x, axis, fill, like):
        """Ops making `where(mask on axis, x, fill)`; (ops, the masked var)."""
        n = _ndim(x)
        shape = [1] * n
        shape[axis] = -1
        mask_b = self.var([x.shape[i] if i == axis else 1 for i in range(n)], np.bool_, "mask")
        fill_v = self.var((), x.dtype, "fill")
        masked = self.var(x.shape, x.dtype, "masked")
        ops = [self.op("reshape", [self.mask], [mask_b], {"shape": tuple(shape)}, like),
               self.op("full", [], [fill_v], {"shape": (), "fill_value": float(fill),
                                              "dtype": np.dtype(x.dtype).name}, like),
               self.op("where", [mask_b, x, fill_v], [masked], {}, like)]
        return ops, masked


def make_pad_safe(concrete, input_axes):
    """Rewrite `concrete`'s forward for padded inputs (`input_axes`: input
    name -> padded axis; its last input is the mask). Returns {output
    position: axis} for the outputs that carry the padded dim; raises
    NotPadSafe (the program left as it was) if some op is not pad-safe."""
    program = concrete.main_program
    block = program.global_block()
    before = list(block.ops)
    rewriter = _Rewriter(program, concrete.inputs[-1])
    try:
        axes = rewriter.run(input_axes)
    except NotPadSafe:
        block.ops[:] = before
        raise
    concrete._n_forward += len(block.ops) - len(before)
    return {i: axes[v.name] for i, v in enumerate(concrete.outputs) if v.name in axes}


def dropping_mask(fn):
    """`fn` called without the mask argument the signature carries (the
    program reads it as an input; the user's function never sees it)."""
    def run(*args, **kwargs):
        kwargs.pop(MASK_NAME, None)
        return fn(*args, **kwargs)
    run.__wrapped__ = fn
    return run
