"""Where the XLA decode step of benchmarks/llm.py's model spends its time.

    taskset -c 0 python benchmarks/llm_profile.py             # batch 8, prompt 32, 128 new
    python benchmarks/llm_profile.py --batch 1

Profiles one whole greedy generation of the hand-written `jax.jit` twin
(benchmarks/llm_peers.py, which d2s's xla program matches op for op and in
speed) with JAX's profiler, adds up the time of each compiled kernel (XLA's
fusions; the matrix products run as library calls) over the run, and sorts
them into kinds by the HLO they compute: the Linear layers' matrix products
(by output shape), the attention over the cache, the cache writes, copies
and transposes, and the rest (norms, rotary, SiLU, residuals, argmax). The
profiler's own cost inflates every kernel alike: read the shares.
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import argparse  # noqa: E402
import collections  # noqa: E402
import glob  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

import d2s  # noqa: E402
import llm_peers  # noqa: E402
from llm import FULL, QUICK  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402


def kinds(hlo, config, batch, max_len):
    """{kernel name: kind} from the compiled module's text."""
    outputs = {m.group(1): [int(d) for d in m.group(2).split(",") if d] for m in
               re.finditer(r"%([\w.\-]+) = \w+\[([\d,]*)\]", hlo)}
    linear = {config.hidden_size, config.intermediate_size, config.vocab_size,
              config.num_key_value_heads * config.head_dim}
    out = {}
    for name, dims in outputs.items():
        if "dynamic-update-slice" in name:
            kind = "cache writes (dynamic-update-slice)"
        elif "copy" in name or "transpose" in name:
            kind = "copies / transposes"
        elif name.startswith(("ynn", "dot", "custom")) and len(dims) in (2, 3) \
                and dims[-1] in linear:
            kind = f"Linear matmuls, {dims[-1]} outputs"
        elif max_len in dims or (len(dims) >= 4 and dims[1] == config.num_key_value_heads):
            kind = "attention (scores, softmax, probs @ v)"
        else:
            kind = "other (norms, rotary, silu, residual, argmax)"
        out[name] = kind
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8, help="sequences decoded together")
    p.add_argument("--prompt", type=int, default=32, help="prompt length in tokens")
    p.add_argument("--new", type=int, default=128, help="new tokens generated and profiled")
    p.add_argument("--quick", action="store_true", help="benchmarks/llm.py's tiny model (CI)")
    args = p.parse_args(argv)
    import jax
    from jax.profiler import ProfileData

    d2s.seed(0)
    cfg = dict(QUICK if args.quick else FULL, max_position_embeddings=args.prompt + args.new)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    weights, fn = llm_peers.jax_greedy_fn(model)
    prompt = np.random.default_rng(0).integers(0, cfg["vocab_size"], (args.batch, args.prompt))
    jax.block_until_ready(fn(weights, prompt, args.new))
    hlo = fn.lower(weights, prompt, args.new).compile().as_text()
    folder = tempfile.mkdtemp(prefix="d2s-llm-profile-")
    jax.profiler.start_trace(folder)
    jax.block_until_ready(fn(weights, prompt, args.new))
    jax.profiler.stop_trace()
    data = ProfileData.from_file(glob.glob(folder + "/**/*.xplane.pb", recursive=True)[0])
    names = kinds(hlo, model.config, args.batch, args.prompt + args.new)
    per_kind = collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            for ev in line.events:
                if ev.name in names:
                    per_kind[names[ev.name]] += ev.duration_ns
    total = sum(per_kind.values())
    if not total:
        raise SystemExit("llm_profile: the profile holds none of the compiled module's kernels")
    steps = args.new
    print(f"XLA kernels of one greedy generation (jax.jit twin), batch {args.batch}, prompt "
          f"{args.prompt}, {args.new} new tokens; per decode step:")
    for kind, ns in per_kind.most_common():
        print(f"  {ns / 1e3 / steps:9.1f} us  {ns / total:6.1%}  {kind}")
    return per_kind


if __name__ == "__main__":
    main()
