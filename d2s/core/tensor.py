"""Eager `Tensor`: a numpy array plus autograd bookkeeping."""
from __future__ import annotations

import numpy as np

from . import autograd, effects, state
from .dtypes import as_dtype, default_dtype_for
from .methods import TensorMethods


_object_new = object.__new__


def new_tensor(value, stop_gradient=True):
    """A Tensor around the ndarray `value`, not copied: how every eager op
    wraps its kernel's result, so it sets the slots directly (no `__init__`,
    no dtype policy; `value` already is what the kernel made)."""
    t = _object_new(Tensor)
    t._value = value
    t.stop_gradient = stop_gradient
    t._grad = None
    t._node = None
    t._out_index = 0
    t.name = None
    t._version = 0
    t._past = None
    t._base = None
    return t


class Tensor(TensorMethods):
    """An eager value. `stop_gradient=True` (the default) means no gradient
    is tracked for it, as in PaddlePaddle; set it False on leaves to train.
    `numpy()` returns the underlying array without a copy (as torch does);
    d2s never mutates a Tensor's array in place, it rebinds it."""

    # Every slot is filled by `__init__` and by `new_tensor` (the eager hot path);
    # a slot added here is added to both (tests/core check that both fill all).
    # `_version` counts in-place writes (core.inplace): the tape checks it;
    # `_past`: None, or {version: weakref to the snapshot of that version}.
    # `_base`: None, or (base, index, base's _version) for a view made by basic
    # indexing: an in-place write to it writes the base too (core.inplace).
    __slots__ = ("_value", "stop_gradient", "_grad", "_node", "_out_index", "name",
                 "_version", "_past", "_base", "__weakref__")
    _name_counter = [0]

    def __init__(self, data, dtype=None, stop_gradient=True, name=None):
        if isinstance(data, Tensor):
            data = data._value
        dtype = as_dtype(dtype) if dtype is not None else default_dtype_for(data)
        self._adopt(np.array(data, dtype=dtype), stop_gradient, name)

    def _adopt(self, value, stop_gradient, name):
        """`__init__` for the array `value`, which only this Tensor holds."""
        self._value = value
        self.stop_gradient = stop_gradient
        self._grad = None
        self._node = None
        self._out_index = 0
        self.name = name
        self._version = 0
        self._past = None
        self._base = None
        if state._tls.builders:  # made while a program is being built
            effects.note_new_tensor(self)

    # The name older code knows; a Tensor has no subclasses, so no `cls`.
    _from_array = staticmethod(new_tensor)

    # ---- properties --------------------------------------------------------
    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return self._value.size

    def numpy(self):
        if state.value_reads:  # (a trace that reads the array bakes its values in)
            state.read_value(self, self._value)
        return self._value

    def item(self, *index):
        """The element as a Python number; `item(i)` indexes the flattened
        tensor, `item(i, j, ...)` one element per axis (numpy's rule)."""
        if state.value_reads:
            state.read_value(self, self._value)
        return self._value.item(*index)

    def __array__(self, dtype=None, copy=None):
        """NumPy 2 protocol: `copy=True` always copies (the Tensor's array is never
        handed out to be written), `copy=False` never does (a dtype change then
        raises ValueError), `None` copies only for a dtype change."""
        value = self._value
        if dtype is not None and np.dtype(dtype) != value.dtype:
            if copy is False:
                raise ValueError(f"converting a {value.dtype} Tensor to {np.dtype(dtype)} "
                                 "needs a copy, and copy=False forbids one")
            return value.astype(dtype)
        return value.copy() if copy else value

    # ---- Python protocol (eager only) -------------------------------------
    def _scalar(self, what):
        value = self._value
        if state.value_reads:  # a trace turns this eager value into a Python one
            state.read_value(self, value)
        if value.size != 1:
            raise ValueError(f"{what}() of a Tensor with {value.size} elements is "
                             "ambiguous; only one-element tensors convert")
        return value.item()

    def __bool__(self):
        # numpy's own truth test of a one-element array is the Python truth of
        # its element; `while t:` loops call this once per trip, so skip `.item()`.
        value = self._value
        if value.size == 1:
            if state.value_reads:
                state.read_value(self, value)
            return bool(value)
        return bool(self._scalar("bool"))

    def __int__(self):
        return int(self._scalar("int"))

    def __float__(self):
        return float(self._scalar("float"))

    def __index__(self):
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._scalar("__index__"))

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-d Tensor")
        return self._value.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        return format_tensor(self._value, self.stop_gradient)

    def __format__(self, spec):
        """`f"{loss:.4f}"`: a format spec formats the one element's Python
        number, as PyTorch and PaddlePaddle do; no spec prints the Tensor."""
        if not spec:
            return str(self)
        if self._value.size != 1:
            raise TypeError(f"unsupported format string {spec!r} for a Tensor of shape "
                            f"{list(self.shape)}: only a one-element Tensor formats as a number")
        return format(self._value.item(), spec)

    # ---- autograd ------------------------------------------------------------
    @property
    def grad(self):
        """The accumulated gradient (a Tensor), or None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        # Inside a traced step, `p.grad = ...` (by hand, clip_grad_norm_,
        # clear_grad) is a write of the step (core.effects), not a change
        # made once to the eager Tensor while tracing.
        if state._tls.builders:
            ov = effects.overlay()
            if ov is not None:
                ov.assign_grad(self, value)
                return
        self._grad = value

    def backward(self, grad=None, retain_graph=False):
        """Accumulate gradients into the leaves' `.grad`. `retain_graph`
        (Paddle's and PyTorch's) is accepted: d2s keeps the tape after a
        backward, so a second backward through it (an actor and a critic
        loss sharing a trunk) always works."""
        if state._tls.builders:  # inside a traced step: the step's backward
            ov = effects.overlay()
            if ov is not None:
                return ov.backward(self, grad)
        autograd.backward(self, grad)

    def clear_grad(self):
        if state._tls.builders:  # inside a traced step: a write of the step
            ov = effects.overlay()
            if ov is not None:
                ov.activate("clear_grad()", branch_ok=True)
                ov.assign_grad(self, None)
                return
        self._grad = None

    def detach(self):
        """The same value with no gradient path. While a program is being
        built, a parameter or buffer must stay an input of the program (its
        value changes between runs): detach is then the `detach` op, never a
        copy of today's value baked in as a constant."""
        if not (state.all_eager[0] or not state._tls.builders and not state._global["static"]):
            from .ops.manipulation import detach
            return detach(self)
        return Tensor._from_array(self._value)

    def gradient(self):
        """Paddle's `Tensor.gradient()`: the gradient as a numpy array, or None."""
        grad = self.grad
        return None if grad is None else grad.numpy()

    def clear_gradient(self, set_to_zero=True):
        """Paddle's name for `clear_grad` (`set_to_zero` is accepted; the
        gradient is dropped either way, as `clear_grad` does)."""
        self.clear_grad()

    # ---- in-place writes (rebind the value; core.inplace) --------------------
    def __setitem__(self, index, value):
        from . import inplace
        inplace.setitem(self, index, value)

    def set_value(self, value):
        """Replace the values (same shape; cast to this dtype), as Paddle's
        `set_value`: no gradient flows through it; the version is bumped."""
        from . import inplace
        inplace.set_value(self, value)

    def register_hook(self, hook):
        """`hook(grad)` runs when this tensor's gradient is computed (by
        `backward` or `d2s.grad`); a returned Tensor replaces the gradient.
        Returns a handle whose `remove()` takes the hook away."""
        from .grad_api import register_hook
        return register_hook(self, hook)

    @property
    def inplace_version(self):
        """How many in-place writes this Tensor has had (Paddle's name)."""
        return self._version

    @property
    def is_leaf(self):
        return self._node is None

    # ---- DLPack: zero-copy exchange with JAX, torch, numpy -------------------
    def __dlpack__(self, **kwargs):
        # `_raw`: a device-resident Tensor hands out its device array (no host copy)
        return self._raw.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._raw.__dlpack_device__()

    def to_dlpack(self):
        """A DLPack capsule of this Tensor's array (its device array when the
        Tensor is device-resident), for consumers that take capsules."""
        return self.__dlpack__()


