"""Op-level table for the tensor op families of issue 27: per family, one
representative call on small float32 tensors, timed as d2s eager, d2s static
(`to_static`, numpy backend), hand-written numpy, and torch eager when torch
imports; on one core (thread pools pinned to 1 before numpy loads).

    python benchmarks/ops.py [--rounds N] [--stat median|min] [--clock wall|cpu]
                             [--families math,search] [--json PATH]

Targets (issue 27): static within 1.1x of hand-written numpy, eager within
1.3x of torch eager. The table prints both ratios per row. Every mode's
result is checked equal to numpy's once, before timing (same inputs).

The `floor` row is a one-element negation: its kernel costs next to
nothing, so its times are what one call costs each mode by itself (the
Python call path of eager dispatch and of a cached static program, numpy's
and torch's own call overhead). A row whose numpy time is a few times that
floor cannot meet the static target by kernels alone.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import d2s  # noqa: E402
from d2s.core.tensor import new_tensor  # noqa: E402
import timing  # noqa: E402
from timing import measure, null_context  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 32)).astype(np.float32)
B = RNG.standard_normal((4, 16, 16)).astype(np.float32)
IDS = RNG.integers(0, 16, size=(64,))
ONE = np.ones((1,), np.float32)


def _np_topk(x, k):
    idx = np.argsort(-x, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(x, idx, -1), idx


def _np_logsumexp(x):
    m = x.max(1, keepdims=True)
    return (np.log(np.exp(x - m).sum(1, keepdims=True)) + m)[:, 0]


# The d2s functions (defs: to_static converts their source).
def d2s_floor(x):
    return -x


def d2s_math(x):
    return d2s.sin(x) * d2s.rsqrt(x * x + 1.0)


def d2s_scan(x):
    return d2s.cumsum(x, 1)


def d2s_search(x):
    return d2s.topk(x, 4)


def d2s_shaping(x):
    return d2s.split(x, 4, 1)


def d2s_reduce_more(x):
    return d2s.logsumexp(x, 1)


def d2s_linalg_more(a):
    return d2s.einsum("bij,bjk->bik", a, a)


def d2s_creation_more(i):
    return d2s.one_hot(i, 16)


def d2s_counting(x):
    return d2s.var(x, 1)


# family -> (label, d2s function, numpy function, torch function, inputs)
def _rows():
    return {
        "floor": ("-x (1 element)", d2s_floor, np.negative, lambda t, x: -x, [ONE]),
        "math": ("sin(x) * rsqrt(x*x+1)", d2s_math,
                 lambda x: np.sin(x) * (1 / np.sqrt(x * x + np.float32(1))),
                 lambda t, x: t.sin(x) * t.rsqrt(x * x + 1.0), [X]),
        "scan": ("cumsum(x, 1)", d2s_scan, lambda x: np.cumsum(x, 1),
                 lambda t, x: t.cumsum(x, 1), [X]),
        "search": ("topk(x, 4)", d2s_search, lambda x: _np_topk(x, 4),
                   lambda t, x: t.topk(x, 4), [X]),
        "shaping": ("split(x, 4, 1)", d2s_shaping, lambda x: np.split(x, 4, 1),
                    lambda t, x: t.split(x, 8, 1), [X]),
        "reduce_more": ("logsumexp(x, 1)", d2s_reduce_more, _np_logsumexp,
                        lambda t, x: t.logsumexp(x, 1), [X]),
        "linalg_more": ("einsum(bij,bjk->bik)", d2s_linalg_more, lambda a: np.matmul(a, a),
                        lambda t, a: t.einsum("bij,bjk->bik", a, a), [B]),
        "creation_more": ("one_hot(ids, 16)", d2s_creation_more,
                          lambda i: (i[:, None] == np.arange(16)).astype(np.float32),
                          lambda t, i: t.nn.functional.one_hot(i, 16).float(), [IDS]),
        "counting": ("var(x, 1)", d2s_counting, lambda x: np.var(x, 1, ddof=1),
                     lambda t, x: t.var(x, 1), [X]),
    }


def _wrapped(result):
    """numpy's result as d2s Tensors, made as cheaply as d2s makes them."""
    if isinstance(result, (tuple, list)):
        return [new_tensor(a) for a in result]
    return new_tensor(result)


def _arrays(result):
    """A result (a tensor, an array, a tuple or list of them) as numpy arrays."""
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    if hasattr(result, "detach"):  # torch
        result = result.detach()
    return [np.asarray(result.numpy() if hasattr(result, "numpy") else result)]


