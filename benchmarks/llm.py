"""Greedy generation of examples/llama's model: d2s against the peers.

    taskset -c 0 python benchmarks/llm.py                 # prompt 32, 128 new, batch 1 and 8
    python benchmarks/llm.py --quick                       # a tiny smoke run (CI)
    python benchmarks/llm.py --rows eager,xla,jax --batches 1

Rows: d2s eager (generate.py called as plain Python), d2s to_static on the
numpy backend, to_static on xla (the whole generation one call), to_static
on xla with int8 weights (`d2s.quantization.weight_only`); the peers read
the same weights: PyTorch eager and `torch.compile` (benchmarks/llm_peers.py),
a hand-written `jax.jit` generation with a `lax.while_loop`, and ONNX
Runtime on the exported greedy loop (examples/llama/export_onnx.py:
`GreedyGenerator`, its `while` an ONNX `Loop`; one thread).

Before anything is timed: the PyTorch model's logits are checked equal to
d2s's (same weights), and every row's greedy tokens equal d2s eager's (the
int8 row: equal to the int8 program on the numpy backend; its agreement
with fp32 is printed). A row that fails to build is skipped with the
reason; a row whose tokens differ makes the exit status 1.

Per row and batch: first-token latency (a generation of 1 new token:
prompt pass and the first token), whole-generation time (all new tokens),
and decode tokens/s = batch * (new - 1) / (whole - first). Median over
`--rounds` rounds, the rows interleaved. `--clock cpu` times by the
process's CPU time instead of the wall clock: on a shared, loaded machine
the wall clock also counts the time other processes held the core.
Single-threaded: BLAS, XLA, PyTorch and ONNX Runtime run on one thread each
(pin the process with `taskset -c 0` for one core).
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# compile on the calling thread: on a loaded machine a background compile can
# outlast the warm-up calls, and the timed calls would run on numpy meanwhile
os.environ.setdefault("D2S_XLA_SYNC", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

import d2s  # noqa: E402
import llm_peers  # noqa: E402
from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402

ROWS = ("eager", "numpy", "xla", "xla_int8", "torch", "torch_compile", "jax", "onnxruntime")
LABELS = {"eager": "d2s eager", "numpy": "d2s to_static numpy", "xla": "d2s to_static xla",
          "xla_int8": "d2s xla int8", "torch": "PyTorch eager",
          "torch_compile": "torch.compile", "jax": "jax.jit while_loop",
          "onnxruntime": "ONNX Runtime loop"}
# the tiny default Llama: 4 layers, width 256, 8 query / 2 key-value heads
FULL = dict(vocab_size=256, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256)
QUICK = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)


# ---- rows: each a function (prompt int64 [B, P], new tokens) -> tokens int64 [B, new] ------

def _d2s(fn, model):
    def run(prompt, n):
        with d2s.no_grad():
            return np.asarray(fn(model, d2s.to_tensor(prompt), n, temperature=0).numpy())
    return run


def build_row(name, model, args):
    """The row's generation function; raises when the row cannot run here."""
    if name == "eager":
        return _d2s(generate, model)
    if name == "numpy":
        return _d2s(d2s.jit.to_static(generate, backend="numpy"), model)
    if name == "xla":
        return _d2s(d2s.jit.to_static(generate, backend="xla"), model)
    if name == "xla_int8":
        from d2s.quantization import weight_only
        return _d2s(weight_only(d2s.jit.to_static(generate, backend="xla"), bits=8), model)
    if name in ("torch", "torch_compile"):
        import torch
        torch.set_num_threads(1)
        tm = llm_peers.TorchLlama(model)
        step = llm_peers.torch_compiled_step(tm) if name == "torch_compile" else None
        return lambda prompt, n: llm_peers.torch_greedy(tm, prompt, n, step)
    if name == "jax":
        weights, fn = llm_peers.jax_greedy_fn(model)
        return lambda prompt, n: np.asarray(fn(weights, prompt, n)).astype(np.int64)
    if name == "onnxruntime":
        return _onnxruntime(model, args)
    raise ValueError(f"unknown row {name!r} (known: {', '.join(ROWS)})")


