"""Eager reverse-mode autodiff: a tape of nodes and one reverse walk.

Each differentiable eager op with a gradient-requiring input records a
`GradNode` holding the op, its inputs, attrs and output values. `backward`
walks the nodes in reverse topological order and applies the op's
registered vjp rule (the same rule static backward uses) under `no_grad`.
Gradients accumulate on leaf tensors (`stop_gradient=False`, no node).
"""
from __future__ import annotations

import threading

import numpy as np

from . import state


class GradNode:
    # `versions`: each input's `_version` when recorded; None while no in-place
    # write ever happened in this process (then every version was 0).
    __slots__ = ("op", "inputs", "attrs", "out_values", "versions", "__weakref__")

    def __init__(self, op, inputs, attrs, out_values):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.out_values = out_values
        self.versions = tuple(x._version for x in inputs) if inplace_seen[0] else None


# Set once the first in-place write happens (core.inplace): until then no
# node needs to remember its inputs' versions (all are 0).
inplace_seen = [False]
# Set once a hook is registered (core.grad_api): until then no walk looks for hooks.
hooks_seen = [False]


def record(op, inputs, attrs, outs, values):
    node = GradNode(op, tuple(inputs), attrs, values)
    for i, t in enumerate(outs):
        t._node = node
        t._out_index = i


