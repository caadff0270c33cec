"""Captured parameters as device arrays kept between calls.

A program captures eager Tensors by reference. Copying their arrays to the
device on every call would cost more than small programs compute, so each
Tensor's device copy is kept with the host array it was made from, and sent
again only when the Tensor holds another array object.

Why identity and not a version number: d2s never writes into a Tensor's
array, it rebinds it (optimizer steps, `set_state_dict`, results written
back by a program), so "another array object" is exactly "updated" — at no
cost to eager code, and whoever rebinds `_value` is covered. The one way
around it is a user writing in place into `tensor.numpy()`; so the array a
device copy was made from is made read-only, and such a write raises
instead of leaving the device copy stale.

A program that writes parameters may donate their device buffers to XLA
(`donate`): the new value is computed into the old one's memory, as numpy
updates in place. The host array a Tensor holds is then a view of memory
the run overwrites, so a buffer is donated only when nothing but d2s holds
that view (reference counts, as the numpy backend's in-place updates check
ownership): an array someone took (`tensor.numpy()`, a gradient tape's saved
inputs, another program's cache) keeps its value, and that parameter goes in
as a host array that JAX copies.

A Tensor rebound since the last call is passed as its host array for that
call, and copied to the device only when the next call finds it unchanged:
a parameter an eager optimizer updates every step is never copied twice.

One device copy per Tensor is shared by every program that captured it (a
training step's write-back is what the forward program reads next). In a
sharded run (see `sharding`) the copy is laid out by the run's sharding,
made at once (a host array cannot stand in for a layout across devices),
and a program wanting the Tensor laid out otherwise sends it again.
"""
from __future__ import annotations

import operator
import sys
import weakref

import numpy as np

from ...core.tensor import (_DEVICE_TYPES, _RAW_SET, DeviceTensor, is_device_array,
                            on_host_copy, rebind_value, register_device_type)
from ._jax import jax, x64
from .sharding import put, to_host

# JAX's array type (what an XLA call returns): a Tensor may hold one.
# (`aval`, kept on the array: its shape and dtype without the properties' cost)
register_device_type(type(jax.device_put(np.zeros((), np.float32))), meta="aval")

# id(Tensor) -> (host array, device array, sharding or None); entries leave
# with their Tensor.
_SHARED = {}

_getrefcount = sys.getrefcount
_is = operator.is_
# A Tensor's array as held: a numpy array, or a device array (a device-resident
# Tensor, `d2s.core.tensor.DeviceTensor`: read without making its host copy).
_VALUE = operator.attrgetter("_raw")
_ndarray = np.ndarray
# References to a parameter's host array when only d2s holds it, as `donate`
# counts them: the Tensor's slot, `_host`, the local name, getrefcount's argument
# (and the `_SHARED` entry, counted apart).
_SOLE_REFS = 4


def _remember(tensor, host, device, sharding=None):
    key = id(tensor)
    if key not in _SHARED:
        weakref.finalize(tensor, _SHARED.pop, key, None)
    _SHARED[key] = (host, device, sharding)


def _host_copy_made(tensor, host, device):
    """A device-resident parameter's host copy was made (`.numpy()`, an eager
    op): the device array stays its device copy, so the next call sends
    nothing; the host copy is made read-only, as every host array a device
    copy stands for is (an in-place write would leave the copy stale)."""
    shared = _SHARED.get(id(tensor))
    if shared is not None and shared[1] is device:
        host.flags.writeable = False
        _SHARED[id(tensor)] = (host, device, shared[2])


on_host_copy[0] = _host_copy_made


