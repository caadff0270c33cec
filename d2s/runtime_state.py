"""Paddle's functions over process-wide state: the gradient mode
(`is_grad_enabled`, `set_grad_enabled`, `enable_grad`) and the random
generator's state (`get_rng_state` / `set_rng_state`, and the CUDA ones,
which have no generators to report on a host-only build: empty lists)."""
from __future__ import annotations

import copy

from .core import random as _random
from .core import state as _state

__all__ = ["is_grad_enabled", "set_grad_enabled", "enable_grad", "get_rng_state",
           "set_rng_state", "get_cuda_rng_state", "set_cuda_rng_state"]

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
