"""Keep freed array memory in the process for the next call (glibc only).

A compiled numpy program allocates its large intermediates afresh on every
call and frees them at its end. glibc's malloc serves blocks above its
mmap threshold with fresh `mmap`s and gives the top of its heap back to
the system once enough of it is free, so the next call touches new pages:
one page fault per 4 KiB, each zero-filled by the kernel. For a training
step of batch-sized activations that system time rivals the arithmetic
(W7, the small CNN step, spent more time in page faults than in its
convolutions' matrix products). Fixing the mmap threshold at glibc's own
dynamic ceiling and raising the trim threshold keeps those blocks in the
heap, where the next call finds them already mapped.

The setting is process-wide, so it is made once, when the first program
is compiled for this backend, and not at all where the user has tuned
malloc already (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`,
`GLIBC_TUNABLES`) or set `D2S_KEEP_HEAP=0`. Other C libraries: nothing.
"""
from __future__ import annotations

import ctypes
import os

# mallopt's parameter numbers (glibc <malloc.h>)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc's own upper bound for its dynamic mmap threshold on 64-bit systems
# (blocks larger than this still get their own mapping and go back when freed)
MMAP_THRESHOLD = 32 << 20
# free memory at the heap's top kept before it is returned to the system
TRIM_THRESHOLD = 128 << 20

_USER_SET = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
_state = {"done": False, "applied": False}


def keep_freed_pages():
    """Apply the thresholds once per process; True if they are in effect."""
    if _state["done"]:
        return _state["applied"]
    _state["done"] = True
    if os.environ.get("D2S_KEEP_HEAP", "1") == "0" or any(v in os.environ for v in _USER_SET):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (AttributeError, ValueError, OSError):  # not glibc (macOS, musl, Windows)
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # (mallopt returns 1 on success; setting either turns glibc's dynamic
    # adjustment off, so both are set)
    _state["applied"] = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _state["applied"]
