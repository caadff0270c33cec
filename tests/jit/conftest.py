"""Fixtures shared by the jit tests."""
import os

import pytest

from d2s.static.executor import executor_mode, set_executor_mode


@pytest.fixture(params=["compiled", "interpreter"])
def each_executor(request):
    """Run the test once with the compiled executor and once with the interpreter."""
    previous = executor_mode()
    set_executor_mode(request.param)
    yield request.param
    set_executor_mode(previous)


# Tests that check where a warning points: the walk's wrapper would be that frame.
_NO_WALK = ("test_program_cache.py",)


@pytest.fixture(autouse=True)
def no_variables_left_behind(request, monkeypatch):
    """After every converted call an eager caller makes in these tests, no
    static Variable is left in the layer (and its sublayers), the arguments or
    the globals and closure cells the function names (DESIGN §4; the walk is
    tests/jit/no_variables_left.py). Found ones fail the test at teardown."""
    if request.node.path.name in _NO_WALK or os.environ.get("D2S_TEST_NO_WALK"):
        yield
        return
    from d2s.core import state
    from d2s.jit.outliving import function_roots
    from d2s.jit.static_function import StaticFunction
    from no_variables_left import variables_left

    original = StaticFunction.__call__
    found = []

    def checked(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            if not state._tls.builders and state.in_dynamic_mode():
                roots = [("self", self._bound_self)] if self._bound_self is not None else []
                roots += [(f"argument {i}", a) for i, a in enumerate(args)]
                roots += [(f"argument {k!r}", v) for k, v in kwargs.items()]
                roots += function_roots(self._function)
                for path, var in variables_left(*roots, max_nodes=2000):
                    found.append(f"{self._function.__qualname__}: {path} ({var.name})")

    monkeypatch.setattr(StaticFunction, "__call__", checked)
    yield
    assert not found, "static Variables left in user objects after converted calls: " + \
        "; ".join(dict.fromkeys(found))
