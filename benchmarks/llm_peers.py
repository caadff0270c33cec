"""The peers of benchmarks/llm.py: examples/llama's model and greedy loop
written again in PyTorch and in JAX, reading the very weights of a d2s
`LlamaForCausalLM` (its state dict and rotary tables, copied).

Each mirrors examples/llama/model.py op for op — RMSNorm as
`x * rsqrt(mean(x*x) + eps) * w`, rotary by `rotate_half`, grouped-query
attention with the query heads of a k/v head on their own axis, a
preallocated k/v cache per layer written at the current position (the keys
transposed, [B, KV, D, L], as model.py keeps them) and an additive mask
hiding the positions not written yet — so that greedy tokens
can be compared token for token before anything is timed. The greedy loop
is the one of generate.py with temperature 0: the prompt, then one token
per step, `max_new_tokens` forward steps after the prompt (the last one's
logits unused, as in generate.py).

* torch: eager, a Python loop over steps (what a PyTorch user writes);
  `torch_compiled` compiles the step with `torch.compile`, the position
  passed as a tensor so that one graph serves every step.
* jax: the whole generation in one `jax.jit`, the decode loop a
  `lax.while_loop`, the caches updated by `lax.dynamic_update_slice`.
"""
from __future__ import annotations

import math

import numpy as np


def weights_of(model):
    """{name: float32 array} of the d2s model's state dict, plus the rotary
    tables (buffers not saved in the state dict)."""
    w = {k: np.asarray(v.numpy(), np.float32) for k, v in model.state_dict().items()}
    w["cos"] = np.asarray(model.rotary.cos_cached.numpy(), np.float32)
    w["sin"] = np.asarray(model.rotary.sin_cached.numpy(), np.float32)
    return w


def _head_name(config):
    return "embed_tokens.weight" if config.tie_word_embeddings else "lm_head.weight"


# ---- PyTorch --------------------------------------------------------------------------------

class TorchLlama:
    """The model in PyTorch; `step(ids, caches, pos)` is forward_cached with
    `pos` an int64 tensor of the positions of `ids`' tokens."""

    def __init__(self, model):
        import torch
        self.torch = torch
        self.c = model.config
        self.w = {k: torch.from_numpy(v.copy()) for k, v in weights_of(model).items()}
        self.head = self.w[_head_name(self.c)]
        if self.c.tie_word_embeddings:
            self.head = self.head.t().contiguous()

    def _rms(self, x, w):
        return x * self.torch.rsqrt((x * x).mean(-1, keepdim=True) + self.c.rms_norm_eps) * w

    @staticmethod
    def _rot(x, cos, sin):
        import torch
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    def new_cache(self, batch, max_len):
        c = self.c
        shape = (batch, c.num_key_value_heads, max_len, c.head_dim)
        k_shape = (batch, c.num_key_value_heads, c.head_dim, max_len)
        return [(self.torch.zeros(k_shape), self.torch.zeros(shape))
                for _ in range(c.num_hidden_layers)]

    def step(self, ids, caches, pos):
        """Logits of the last position [B, vocab]; the caches are written in place."""
        torch, c, w = self.torch, self.c, self.w
        b, t = ids.shape
        hd, nh, nkv = c.head_dim, c.num_attention_heads, c.num_key_value_heads
        group = nh // nkv
        max_len = caches[0][1].shape[2]
        cos, sin = w["cos"][pos][None, None], w["sin"][pos][None, None]
        visible = torch.arange(max_len)[None, :] <= pos[:, None]
        mask = torch.where(visible, torch.zeros(()), torch.full((), float("-inf")))
        h = w["embed_tokens.weight"][ids]
        for i, (kc, vc) in enumerate(caches):
            p = f"layers.{i}."
            x = self._rms(h, w[p + "input_layernorm.weight"])
            q = (x @ w[p + "self_attn.q_proj.weight"]).view(b, t, nh, hd).transpose(1, 2)
            k = (x @ w[p + "self_attn.k_proj.weight"]).view(b, t, nkv, hd).transpose(1, 2)
            v = (x @ w[p + "self_attn.v_proj.weight"]).view(b, t, nkv, hd).transpose(1, 2)
            q, k = self._rot(q, cos, sin), self._rot(k, cos, sin)
            kc.index_copy_(3, pos, k.transpose(-1, -2))
            vc.index_copy_(2, pos, v)
            q = q.reshape(b, nkv, group, t, hd)
            s = q @ kc.unsqueeze(2) / math.sqrt(hd) + mask
            a = (torch.softmax(s, dim=-1) @ vc.unsqueeze(2)).reshape(b, nh, t, hd)
            a = a.transpose(1, 2).reshape(b, t, nh * hd) @ w[p + "self_attn.o_proj.weight"]
            h = h + a
            x = self._rms(h, w[p + "post_attention_layernorm.weight"])
            g = torch.nn.functional.silu(x @ w[p + "mlp.gate_proj.weight"])
            h = h + (g * (x @ w[p + "mlp.up_proj.weight"])) @ w[p + "mlp.down_proj.weight"]
        return self._rms(h[:, -1], w["norm.weight"]) @ self.head


