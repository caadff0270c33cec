"""`fused_rotary_position_embedding` (Paddle's
`paddle.incubate.nn.functional`): rotary position embedding of q, k and v,
written with d2s's tensor ops (slices, stack/concat, products), so it has
every backend's rules and its gradient.

Layout [batch, seq_len, num_heads, head_dim] ([seq_len, batch, ...] with
`time_major`); `sin` / `cos` are [seq_len, head_dim] or [1, seq_len, 1,
head_dim], or gathered by `position_ids` [batch, seq_len]. Paddle's
`use_neox_rotary_style=True` rotates adjacent pairs `(x0, x1) -> (-x1, x0)`;
False rotates halves `[x1, x2] -> [-x2, x1]`. Without `sin` / `cos` they
are computed as Paddle's kernel does: position `p`, dims `2i` and `2i + 1`
both at angle `p / rotary_emb_base ** (2i / head_dim)`.
"""
from __future__ import annotations

import numpy as np

from ...core.ops import concat, reshape, stack, transpose, unsqueeze
from ...core.ops._base import constant, lift

__all__ = ["fused_rotary_position_embedding"]


def _default_sin_cos(seq_len, head_dim, base, dtype):
    pos = np.arange(seq_len, dtype=np.float64)[:, None]
    inv = 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angle = np.repeat(pos * inv[None, :], 2, axis=1)  # [seq_len, head_dim], pairs equal
    return (constant(np.sin(angle).astype(dtype)), constant(np.cos(angle).astype(dtype)))


def _rotate(x, neox):
    d = x.shape[-1]
    if neox:
        pairs = stack([-x[..., 1::2], x[..., 0::2]], axis=-1)  # [..., D/2, 2]
        return reshape(pairs, [0] * (len(x.shape) - 1) + [d])
    return concat([-x[..., d // 2:], x[..., :d // 2]], axis=-1)


def fused_rotary_position_embedding(q, k=None, v=None, sin=None, cos=None, position_ids=None,
                                    use_neox_rotary_style=True, time_major=False,
                                    rotary_emb_base=10000.0):
    """(rotated q, rotated k or None, rotated v or None)."""
    q = lift(q)
    if len(q.shape) != 4:
        raise ValueError(f"fused_rotary_position_embedding: q must be 4-D [batch, seq_len, "
                         f"num_heads, head_dim], got {list(q.shape)}")
    head_dim = q.shape[3]
    seq_len = q.shape[0 if time_major else 1]
    if head_dim is None or head_dim % 2:
        raise ValueError(f"fused_rotary_position_embedding: head_dim must be known and even, "
                         f"got {head_dim}")
    if (sin is None) != (cos is None):
        raise ValueError("fused_rotary_position_embedding: give both sin and cos, or neither")
    if sin is None:
        if seq_len is None:
            raise ValueError("fused_rotary_position_embedding: without sin/cos the sequence "
                             "length must be known")
        sin, cos = _default_sin_cos(seq_len, head_dim, float(rotary_emb_base),
                                    np.dtype(q.dtype))
    sin, cos = lift(sin), lift(cos)
    for name, t in (("sin", sin), ("cos", cos)):
        if len(t.shape) == 4:
            if t.shape[0] not in (1, None) or t.shape[2] not in (1, None):
                raise ValueError(f"fused_rotary_position_embedding: {name} must be [seq_len, "
                                 f"head_dim] or [1, seq_len, 1, head_dim], got {list(t.shape)}")
        elif len(t.shape) != 2:
            raise ValueError(f"fused_rotary_position_embedding: {name} must be [seq_len, "
                             f"head_dim] or [1, seq_len, 1, head_dim], got {list(t.shape)}")
    sin = reshape(sin, [-1, head_dim])
    cos = reshape(cos, [-1, head_dim])
    if position_ids is not None:
        ids = lift(position_ids)
        sin, cos = unsqueeze(sin[ids], 2), unsqueeze(cos[ids], 2)  # [batch, seq_len, 1, D]
        if time_major:
            sin, cos = transpose(sin, [1, 0, 2, 3]), transpose(cos, [1, 0, 2, 3])
    else:
        # [seq_len, 1, 1, D] (time major) or [1, seq_len, 1, D]
        shape = [-1, 1, 1, head_dim] if time_major else [1, -1, 1, head_dim]
        sin, cos = reshape(sin, shape), reshape(cos, shape)
    neox = bool(use_neox_rotary_style)

    def apply(x):
        if x is None:
            return None
        x = lift(x)
        if len(x.shape) != 4 or x.shape[3] != head_dim:
            raise ValueError(f"fused_rotary_position_embedding: k and v must be 4-D with "
                             f"head_dim {head_dim}, got {list(x.shape)}")
        return x * cos + _rotate(x, neox) * sin
    return apply(q), apply(k), apply(v)