def toposort(roots):
    """The tape nodes `roots` depend on, each after the nodes of its inputs
    (as recorded, where a value was written in place since)."""
    order, seen = [], set()
    stack = [(n, False) for n in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for x in (_inputs_as_recorded(node, check=False) if inplace_seen[0] else node.inputs):
            if x._node is not None and id(x._node) not in seen:
                stack.append((x._node, False))
    return order  # inputs before consumers


def backward(tensor, grad=None):
    """Accumulate d(tensor)/d(leaf) into `leaf.grad` for every reachable leaf."""
    if tensor.stop_gradient:
        raise RuntimeError(
            "backward() on a tensor that does not require grad: no input of the "
            "computation had stop_gradient=False")
    if grad is None:
        grad = Tensor._from_array(np.ones(tensor.shape, tensor.dtype))
    elif not isinstance(grad, Tensor):
        grad = Tensor._from_array(np.asarray(grad, dtype=tensor.dtype))
    if tensor._node is None:
        _accumulate_leaf(tensor, grad)
        return
    outer = getattr(_queued, "callbacks", None)
    outer_leaves = getattr(_queued, "leaves", None)
    _queued.callbacks = []
    _queued.leaves = {} if hooks_seen[0] else None
    try:
        with state.no_grad():
            cts = {id(tensor._node): [None] * tensor._node.op.num_outputs}
            cts[id(tensor._node)][tensor._out_index] = grad
            for node in reversed(toposort([tensor._node])):
                node_cts = cts.pop(id(node), None)
                if node_cts is None:
                    continue
                if hooks_seen[0]:
                    from .grad_api import _run_hooks
                    node_cts = _run_hooks(node, node_cts)
                _apply_node(node, node_cts, cts)
        callbacks = _queued.callbacks
        leaves = _queued.leaves
    finally:
        _queued.callbacks = outer
        _queued.leaves = outer_leaves
    if leaves:
        from .grad_api import _leaf_hooked
        for leaf, g in leaves.values():
            _add_to_leaf(leaf, _leaf_hooked(leaf, g))
    for fn in callbacks:
        fn()


# Callbacks queued by vjp rules of the backward pass running in this thread.
_queued = threading.local()


def queue_callback(fn):
    """Run `fn()` once the backward pass now running has accumulated every
    gradient (called from a vjp rule; queued once however often it is asked).
    Data-parallel training averages gradients across processes there."""
    callbacks = getattr(_queued, "callbacks", None)
    if callbacks is None:
        raise RuntimeError("queue_callback: no backward pass is running in this thread")
    if fn not in callbacks:
        callbacks.append(fn)


def node_vjp(node, node_cts, outs):
    """`(inputs, cotangents)` of a tape node: its op's vjp rule applied to
    the cotangents of its outputs (`node_cts`; a missing one of a
    single-output op is zeros) and to `outs`, Tensors of the node's output
    values (plain ones, or ones carrying the node's history when the
    backward itself is differentiated: `d2s.grad(create_graph=True)`).
    The inputs are those recorded, where one was written in place since."""
    op = node.op
    inputs = _inputs_as_recorded(node) if inplace_seen[0] else node.inputs
    if op.num_outputs == 1:
        g = node_cts[0] if node_cts[0] is not None else \
            Tensor._from_array(np.zeros_like(node.out_values[0]))
        grads = op.vjp(g, outs[0], *inputs, **node.attrs)
    else:  # multi-output rules get None for outputs nothing used (see registry)
        grads = op.vjp(tuple(node_cts), tuple(outs), *inputs, **node.attrs)
    if len(grads) != len(inputs):
        raise RuntimeError(f"vjp of {op.name} returned {len(grads)} grads for "
                           f"{len(inputs)} inputs")
    return inputs, grads


def _apply_node(node, node_cts, cts):
    if node.op.vjp is None:
        return
    inputs, grads = node_vjp(node, node_cts, [Tensor._from_array(v) for v in node.out_values])
    for x, g in zip(inputs, grads):
        if g is None or x.stop_gradient:
            continue
        if x._node is None:
            _accumulate_leaf(x, g)
        else:
            slot = cts.setdefault(id(x._node), [None] * x._node.op.num_outputs)
            prev = slot[x._out_index]
            slot[x._out_index] = g if prev is None else prev + g


# Ops whose gradient rule reads no input's values (at most its shape): an
# input written in place after them still differentiates correctly through
# its value as recorded (`Tensor._past`), as PyTorch's ops that save nothing.
VALUE_FREE = frozenset((
    "getitem", "add", "subtract", "neg", "reshape", "transpose", "unsqueeze", "squeeze",
    "flatten", "expand", "broadcast_to", "concat", "stack", "sum", "mean", "cast",
    "set_item", "detach", "clone", "assign", "sum_to_like", "scale",
    # no gradient at all (`y.add_(d2s.ones_like(y))`)
    "full_like",
    # a converted function's run: its rule reads what its forward saved (a
    # run that writes its input in place leaves the input's snapshot here)
    "run_program"))


def _needs_value(op, i, inputs):
    if op.name in VALUE_FREE:
        return False
    if op.name == "multiply" and len(inputs) == 2:  # x * c reads c only
        return not inputs[1 - i].stop_gradient
    return True


def _inputs_as_recorded(node, check=True):
    """The node's inputs as they were when it was recorded. An input written in
    place since (its `_version` moved on) is replaced by its snapshot of that
    version (its value and history then); an op whose rule reads that input's
    values raises PyTorch's error instead, as a wrong gradient is the
    alternative."""
    expected = node.versions or (0,) * len(node.inputs)
    inputs = node.inputs
    for i, (x, version) in enumerate(zip(node.inputs, expected)):
        if x._version == version:
            continue
        past = x._past.get(version) if x._past else None
        past = past() if past is not None else None
        if check and _needs_value(node.op, i, node.inputs):
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified "
                f"by an inplace operation: input {i} of {node.op.name} (shape "
                f"{list(x.shape)}, {x.dtype}) is at version {x._version}; expected version "
                f"{version} instead. Write the in-place update on a copy (`y = x.clone()`) "
                "or use the out-of-place op")
        if past is not None:  # (none: written under no_grad, its history unchanged)
            inputs = inputs[:i] + (past,) + inputs[i + 1:]
    return inputs


def _accumulate_leaf(leaf, g):
    if hooks_seen[0]:
        # a leaf's hooks see its whole gradient of this walk, once (as PyTorch's)
        pending = getattr(_queued, "leaves", None)
        if pending is not None:
            from .grad_api import has_leaf_hooks
            if has_leaf_hooks(leaf):
                prev = pending.get(id(leaf))
                pending[id(leaf)] = (leaf, g if prev is None else prev[1] + g)
                return
        else:
            from .grad_api import _leaf_hooked
            g = _leaf_hooked(leaf, g)
    _add_to_leaf(leaf, g)


def _add_to_leaf(leaf, g):
    value = g._value
    if value.dtype != leaf.dtype:
        value = value.astype(leaf.dtype)
    if value.shape != leaf.shape:
        raise RuntimeError(f"gradient of shape {value.shape} for a tensor of shape {leaf.shape}")
    if leaf.grad is None:
        # No copy: d2s never writes into an array it handed out (sums below
        # make new arrays), so sharing the cotangent's array is safe.
        leaf.grad = Tensor._from_array(value)
    else:
        leaf.grad = Tensor._from_array(leaf.grad._value + value)


# Bound by `d2s.core.tensor` once Tensor exists (it imports this module first).
Tensor = None