def torch_greedy(tm, prompt, max_new_tokens, step=None):
    """Greedy tokens [B, max_new_tokens] (int64 numpy) with model `tm`;
    `step`: the step function to call (default `tm.step`; a compiled one)."""
    torch = tm.torch
    step = step or tm.step
    with torch.inference_mode():
        ids = torch.from_numpy(prompt)
        b, plen = ids.shape
        caches = tm.new_cache(b, plen + max_new_tokens)
        logits = step(ids, caches, torch.arange(plen))
        out = []
        for s in range(max_new_tokens):
            token = logits.argmax(-1)
            out.append(token)
            logits = step(token[:, None], caches, torch.tensor([plen + s]))
        return torch.stack(out, dim=1).numpy()


def torch_compiled_step(tm):
    """`tm.step` through `torch.compile` (raises whatever it raises)."""
    return tm.torch.compile(tm.step, dynamic=False)


# ---- JAX ------------------------------------------------------------------------------------

def jax_greedy_fn(model):
    """(weights pytree, function(weights, prompt, max_new_tokens) -> tokens):
    the whole greedy generation as one `jax.jit` with a `lax.while_loop`."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    c = model.config
    hd, nh, nkv = c.head_dim, c.num_attention_heads, c.num_key_value_heads
    group = nh // nkv
    head_name = _head_name(c)
    weights = {k: jnp.asarray(v) for k, v in weights_of(model).items()}

    def rms(x, w):
        return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + c.rms_norm_eps) * w

    def rot(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin

    def step(w, ids, caches, start):
        b, t = ids.shape
        max_len = caches[0][1].shape[2]
        pos = jnp.arange(t) + start
        cos, sin = w["cos"][pos][None, None], w["sin"][pos][None, None]
        mask = jnp.where(jnp.arange(max_len)[None, :] <= pos[:, None], 0.0, -jnp.inf)
        h = w["embed_tokens.weight"][ids]
        new = []
        for i, (kc, vc) in enumerate(caches):
            p = f"layers.{i}."
            x = rms(h, w[p + "input_layernorm.weight"])
            q = (x @ w[p + "self_attn.q_proj.weight"]).reshape(b, t, nh, hd).transpose(0, 2, 1, 3)
            k = (x @ w[p + "self_attn.k_proj.weight"]).reshape(b, t, nkv, hd).transpose(0, 2, 1, 3)
            v = (x @ w[p + "self_attn.v_proj.weight"]).reshape(b, t, nkv, hd).transpose(0, 2, 1, 3)
            q, k = rot(q, cos, sin), rot(k, cos, sin)
            zero = jnp.zeros((), start.dtype) if hasattr(start, "dtype") else 0
            kc = lax.dynamic_update_slice(kc, k.transpose(0, 1, 3, 2), (zero, zero, zero, start))
            vc = lax.dynamic_update_slice(vc, v, (zero, zero, start, zero))
            new.append((kc, vc))
            qg = q.reshape(b, nkv, group, t, hd)
            s = qg @ kc[:, :, None] / math.sqrt(hd) + mask
            a = (jax.nn.softmax(s, axis=-1) @ vc[:, :, None]).reshape(b, nh, t, hd)
            a = a.transpose(0, 2, 1, 3).reshape(b, t, nh * hd) @ w[p + "self_attn.o_proj.weight"]
            h = h + a
            x = rms(h, w[p + "post_attention_layernorm.weight"])
            g = jax.nn.silu(x @ w[p + "mlp.gate_proj.weight"])
            h = h + (g * (x @ w[p + "mlp.up_proj.weight"])) @ w[p + "mlp.down_proj.weight"]
        head = w[head_name].T if c.tie_word_embeddings else w[head_name]
        return rms(h[:, -1], w["norm.weight"]) @ head, new

    def generate(w, prompt, max_new_tokens):
        b, plen = prompt.shape
        shape, k_shape = (b, nkv, plen + max_new_tokens, hd), (b, nkv, hd, plen + max_new_tokens)
        caches = [(jnp.zeros(k_shape), jnp.zeros(shape)) for _ in range(c.num_hidden_layers)]
        logits, caches = step(w, prompt, caches, 0)
        out = jnp.zeros((b, max_new_tokens), jnp.int64 if jax.config.jax_enable_x64
                        else jnp.int32)

        def body(state):
            i, logits, caches, out = state
            token = jnp.argmax(logits, axis=-1).astype(out.dtype)
            out = out.at[:, i].set(token)
            logits, caches = step(w, token[:, None], caches, plen + i)
            return i + 1, logits, caches, out

        state = (jnp.zeros((), jnp.int32), logits, caches, out)
        return lax.while_loop(lambda s: s[0] < max_new_tokens, body, state)[3]

    return weights, jax.jit(generate, static_argnums=2)


# ---- numpy by hand ----------------------------------------------------------------------------

def numpy_greedy_fn(model):
    """function(prompt, max_new_tokens) -> tokens: the greedy loop in plain
    numpy, caches written in place (benchmarks/compare_modes.py's numpy
    column for workload W8)."""
    c = model.config
    w = weights_of(model)
    hd, nh, nkv = c.head_dim, c.num_attention_heads, c.num_key_value_heads
    group = nh // nkv
    head = w[_head_name(c)].T.copy() if c.tie_word_embeddings else w[_head_name(c)]
    eps, root = np.float32(c.rms_norm_eps), np.float32(math.sqrt(hd))

    def rms(x, g):
        return x * (1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)) * g

    def rot(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin

    def step(ids, caches, pos):
        b, t = ids.shape
        max_len = caches[0][1].shape[2]
        cos, sin = w["cos"][pos][None, None], w["sin"][pos][None, None]
        mask = np.where(np.arange(max_len)[None, :] <= pos[:, None], np.float32(0),
                        np.float32(-np.inf))
        h = w["embed_tokens.weight"][ids]
        for i, (kc, vc) in enumerate(caches):
            p = f"layers.{i}."
            x = rms(h, w[p + "input_layernorm.weight"])
            q = (x @ w[p + "self_attn.q_proj.weight"]).reshape(b, t, nh, hd).transpose(0, 2, 1, 3)
            k = (x @ w[p + "self_attn.k_proj.weight"]).reshape(b, t, nkv, hd).transpose(0, 2, 1, 3)
            v = (x @ w[p + "self_attn.v_proj.weight"]).reshape(b, t, nkv, hd).transpose(0, 2, 1, 3)
            kc[:, :, :, pos] = rot(k, cos, sin).transpose(0, 1, 3, 2)
            vc[:, :, pos] = v
            q = rot(q, cos, sin).reshape(b, nkv, group, t, hd)
            s = q @ kc[:, :, None] / root + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ vc[:, :, None]).reshape(b, nh, t, hd).transpose(0, 2, 1, 3)
            h = h + a.reshape(b, t, nh * hd) @ w[p + "self_attn.o_proj.weight"]
            x = rms(h, w[p + "post_attention_layernorm.weight"])
            g = x @ w[p + "mlp.gate_proj.weight"]
            g = g / (1 + np.exp(-g))
            h = h + (g * (x @ w[p + "mlp.up_proj.weight"])) @ w[p + "mlp.down_proj.weight"]
        return rms(h[:, -1], w["norm.weight"]) @ head

    def generate(prompt, max_new_tokens):
        b, plen = prompt.shape
        shape, k_shape = (b, nkv, plen + max_new_tokens, hd), (b, nkv, hd, plen + max_new_tokens)
        caches = [(np.zeros(k_shape, np.float32), np.zeros(shape, np.float32))
                  for _ in range(c.num_hidden_layers)]
        logits = step(prompt, caches, np.arange(plen))
        out = np.empty((b, max_new_tokens), np.int64)
        for s in range(max_new_tokens):
            out[:, s] = logits.argmax(-1)
            logits = step(out[:, s:s + 1], caches, np.array([plen + s]))
        return out

    return generate
