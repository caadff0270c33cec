"""A toy backend: what `d2s.backends.base` asks of a backend, and nothing else.

It runs a forward program whose ops all have one of its few rules
(`RULES`); anything else — another op, control flow, gradients, a training
step — is `Unsupported`, and the registry runs that on the numpy backend
after one `BackendFallbackWarning`. It imports only the interface
(`d2s.backends.base`) and numpy, the library: proof that a backend needs no
other part of d2s.
"""
import numpy as np

from d2s.backends.base import Unsupported


def _full(attrs):
    return np.full(attrs["shape"], attrs["fill_value"], attrs["dtype"])


# op type -> rule(attrs, *input arrays) -> output array
RULES = {
    "add": lambda attrs, x, y: np.add(x, y),
    "subtract": lambda attrs, x, y: np.subtract(x, y),
    "multiply": lambda attrs, x, y: np.multiply(x, y),
    "full": lambda attrs: _full(attrs),
}

RUNS = []  # (op type) of every op the toy backend ran, for the tests to read


def _check(program, ops):
    if len(program.blocks) > 1:  # control flow: sub-blocks
        op = next((op for op in ops if op.type not in RULES), None)
        raise Unsupported("the toy backend runs no control flow", op)
    for op in ops:
        if op.type not in RULES:
            raise Unsupported(f"the toy backend has no rule for '{op.type}'", op)


def _run(ops, env):
    for op in ops:
        result = RULES[op.type](op.attrs, *(env[v.name] for v in op.inputs))
        env[op.outputs[0].name] = np.asarray(result, dtype=op.outputs[0].dtype)
        RUNS.append(op.type)
    return env


class ToyExecutable:
    """A to_static program's forward on the toy backend."""

    plain_call = None

    def __init__(self, parts):
        self.parts = parts
        self.ops = parts.main_program.global_block().ops
        _check(parts.main_program, self.ops)

    def forward(self, feeds, captured, feed_attrs=None):
        env = dict(zip(self.parts.input_names(), list(feeds) + [t._value for t in captured]))
        _run(self.ops, env)
        return [env[v.name] for v in self.parts.outputs]

    def forward_for_grad(self, feeds, captured, feed_attrs=None):
        raise Unsupported("the toy backend computes no gradients")

    def backward(self, saved, cts, wanted):
        raise Unsupported("the toy backend computes no gradients")

    def step(self, tensors):
        raise Unsupported("the toy backend runs no training step")

    def text(self, feeds):
        return "\n".join(f"{op.outputs[0].name} = toy.{op.type}"
                         f"({', '.join(v.name for v in op.inputs)})" for op in self.ops)


class ToyRunner:
    """`d2s.static.Executor`'s (program, feeds, fetches) on the toy backend."""

    def __init__(self, program, feed_names, fetch_names):
        self.program = program
        self.feed_names = list(feed_names)
        self.fetch_names = list(fetch_names)
        self.ops = program.global_block().ops
        _check(program, self.ops)

    def run(self, feeds, feed_attrs=None):
        env = dict(zip(self.feed_names, feeds))
        env.update((name, t._value) for name, t in self.program.captured.items())
        _run(self.ops, env)
        return [env[n] for n in self.fetch_names]

    def output_attrs(self, feeds, feed_attrs=None):
        return None

    def text(self, feeds, feed_attrs=None):
        return "\n".join(op.type for op in self.ops)


class ToyBackend:
    name = "toy"

    def executable(self, parts):
        if hasattr(parts, "run_outputs"):
            raise Unsupported("the toy backend runs no training step")
        return ToyExecutable(parts)

    def runner(self, program, feed_names, fetch_names):
        return ToyRunner(program, feed_names, fetch_names)
