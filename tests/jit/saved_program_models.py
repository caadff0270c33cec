"""Small models saved by the hostile-file tests: a two-layer MLP, a function
with a tensor `if` and a `while`, and one that raises inside a tensor branch.
`save_all(dir)` writes each and returns `{name: (path, inputs, expected)}`
with the eager outputs on those inputs."""
import numpy as np

import d2s
from d2s.jit import InputSpec, to_static


class MLP(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = d2s.nn.Linear(3, 4)
        self.fc2 = d2s.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(d2s.tanh(d2s.relu(self.fc1(x))))


def branch_and_loop(x, n):
    h = x * 2.0
    i = 0
    while i < n:
        h = d2s.tanh(h) + 0.5
        i += 1
    if h.sum() > 0:
        y = h[0] * 3.0
    else:
        y = h[1] - 1.0
    return y


def raising(x):
    if x.sum() > 100.0:
        raise ValueError("too big")
    return d2s.tanh(x)


def save_all(directory):
    d2s.seed(3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    n = np.array(3, np.int64)
    found = {}
    cases = [
        ("mlp", MLP(), [InputSpec([2, 3], "float32")], (x,)),
        ("control", branch_and_loop, [InputSpec([2, 3], "float32"), InputSpec([], "int64")],
         (x, n)),
        ("raising", raising, [InputSpec([2, 3], "float32")], (x,)),
    ]
    for name, fn, spec, inputs in cases:
        path = f"{directory}/{name}"
        d2s.jit.save(to_static(fn), path, input_spec=spec)
        d2s.jit.enable_to_static(False)  # the reference: the same code, eagerly
        try:
            ref = fn(*[d2s.to_tensor(a) for a in inputs]).numpy()
        finally:
            d2s.jit.enable_to_static(True)
        found[name] = (path, inputs, ref)
    return found
