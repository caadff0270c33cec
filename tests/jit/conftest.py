"""Fixtures shared by the jit tests."""
import pytest

from d2s.static.executor import executor_mode, set_executor_mode


@pytest.fixture(params=["compiled", "interpreter"])
def each_executor(request):
    """Run the test once with the compiled executor and once with the interpreter."""
    previous = executor_mode()
    set_executor_mode(request.param)
    yield request.param
    set_executor_mode(previous)
