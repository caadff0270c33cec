"""A Llama-style decoder written the way PaddleNLP / Hugging Face ports are:
`LlamaConfig`, RMSNorm, rotary position embeddings on q and k, grouped-query
attention with a causal mask, a SwiGLU feed-forward, pre-norm residuals and
tied or untied input/output embeddings.

Two entry points share every layer:

* `forward(ids)` — the whole sequence at once (training, perplexity);
* `forward_cached(ids, caches, start)` — `ids` are the tokens at positions
  `start, start+1, ...`; each layer writes its keys and values into its
  preallocated caches by item assignment and attends over the whole cache
  with a mask that hides positions not written yet. Shapes never depend on
  `start`, so a converted decode loop keeps one shape per loop variable.

The key cache is kept transposed, `[batch, kv_heads, head_dim, max_len]`
(values: `[batch, kv_heads, max_len, head_dim]`): the scores `q @ k^T` then
read it as the right-hand matrix as it lies. Stored `[.., max_len,
head_dim]`, a compiler transposes the whole key cache of every layer at
every decode step (XLA does: a copy of the cache per layer and token) to
feed its matrix multiply; writing one new key column costs the same either
way.
"""
from __future__ import annotations

import dataclasses
import math

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.distributed import fleet
from d2s.distributed.fleet import hybrid

mpu = fleet.meta_parallel


@dataclasses.dataclass
class LlamaConfig:
    """Sizes of the network; tiny by default so that it trains on a laptop
    CPU in minutes. `num_key_value_heads < num_attention_heads` is grouped-
    query attention (each k/v head serves `num_attention_heads //
    num_key_value_heads` query heads).

    `tensor_parallel=True` builds the projections and the embedding from
    Paddle's fleet model-parallel layers (see `parallel_layers`); so does
    a mesh made by `fleet.init` with `mp_degree > 1`."""
    vocab_size: int = 256
    hidden_size: int = 128
    intermediate_size: int = 344
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 256
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    initializer_range: float = 0.02
    tensor_parallel: bool = False

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"LlamaConfig: hidden_size {self.hidden_size} is not a multiple of "
                             f"num_attention_heads {self.num_attention_heads}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"LlamaConfig: num_attention_heads {self.num_attention_heads} is not "
                             f"a multiple of num_key_value_heads {self.num_key_value_heads}")
        if (self.hidden_size // self.num_attention_heads) % 2:
            raise ValueError("LlamaConfig: the head size hidden_size // num_attention_heads must be "
                             "even (rotary embeddings rotate pairs)")

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"LlamaConfig: unknown keys {unknown}")
        return cls(**d)


def _normal(std):
    return d2s.ParamAttr(initializer=nn.initializer.Normal(0.0, std))


def parallel_layers(config):
    """True when the model is built tensor-parallel: `config.tensor_parallel`
    or a `fleet.init` mesh whose "mp" dim has more than one device. As in
    PaddleNLP, q/k/v and gate/up are column-parallel with their outputs
    left split (`gather_output=False`: the heads / hidden units of each
    device), o and down row-parallel on that split input (one all-reduce
    per block), the token embedding vocabulary-parallel and the untied head
    column-parallel with its logits gathered (sampling needs them whole).
    The fleet layers hold the whole weights with placements, so a state
    dict loads into either build and the numbers are the same."""
    if config.tensor_parallel:
        return True
    mesh = hybrid.hybrid_mesh()
    return mesh is not None and mesh.get_dim_size("mp") > 1


def _column(config, n_in, n_out, attr, gather_output=False):
    if parallel_layers(config):
        return mpu.ColumnParallelLinear(n_in, n_out, weight_attr=attr, has_bias=False,
                                        gather_output=gather_output)
    return nn.Linear(n_in, n_out, weight_attr=attr, bias_attr=False)


def _row(config, n_in, n_out, attr):
    if parallel_layers(config):
        return mpu.RowParallelLinear(n_in, n_out, weight_attr=attr, has_bias=False,
                                     input_is_parallel=True)
    return nn.Linear(n_in, n_out, weight_attr=attr, bias_attr=False)


