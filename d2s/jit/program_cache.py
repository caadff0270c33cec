"""The programs one StaticFunction keeps: a bounded LRU by input signature.

Each distinct signature builds a program, so a function called with a Python
argument whose value keeps changing would keep every program it ever built.
The cache holds at most `cache_limit()` programs (`set_cache_limit(n)`,
default 32) and evicts the least recently used; a call that needs an evicted
signature again builds it again.

Recency is a tick from a global clock stamped on the entry at each use, so a
cache hit (also on the StaticFunction's fast path) costs one attribute store
and takes no lock; the scan for the oldest entry happens only when a build
overflows the cache. Mutations (add, evict, fast-path entries) take the
cache's lock, so the fast table never holds, nor gets back after an
eviction, an entry that is no longer cached.
"""
from __future__ import annotations

import itertools
import threading

DEFAULT_CACHE_LIMIT = 32
_limit = {"programs": DEFAULT_CACHE_LIMIT}
CLOCK = itertools.count()  # ticks of use; `next` is atomic

# Fast-path keys map calls (shapes, Python scalars) onto cached programs; an
# InputSpec with None dims gives one key per size seen, so the table is
# cleared when it grows past this (it refills on the next calls).
_FAST_KEYS_LIMIT = 1024


def set_cache_limit(n):
    """Keep at most `n` programs per function (least recently used evicted).

    Applies to every StaticFunction from its next build on."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_cache_limit expects a positive int, got {n!r}")
    _limit["programs"] = n


def cache_limit():
    return _limit["programs"]


class CacheEntry:
    __slots__ = ("program", "signature", "last_used")

    def __init__(self, program, signature):
        self.program = program
        self.signature = signature
        self.last_used = next(CLOCK)


class ProgramCache:
    """Signature key -> ConcreteProgram, at most `cache_limit()` of them.

    `len()` is the number of programs held. `fast` maps StaticFunction's
    fast-path keys to `(CacheEntry, positions of the tensor arguments)`, the
    positions None when every argument is one.
    """

    def __init__(self):
        self._entries = {}
        self._last = None    # the entry built last (PaddlePaddle's concrete_program)
        self._lock = threading.Lock()
        self.fast = {}
        self.builds = 0      # programs built over the function's life, evicted ones too

    def __len__(self):
        return len(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def get(self, key):
        """The program for `key` (marked used), or None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry.last_used = next(CLOCK)
        return entry.program

    def add(self, signature, program):
        """Cache a newly built program; returns the signatures evicted for it."""
        with self._lock:
            entry = CacheEntry(program, signature)
            self._entries[signature.key] = entry
            self._last = entry
            self.builds += 1
            evicted = []
            while len(self._entries) > cache_limit():
                oldest = min(self._entries.values(), key=lambda e: e.last_used)
                self._evict(oldest)
                evicted.append(oldest.signature)
            return evicted

    def _evict(self, entry):
        del self._entries[entry.signature.key]
        for key in [k for k, (e, _) in self.fast.items() if e is entry]:
            del self.fast[key]

    def remember_fast(self, fast_key, signature_key, positions):
        """Serve later calls with `fast_key` from the program cached for
        `signature_key`, unless it was evicted in the meantime."""
        with self._lock:
            entry = self._entries.get(signature_key)
            if entry is None:
                return
            if len(self.fast) >= _FAST_KEYS_LIMIT:
                self.fast.clear()
            self.fast[fast_key] = (entry, positions)

    def signatures(self):
        """Signatures of the cached programs, least recently used first."""
        return [e.signature for e in sorted(self._entries.values(),
                                            key=lambda e: e.last_used)]

    def concrete_programs(self):
        return [e.program for e in self._entries.values()]

    def last_signature(self):
        return None if self._last is None else self._last.signature

    def last_program(self):
        """The program built last, if it is still cached."""
        last = self._last
        if last is None or self._entries.get(last.signature.key) is not last:
            return None
        return last.program
