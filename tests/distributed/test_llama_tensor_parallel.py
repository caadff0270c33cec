"""examples/llama built tensor-parallel with Paddle's fleet names (column-
parallel q/k/v and gate/up, row-parallel o and down, vocabulary-parallel
embedding): greedy generation converted whole by to_static on the xla
backend, on 8 simulated CPU devices (an "mp" mesh of 4 and a dp 2 x mp 4
mesh), gives the single-device eager tokens, and the compiled module holds
the row-parallel layers' all-reduces; examples/llama/serve_parallel.py
started as 2 processes of 2 devices by the launcher (mp 4 across them)
prints the tokens of one process on one device.

Heavy: `D2S_DIST_TESTS=1 python -m pytest tests/distributed` (see conftest).
"""
import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from dist_helpers import DIST_TESTS, heavy

pytestmark = heavy
if DIST_TESTS:
    pytest.importorskip("jax")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import d2s  # noqa: E402
import d2s.distributed as dist  # noqa: E402
from d2s.core import dist_attr  # noqa: E402
from d2s.distributed import fleet  # noqa: E402
from d2s.distributed.fleet import hybrid  # noqa: E402
from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402

TINY = dict(vocab_size=40, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
BATCH, PROMPT, NEW = 2, 5, 6


def build(**extra):
    d2s.seed(3)
    model = LlamaForCausalLM(LlamaConfig(**TINY, **extra))
    model.eval()
    return model


@pytest.fixture(params=[(1, 4), (2, 4)], ids=["mp4", "dp2xmp4"])
def degrees(request):
    yield request.param
    hybrid._state["mesh"] = None


def test_tensor_parallel_generation_equals_single_device(degrees, monkeypatch):
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    dp, mp = degrees
    ids_np = np.random.default_rng(0).integers(0, TINY["vocab_size"], (BATCH, PROMPT))
    single = build()
    with d2s.no_grad():
        want = generate(single, d2s.to_tensor(ids_np), NEW, temperature=0).numpy()

    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": dp, "mp_degree": mp}
    fleet.init(is_collective=True, strategy=strategy)
    model = fleet.distributed_model(build())
    attn, mlp = model.layers[0].self_attn, model.layers[0].mlp
    assert isinstance(attn.q_proj, fleet.meta_parallel.ColumnParallelLinear)
    assert isinstance(mlp.down_proj, fleet.meta_parallel.RowParallelLinear)
    assert isinstance(model.embed_tokens, fleet.meta_parallel.VocabParallelEmbedding)
    for (name, p), q in zip(model.state_dict().items(), single.state_dict().values()):
        assert np.array_equal(p.numpy(), q.numpy()), name   # the same whole weights

    mesh = hybrid.hybrid_mesh()
    ids = dist.shard_tensor(ids_np, mesh, [dist.Shard(0) if n == "dp" else dist.Replicate()
                                           for n in mesh.dim_names])
    gen = d2s.jit.to_static(generate, backend="xla")
    with d2s.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")                 # no fallback to numpy
        got = gen(model, ids, NEW, temperature=0).numpy()
    np.testing.assert_array_equal(got, want)

    forward = gen.concrete_program.executable("xla")._forward.xla
    hlo = forward.compiled_text([ids._value], [dist_attr.get(ids)])
    assert len(re.findall(r"\ball-reduce(?:-start)?\(", hlo)) >= 2, \
        "no all-reduce of the row-parallel layers in the compiled module"


SERVE = str(ROOT / "examples" / "llama" / "serve_parallel.py")


def _tokens(cmd):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("D2S_RANK", "D2S_WORLD", "PMI_", "OMPI_", "XLA_FLAGS"))}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=260, cwd=str(ROOT),
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^tokens ([\d ]+)$", proc.stdout, re.M)
    assert rows, proc.stdout
    return proc.stdout, [r.split() for r in rows]


def test_two_processes_generate_the_single_device_tokens():
    _, want = _tokens([sys.executable, SERVE, "--devices", "1", "--mp", "1"])
    out, got = _tokens([sys.executable, "-m", "d2s.distributed.launch", "--nproc_per_node",
                        "2", "--devices_per_proc", "2", "--mpi", "off", "--timeout", "200",
                        SERVE, "--mp", "4"])
    assert "2 process(es), 4 devices, mp 4" in out, out
    assert got == want
