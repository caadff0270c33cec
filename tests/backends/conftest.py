"""The toy backend (tests/backends/toy_backend), registered for a test."""
import pytest


@pytest.fixture
def toy():
    """Registers "toy" (a fresh ToyBackend; its op log emptied) for the test."""
    from d2s import backends

    import toy_backend
    toy_backend.RUNS.clear()
    backends.register_backend("toy", toy_backend.ToyBackend)
    try:
        yield toy_backend
    finally:
        backends.unregister_backend("toy")
