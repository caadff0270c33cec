"""Text generation written as plain eager Python, converted whole by
`d2s.jit.to_static` into one program per (batch, prompt length).

The loop is a `while` on a tensor condition (steps left and some sequence
not finished), so converted it is one `while` op: a whole generation is one
call. Each layer's keys and values live in a cache preallocated for
prompt + new tokens and written by item assignment at the current position,
so every loop variable keeps its shape. Sampling uses d2s's generator
(`d2s.seed` makes eager and converted draws equal): temperature, then top-k
(`d2s.topk`), then nucleus top-p (`d2s.sort` + `d2s.cumsum`), then an
inverse-CDF draw from uniforms drawn before the loop (a random op inside a
tensor loop would keep the xla backend from compiling it); temperature 0 is
greedy (argmax).

A sequence that produced `eos_id` is finished: from then on it emits
`pad_id` (default `eos_id`) only.
"""
from __future__ import annotations

import d2s
import d2s.nn.functional as F


def check_args(model, prompt_shape, max_new_tokens, temperature, top_k, top_p):
    """Plain-Python checks, made before any tracing: each names its argument."""
    if len(prompt_shape) != 2:
        raise ValueError(f"generate: prompt_ids must be [batch, length], got shape "
                         f"{list(prompt_shape)}")
    if not isinstance(max_new_tokens, int) or max_new_tokens <= 0:
        raise ValueError(f"generate: max_new_tokens must be a positive int, got {max_new_tokens!r}")
    limit = model.config.max_position_embeddings
    if prompt_shape[1] + max_new_tokens > limit:
        raise ValueError(f"generate: the prompt ({prompt_shape[1]} tokens) plus max_new_tokens "
                         f"({max_new_tokens}) exceed the cache of max_position_embeddings="
                         f"{limit} positions; shorten the prompt or max_new_tokens")
    if temperature < 0:
        raise ValueError(f"generate: temperature must be >= 0 (0 is greedy), got {temperature}")
    if top_k is not None and (not isinstance(top_k, int) or top_k <= 0):
        raise ValueError(f"generate: top_k must be a positive int or None, got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"generate: top_p must be in (0, 1] or None, got {top_p!r}")


def filter_logits(logits, top_k=None, top_p=None):
    """-inf outside the top_k largest and outside the smallest set whose
    probabilities sum to at least top_p (the largest always stays)."""
    neg_inf = d2s.full_like(logits, float("-inf"))
    if top_k is not None and top_k < logits.shape[-1]:
        kth = d2s.topk(logits, top_k, axis=-1)[0][:, -1:]
        logits = d2s.where(logits < kth, neg_inf, logits)
    if top_p is not None and top_p < 1.0:
        ordered = d2s.sort(logits, axis=-1, descending=True)
        probs = F.softmax(ordered, axis=-1)
        before = d2s.cumsum(probs, axis=-1) - probs          # mass of the larger ones
        keep = before < top_p
        cutoff = d2s.min(d2s.where(keep, ordered, d2s.full_like(ordered, float("inf"))),
                         axis=-1, keepdim=True)
        logits = d2s.where(logits < cutoff, neg_inf, logits)
    return logits


def sample(logits, u, temperature, top_k, top_p):
    """One int64 token per row of logits [B, V]; `u` [B] holds uniform
    draws in [0, 1): the token is where u falls in the cumulative
    distribution (the inverse-CDF draw `d2s.multinomial` makes)."""
    if temperature == 0:
        return d2s.argmax(logits, axis=-1)
    probs = F.softmax(filter_logits(logits / temperature, top_k, top_p), axis=-1)
    cdf = d2s.cumsum(probs, axis=-1)
    cdf = cdf / cdf[:, -1:]                      # ends at exactly 1, so u < 1 stays inside
    return d2s.sum((cdf <= u.unsqueeze(-1)).astype("int64"), axis=-1)


def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
             eos_id=None, pad_id=None):
    """int64 [B, max_new_tokens]: the tokens that follow each prompt row.
    Rows that finish early are filled with pad_id (eos_id when None)."""
    check_args(model, prompt_ids.shape, max_new_tokens, temperature, top_k, top_p)
    batch, plen = prompt_ids.shape[0], prompt_ids.shape[1]
    if pad_id is None:
        pad_id = 0 if eos_id is None else eos_id
    caches = model.new_cache(batch, plen + max_new_tokens)
    logits, caches = model.forward_cached(prompt_ids, caches, 0)
    out = d2s.full([batch, max_new_tokens], pad_id, dtype="int64")
    finished = d2s.zeros([batch], dtype="bool")
    # All the uniform draws at once, before the loop: a run draws the same
    # numbers however many steps it takes, so the loop holds no random op
    # (the xla backend can then compile it whole).
    uniforms = d2s.rand([max_new_tokens, batch]) if temperature > 0 else None
    step = d2s.zeros([], dtype="int64")
    while step < max_new_tokens and not d2s.all(finished):
        token = sample(logits, None if uniforms is None else uniforms[step],
                       temperature, top_k, top_p)
        token = d2s.where(finished, d2s.full_like(token, pad_id), token)
        out[:, step] = token
        if eos_id is not None:
            finished = finished | (token == eos_id)
        logits, caches = model.forward_cached(token.unsqueeze(-1), caches, plen + step)
        step = step + 1
    return out
