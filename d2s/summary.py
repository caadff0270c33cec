"""`d2s.summary` (Paddle's `paddle.summary`): a table of a network's layers
with their output shapes and parameter counts, from one forward pass on
zeros of `input_size` (or on `input`), printed; returns
`{"total_params": n, "trainable_params": m}`. A layer's parameters are
counted once, at the layer that owns them directly."""
from __future__ import annotations

import numpy as np

from .core.state import no_grad
from .core.tensor import to_tensor

__all__ = ["summary"]


def _shape_of(value):
    if isinstance(value, (list, tuple)):
        return [_shape_of(v) for v in value]
    return list(value.shape) if hasattr(value, "shape") else type(value).__name__


def _zeros(size, dtype):
    if isinstance(size, (list, tuple)) and size and isinstance(size[0], (list, tuple)):
        raise TypeError("summary: nested input sizes are given one per input: "
                        "input_size=[(1, 3), (1, 4)]")
    shape = [1 if d is None or d == -1 else int(d) for d in size]
    return to_tensor(np.zeros(shape, dtype or "float32"))


def _inputs(input_size, dtypes, input):
    if input is not None:
        return list(input) if isinstance(input, (list, tuple)) else [input]
    if input_size is None:
        raise ValueError("summary: give input_size (e.g. (1, 3, 32, 32)) or input")
    sizes = input_size
    if isinstance(sizes, (list, tuple)) and sizes and all(
            isinstance(s, (list, tuple)) for s in sizes):
        many = list(sizes)
    else:
        many = [sizes]
    if dtypes is None or isinstance(dtypes, str):
        dtypes = [dtypes] * len(many)
    return [_zeros(s, d) for s, d in zip(many, dtypes)]


def summary(net, input_size=None, dtypes=None, input=None):
    """Print `net`'s layers (type, output shape, parameters) and return the
    parameter totals."""
    rows, handles = [], []
    counted = set()

    def hook(layer, inputs, outputs):
        own = [p for p in layer.parameters(include_sublayers=False) if id(p) not in counted]
        counted.update(id(p) for p in own)
        n = int(sum(int(np.prod(p.shape)) for p in own))
        rows.append((f"{type(layer).__name__}-{len(rows) + 1}", _shape_of(inputs),
                     _shape_of(outputs), n))

    layers = net.sublayers(include_self=False) or [net]
    for layer in layers:
        if type(layer).__name__ in ("Sequential", "LayerList", "LayerDict"):
            continue
        handles.append(layer.register_forward_post_hook(hook))
    was_training = net.training
    net.eval()
    try:
        with no_grad():
            net(*_inputs(input_size, dtypes, input))
    finally:
        for h in handles:
            h.remove()
        if was_training:
            net.train()
    params = net.parameters()
    total = int(sum(int(np.prod(p.shape)) for p in params))
    trainable = int(sum(int(np.prod(p.shape)) for p in params if not p.stop_gradient))
    width = (28, 26, 26, 12)
    line = "-" * sum(width)
    print(line)
    print("".join(h.center(w) for h, w in zip(
        ("Layer (type)", "Input Shape", "Output Shape", "Param #"), width)))
    print("=" * sum(width))
    for name, ins, outs, n in rows:
        ins = ins[0] if isinstance(ins, list) and len(ins) == 1 else ins
        print("".join(str(v).center(w) for v, w in zip((name, ins, outs, f"{n:,}"), width)))
    print("=" * sum(width))
    print(f"Total params: {total:,}")
    print(f"Trainable params: {trainable:,}")
    print(f"Non-trainable params: {total - trainable:,}")
    print(line)
    return {"total_params": total, "trainable_params": trainable}

