"""Input Tensors move to the device when the call reads them.

An xla call fed a host array converts it on every call (JAX's C++ path does
it, but it is a conversion per argument and, on an accelerator, a copy: a
large part of a small program's call). A Tensor holding a device array is
passed as it is. So a forward that records no gradient, and a whole
training step, move each input Tensor that holds a host array to the
device (a `d2s.core.tensor.DeviceTensor`) as they read it, from the
signature's first call on: the copy the call would make anyway (on CPU,
`jax.device_put` may share the array's memory), made once and kept, so a
Tensor passed again is passed as its device array. (A call recording
gradients leaves its inputs on the host: the tape reads them there.)

Why this keeps every meaning: a device-resident Tensor is the same Tensor
to every reader; the first host read (`.numpy()`, an eager op, printing)
makes a writable host copy it keeps, and turns it plain again (a cost paid
only by code that reads an input on the host after the call). The one
thing that could tell the difference is a second reference to the host
array the Tensor drops (`a = x.numpy()` kept, a view of it, an autograd
tape's saved input, a parameter store's entry, or a result of an earlier
JAX call fed that array, which JAX keeps it alive for): a write through it
would no longer reach the Tensor. So a Tensor moves only while nothing but
it holds its host array (reference counts, as `params.DeviceParams.donate`
counts them); any other input is passed as before.
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from ...core.tensor import rebind_value
from ._jax import jax, x64

_RAW = operator.attrgetter("_raw")
_ndarray = np.ndarray
_getrefcount = sys.getrefcount
# (bound once: a test counting a parameter store's copies patches jax.device_put)
_device_put = jax.device_put
# References to an input's host array when only its Tensor holds it, as
# `_move` counts them: the Tensor's slot, the `feeds` list, the local name,
# getrefcount's argument.
_SOLE_REFS = 4


def input_arrays(tensors):
    """`[t._raw for t in tensors]` (the per-call path's input reader), moving
    to the device each input Tensor that alone holds its host array."""
    feeds = list(map(_RAW, tensors))
    if _ndarray in map(type, feeds):  # (once every input is resident: no loop)
        _move(tensors, feeds)
    return feeds


def _move(tensors, feeds):
    for i in range(len(feeds)):
        a = feeds[i]
        if type(a) is _ndarray and _getrefcount(a) <= _SOLE_REFS:
            with x64():  # (64-bit arrays keep their width)
                device = _device_put(a)
            rebind_value(tensors[i], device)
            feeds[i] = device
