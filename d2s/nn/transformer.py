"""`MultiHeadAttention` and the Transformer layers (Paddle's classes, sublayer
names, argument orders and masks), composed of `Linear`, `LayerNorm`,
`Dropout` and registered ops.

Masks follow Paddle: a bool or int mask keeps the positions that are True /
nonzero (the others get -1e9 before the softmax); a float mask is added to
the attention scores. Caches for incremental decoding are `Cache(k, v)`
(self-attention: the new keys and values are appended) and `StaticCache(k,
v)` (cross-attention: computed once from the encoder's output).
"""
from __future__ import annotations

import collections
import copy

import numpy as np

from ..core.ops import cast, concat, constant, full, matmul, reshape, softmax, transpose
from ..core.ops._base import lift
from . import functional as F
from .layer import Layer, LayerList
from .layers import Dropout, LayerNorm, Linear

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _convert_mask(mask, dtype):
    """Paddle's rule: bool / int masks keep True / nonzero; floats are added."""
    if mask is None:
        return None
    mask = lift(mask)
    if mask.dtype.kind in "biu":
        return (cast(mask, dtype) - 1.0) * 1e9
    return cast(mask, dtype)


class MultiHeadAttention(Layer):
    """Scaled dot-product attention over `num_heads` heads of `embed_dim //
    num_heads` dims, with input projections `q_proj`, `k_proj`, `v_proj` and an
    output projection `out_proj`. Inputs (batch, seq_len, embed_dim)."""

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None,
                 need_weights=False, weight_attr=None, bias_attr=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} must be a positive "
                             f"multiple of num_heads {num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout, self.need_weights = float(dropout), bool(need_weights)
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr)

    def _heads(self, x):
        """(batch, seq, embed) -> (batch, heads, seq, head_dim)."""
        return transpose(reshape(x, [0, 0, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def compute_kv(self, key, value):
        return self._heads(self.k_proj(key)), self._heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=Cache):
        """A StaticCache of `key` / `value`'s projections, an empty Cache shaped
        for `key`'s batch (value None), or a Cache holding `key` and `value`."""
        if type is MultiHeadAttention.StaticCache:
            return self.StaticCache(*self.compute_kv(key, key if value is None else value))
        if value is None:
            batch = key.shape[0]
            if batch is None:  # a `None` batch in the InputSpec: read at run time
                from ..core.ops import shape
                batch = shape(key)[0]
            empty = full([batch, self.num_heads, 0, self.head_dim], 0.0, key.dtype)
            return self.Cache(empty, empty)
        return self.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        key = query if key is None else key
        value = query if value is None else value
        q = self._heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k, v = concat([cache.k, k], axis=2), concat([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        scores = matmul(q, transpose(k, [0, 1, 3, 2])) * (self.head_dim ** -0.5)
        mask = _convert_mask(attn_mask, scores.dtype)
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores, -1)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training)
        out = reshape(transpose(matmul(weights, v), [0, 2, 1, 3]), [0, 0, self.embed_dim])
        outs = [self.out_proj(out)]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _activation(name):
    fn = getattr(F, name, None)
    if fn is None:
        raise ValueError(f"Transformer: unknown activation {name!r}")
    return fn


class _TransformerLayer(Layer):
    """What the encoder and decoder layers share: the configuration (kept to
    clone the layer), self-attention (and cross-attention for the decoder), the
    feed-forward block, and one LayerNorm and dropout per residual block
    (`norm{k}`, `dropout{k}`, PaddlePaddle's names), each block's LayerNorm
    applied before it (`normalize_before`) or after its residual sum."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                 act_dropout, normalize_before, weight_attr, bias_attr, layer_norm_eps,
                 cross_attention):
        super().__init__()
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                            dropout=dropout, activation=activation, attn_dropout=attn_dropout,
                            act_dropout=act_dropout, normalize_before=normalize_before,
                            weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=weight_attr,
                                            bias_attr=bias_attr)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, nhead, attn_dropout,
                                                 weight_attr=weight_attr, bias_attr=bias_attr)
        self.linear1 = Linear(d_model, dim_feedforward, weight_attr, bias_attr)
        self.dropout = Dropout(act_dropout)
        self.linear2 = Linear(dim_feedforward, d_model, weight_attr, bias_attr)
        blocks = 3 if cross_attention else 2
        for k in range(1, blocks + 1):
            setattr(self, f"norm{k}", LayerNorm(d_model, layer_norm_eps))
        for k in range(1, blocks + 1):
            setattr(self, f"dropout{k}", Dropout(dropout))
        self.activation = _activation(activation)

    def _pre(self, x, k):
        """The input of residual block `k`: normalized first with `normalize_before`."""
        return getattr(self, f"norm{k}")(x) if self.normalize_before else x

    def _post(self, residual, y, k):
        """The output of residual block `k`: the residual sum, normalized after it
        unless `normalize_before`."""
        out = residual + getattr(self, f"dropout{k}")(y)
        return out if self.normalize_before else getattr(self, f"norm{k}")(out)

    def _feed_forward(self, x, k):
        y = self.linear2(self.dropout(self.activation(self.linear1(self._pre(x, k)))))
        return self._post(x, y, k)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and a feed-forward block, each with a residual and a
    LayerNorm (after, or before with `normalize_before`)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu",
                 attn_dropout=None, act_dropout=None, normalize_before=False, weight_attr=None,
                 bias_attr=None, layer_norm_eps=1e-5):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                         act_dropout, normalize_before, weight_attr, bias_attr, layer_norm_eps,
                         cross_attention=False)

    def forward(self, src, src_mask=None, cache=None):
        y = self._pre(src, 1)
        if cache is None:
            y = self.self_attn(y, y, y, src_mask)
        else:
            y, cache = self.self_attn(y, y, y, src_mask, cache)
        src = self._feed_forward(self._post(src, y, 1), 2)
        return src if cache is None else (src, cache)

    def gen_cache(self, src):
        return self.self_attn.gen_cache(src, type=MultiHeadAttention.Cache)


def _clones(layer, num_layers):
    """`layer` first, then new layers made from its configuration (fresh weights)."""
    return LayerList([layer] + [type(layer)(**copy.deepcopy(layer._config))
                                for _ in range(num_layers - 1)])


class TransformerEncoder(Layer):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, src_mask=None, cache=None):
        out, new_caches = src, []
        for i, layer in enumerate(self.layers):
            if cache is None:
                out = layer(out, src_mask)
            else:
                out, c = layer(out, src_mask, cache[i])
                new_caches.append(c)
        if self.norm is not None:
            out = self.norm(out)
        return out if cache is None else (out, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, cross-attention over the encoder's `memory`, and a
    feed-forward block, each with a residual and a LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu",
                 attn_dropout=None, act_dropout=None, normalize_before=False, weight_attr=None,
                 bias_attr=None, layer_norm_eps=1e-5):
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                         act_dropout, normalize_before, weight_attr, bias_attr, layer_norm_eps,
                         cross_attention=True)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        y = self._pre(tgt, 1)
        if cache is None:
            y = self.self_attn(y, y, y, tgt_mask)
        else:
            y, incremental = self.self_attn(y, y, y, tgt_mask, cache[0])
        tgt = self._post(tgt, y, 1)
        y = self._pre(tgt, 2)
        if cache is None:
            y = self.cross_attn(y, memory, memory, memory_mask)
        else:
            y, static = self.cross_attn(y, memory, memory, memory_mask, cache[1])
        tgt = self._feed_forward(self._post(tgt, y, 2), 3)
        return tgt if cache is None else (tgt, (incremental, static))

    def gen_cache(self, memory):
        return (self.self_attn.gen_cache(memory, type=MultiHeadAttention.Cache),
                self.cross_attn.gen_cache(memory, memory, type=MultiHeadAttention.StaticCache))


class TransformerDecoder(Layer):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        out, new_caches = tgt, []
        for i, layer in enumerate(self.layers):
            if cache is None:
                out = layer(out, memory, tgt_mask, memory_mask)
            else:
                out, c = layer(out, memory, tgt_mask, memory_mask, cache[i])
                new_caches.append(c)
        if self.norm is not None:
            out = self.norm(out)
        return out if cache is None else (out, new_caches)

    def gen_cache(self, memory, do_zip=False):
        caches = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*caches)) if do_zip else caches


class Transformer(Layer):
    """Encoder-decoder Transformer (final LayerNorms on both stacks)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None,
                 custom_encoder=None, custom_decoder=None):
        super().__init__()
        args = (d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                act_dropout, normalize_before, weight_attr, bias_attr)
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(*args), num_encoder_layers, LayerNorm(d_model))
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(*args), num_decoder_layers, LayerNorm(d_model))
        self.d_model, self.nhead = d_model, nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

    @staticmethod
    def generate_square_subsequent_mask(length):
        """(length, length) float32: 0 on and below the diagonal, -inf above."""
        mask = np.triu(np.full((int(length), int(length)), -np.inf, np.float32), 1)
        return constant(mask)
