"""Paddle's functions over process-wide state: the gradient mode
(`is_grad_enabled`, `set_grad_enabled`, `enable_grad`), the random
generator's state (`get_rng_state` / `set_rng_state`, and the CUDA ones,
which have no generators to report on a host-only build: empty lists) and
how tensors print (`set_printoptions`)."""
from __future__ import annotations

import copy

from .core import random as _random
from .core import state as _state

__all__ = ["is_grad_enabled", "set_grad_enabled", "enable_grad", "get_rng_state",
           "set_rng_state", "get_cuda_rng_state", "set_cuda_rng_state", "set_printoptions"]

enable_grad = _state.enable_grad


def is_grad_enabled():
    """Whether eager ops record the tape now (this thread)."""
    return bool(_state.grad_enabled())


class set_grad_enabled:
    """`set_grad_enabled(mode)` turns gradient recording on or off now; used
    as a context manager (`with d2s.set_grad_enabled(False): ...`) the
    previous mode comes back at the end of the block."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {mode!r}")
        self._previous = _state.grad_enabled()
        _state._tls.grad_enabled = mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state._tls.grad_enabled = self._previous
        return False


class _GeneratorState:
    """An opaque copy of the generator's state (Paddle's GeneratorState)."""

    def __init__(self, state):
        self._state = state

    def __repr__(self):
        return f"GeneratorState({self._state.get('bit_generator', '?')})"


def get_rng_state(device=None):
    """[the state of d2s's random generator] (one generator: the host's)."""
    return [_GeneratorState(copy.deepcopy(_random.generator().bit_generator.state))]


def set_rng_state(state_list, device=None):
    """Put back a state `get_rng_state` gave: the draws that followed it are
    drawn again."""
    states = list(state_list)
    if len(states) != 1 or not isinstance(states[0], _GeneratorState):
        raise ValueError("set_rng_state: expected the list get_rng_state() returned")
    _random.generator().bit_generator.state = copy.deepcopy(states[0]._state)


def get_cuda_rng_state():
    """The CUDA generators' states: none on d2s (host only), an empty list."""
    return []


def set_cuda_rng_state(state_list):
    if list(state_list):
        raise ValueError("set_cuda_rng_state: d2s has no CUDA generators; pass the empty "
                         "list get_cuda_rng_state() returned")


_SCI_MODE = [None]  # set_printoptions' sci_mode, kept to rebuild the float format


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None,
                     linewidth=None):
    """How tensors print from now on (options left None keep their value):
    `precision` digits after the point, `threshold` elements before the
    middle is summarized with `edgeitems` at each end, `sci_mode` True /
    False forces scientific / fixed notation for floats, `linewidth`
    characters per line."""
    from .core.tensor import PRINT_OPTIONS as opts
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("max_line_width", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"set_printoptions: {key} must be a non-negative int, got "
                                 f"{value!r}")
            opts[key] = value
    if sci_mode is not None:
        if not isinstance(sci_mode, bool):
            raise TypeError(f"set_printoptions: sci_mode must be a bool, got {sci_mode!r}")
        _SCI_MODE[0] = sci_mode
    opts.pop("formatter", None)
    if _SCI_MODE[0] is not None:
        spec = f".{opts.get('precision', 8)}{'e' if _SCI_MODE[0] else 'f'}"
        opts["formatter"] = {"float_kind": lambda v: format(v, spec)}
