"""The one switch between modes, and the converted-code log level."""
from __future__ import annotations

import os
import sys

_state = {"enabled": True, "code_level": int(os.environ.get("D2S_CODE_LEVEL", "0") or 0)}


def enable_to_static(flag):
    """With False, every StaticFunction runs its original Python function eagerly."""
    _state["enabled"] = bool(flag)


def to_static_enabled():
    return _state["enabled"]


def set_code_level(level=100):
    """Print converted code (to stdout) when a function is converted; 0 turns it off.
    The environment variable D2S_CODE_LEVEL sets the initial level."""
    _state["code_level"] = int(level)


def log_code(name, code):
    if _state["code_level"] > 0:
        print(f"# d2s: converted code of {name}\n{code}", file=sys.stdout)
