"""An error raised from converted code shows the user's frames, each with its
source line, and hides d2s's own (one boundary frame stays, where the error
leaves d2s, as JAX's filtered tracebacks keep theirs); D2S_FULL_TRACEBACK=1
shows every frame."""
from __future__ import annotations

import os
import traceback

import numpy as np
import pytest

import d2s
from d2s.jit import to_static
from d2s.static.control_flow import ControlFlowError

_D2S_DIR = os.path.dirname(os.path.abspath(d2s.__file__)) + os.sep
_THIS = os.path.abspath(__file__)


def _lines_of(marker):
    with open(_THIS) as f:
        return [i + 1 for i, line in enumerate(f) if line.rstrip().endswith(marker)]


def helper(x):
    if x.sum() > 0:  # TB:branch
        y = x * 2.0
    else:
        y = d2s.zeros([5])
    return y


@to_static
def shapes_differ(x):
    z = x + 1.0
    return helper(z)  # TB:call


@to_static
def outer(x):
    return shapes_differ(x) * 2.0  # TB:outer


def _raise(fn):
    with pytest.raises(ControlFlowError) as info:
        fn(d2s.to_tensor(np.ones(3, "float32")))
    return info.value


@pytest.mark.parametrize("fn, markers", [
    (shapes_differ, ["# TB:call", "# TB:branch"]),
    (outer, ["# TB:outer", "# TB:call", "# TB:branch"]),  # a converted function calling one
])
def test_only_the_users_frames_with_their_source(fn, markers, monkeypatch):
    monkeypatch.delenv("D2S_FULL_TRACEBACK", raising=False)
    exc = _raise(fn)
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [(f.filename, f.name) for f in frames if f.filename.startswith(_D2S_DIR)]
    assert inside == [(os.path.join(_D2S_DIR, "jit", "static_function.py"), "__call__")]
    mine = [(f.lineno, f.line) for f in frames if f.filename == _THIS][1:]  # after the test's
    want = [(line, open(_THIS).read().splitlines()[line - 1].strip())
            for m in markers for line in _lines_of(m)]
    assert mine == want
    text = "".join(traceback.format_exception(exc))
    assert "if x.sum() > 0:  # TB:branch" in text and "<d2s converted" not in text
    assert "D2S_FULL_TRACEBACK=1" in text
    assert len(text.splitlines()) < 25, text


def test_full_traceback_keeps_every_frame(monkeypatch):
    monkeypatch.setenv("D2S_FULL_TRACEBACK", "1")
    exc = _raise(shapes_differ)
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if f.filename.startswith(_D2S_DIR)]
    assert len(inside) >= 5                             # the tracer's and the converter's
    assert any(f.filename.startswith("<d2s converted") for f in frames)
    assert any(f.name == "_check_compatible" for f in inside)  # where it was raised


def test_the_error_type_and_message_are_kept(monkeypatch):
    monkeypatch.delenv("D2S_FULL_TRACEBACK", raising=False)
    exc = _raise(shapes_differ)
    assert "'y' has shape [3] and [5] in the two branches" in str(exc)
    assert f'File "{_THIS}", line {_lines_of("# TB:branch")[0]}, in helper' in str(exc)
