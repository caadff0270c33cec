"""`d2s.device` and the device shims at `d2s`: d2s computes on the CPU (numpy,
or XLA's CPU client), so ported scripts asking for the CPU run unchanged and a
request for a GPU is a clear error rather than a silent CPU run."""
from __future__ import annotations

__all__ = ["get_device", "set_device", "is_compiled_with_cuda", "CPUPlace", "CUDAPlace",
           "set_flags", "get_flags"]

_FLAGS = {}


def is_compiled_with_cuda():
    return False


def get_device():
    return "cpu"


def set_device(device):
    """Accepts "cpu" (returns a CPUPlace); any other device is an error."""
    if str(device).split(":")[0].lower() != "cpu":
        raise ValueError(f"set_device({device!r}): d2s runs on the CPU; use set_device('cpu') "
                         "(the xla backend compiles for the CPU too)")
    return CPUPlace()


class CPUPlace:
    def __repr__(self):
        return "Place(cpu)"

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")


class CUDAPlace:
    def __init__(self, id=0):
        raise RuntimeError("CUDAPlace: d2s runs on the CPU (is_compiled_with_cuda() is "
                           "False); use CPUPlace()")


def set_flags(flags):
    """Remembered (get_flags returns them); d2s has no flag that changes numbers."""
    if not isinstance(flags, dict):
        raise TypeError(f"set_flags: expects a dict, got {type(flags).__name__}")
    _FLAGS.update(flags)


def get_flags(flags):
    names = [flags] if isinstance(flags, str) else list(flags)
    return {n: _FLAGS.get(n) for n in names}
