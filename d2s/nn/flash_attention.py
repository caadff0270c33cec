"""`d2s.nn.functional.flash_attention`: Paddle's `flash_attention` entry point, computed
by `scaled_dot_product_attention` (the same numbers; d2s has no fused kernel)."""
from __future__ import annotations

from .common_functional import scaled_dot_product_attention

__all__ = ["flash_attention"]


def flash_attention(query, key, value, dropout=0.0, causal=False, return_softmax=False,
                    fixed_seed_offset=None, rng_name="", training=True, name=None):
    """(out, None): inputs (batch, seq_len, num_heads, head_dim)."""
    if return_softmax:
        raise NotImplementedError("flash_attention(return_softmax=True) is not supported")
    out = scaled_dot_product_attention(query, key, value, None, dropout, causal, training)
    return out, None