def _onnxruntime(model, args):
    """The exported greedy loop, one model per (batch, prompt, new tokens)."""
    import onnxruntime as ort

    from d2s.static import InputSpec
    from examples.llama.export_onnx import GreedyGenerator
    sessions = {}
    folder = tempfile.mkdtemp(prefix="d2s-llm-onnx-")

    def run(prompt, n):
        key = (prompt.shape, n)
        if key not in sessions:
            path = os.path.join(folder, f"greedy_{prompt.shape[0]}_{prompt.shape[1]}_{n}.onnx")
            d2s.onnx.export(GreedyGenerator(model, n), path,
                            input_spec=[InputSpec(list(prompt.shape), "int64", "prompt_ids")])
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            sessions[key] = (sess, sess.get_inputs()[0].name)
        sess, name = sessions[key]
        return sess.run(None, {name: prompt})[0].astype(np.int64)
    return run


# ---- checks ------------------------------------------------------------------------------

def check_torch_logits(model, prompt):
    """Max |d2s - torch| of the prompt pass's logits, relative to their scale."""
    import torch
    tm = llm_peers.TorchLlama(model)
    with d2s.no_grad():
        caches = model.new_cache(prompt.shape[0], prompt.shape[1] + 1)
        want = model.forward_cached(d2s.to_tensor(prompt), caches, 0)[0].numpy()
    with torch.inference_mode():
        got = tm.step(torch.from_numpy(prompt), tm.new_cache(prompt.shape[0],
                                                             prompt.shape[1] + 1),
                      torch.arange(prompt.shape[1])).numpy()
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


# ---- timing ------------------------------------------------------------------------------

def time_rows(fns, prompts, n, rounds, clock=time.perf_counter):
    """{row: {batch: (first-token s, whole-generation s)}}: medians over
    `rounds`, the rows interleaved round by round (round 1 of every row,
    then round 2, ...) so that the load of a shared machine falls on all
    rows alike."""
    samples = {name: {b: ([], []) for b in prompts} for name in fns}
    for r in range(rounds):
        for name, fn in fns.items():
            for b, prompt in prompts.items():
                t0 = clock()
                fn(prompt, 1)
                t1 = clock()
                fn(prompt, n)
                t2 = clock()
                samples[name][b][0].append(t1 - t0)
                samples[name][b][1].append(t2 - t1)
        print(f"  round {r + 1}/{rounds} timed", file=sys.stderr)
    return {name: {b: (statistics.median(f), statistics.median(w))
                   for b, (f, w) in per.items()} for name, per in samples.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--quick", action="store_true",
                   help="tiny model, prompt 8, 8 new tokens, batch 1 and 2, one round, "
                        "no torch.compile (a smoke run)")
    p.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows to run")
    p.add_argument("--batches", default=None, help="comma-separated batch sizes (1,8)")
    p.add_argument("--prompt", type=int, default=None, help="prompt length (32)")
    p.add_argument("--new", type=int, default=None, help="new tokens (128)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per row (3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the model's weights")
    p.add_argument("--json", default=None, help="write the results to this file")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="time by the wall clock or by this process's CPU time")
    args = p.parse_args(argv)
    quick = args.quick
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in ROWS:
            p.error(f"--rows: unknown row {r!r} (known: {', '.join(ROWS)})")
    if quick and "torch_compile" in rows and args.rows == ",".join(ROWS):
        rows.remove("torch_compile")
    batches = [int(b) for b in (args.batches or ("1,2" if quick else "1,8")).split(",")]
    plen = args.prompt or (8 if quick else 32)
    new = args.new or (8 if quick else 128)
    rounds = args.rounds or (1 if quick else 3)
    config = LlamaConfig(**(QUICK if quick else FULL))
    if plen + new > config.max_position_embeddings:
        config.max_position_embeddings = plen + new

    d2s.seed(args.seed)
    model = LlamaForCausalLM(config)
    model.eval()
    rng = np.random.default_rng(args.seed)
    prompts = {b: rng.integers(0, config.vocab_size, (b, plen)).astype(np.int64)
               for b in batches}
    print(f"llama: {config.num_hidden_layers} layers, width {config.hidden_size}, "
          f"{config.num_attention_heads}/{config.num_key_value_heads} heads, vocab "
          f"{config.vocab_size}; prompt {plen}, {new} new tokens, batches {batches}, "
          f"{rounds} round(s)")

    report = {"config": config.to_dict(), "prompt": plen, "new": new, "batches": batches,
              "rows": {}, "skipped": {}}
    failed = False
    if any(r.startswith("torch") for r in rows):
        try:
            rel = check_torch_logits(model, prompts[batches[0]])
            print(f"check: PyTorch logits vs d2s, max relative difference {rel:.1e}")
            report["torch_logits_rel_diff"] = rel
            if rel > 1e-4:
                print("  the PyTorch model does not compute d2s's logits")
                failed = True
        except ImportError as e:
            print(f"check: no PyTorch ({e})")

    want = {b: _d2s(generate, model)(prompts[b], new) for b in batches}
    want_int8 = None
    fns = {}
    for name in rows:
        try:
            fn = build_row(name, model, args)
            for b in batches:                         # builds, compiles, and checks
                fn(prompts[b], 1)
                got = fn(prompts[b], new)
                ref = want[b]
                if name == "xla_int8":
                    from d2s.quantization import weight_only
                    if want_int8 is None:
                        want_int8 = _d2s(weight_only(d2s.jit.to_static(generate, backend="numpy"),
                                                     bits=8), model)
                    ref = want_int8(prompts[b], new)
                    agree = float(np.mean(got == want[b]))
                    report.setdefault("int8_agreement_with_fp32", {})[b] = agree
                    print(f"check: int8 tokens equal to fp32's: {agree:.0%} (batch {b})")
                if not np.array_equal(got, ref):
                    print(f"check: {LABELS[name]}: greedy tokens differ at batch {b}")
                    report["skipped"][name] = f"tokens differ at batch {b}"
                    failed = True
                    break
            else:
                fns[name] = fn
        except Exception as e:                                   # noqa: BLE001
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]
            report["skipped"][name] = reason
            print(f"skip {LABELS[name]}: {reason}"[:100])
            if os.environ.get("D2S_BENCH_TRACEBACK"):
                traceback.print_exc()
    print(textwrap.fill(f"check: greedy tokens equal for {', '.join(LABELS[r] for r in fns)}",
                        100, subsequent_indent="  "))

    timed = time_rows(fns, prompts, new, rounds,
                      time.process_time if args.clock == "cpu" else time.perf_counter)
    report["clock"] = args.clock
    for name in fns:
        entry = report["rows"][name] = {}
        for b in batches:
            first, whole = timed[name][b]
            # too short a generation to tell decoding from the prompt pass: no figure
            decode = b * (new - 1) / (whole - first) if whole > first and new > 1 else None
            entry[b] = {"first_token_s": first, "whole_s": whole, "decode_tok_s": decode}

    print_table(report, batches, new)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if failed else 0


