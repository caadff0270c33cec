"""`d2s.static.save_inference_model` / `load_inference_model`: PaddlePaddle's
deployment pair for programs built in static mode.

The file format is `jit.save`'s (`<prefix>.json` and `<prefix>.npz`), so a
saved inference program is read with the same hostile-input checks and
nothing read becomes code. What is saved is the program pruned to what the
fetch targets need (a training program's backward and optimizer ops go),
with the weights those ops read. It lives in `jit` beside the format; the
package root re-exports it as `d2s.static.*`.
"""
from __future__ import annotations

import os

from ..static.ir import Program, Variable
from ..static.passes.dce import _names_referenced, prune_program
from .save_load import load as _load, save_program


def _variables(values, what):
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if not values or not all(isinstance(v, Variable) for v in values):
        raise TypeError(f"save_inference_model: {what} must be a static Variable or a list of "
                        f"them (from static.data / the program's ops), got {values!r}")
    return values


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor=None, program=None,
                         **kwargs):
    """Write the part of `program` (default: the feeds' program) that computes
    `fetch_vars` from `feed_vars`, with its weights, to `<path_prefix>.json`
    and `.npz`. `executor` is accepted for Paddle's signature (nothing is
    run). A fetch target that needs a value other than the feeds and the
    weights is a clear error naming it."""
    feeds = _variables(feed_vars, "feed_vars")
    fetches = _variables(fetch_vars, "fetch_vars")
    program = feeds[0].block.program if program is None else program
    if not isinstance(program, Program):
        raise TypeError(f"save_inference_model: program must be a static Program, "
                        f"got {type(program).__name__}")
    for v in feeds + fetches:
        if v.block.program is not program:
            raise ValueError(f"save_inference_model: '{v.name}' is not a variable of the "
                             f"program being saved")
    for v in feeds:
        if not v.is_data:
            raise ValueError(f"save_inference_model: feed '{v.name}' is not a data variable "
                             f"(static.data(...))")
    pruned = program.clone()
    gb = pruned.global_block()
    gb.ops[:] = _slice(gb.ops, {v.name for v in fetches})
    prune_program(pruned, [v.name for v in fetches])
    used = _names_referenced(pruned)
    pruned.captured = {name: t for name, t in pruned.captured.items() if name in used}
    gb = pruned.global_block()
    save_program(pruned, list(gb.ops), [gb.vars[v.name] for v in feeds],
                 [gb.vars[v.name] for v in fetches], path_prefix)


def _slice(ops, needed):
    """The ops that compute `needed`, in order: a backward slice. Ops no fetch
    target needs go even when they write state (a training program's
    optimizer updates) or print: an inference program only computes."""
    kept = []
    for op in reversed(ops):
        if any(v.name in needed for v in op.outputs):
            kept.append(op)
            needed.update(v.name for v in op.inputs)
    return kept[::-1]


def load_inference_model(path_prefix, executor=None, **kwargs):
    """`[program, feed_target_names, fetch_targets]`, as PaddlePaddle returns
    them: `Executor().run(program, feed={name: array}, fetch_list=fetch_targets)`
    runs it (the weights are the program's captured tensors). Reads what
    `save_inference_model` or `d2s.jit.save` wrote. Paddle's
    `model_filename` / `params_filename` keywords name other files and are
    not supported (d2s reads its own pair)."""
    unsupported = sorted(k for k, v in kwargs.items() if v is not None)
    if unsupported:
        raise NotImplementedError(f"load_inference_model: {unsupported} are not supported; "
                                  "give the path prefix the model was saved at")
    path_prefix = os.fspath(path_prefix)
    if not os.path.exists(path_prefix + ".json"):
        raise FileNotFoundError(f"load_inference_model: no model at {path_prefix!r} (expected "
                                f"{path_prefix}.json and {path_prefix}.npz, as save_inference_model "
                                "and d2s.jit.save write them)")
    layer = _load(path_prefix)
    concrete = layer._concrete
    return [concrete.main_program, [v.name for v in concrete.inputs], list(concrete.outputs)]
