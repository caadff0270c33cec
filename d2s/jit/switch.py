"""The one switch between modes, and the converted-code log level."""
from __future__ import annotations

import os
import sys

# The switch's state; read directly (SWITCH["enabled"]) where a function call
# per call would show: StaticFunction's cache hits.
SWITCH = {"enabled": True, "code_level": int(os.environ.get("D2S_CODE_LEVEL", "0") or 0)}


def enable_to_static(flag):
    """With False, every StaticFunction runs its original Python function eagerly."""
    SWITCH["enabled"] = bool(flag)


def to_static_enabled():
    return SWITCH["enabled"]


def set_code_level(level=100):
    """Print converted code (to stdout) when a function is converted; 0 turns it off.
    The environment variable D2S_CODE_LEVEL sets the initial level."""
    SWITCH["code_level"] = int(level)


def log_code(name, code):
    if SWITCH["code_level"] > 0:
        print(f"# d2s: converted code of {name}\n{code}", file=sys.stdout)