class LlamaRMSNorm(nn.Layer):
    """x / rms(x) * weight: LayerNorm without the mean and the bias."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = self.create_parameter([dim], default_initializer=nn.initializer.Constant(1.0))
        self.eps = eps

    def forward(self, x):
        var = d2s.mean(x * x, axis=-1, keepdim=True)
        return x * d2s.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return d2s.concat([-x[..., half:], x[..., :half]], axis=-1)


class LlamaRotaryEmbedding(nn.Layer):
    """cos/sin tables for every position up to `max_position_embeddings`,
    kept as buffers (not parameters, not trained) and gathered per position."""

    def __init__(self, head_dim, max_positions, theta):
        super().__init__()
        inv = 1.0 / (theta ** (d2s.arange(0, head_dim, 2, dtype="float32") / head_dim))
        pos = d2s.arange(max_positions, dtype="float32")
        freqs = pos.unsqueeze(1) * inv.unsqueeze(0)
        emb = d2s.concat([freqs, freqs], axis=-1)                      # [P, head_dim]
        self.register_buffer("cos_cached", d2s.cos(emb), persistable=False)
        self.register_buffer("sin_cached", d2s.sin(emb), persistable=False)

    def forward(self, positions):
        """positions: int64 [T] -> cos, sin of shape [1, 1, T, head_dim]."""
        cos = d2s.index_select(self.cos_cached, positions, axis=0)
        sin = d2s.index_select(self.sin_cached, positions, axis=0)
        return cos.unsqueeze(0).unsqueeze(0), sin.unsqueeze(0).unsqueeze(0)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class LlamaAttention(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        h, kv = config.hidden_size, self.num_kv_heads * self.head_dim
        init = _normal(config.initializer_range)
        self.q_proj = _column(config, h, h, init)
        self.k_proj = _column(config, h, kv, init)
        self.v_proj = _column(config, h, kv, init)
        self.o_proj = _row(config, h, h, _normal(
            config.initializer_range / math.sqrt(2 * config.num_hidden_layers)))

    def _heads(self, x, n):
        b, t = x.shape[0], x.shape[1]
        return x.reshape([b, t, n, self.head_dim]).transpose([0, 2, 1, 3])

    def _attend(self, q, k, v, mask, keys_transposed=False):
        """q: [B, H, T, D]; k, v: [B, KV, L, D] (k: [B, KV, D, L] when
        `keys_transposed`, the key cache's layout); mask: additive [T, L].
        The query heads of one k/v head are grouped on a new axis so that
        the k/v heads broadcast instead of being copied."""
        b, t = q.shape[0], q.shape[2]
        group = self.num_heads // self.num_kv_heads
        q = q.reshape([b, self.num_kv_heads, group, t, self.head_dim])
        k, v = k.unsqueeze(2), v.unsqueeze(2)
        scores = d2s.matmul(q, k, transpose_y=not keys_transposed) / math.sqrt(self.head_dim) + mask
        out = d2s.matmul(F.softmax(scores, axis=-1), v)                 # [B, KV, G, T, D]
        out = out.reshape([b, self.num_heads, t, self.head_dim]).transpose([0, 2, 1, 3])
        return self.o_proj(out.reshape([b, t, self.num_heads * self.head_dim]))

    def forward(self, x, cos, sin, mask):
        q = apply_rotary(self._heads(self.q_proj(x), self.num_heads), cos, sin)
        k = apply_rotary(self._heads(self.k_proj(x), self.num_kv_heads), cos, sin)
        v = self._heads(self.v_proj(x), self.num_kv_heads)
        return self._attend(q, k, v, mask)

    def forward_cached(self, x, cos, sin, mask, k_cache, v_cache, start):
        """Writes this call's keys/values at positions start.. of the caches
        (k_cache: [B, KV, D, L], v_cache: [B, KV, L, D]) and attends over the
        whole caches; returns (out, k_cache, v_cache)."""
        q = apply_rotary(self._heads(self.q_proj(x), self.num_heads), cos, sin)
        k = apply_rotary(self._heads(self.k_proj(x), self.num_kv_heads), cos, sin)
        v = self._heads(self.v_proj(x), self.num_kv_heads)
        if x.shape[1] == 1:                      # one new token at a run-time position
            k_cache[:, :, :, start] = k[:, :, 0]
            v_cache[:, :, start] = v[:, :, 0]
        else:                                    # the prompt: start is 0
            k_cache[:, :, :, :x.shape[1]] = k.transpose([0, 1, 3, 2])
            v_cache[:, :, :x.shape[1]] = v
        return (self._attend(q, k_cache, v_cache, mask, keys_transposed=True),
                k_cache, v_cache)


class LlamaMLP(nn.Layer):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, config):
        super().__init__()
        h, f, init = config.hidden_size, config.intermediate_size, _normal(config.initializer_range)
        self.gate_proj = _column(config, h, f, init)
        self.up_proj = _column(config, h, f, init)
        self.down_proj = _row(config, f, h, _normal(
            config.initializer_range / math.sqrt(2 * config.num_hidden_layers)))

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = LlamaAttention(config)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = LlamaMLP(config)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_cached(self, x, cos, sin, mask, k_cache, v_cache, start):
        a, k_cache, v_cache = self.self_attn.forward_cached(
            self.input_layernorm(x), cos, sin, mask, k_cache, v_cache, start)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), k_cache, v_cache


class LlamaForCausalLM(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.config = config
        embedding = mpu.VocabParallelEmbedding if parallel_layers(config) else nn.Embedding
        self.embed_tokens = embedding(config.vocab_size, config.hidden_size,
                                      weight_attr=_normal(config.initializer_range))
        self.layers = nn.LayerList([LlamaDecoderLayer(config)
                                    for _ in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary = LlamaRotaryEmbedding(config.head_dim, config.max_position_embeddings,
                                           config.rope_theta)
        if not config.tie_word_embeddings:
            self.lm_head = _column(config, config.hidden_size, config.vocab_size,
                                   _normal(config.initializer_range), gather_output=True)

    def _logits(self, h):
        h = self.norm(h)
        if self.config.tie_word_embeddings:
            return d2s.matmul(h, self.embed_tokens.weight, transpose_y=True)
        return self.lm_head(h)

    def forward(self, ids):
        """ids: int64 [B, T] -> logits [B, T, vocab]."""
        t = ids.shape[1]
        cos, sin = self.rotary(d2s.arange(t, dtype="int64"))
        mask = d2s.triu(d2s.full([t, t], float("-inf")), diagonal=1)
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        return self._logits(h)

    def cache_shapes(self, batch, max_len):
        """(keys, values) cache shapes of one layer: [B, KV, D, max_len] (the
        keys transposed, see the module docstring) and [B, KV, max_len, D]."""
        c = self.config
        return ([batch, c.num_key_value_heads, c.head_dim, max_len],
                [batch, c.num_key_value_heads, max_len, c.head_dim])

    def new_cache(self, batch, max_len):
        """One (keys, values) pair of zeros per layer (`cache_shapes`)."""
        k_shape, v_shape = self.cache_shapes(batch, max_len)
        return [(d2s.zeros(k_shape), d2s.zeros(v_shape))
                for _ in range(self.config.num_hidden_layers)]

    def forward_cached(self, ids, caches, start):
        """ids: [B, T] at positions start..start+T-1 (start: int or int64
        scalar tensor; T > 1 only for the prompt, at start 0). Returns the
        logits of the last position [B, vocab] and the updated caches."""
        t, max_len = ids.shape[1], caches[0][1].shape[2]
        positions = d2s.arange(t, dtype="int64") + start
        cos, sin = self.rotary(positions)
        # a key position is visible to a query at position p when it is <= p
        keys = d2s.arange(max_len, dtype="int64")
        mask = d2s.where(keys.unsqueeze(0) <= positions.unsqueeze(1),
                         d2s.zeros([t, max_len]), d2s.full([t, max_len], float("-inf")))
        h = self.embed_tokens(ids)
        new = []
        for layer, (k_cache, v_cache) in zip(self.layers, caches):
            h, k_cache, v_cache = layer.forward_cached(h, cos, sin, mask, k_cache, v_cache, start)
            new.append((k_cache, v_cache))
        return self._logits(h[:, -1]), new


def next_token_loss(logits, ids):
    """Mean cross-entropy of predicting ids[:, 1:] from logits[:, :-1]."""
    v = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape([-1, v]), ids[:, 1:].reshape([-1]))
