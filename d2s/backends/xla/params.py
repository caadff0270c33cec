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

A Tensor rebound since the last call is passed as its host array for that
call, and copied to the device only when the next call finds it unchanged:
a parameter an eager optimizer updates every step is never copied twice.

One device copy per Tensor is shared by every program that captured it (a
training step's write-back is what the forward program reads next).
"""
from __future__ import annotations

import weakref

import numpy as np

from ._jax import jax, x64

# id(Tensor) -> (host array, device array); entries leave with their Tensor.
_SHARED = {}


def _remember(tensor, host, device):
    key = id(tensor)
    if key not in _SHARED:
        weakref.finalize(tensor, _SHARED.pop, key, None)
    _SHARED[key] = (host, device)


class DeviceParams:
    """The device arrays of a program's captured Tensors, in one order."""

    def __init__(self, program, names):
        gb = program.global_block()
        self.names = list(names)
        self.tensors = [program.captured[n] for n in names]
        self.vars = [gb.vars[n] for n in names]
        self._host = [None] * len(names)
        self._device = [None] * len(names)

    def device_values(self, tensors=None):
        """The parameters' current arrays for a call: device arrays, except for a
        Tensor rebound since the last call, whose new host array goes in as an
        argument (XLA copies it in C++, cheaper than a device copy made in
        Python) and gets its device copy when a call finds it unchanged (a
        parameter updated every step is never copied twice).
        `tensors`: the Tensors to read now, in `names` order, where the caller
        may have rebound some since (a replaced Layer attribute)."""
        if tensors is not None:
            self.tensors = tensors
        host, device = self._host, self._device
        for i, t in enumerate(self.tensors):
            value = t._value
            if value is not host[i]:
                self._refresh(i, value)
            elif device[i] is value:  # passed from the host last time, unchanged since
                self._to_device(i, value)
        return self._device  # replaced, never changed in place, by a later refresh

    def _refresh(self, i, value):
        tensor = self.tensors[i]
        shared = _SHARED.get(id(tensor))
        var = self.vars[i]
        if shared is not None and shared[0] is value:
            device = shared[1]
        elif value.dtype != var.dtype or value.shape != var.shape:
            raise ValueError(
                f"parameter '{var.name}' now holds {value.dtype.name}{list(value.shape)}; "
                f"the program was built for {var.dtype.name}{list(var.shape)}")
        else:
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

    def write(self, name, device_value):
        """A program's new value of parameter `name`: rebinds the Tensor to a
        (read-only) host view, and keeps the device array for the next call."""
        i = self.names.index(name)
        host = np.asarray(device_value)
        self.tensors[i]._value = host
        _remember(self.tensors[i], host, device_value)
        self._host[i] = host
        self._set_device(i, device_value)