# The Tensor's value slot under a second name. `_value` is what host code
# reads (a device-resident Tensor makes its host copy on that read); `_raw`
# reads the slot as it is, a numpy array or a backend's device array, at the
# cost of a slot read: what a backend feeding its own arrays back uses.
Tensor._raw = Tensor.__dict__["_value"]
_RAW_SET = Tensor.__dict__["_value"].__set__

# Types of backend device arrays (a backend registers its own, see
# `register_device_type`); the host copy of one is made by `np.asarray`.
_DEVICE_TYPES = set()
# device array type -> the attribute holding its shape and dtype (see register_device_type)
DEVICE_META = {}
# Host copies made (a test hook: tests count materializations with it).
materializations = [0]
# hook(tensor, host copy, device array), called when a host copy is made: the
# backend may keep the device array for the next call (see backends.xla.params).
on_host_copy = [None]


class DeviceTensor(Tensor):
    """A Tensor whose value is a backend's device array (an xla program's
    output, a parameter an xla step wrote): the same Tensor to every user
    (`type(t)` differs only until its host copy exists).

    Why a subclass swapped in and out (`__class__`) rather than a `_value`
    property on every Tensor: eager kernels, autograd and optimizers read
    `t._value` on every op; a property there would add a Python call to
    each of those reads for all Tensors, while here a host Tensor's
    `_value` stays a plain slot read. The first read of `_value` (`.numpy()`,
    `np.asarray(t)`, `item()`, printing, any eager numpy kernel) makes the
    host copy once, keeps it in the slot and turns the Tensor back into a
    plain one, which later reads and calls use as any host Tensor. The copy
    is a real copy even on a CPU device (where a view would do): it is
    writable, as a numpy-backend result is, and a write into it
    (`t.numpy()[0] = 1`) cannot reach the device array a program may still
    read (XLA may reuse that buffer, and a view would see it change). The
    Tensor drops its device array then; a later xla call sends the host
    array again (a parameter: once, see `backends.xla.params`). Assigning
    `_value` (a rebinding: optimizers, `set_value`) turns it plain without
    a copy."""
    __slots__ = ()

    @property
    def _value(self):
        device = self._raw
        host = np.array(device)  # a copy the Tensor owns (see the class docstring)
        materializations[0] += 1
        _RAW_SET(self, host)
        self.__class__ = Tensor
        hook = on_host_copy[0]
        if hook is not None:
            hook(self, host, device)
        return host

    @_value.setter
    def _value(self, value):
        _RAW_SET(self, value)
        self.__class__ = Tensor

    # Metadata reads need no host copy.
    @property
    def shape(self):
        return tuple(self._raw.shape)

    @property
    def dtype(self):
        return np.dtype(self._raw.dtype)

    @property
    def ndim(self):
        return self._raw.ndim

    @property
    def size(self):
        return int(self._raw.size)


