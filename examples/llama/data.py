"""Training text that ships with every Python install: the source files of
a few standard-library modules, read from disk (no download), as bytes.

Tokens are bytes (vocabulary 256), so there is no tokenizer to train or
ship. The corpus is split once: the last `held_out` fraction of the bytes is
never trained on and serves for perplexity.
"""
from __future__ import annotations

import importlib
import inspect

import numpy as np

DEFAULT_MODULES = ("json.decoder", "json.encoder", "argparse", "textwrap", "string", "shlex")
VOCAB_SIZE = 256


def corpus_bytes(modules=DEFAULT_MODULES):
    """The concatenated source of `modules`, each file as UTF-8 bytes."""
    parts = []
    for name in modules:
        path = inspect.getsourcefile(importlib.import_module(name))
        if path is None:
            raise FileNotFoundError(f"data: no source file for module {name!r}")
        with open(path, "rb") as f:
            parts.append(f.read())
    return b"\n".join(parts)


def split(data, held_out=0.1):
    """(train, held-out) uint8 arrays: the held-out part is the tail."""
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"data: held_out must be in (0, 1), got {held_out}")
    arr = np.frombuffer(data, dtype=np.uint8)
    cut = int(len(arr) * (1.0 - held_out))
    return arr[:cut], arr[cut:]


def unigram_entropy(tokens):
    """Entropy in nats of the byte frequencies: the loss of a model that
    ignores context, which a trained model must beat."""
    counts = np.bincount(tokens, minlength=VOCAB_SIZE).astype(np.float64)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def eval_windows(tokens, seq_len, max_windows=None):
    """Consecutive non-overlapping windows of seq_len + 1 bytes for a
    deterministic held-out loss."""
    n = (len(tokens) - 1) // seq_len
    if max_windows is not None:
        n = min(n, max_windows)
    return np.stack([tokens[i * seq_len:i * seq_len + seq_len + 1] for i in range(n)]
                    ).astype(np.int64)