class DeviceParams:
    """The device arrays of a program's captured Tensors, in one order."""

    def __init__(self, program, names):
        gb = program.global_block()
        self.names = list(names)
        self.tensors = [program.captured[n] for n in names]
        self.vars = [gb.vars[n] for n in names]
        self._host = [None] * len(names)
        self._device = [None] * len(names)
        self._sharding = [None] * len(names)  # the layout of each device copy (None: one device)
        # True once each host array has its device copy and none is laid out:
        # `device_values` then only checks that no Tensor was rebound.
        self._settled = False

    def device_values(self, tensors=None, shardings=None):
        """The parameters' current arrays for a call: device arrays, except for a
        Tensor rebound since the last call, whose new host array goes in as an
        argument (XLA copies it in C++, cheaper than a device copy made in
        Python) and gets its device copy when a call finds it unchanged (a
        parameter updated every step is never copied twice).
        `tensors`: the Tensors to read now, in `names` order, where the caller
        may have rebound some since (a replaced Layer attribute); `shardings`:
        their layouts in a sharded run (one per parameter)."""
        if tensors is not None:
            self.tensors = tensors
        if shardings is not None:
            self._settled = False
            return self._laid_out(shardings)
        host = self._host
        if self._settled and all(map(_is, map(_VALUE, self.tensors), host)):
            return self._device  # the common case: nothing rebound, all on the device
        device, laid = self._device, self._sharding
        for i, t in enumerate(self.tensors):
            value = t._raw
            if value is not host[i] or laid[i] is not None:
                self._refresh(i, value)
            elif device[i] is value and type(value) is _ndarray:
                self._to_device(i, value)  # passed from the host last time, unchanged since
        device = self._device  # replaced, never changed in place, by a later refresh
        # Settled: every copy on the device, none laid out (a call that rebinds
        # a Tensor, or a sharded run, takes the loop again).
        self._settled = (laid.count(None) == len(laid)
                         and not any(type(d) is _ndarray for d in device))
        return device

    def _laid_out(self, shardings):
        """Device arrays laid out by `shardings` (a sharded run)."""
        for i, t in enumerate(self.tensors):
            value, sharding = t._value, shardings[i]  # (a host copy: laid out from it)
            if value is self._host[i] and sharding == self._sharding[i]:
                continue
            shared = _SHARED.get(id(t))
            if shared is not None and shared[0] is value and shared[2] == sharding:
                device = shared[1]
            else:
                self._check(i, value)
                value.flags.writeable = False  # in-place writes would leave the copy stale
                device = put(value, sharding)
                _remember(t, value, device, sharding)
            self._host[i] = value
            self._sharding[i] = sharding
            self._set_device(i, device)
        return self._device

    def _check(self, i, value):
        var = self.vars[i]
        if value.dtype != var.dtype or value.shape != var.shape:
            raise ValueError(
                f"parameter '{var.name}' now holds {value.dtype.name}{list(value.shape)}; "
                f"the program was built for {var.dtype.name}{list(var.shape)}")

    def _refresh(self, i, value):
        tensor = self.tensors[i]
        shared = _SHARED.get(id(tensor))
        self._sharding[i] = None
        if shared is not None and shared[0] is value and shared[2] is None:
            device = shared[1]
        elif type(value) is not _ndarray and is_device_array(value):
            device = value  # a device-resident Tensor: its own device array
            self._check(i, value)
        else:
            self._check(i, value)
            device = value  # this call reads the host array itself
        self._host[i] = value
        self._set_device(i, device)

    def _to_device(self, i, value):
        value.flags.writeable = False  # in-place writes would leave the copy stale
        with x64():
            device = jax.device_put(value)
        _remember(self.tensors[i], value, device)
        self._set_device(i, device)

    def _set_device(self, i, device):
        devices = list(self._device)  # a new list: earlier callers keep their snapshot
        devices[i] = device
        self._device = devices

    def write(self, positions, device_values):
        """A program's new values of the parameters at `positions`: each Tensor
        holds its new device array (it is device-resident: its host copy is
        made when host code reads it), which the next call reads as it is. A
        sharded value is gathered to a (read-only) host array instead."""
        devices = list(self._device)  # a new list: earlier callers keep their snapshot
        host, laid, tensors = self._host, self._sharding, self.tensors
        shared = _SHARED
        for i, device_value in zip(positions, device_values):
            if laid[i] is None:
                tensor = tensors[i]
                if type(device_value) in _DEVICE_TYPES:  # (`rebind_value` inline)
                    _RAW_SET(tensor, device_value)
                    if tensor.__class__ is not DeviceTensor:
                        tensor.__class__ = DeviceTensor
                else:
                    rebind_value(tensor, device_value)
                key = id(tensor)  # (`_remember(tensor, None, device_value)` inline)
                if key not in shared:
                    weakref.finalize(tensor, shared.pop, key, None)
                shared[key] = (None, device_value, None)  # (see `_host_copy_made`)
                host[i] = device_value
            else:  # (to_host gathers a value sharded across processes)
                value = to_host(device_value)
                tensors[i]._value = value
                _remember(tensors[i], value, device_value, laid[i])
                host[i] = value
            devices[i] = device_value
        self._device = devices

    # ---- donation ---------------------------------------------------------------------------
    def donate(self, positions, args):
        """Prepare `args` (this call's parameter arguments, in `names` order) for
        a run donating the parameters at `positions`: one whose host array only
        d2s holds goes in as its device array, and the Tensor lets go of the
        host view (else XLA would have to copy: a live view pins the buffer);
        any other goes in as its host array, which JAX copies. Returns what
        `restore` needs should the call fail. While the run is in flight a
        released Tensor holds no array: the caller holds Ctrl-C back until
        the new values are written (`XlaProgram._run`, `_fast_step`), and a
        converted function called from another thread meanwhile runs again
        once the step is done (`d2s.core.state_lock`)."""
        released = []
        for i in positions:
            tensor, device = self.tensors[i], args[i]
            value = tensor._raw
            if device is value:  # passed as it is held (a host array, or its own device array)
                continue
            shared = _SHARED.get(id(tensor))
            in_shared = shared is not None and shared[0] is value
            sole = _SOLE_REFS + in_shared - (self._host[i] is not value)
            if _getrefcount(value) > sole:
                args[i] = value
                continue
            if in_shared:  # the entry stays (its finalizer too): no host view in it
                _SHARED[id(tensor)] = (None, shared[1], shared[2])
            self._host[i] = None
            tensor._value = None  # the new value replaces it after the run
            released.append((i, device))
        return released

    def restore(self, released, error):
        """After a failed call: give back the Tensors `donate` released their
        host views (their buffers are intact when the call failed before XLA
        took them)."""
        for i, device in released:
            tensor = self.tensors[i]
            if device.is_deleted():
                raise RuntimeError(
                    f"parameter '{self.names[i]}' lost its value: XLA failed in the run its "
                    "buffer was donated to") from error
            host = to_host(device)
            tensor._value = host
            _remember(tensor, host, device, self._sharding[i])
            self._host[i] = host
