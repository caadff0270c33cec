"""`d2s.static.load_inference_model` (Paddle's `paddle.static.load_inference_model`)
for models written by `d2s.jit.save`: the saved program, the names to feed
and the variables to fetch, ready for `static.Executor.run`.

It lives with `jit.save`/`jit.load` (whose file format it reads); the
package root makes it `d2s.static.load_inference_model`, the name model
code calls, since the static layer may not import jit.
"""
from __future__ import annotations

import os

from .save_load import load

__all__ = ["load_inference_model"]


def load_inference_model(path_prefix, executor=None, **kwargs):
    """`[program, feed_target_names, fetch_targets]` of the model `d2s.jit.save`
    wrote at `path_prefix` (`<path_prefix>.json` and `.npz`); run it with
    `executor.run(program, feed={name: array}, fetch_list=fetch_targets)`.
    Paddle's `model_filename` / `params_filename` keywords name other files
    and are not supported (d2s reads its own pair)."""
    unsupported = sorted(k for k, v in kwargs.items() if v is not None)
    if unsupported:
        raise NotImplementedError(f"load_inference_model: {unsupported} are not supported; "
                                  "give the path prefix d2s.jit.save wrote")
    path_prefix = os.fspath(path_prefix)
    if not os.path.exists(path_prefix + ".json"):
        raise FileNotFoundError(f"load_inference_model: no model at {path_prefix!r} (expected "
                                f"{path_prefix}.json and {path_prefix}.npz, as d2s.jit.save "
                                "writes them)")
    layer = load(path_prefix)
    concrete = layer._concrete
    return [concrete.main_program, [v.name for v in concrete.inputs], list(concrete.outputs)]