def register_device_type(cls, meta=None):
    """Mark `cls` (a backend's array type) as a device array a Tensor may hold.
    `meta`: the name of an attribute of its arrays holding their `shape` and
    `dtype` where reading those there costs less than on the array itself
    (per-call checks read them: jit.inline_cache)."""
    _DEVICE_TYPES.add(cls)
    if meta is not None:
        DEVICE_META[cls] = meta


def is_device_array(value):
    return type(value) in _DEVICE_TYPES


def new_device_tensor(value, stop_gradient=True):
    """`new_tensor` for a device array `value` (a backend's result on its
    per-call path, where every output is one): the slots set directly."""
    t = _object_new(DeviceTensor)
    t._raw = value  # (the slot itself, stored as an attribute: no descriptor call)
    t.stop_gradient = stop_gradient
    t._grad = None
    t._node = None
    t._out_index = 0
    t.name = None
    t._version = 0
    t._past = None
    t._base = None
    return t


def device_tensor(value, stop_gradient=True):
    """A Tensor holding `value`: a device-resident one for a registered device
    array, else (a numpy array) a plain one, as `new_tensor`."""
    t = new_tensor(value, stop_gradient)
    if type(value) in _DEVICE_TYPES:
        t.__class__ = DeviceTensor
    return t


def rebind_value(tensor, value):
    """Rebind `tensor` to `value` (a program's write-back): a device array is
    kept as it is (the Tensor becomes device-resident), anything else is
    held as a numpy array."""
    if type(value) in _DEVICE_TYPES:
        _RAW_SET(tensor, value)
        tensor.__class__ = DeviceTensor
    else:
        _RAW_SET(tensor, value if type(value) is np.ndarray else np.asarray(value))
        if tensor.__class__ is not Tensor:
            tensor.__class__ = Tensor