def _cell(e, eager):
    if e["decode_tok_s"] is None:
        tok, ratio = f"{'-':>8}", f"{'-':>6}"
    else:
        tok = f"{e['decode_tok_s']:>8.0f}"
        ratio = (f"{e['decode_tok_s'] / eager['decode_tok_s']:>6.1f}"
                 if eager and eager["decode_tok_s"] else f"{'-':>6}")
    return f"| {e['first_token_s'] * 1e3:>8.2f} {tok} {e['whole_s']:>7.3f} {ratio} "


def print_table(report, batches, new):
    """One line per row, one group of columns per batch (fits 100 columns
    for two batches)."""
    print()
    print(f"{'':<21}" + "".join(f"| {'batch ' + str(b):<33}" for b in batches))
    print(f"{'row':<21}" + "".join(f"| {'first ms':>8} {'tok/s':>8} {'whole s':>7} "
                                   f"{'x eag':>6} " for _ in batches))
    print("-" * (21 + 35 * len(batches)))
    eager = report["rows"].get("eager")
    for name, entry in report["rows"].items():
        print((f"{LABELS[name]:<21}" + "".join(_cell(entry[b], eager and eager[b])
                                               for b in batches)).rstrip())
    for name, why in report["skipped"].items():
        print(f"skipped {LABELS[name]}: {why}"[:100])
    print(f"first: time to generate 1 token (prompt pass included); whole: {new} tokens")
    print(f"tok/s: batch * {new - 1} / (whole - first), decode only; x eag: over d2s eager's")


if __name__ == "__main__":
    sys.exit(main())
