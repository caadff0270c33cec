"""examples/llama built with Paddle's fleet layers (`tensor_parallel=True`)
without a mesh: the same weights, parameter names and logits as the plain
build, and a checkpoint of either build resumes the other (the flag only
lays out the same weights). The sharded runs are in
tests/distributed/test_llama_tensor_parallel.py."""
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import d2s  # noqa: E402
from d2s.distributed import fleet  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402
from examples.llama.train import Trainer  # noqa: E402

TINY = dict(vocab_size=256, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)


def test_fleet_build_has_the_plain_weights_and_logits():
    d2s.seed(2)
    plain = LlamaForCausalLM(LlamaConfig(**TINY))
    d2s.seed(2)
    parallel = LlamaForCausalLM(LlamaConfig(**TINY, tensor_parallel=True))
    mp = fleet.meta_parallel
    attn, mlp = parallel.layers[0].self_attn, parallel.layers[0].mlp
    assert all(isinstance(layer, mp.ColumnParallelLinear) for layer in
               (attn.q_proj, attn.k_proj, attn.v_proj, mlp.gate_proj, mlp.up_proj,
                parallel.lm_head))
    assert all(isinstance(layer, mp.RowParallelLinear) for layer in (attn.o_proj, mlp.down_proj))
    assert isinstance(parallel.embed_tokens, mp.VocabParallelEmbedding)
    a, b = plain.state_dict(), parallel.state_dict()
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)
    ids = d2s.to_tensor(np.random.default_rng(0).integers(0, 256, (2, 6)))
    with d2s.no_grad():
        np.testing.assert_array_equal(parallel(ids).numpy(), plain(ids).numpy())


def test_checkpoint_resumes_across_the_tensor_parallel_flag(tmp_path):
    kw = dict(steps=2, warmup=1, batch_size=2, seq_len=8, mode="eager")
    plain = Trainer(LlamaConfig(**TINY), **kw)
    plain.train_step()
    plain.save(tmp_path / "c.npz")
    parallel = Trainer(LlamaConfig(**TINY, tensor_parallel=True), **kw)
    parallel.load(tmp_path / "c.npz")
    for (n, p), (_, q) in zip(plain.model.named_parameters(),
                              parallel.model.named_parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)
    assert parallel.train_step() == plain.train_step()
