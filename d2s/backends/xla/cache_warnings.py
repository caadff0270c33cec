"""JAX's own warnings about its compilation cache, folded into d2s's one.

d2s points JAX's persistent compilation cache at its own folder (see
`persistent`). When that folder cannot be written (a full disk, a folder
that turned read-only), JAX warns once per compile ("Error writing
persistent compilation cache entry ..."): a run of many programs printed
dozens of them, while d2s says the same once per cache root
(`d2s.cache_dir.report_unusable`, which also stops d2s from using the
folder, so JAX is not asked to write there again). Around each compile,
JAX's cache warnings become that one report; every other warning is shown
as it would have been.

`warnings.catch_warnings` swaps process-wide state, so the compiles it
wraps are serialized (one lock): two threads entering and leaving it out of
order could leave a recorder installed for good.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings

from ... import cache_dir as _cache_dir

__all__ = ["folded_cache_warnings"]

_JAX_CACHE = re.compile(r"Error (?:reading|writing) persistent compilation cache entry "
                        r"for '[^']*': (.*)", re.S)
_lock = threading.RLock()


@contextlib.contextmanager
def folded_cache_warnings(subfolder):
    """Within the block, JAX's cache warnings are reported as d2s's one warning
    about `cache_root()/subfolder` (the folder JAX was pointed at)."""
    with _lock:
        caught = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                yield
        finally:
            reason = _replay(caught)
    if reason is not None:
        root = _cache_dir.cache_root()
        if root is not None:
            _cache_dir.report_unusable(os.path.join(root, subfolder),
                                       f"JAX could not use it: {reason}")


def _replay(caught):
    """Show every warning in `caught` but JAX's cache ones; the first one's reason."""
    reason = None
    for w in caught:
        found = _JAX_CACHE.match(str(w.message))
        if found is not None:
            reason = reason or found.group(1).strip()
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                   source=w.source)
    return reason