def is_resident(tensor):
    return tensor.__class__ is DeviceTensor


# `d2s.set_printoptions`: numpy.array2string arguments for printing tensors
PRINT_OPTIONS = {}


def format_tensor(value, stop_gradient):
    """How a Tensor prints; static print ops print their values the same way."""
    body = np.array2string(value, separator=", ", prefix="       ", **PRINT_OPTIONS)
    return (f"Tensor(shape={list(value.shape)}, dtype={value.dtype}, "
            f"stop_gradient={stop_gradient},\n       {body})")


# An input array of at least this size is given memory aligned to `INPUT_ALIGNMENT`
# bytes (see `to_tensor`); below it, copying costs less than arranging that.
ALIGN_INPUTS_FROM_BYTES = 16384
INPUT_ALIGNMENT = 64


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """Make an eager Tensor (a copy of `data`). Python floats -> float32, ints -> int64.

    `place` (Paddle's `CPUPlace()`, `CUDAPlace(0)`, "gpu:0", ...) is accepted
    as ported code passes it: an eager Tensor's values live on the host, and
    a backend moves them where it runs. (A bool there is the
    `stop_gradient` that d2s took third before.)

    Why the copy of a large array is aligned to 64 bytes: to_tensor is how a
    batch enters d2s, and a program on the xla backend hands it to XLA on
    every call. XLA's CPU client reads an input in place only when its data
    is aligned to 64 bytes and copies it otherwise (2-5 µs for a 100 KB batch, ~90 µs for 800 KB, on
    every call); numpy's allocator promises 16. Small arrays keep numpy's
    own allocation. The aligned array is a view of a private buffer (its
    `.base`); nothing else changes."""
    if isinstance(place, bool):
        stop_gradient = place
    if isinstance(data, Tensor):
        data = data._value
    elif _holds_traced(data):
        return _traced_to_tensor(data, dtype, stop_gradient)
    dtype = as_dtype(dtype) if dtype is not None else default_dtype_for(data)
    t = _object_new(Tensor)
    t._adopt(_input_array(data, dtype), stop_gradient, None)
    return t


def _holds_traced(data):
    """A program's value (a traced Variable), or a list/tuple holding one."""
    from .dispatch import Symbolic
    if isinstance(data, Symbolic):
        return True
    return isinstance(data, (list, tuple)) and any(_holds_traced(d) for d in data)


def _traced_to_tensor(data, dtype, stop_gradient):
    """`to_tensor` of a traced value in converted code: a copy in the program,
    as eager `to_tensor` of a Tensor is a copy (no gradient path to the
    original; `dtype` casts; a list of values is stacked)."""
    from . import ops
    if isinstance(data, (list, tuple)):
        value = ops.stack([_traced_to_tensor(d, None, True) if _holds_traced(d)
                           else to_tensor(d) for d in data])
    else:
        value = ops.detach(data)
    if dtype is not None and as_dtype(dtype) != np.dtype(value.dtype):
        value = ops.cast(value, as_dtype(dtype).name)
    value.stop_gradient = stop_gradient
    return value


def _input_array(data, dtype):
    """`data` as an array of `dtype` that only the caller holds: a copy,
    aligned to `INPUT_ALIGNMENT` bytes when it is large (see `to_tensor`)."""
    source = np.asarray(data, dtype=dtype)
    if source.nbytes < ALIGN_INPUTS_FROM_BYTES or source.dtype.hasobject:
        return np.array(source)
    buffer = np.empty(source.nbytes + INPUT_ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % INPUT_ALIGNMENT
    value = buffer[start:start + source.nbytes].view(source.dtype).reshape(source.shape)
    np.copyto(value, source)
    return value


def from_dlpack(x, stop_gradient=True):
    """A Tensor sharing the memory of `x` (a JAX/torch/numpy array on the CPU,
    anything with `__dlpack__`), without a copy. The memory may be read-only
    (JAX arrays are): d2s never writes into a Tensor's array. A registered
    device array (a `jax.Array`) is held as it is: the Tensor is
    device-resident, so it may live on a GPU."""
    if type(x) in _DEVICE_TYPES:
        return device_tensor(x, stop_gradient)
    return Tensor._from_array(np.from_dlpack(x), stop_gradient)


autograd.Tensor = Tensor
