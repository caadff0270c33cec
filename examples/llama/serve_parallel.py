"""Tensor-parallel greedy generation with Paddle's fleet names, on the xla
backend: `fleet.init` makes a dp x mp mesh over every device (of every
process under the launcher), the model builds its projections from
`fleet.meta_parallel` (see model.parallel_layers), and the generation loop
of generate.py, converted whole by to_static, runs as one partitioned
program. Prints the tokens of every row (rank 0), for comparing runs:

    python examples/llama/serve_parallel.py --devices 4 --mp 4
    python -m d2s.distributed.launch --nproc_per_node 2 --devices_per_proc 2 \\
        examples/llama/serve_parallel.py --mp 4                 # 2 processes x 2

`--mp 1` runs the plain (unsharded) model on one device: the reference.
The model is a tiny one with random weights (seeded), or `--checkpoint`'s.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import d2s  # noqa: E402
import d2s.distributed as dist  # noqa: E402
from d2s.distributed import fleet  # noqa: E402
from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402

TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", type=int, default=None,
                   help="one process: simulated CPU devices (set before JAX starts)")
    p.add_argument("--mp", type=int, default=1, help="model-parallel degree (default 1)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--prompt", type=int, default=6, help="prompt length")
    p.add_argument("--new", type=int, default=8, help="new tokens")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    if dist.get_world_size() > 1:
        dist.init_parallel_env(backend="xla")        # one mesh of every process's devices
    elif args.devices:
        import jax
        jax.config.update("jax_num_cpu_devices", args.devices)
    import jax
    n = jax.device_count()
    if args.mp > 1:
        if n % args.mp:
            raise SystemExit(f"--mp {args.mp} does not divide the {n} devices")
        strategy = fleet.DistributedStrategy()
        strategy.hybrid_configs = {"dp_degree": n // args.mp, "mp_degree": args.mp}
        fleet.init(is_collective=True, strategy=strategy)

    d2s.seed(args.seed)
    model = fleet.distributed_model(LlamaForCausalLM(LlamaConfig(**TINY)))
    model.eval()
    ids = np.random.default_rng(args.seed).integers(0, TINY["vocab_size"],
                                                    (args.batch, args.prompt))
    if args.mp > 1:
        mesh = fleet.get_hybrid_communicate_group().get_model_parallel_group()
        ids = dist.shard_tensor(ids, mesh, [dist.Shard(0) if d == "dp" else dist.Replicate()
                                            for d in mesh.dim_names])
    else:
        ids = d2s.to_tensor(ids)
    gen = d2s.jit.to_static(generate, backend="xla")
    with d2s.no_grad():
        tokens = gen(model, ids, args.new, temperature=0).numpy()
    if dist.get_rank() == 0:
        print(f"{dist.get_world_size()} process(es), {n} devices, mp {args.mp}")
        for row in tokens:
            print("tokens", " ".join(str(int(t)) for t in row))


if __name__ == "__main__":
    main()
