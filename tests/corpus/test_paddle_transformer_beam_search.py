"""The beam search of PaddlePaddle's dygraph-to-static transformer test, as
users port it: `for i in range(paddle.to_tensor(max_len))` over a decoder
whose per-layer k/v caches (a list of dicts, merged and split with
`paddle.utils.map_structure` each step) grow by one position per step, beams
picked with `topk`/`floor_divide`/`gather_nd`, `if paddle.all(finished)
.numpy(): break`, then `gather_tree`. The loop bound is an eager tensor, so
the loop starts unrolled; once the `break` depends on a tensor the trips
left are one `while` op (guarded copies of the body could not merge caches
of different lengths). Converted beam search gives eager's ids and scores on
numpy and xla."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F

from harness import BACKENDS, as_numpy, close_tree, t, twins


def position_encoding_init(n_position, d_pos_vec):
    channels = d_pos_vec
    position = np.arange(n_position)
    num_timescales = channels // 2
    log_timescale_increment = np.log(float(1e4) / float(1)) / (num_timescales - 1)
    inv_timescales = np.exp(np.arange(num_timescales)) * -log_timescale_increment
    scaled_time = np.expand_dims(position, 1) * np.expand_dims(inv_timescales, 0)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return signal.astype("float32")

class MHA(nn.Layer):
    def __init__(self, d_key, d_value, d_model, n_head):
        super().__init__()
        self.n_head, self.d_key, self.d_value, self.d_model = n_head, d_key, d_value, d_model
        self.q_fc = nn.Linear(d_model, d_key * n_head, bias_attr=False)
        self.k_fc = nn.Linear(d_model, d_key * n_head, bias_attr=False)
        self.v_fc = nn.Linear(d_model, d_value * n_head, bias_attr=False)
        self.proj_fc = nn.Linear(d_value * n_head, d_model, bias_attr=False)
    def forward(self, queries, keys, values, attn_bias, cache=None):
        keys = queries if keys is None else keys
        values = keys if values is None else values
        q = self.q_fc(queries); k = self.k_fc(keys); v = self.v_fc(values)
        q = paddle.reshape(x=q, shape=[0, 0, self.n_head, self.d_key])
        q = paddle.transpose(x=q, perm=[0, 2, 1, 3])
        k = paddle.reshape(x=k, shape=[0, 0, self.n_head, self.d_key])
        k = paddle.transpose(x=k, perm=[0, 2, 1, 3])
        v = paddle.reshape(x=v, shape=[0, 0, self.n_head, self.d_value])
        v = paddle.transpose(x=v, perm=[0, 2, 1, 3])
        if cache is not None:
            cache_k, cache_v = cache["k"], cache["v"]
            k = paddle.concat([cache_k, k], axis=2)
            v = paddle.concat([cache_v, v], axis=2)
            cache["k"], cache["v"] = k, v
        product = paddle.matmul(x=q, y=k, transpose_y=True)
        product = paddle.scale(product, scale=self.d_model**-0.5)
        if attn_bias is not None:
            product += attn_bias
        weights = F.softmax(product)
        out = paddle.matmul(weights, v)
        out = paddle.transpose(out, perm=[0, 2, 1, 3])
        out = paddle.reshape(x=out, shape=[0, 0, out.shape[2] * out.shape[3]])
        return self.proj_fc(out)

class Dec(nn.Layer):
    def __init__(self, V=9, d=8, n_head=2, n_layer=2, max_length=12):
        super().__init__()
        self.V, self.n_head, self.d_key, self.n_layer = V, n_head, d // n_head, n_layer
        self.emb = nn.Embedding(V, d)
        self.pos = nn.Embedding(max_length, d, weight_attr=paddle.ParamAttr(
            initializer=nn.initializer.Assign(position_encoding_init(max_length, d)), trainable=False))
        self.layers = []
        for i in range(n_layer):
            self.layers.append(self.add_sublayer(f"layer_{i}", MHA(d // n_head, d // n_head, d, n_head)))
        self.linear = lambda x: paddle.matmul(x=x, y=self.emb.weight, transpose_y=True)
    def decode_step(self, trg_word, trg_pos, enc, caches):
        h = paddle.scale(x=self.emb(trg_word), scale=8 ** 0.5) + self.pos(trg_pos)
        for i, layer in enumerate(self.layers):
            h = layer(h, None, None, None, caches[i]) + layer(h, enc, enc, None)
        h = paddle.reshape(h, shape=[-1, h.shape[-1]])
        return self.linear(h)

    def beam_search(self, enc_output, bos_id=0, eos_id=1, beam_size=2, max_len=4):
        def expand_to_beam_size(tensor, beam_size):
            tensor = paddle.reshape(tensor, [tensor.shape[0], 1, *list(tensor.shape[1:])])
            tile_dims = [-1] * len(tensor.shape)
            tile_dims[1] = beam_size
            return paddle.expand(tensor, tile_dims)
        def merge_batch_beams(tensor):
            var_dim_in_state = 2
            tensor = paddle.transpose(tensor, list(range(var_dim_in_state, len(tensor.shape))) + list(range(0, var_dim_in_state)))
            tensor = paddle.reshape(tensor, [0] * (len(tensor.shape) - var_dim_in_state) + [batch_size * beam_size])
            res = paddle.transpose(tensor, list(range((len(tensor.shape) + 1 - var_dim_in_state), len(tensor.shape)))
                                   + list(range(0, (len(tensor.shape) + 1 - var_dim_in_state))))
            return res
        def split_batch_beams(tensor):
            var_dim_in_state = 1
            tensor = paddle.transpose(tensor, list(range(var_dim_in_state, len(tensor.shape))) + list(range(0, var_dim_in_state)))
            tensor = paddle.reshape(tensor, [0] * (len(tensor.shape) - var_dim_in_state) + [batch_size, beam_size])
            res = paddle.transpose(tensor, list(range((len(tensor.shape) - 1 - var_dim_in_state), len(tensor.shape)))
                                   + list(range(0, (len(tensor.shape) - 1 - var_dim_in_state))))
            return res
        def mask_probs(probs, finished, noend_mask_tensor):
            finished = paddle.cast(finished, dtype=probs.dtype)
            probs = paddle.multiply(paddle.expand(paddle.unsqueeze(finished, [2]), [-1, -1, self.V]), noend_mask_tensor) \
                - probs * (finished - 1).unsqueeze(-1)
            return probs
        def gather(input, indices, batch_pos):
            topk_coordinates = paddle.stack([batch_pos, indices], axis=2)
            return paddle.gather_nd(input, topk_coordinates)

        batch_size = enc_output.shape[0]
        inf = float(1.0 * 1e7)
        vocab_size_tensor = paddle.full(shape=[1], dtype="int64", fill_value=self.V)
        end_token_tensor = paddle.to_tensor(np.full([batch_size, beam_size], eos_id, dtype="int64"))
        noend_array = [-inf] * self.V
        noend_array[eos_id] = 0
        noend_mask_tensor = paddle.to_tensor(np.array(noend_array, dtype="float32"))
        batch_pos = paddle.expand(paddle.unsqueeze(paddle.to_tensor(np.arange(0, batch_size, 1, dtype="int64")), [1]), [-1, beam_size])
        predict_ids = []
        parent_ids = []
        log_probs = paddle.to_tensor(np.array([[0.0] + [-inf] * (beam_size - 1)] * batch_size, dtype="float32"))
        finished = paddle.to_tensor(np.full([batch_size, beam_size], 0, dtype="bool"))
        trg_word = paddle.full(shape=[batch_size * beam_size, 1], dtype="int64", fill_value=bos_id)
        enc_output = merge_batch_beams(expand_to_beam_size(enc_output, beam_size))
        caches = [{"k": paddle.full(shape=[batch_size, beam_size, self.n_head, 0, self.d_key], dtype=enc_output.dtype, fill_value=0),
                   "v": paddle.full(shape=[batch_size, beam_size, self.n_head, 0, self.d_key], dtype=enc_output.dtype, fill_value=0)}
                  for i in range(self.n_layer)]
        for i in range(paddle.to_tensor(max_len)):
            trg_pos = paddle.full(shape=trg_word.shape, dtype="int64", fill_value=i)
            caches = paddle.utils.map_structure(merge_batch_beams, caches)
            logits = self.decode_step(trg_word, trg_pos, enc_output, caches)
            caches = paddle.utils.map_structure(split_batch_beams, caches)
            step_log_probs = split_batch_beams(paddle.log(F.softmax(logits)))
            step_log_probs = mask_probs(step_log_probs, finished, noend_mask_tensor)
            log_probs = step_log_probs + log_probs.unsqueeze(-1)
            log_probs = paddle.reshape(log_probs, [-1, beam_size * self.V])
            scores = log_probs
            topk_scores, topk_indices = paddle.topk(x=scores, k=beam_size)
            beam_indices = paddle.floor_divide(topk_indices, vocab_size_tensor)
            token_indices = paddle.remainder(topk_indices, vocab_size_tensor)
            caches = paddle.utils.map_structure(lambda x: gather(x, beam_indices, batch_pos), caches)
            log_probs = gather(log_probs, topk_indices, batch_pos)
            finished = gather(finished, beam_indices, batch_pos)
            finished = paddle.logical_or(finished, paddle.equal(token_indices, end_token_tensor))
            trg_word = paddle.reshape(token_indices, [-1, 1])
            predict_ids.append(token_indices)
            parent_ids.append(beam_indices)
            if paddle.all(finished).numpy():
                break
        predict_ids = paddle.stack(predict_ids, axis=0)
        parent_ids = paddle.stack(parent_ids, axis=0)
        finished_seq = paddle.transpose(F.gather_tree(predict_ids, parent_ids), [1, 2, 0])
        finished_scores = topk_scores
        return finished_seq, finished_scores


# XLA loops carry one shape: the growing caches run that program on numpy (with
# a warning saying so)
@pytest.mark.filterwarnings("ignore:.*a loop variable changes shape in the loop")
@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_beam_search_as_eagerly(backend):
    rng = np.random.default_rng(0)
    eager, model = twins(Dec)
    search = paddle.jit.to_static(model.beam_search, backend=backend)
    for _ in range(2):
        enc = t(rng.normal(size=(2, 3, 8)))
        close_tree(as_numpy(search(enc)), as_numpy(eager.beam_search(enc)), backend, "beam")


def _grow_until(x, limit):
    k = paddle.zeros([2, 0])
    steps = []
    for i in range(paddle.to_tensor(4)):
        k = paddle.concat([k, x * i], axis=1)
        steps.append(i)
        if k.sum() > limit:
            break
    return k, len(steps)


@pytest.mark.filterwarnings("ignore:.*a loop variable changes shape in the loop")
@pytest.mark.parametrize("backend", BACKENDS)
def test_break_on_a_tensor_in_a_range_of_an_eager_tensor(backend):
    static = paddle.jit.to_static(_grow_until, backend=backend)
    x = paddle.ones([2, 1])
    for limit in (-1.0, 1.0, 5.0, 100.0):   # stops after 1, 2, 3 trips, or never
        limit_t = paddle.to_tensor(limit)
        k, n = static(x, limit_t)
        k_e, n_e = _grow_until(x, limit_t)
        close_tree(as_numpy(k), as_numpy(k_e), backend, f"limit {limit}")
        assert int(n) == n_e
