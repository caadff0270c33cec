"""Fixtures shared by the xla backend's tests (jax is imported only by the
fixtures that need it, so the tests of a missing jax still collect)."""
import warnings

import pytest


@pytest.fixture
def sends(monkeypatch):
    """The arrays the parameter store copies to the device, in order."""
    from d2s.backends.xla import params as device_params
    sent = []
    real = device_params.jax.device_put

    def counting(x, *args, **kwargs):
        sent.append(x)
        return real(x, *args, **kwargs)
    monkeypatch.setattr(device_params.jax, "device_put", counting)
    return sent


@pytest.fixture
def strict():
    """A fallback to numpy fails the test (these programs must lower)."""
    from d2s.static.backend import BackendFallbackWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        yield
