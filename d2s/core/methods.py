"""Operators and methods shared by eager `Tensor` and static `Variable`.

Every method forwards to the functional op (which calls `bind`), so one
definition serves both classes and both modes. `_F` is the functional
namespace, filled in by `d2s.core` once the op families are registered
(this module is imported before them).
"""
from __future__ import annotations

from . import dist_attr

_F = None


class TensorMethods:
    __slots__ = ()
    # numpy must defer to our reflected operators (np.float32(2) * t -> Tensor).
    __array_ufunc__ = None
    __array_priority__ = 100

    # ---- numpy functions (np.sum, np.mean, np.asarray, np.concatenate, ...) ----
    def __array__(self, dtype=None, copy=None):
        # Overridden by the eager Tensor; a static Variable has no value yet.
        raise TypeError(f"{self!r} has no value while its program is being built; numpy "
                        "functions need values: use the d2s op (d2s.sum, d2s.mean, ...)")

    def __array_function__(self, func, types, args, kwargs):
        """A numpy function sees an eager Tensor as the array it holds, as it sees
        any array-like, and returns what it returns for that array (np.sum(t) is
        a numpy scalar), instead of calling our methods with numpy's keywords."""
        return func(*_as_arrays(args), **_as_arrays(kwargs))

    # ---- arithmetic -------------------------------------------------------
    def __add__(self, o): return _F.add(self, o)
    def __radd__(self, o): return _F.add(o, self)
    def __sub__(self, o): return _F.subtract(self, o)
    def __rsub__(self, o): return _F.subtract(o, self)
    def __mul__(self, o): return _F.multiply(self, o)
    def __rmul__(self, o): return _F.multiply(o, self)
    def __truediv__(self, o): return _F.divide(self, o)
    def __rtruediv__(self, o): return _F.divide(o, self)
    def __floordiv__(self, o): return _F.floor_divide(self, o)
    def __rfloordiv__(self, o): return _F.floor_divide(o, self)
    def __mod__(self, o): return _F.remainder(self, o)
    def __rmod__(self, o): return _F.remainder(o, self)
    def __pow__(self, o): return _F.pow(self, o)
    def __rpow__(self, o): return _F.pow(o, self)
    def __matmul__(self, o): return _F.matmul(self, o)
    def __rmatmul__(self, o): return _F.matmul(o, self)
    def __neg__(self): return _F.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _F.abs(self)

    # ---- comparisons (elementwise, bool result) ---------------------------
    def __eq__(self, o): return _F.equal(self, o)
    def __ne__(self, o): return _F.not_equal(self, o)
    def __lt__(self, o): return _F.less_than(self, o)
    def __le__(self, o): return _F.less_equal(self, o)
    def __gt__(self, o): return _F.greater_than(self, o)
    def __ge__(self, o): return _F.greater_equal(self, o)
    __hash__ = object.__hash__

    # ---- logical and bitwise -------------------------------------------------
    # On integer tensors these work on the bits (`x & 1` is a mask, as in
    # numpy, Paddle and PyTorch); on bools (and other operands) they are the
    # logical ops (core.ops.bits_special decides).
    def __and__(self, o): return _F.and_operator(self, o)
    def __rand__(self, o): return _F.and_operator(o, self)
    def __or__(self, o): return _F.or_operator(self, o)
    def __ror__(self, o): return _F.or_operator(o, self)
    def __xor__(self, o): return _F.xor_operator(self, o)
    def __rxor__(self, o): return _F.xor_operator(o, self)
    def __invert__(self): return _F.invert_operator(self)
    def __lshift__(self, o): return _F.bitwise_left_shift(self, o)
    def __rlshift__(self, o): return _F.bitwise_left_shift(o, self)
    def __rshift__(self, o): return _F.bitwise_right_shift(self, o)
    def __rrshift__(self, o): return _F.bitwise_right_shift(o, self)

    def __getitem__(self, index): return _F.getitem(self, index)

    def __setitem__(self, index, value):
        # The eager Tensor overrides this (it rebinds its value, core.inplace).
        # Converted code rewrites `x[i] = v` on a local name into a rebinding
        # (convert.transformers.item_assignment); what reaches here is a
        # program's value held elsewhere (an attribute, a list element).
        raise TypeError(
            "a value of a program cannot be changed in place where it is held (an attribute "
            "or container element): rebind a local name, `y = d2s.set_item(y, index, value)`, "
            "or assign the whole attribute, `self.buf = d2s.set_item(self.buf, index, value)`")

    # ---- in-place methods (core.inplace: eager rebinding, functional in programs) ----
    def add_(self, y, name=None): return _inplace().add_(self, y)
    def subtract_(self, y, name=None): return _inplace().subtract_(self, y)
    def multiply_(self, y, name=None): return _inplace().multiply_(self, y)
    def divide_(self, y, name=None): return _inplace().divide_(self, y)
    def scale_(self, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
        return _inplace().scale_(self, scale, bias, bias_after_scale, act)
    def clip_(self, min=None, max=None, name=None): return _inplace().clip_(self, min, max)
    def zero_(self): return _inplace().zero_(self)
    def fill_(self, value): return _inplace().fill_(self, value)
    def exp_(self, name=None): return _inplace().exp_(self)
    def sqrt_(self, name=None): return _inplace().sqrt_(self)
    def tanh_(self, name=None): return _inplace().tanh_(self)
    def copy_(self, src, blocking=True): return _inplace().copy_(self, src)
    def masked_fill_(self, mask, value, name=None):
        return _inplace().masked_fill_(self, mask, value)
    def reshape_(self, shape, name=None): return _inplace().reshape_(self, shape)
    def unsqueeze_(self, axis, name=None): return _inplace().unsqueeze_(self, axis)
    def squeeze_(self, axis=None, name=None): return _inplace().squeeze_(self, axis)
    def flatten_(self, start_axis=0, stop_axis=-1, name=None):
        return _inplace().flatten_(self, start_axis, stop_axis)

    # ---- methods -----------------------------------------------------------
    def sum(self, axis=None, dtype=None, keepdim=False, name=None):
        if isinstance(dtype, bool):  # (d2s's order: keepdim second)
            dtype, keepdim = None, dtype
        return _F.sum(self, axis, keepdim, dtype)
    def mean(self, axis=None, keepdim=False): return _F.mean(self, axis, keepdim)
    def max(self, axis=None, keepdim=False): return _F.max(self, axis, keepdim)
    def min(self, axis=None, keepdim=False): return _F.min(self, axis, keepdim)
    def argmax(self, axis=None, keepdim=False, dtype="int64", name=None):
        return _F.argmax(self, axis, keepdim, dtype)
    def argmin(self, axis=None, keepdim=False, dtype="int64", name=None):
        return _F.argmin(self, axis, keepdim, dtype)
    def norm(self, p=2, axis=None, keepdim=False): return _F.norm(self, p, axis, keepdim)
    def reshape(self, shape, *more):
        return _F.reshape(self, (shape,) + more if more else shape)
    def transpose(self, perm=None): return _F.transpose(self, perm)
    @property
    def T(self): return _F.transpose(self, None)
    def astype(self, dtype): return _F.cast(self, dtype)
    def cast(self, dtype): return _F.cast(self, dtype)
    def matmul(self, o): return _F.matmul(self, o)
    def exp(self): return _F.exp(self)
    def log(self): return _F.log(self)
    def tanh(self): return _F.tanh(self)
    def sigmoid(self): return _F.sigmoid(self)
    def relu(self): return _F.relu(self)
    def sqrt(self): return _F.sqrt(self)
    def abs(self): return _F.abs(self)
    def clip(self, min=None, max=None): return _F.clip(self, min, max)
    def unsqueeze(self, axis): return _F.unsqueeze(self, axis)
    def squeeze(self, axis=None): return _F.squeeze(self, axis)
    def flatten(self, start_axis=0, stop_axis=-1): return _F.flatten(self, start_axis, stop_axis)
    def expand(self, shape): return _F.expand(self, shape)
    def detach(self): return _F.detach(self)

    # ---- issue 27: tensor-level methods (forward to the d2s functions) ------
    def matmul(self, o, transpose_x=False, transpose_y=False, name=None):
        if transpose_x or transpose_y:
            return _F.matmul_t(self, o, transpose_x, transpose_y)
        return _F.matmul(self, o)
    def pow(self, y, name=None): return _F.pow(self, y)
    def add(self, y, name=None): return _F.add(self, y)
    def subtract(self, y, name=None): return _F.subtract(self, y)
    def multiply(self, y, name=None): return _F.multiply(self, y)
    def divide(self, y, name=None): return _F.divide(self, y)
    def sin(self, name=None): return _F.sin(self)
    def cos(self, name=None): return _F.cos(self)
    def tan(self, name=None): return _F.tan(self)
    def floor(self, name=None): return _F.floor(self)
    def ceil(self, name=None): return _F.ceil(self)
    def round(self, name=None): return _F.round(self)
    def rsqrt(self, name=None): return _F.rsqrt(self)
    def square(self, name=None): return _F.square(self)
    def log1p(self, name=None): return _F.log1p(self)
    def erf(self, name=None): return _F.erf(self)
    def sign(self, name=None): return _F.sign(self)
    def scale(self, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
        return _F.scale(self, scale, bias, bias_after_scale, act)
    def isnan(self, name=None): return _F.isnan(self)
    def isinf(self, name=None): return _F.isinf(self)
    def isfinite(self, name=None): return _F.isfinite(self)
    def prod(self, axis=None, keepdim=False, dtype=None, name=None):
        return _F.prod(self, axis, keepdim, dtype)
    def all(self, axis=None, keepdim=False, name=None): return _F.all(self, axis, keepdim)
    def any(self, axis=None, keepdim=False, name=None): return _F.any(self, axis, keepdim)
    def logsumexp(self, axis=None, keepdim=False, name=None):
        return _F.logsumexp(self, axis, keepdim)
    def cumsum(self, axis=None, dtype=None, name=None): return _F.cumsum(self, axis, dtype)
    def cumprod(self, dim=None, dtype=None, name=None): return _F.cumprod(self, dim, dtype)
    def topk(self, k, axis=None, largest=True, sorted=True, name=None):
        return _F.topk(self, k, axis, largest, sorted)
    def sort(self, axis=-1, descending=False, stable=False, name=None):
        return _F.sort(self, axis, descending)
    def argsort(self, axis=-1, descending=False, stable=False, name=None):
        return _F.argsort(self, axis, descending)
    def split(self, num_or_sections, axis=0, name=None):
        return _F.split(self, num_or_sections, axis)
    def chunk(self, chunks, axis=0, name=None): return _F.chunk(self, chunks, axis)
    def unbind(self, axis=0): return _F.unbind(self, axis)
    def tile(self, repeat_times, name=None): return _F.tile(self, repeat_times)
    def broadcast_to(self, shape, name=None): return _F.broadcast_to(self, shape)
    def expand_as(self, y, name=None): return _F.expand_as(self, y)
    def flip(self, axis, name=None): return _F.flip(self, axis)
    def roll(self, shifts, axis=None, name=None): return _F.roll(self, shifts, axis)
    def tril(self, diagonal=0, name=None): return _F.tril(self, diagonal)
    def triu(self, diagonal=0, name=None): return _F.triu(self, diagonal)
    def gather(self, index, axis=0, name=None): return _F.gather(self, index, axis)
    def index_select(self, index, axis=0, name=None): return _F.index_select(self, index, axis)
    def masked_fill(self, mask, value, name=None): return _F.masked_fill(self, mask, value)
    def take_along_axis(self, indices, axis, broadcast=True):
        return _F.take_along_axis(self, indices, axis, broadcast)
    def put_along_axis(self, indices, values, axis, reduce="assign", include_self=True,
                       broadcast=True, name=None):
        """A copy with `values` put at `indices` (graph nets' scatter-add)."""
        return _F.put_along_axis(self, indices, values, axis, reduce, include_self, broadcast)
    def clone(self): return _F.clone(self)
    def var(self, axis=None, unbiased=True, keepdim=False, name=None):
        return _F.var(self, axis, unbiased, keepdim)
    def nonzero(self, as_tuple=False): return _F.nonzero(self, as_tuple)
    # ---- issue 25: methods that ported PaddlePaddle model code calls --------
    def numel(self, name=None): return _F.numel(self)
    def dim(self): return len(self.shape)
    def ndimension(self): return len(self.shape)
    def t(self, name=None):
        """The transpose of a matrix; a 0-d or 1-D tensor as it is (Paddle's rule)."""
        if len(self.shape) > 2:
            raise ValueError(f"t(): a tensor of at most 2 dims, got shape {list(self.shape)}; "
                             "use transpose(perm)")
        return self if len(self.shape) < 2 else _F.transpose(self, [1, 0])
    def std(self, axis=None, unbiased=True, keepdim=False, name=None):
        return _F.std(self, axis, unbiased, keepdim)
    def gather_nd(self, index, name=None): return _F.gather_nd(self, index)
    def scatter(self, index, updates, overwrite=True, name=None):
        return _F.scatter(self, index, updates, overwrite)
    def masked_select(self, mask, name=None): return _F.masked_select(self, mask)
    def mm(self, mat2, name=None): return _F.mm(self, mat2)
    def bmm(self, y, name=None): return _F.bmm(self, y)
    def equal(self, y, name=None): return _F.equal(self, y)
    def not_equal(self, y, name=None): return _F.not_equal(self, y)
    def greater_than(self, y, name=None): return _F.greater_than(self, y)
    def greater_equal(self, y, name=None): return _F.greater_equal(self, y)
    def less_than(self, y, name=None): return _F.less_than(self, y)
    def less_equal(self, y, name=None): return _F.less_equal(self, y)
    def logical_and(self, y, out=None, name=None): return _F.logical_and(self, y)
    def logical_or(self, y, out=None, name=None): return _F.logical_or(self, y)
    def logical_xor(self, y, out=None, name=None): return _F.logical_xor(self, y)
    def logical_not(self, out=None, name=None): return _F.logical_not(self)
    def reciprocal(self, name=None): return _F.reciprocal(self)
    def log2(self, name=None): return _F.log2(self)
    def log10(self, name=None): return _F.log10(self)
    def expm1(self, name=None): return _F.expm1(self)
    def neg(self, name=None): return _F.neg(self)
    def trunc(self, name=None): return _F.trunc(self)

    # one device (the host): placement methods are the identity
    def cpu(self): return self
    def cuda(self, device_id=None, blocking=True): return self
    def contiguous(self): return self
    def is_contiguous(self): return True
    @property
    def place(self):
        """Where the values live: always the host CPU ("Place(cpu)")."""
        return "Place(cpu)"
    def tolist(self):
        """The values as nested Python lists (an eager Tensor's; a static
        Variable has no values while its program is built)."""
        return self.__array__().tolist()

    # ---- placements (d2s.distributed): metadata kept beside the value ------
    @property
    def process_mesh(self):
        """The `ProcessMesh` this value is placed on; None when unsharded."""
        attr = dist_attr.get(self)
        return None if attr is None else attr.process_mesh

    @property
    def placements(self):
        """One placement per mesh dim (`Shard`, `Replicate`, `Partial`); None
        when unsharded."""
        attr = dist_attr.get(self)
        return None if attr is None else list(attr.placements)


def _inplace():
    from . import inplace  # (imports the Tensor class, defined after this module)
    return inplace


def _as_arrays(value):
    """`value` with every Tensor (also inside plain lists, tuples and dicts) an array."""
    if isinstance(value, TensorMethods):
        return value.__array__()
    kind = type(value)
    if kind is list or kind is tuple:
        return kind(_as_arrays(v) for v in value)
    if kind is dict:
        return {k: _as_arrays(v) for k, v in value.items()}
    return value