def check_equal(family, results):
    """Every mode's result equals numpy's, up to float32 rounding (torch sums
    in another order: the tolerance scales with the result's magnitude)."""
    want = _arrays(results["numpy"])
    for mode, result in results.items():
        got = _arrays(result)
        if len(got) != len(want):
            raise AssertionError(f"{family}: {mode} gives {len(got)} arrays, numpy {len(want)}")
        for g, w in zip(got, want):
            if g.shape != w.shape:
                raise AssertionError(f"{family}: {mode} shape {g.shape} != numpy's {w.shape}")
            w = w.astype(np.float64)
            scale = float(np.abs(w).max()) if w.size else 0.0
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=1e-5,
                                       atol=1e-6 * max(1.0, scale), err_msg=f"{family}: {mode}")


def run(families, rounds, stat="median"):
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch
        torch.set_num_threads(1)
    results = {}
    for family, (label, fn, np_fn, torch_fn, inputs) in _rows().items():
        if families and family not in families:
            continue
        tensors = [d2s.to_tensor(a) for a in inputs]
        static_fn = d2s.jit.to_static(fn)
        static_fn(*tensors)  # convert and build once, outside the timing
        modes = {
            "eager": (lambda: fn(*tensors), null_context),
            "static": (lambda: static_fn(*tensors), null_context),
            "numpy": (lambda: np_fn(*inputs), null_context),
            # the least any Tensor-in, Tensor-out Python function costs: unwrap,
            # the same numpy call, wrap (the floor under "static")
            "wrapper": (lambda: _wrapped(np_fn(*[t._value for t in tensors])), null_context),
        }
        if torch is not None:
            ts = [torch.from_numpy(a) for a in inputs]
            modes["torch"] = (lambda: torch_fn(torch, *ts), torch.no_grad)
        with d2s.no_grad():
            check_equal(family, {m: fn() for m, (fn, _) in modes.items()})
            stats = measure(modes, rounds=rounds, target_s=0.05, warmup=2)
        # the median of the rounds, or their fastest (`min`: on a machine
        # other work shares, the round least slowed by it)
        med = {m: (s.median if stat == "median" else min(s.rounds)) for m, s in stats.items()}
        results[family] = {"op": label, "seconds_per_call": med,
                           "static/numpy": med["static"] / med["numpy"],
                           "wrapper/numpy": med["wrapper"] / med["numpy"],
                           "eager/torch": med["eager"] / med["torch"] if "torch" in med
                           else None}
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5,
                    help="timing rounds per op and mode; the median is reported (default 5)")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="per-call time reported: the median round (default) or the fastest "
                         "(steadier where other work shares the core)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time (default), or this thread's CPU time: on a machine other "
                         "processes share, the time they take the core away is not counted")
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    ap.add_argument("--json", default="", help="write the results here")
    args = ap.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    if args.clock == "cpu":
        timing._clock = time.thread_time  # (measure reads the module's clock per round)
    results = run(families, args.rounds, args.stat)
    print(f"per call ({args.stat} of {args.rounds} rounds, {args.clock} clock), one core; "
          "results checked equal to numpy's first")
    print(f"{'family':14s} {'op':24s} {'eager':>9s} {'static':>9s} {'numpy':>9s} "
          f"{'torch':>9s} {'static/np':>9s} {'wrapper/np':>10s} {'eager/torch':>11s}")
    for family, r in results.items():
        s = r["seconds_per_call"]
        torch_s = f"{s['torch'] * 1e6:7.1f}us" if "torch" in s else f"{'-':>9s}"
        et = f"{r['eager/torch']:10.2f}x" if r["eager/torch"] is not None else f"{'-':>11s}"
        print(f"{family:14s} {r['op']:24s} {s['eager'] * 1e6:7.1f}us {s['static'] * 1e6:7.1f}us "
              f"{s['numpy'] * 1e6:7.1f}us {torch_s} {r['static/numpy']:8.2f}x "
              f"{r['wrapper/numpy']:9.2f}x {et}")
    print("targets: static/numpy <= 1.1x, eager/torch <= 1.3x (one core, small tensors); "
          "wrapper/np: a bare Python function unwrapping the Tensors, making the same numpy "
          "call and wrapping its result (the least a Tensor-in, Tensor-out call costs)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
