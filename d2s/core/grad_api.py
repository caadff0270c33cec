"""Eager `d2s.grad` (Paddle's `paddle.grad`) and `Tensor.register_hook`.

`grad` walks the tape from the outputs to the inputs as `backward` does,
but returns the cotangents of the inputs instead of accumulating `.grad`
(no tensor's `.grad` changes). With `create_graph=True` the walk runs with
gradients on, so the vjp rules (written with d2s ops) record tape nodes and
the returned gradients are differentiable (second derivatives); the outputs
a rule reads are then the tape's own (with their history), not bare values.

Hooks: `hook(grad)` runs when the gradient of its tensor is complete and may
return a replacement; a leaf's before it is accumulated into `.grad`.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import autograd, state
from .tensor import Tensor, new_tensor


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, no_grad_vars=None):
    """d(sum of outputs * grad_outputs)/d(input) for each input, as a list of
    Tensors (None for an input no output depends on, with `allow_unused`).
    `retain_graph` is accepted for Paddle's signature: the tape is never
    freed by a walk. `no_grad_vars`: tensors no gradient flows through."""
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    grad_outputs = _as_list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    blocked = {id(t) for t in _as_list(no_grad_vars or [])}
    wanted_leaves = {id(t): k for k, t in enumerate(inputs) if t._node is None}
    wanted_slots = {(id(t._node), t._out_index): k for k, t in enumerate(inputs)
                    if t._node is not None}
    found = [None] * len(inputs)

    def add(k, g):
        found[k] = g if found[k] is None else found[k] + g

    cts = {}
    roots = []
    for out, g in zip(outputs, grad_outputs):
        if out.stop_gradient:
            raise RuntimeError("grad: an output does not require grad (no input of its "
                               "computation had stop_gradient=False)")
        g = new_tensor(np.ones(out.shape, out.dtype)) if g is None else \
            g if isinstance(g, Tensor) else new_tensor(np.asarray(g, out.dtype))
        if out._node is None:
            if id(out) in wanted_leaves:
                add(wanted_leaves[id(out)], g)
            continue
        slot = cts.setdefault(id(out._node), [None] * out._node.op.num_outputs)
        slot[out._out_index] = g if slot[out._out_index] is None else slot[out._out_index] + g
        roots.append(out._node)
    with state.enable_grad() if create_graph else state.no_grad():
        for node in reversed(autograd.toposort(roots)):
            node_cts = cts.pop(id(node), None)
            if node_cts is None:
                continue
            node_cts = _run_hooks(node, node_cts)
            for i, g in enumerate(node_cts):
                k = wanted_slots.get((id(node), i))
                if k is not None and g is not None:
                    add(k, g)
            _propagate(node, node_cts, cts, create_graph, blocked, wanted_leaves, add)
    for k, t in enumerate(inputs):
        if found[k] is not None and t._node is None:
            found[k] = _leaf_hooked(t, found[k])  # once, on the whole gradient
    for k, (t, g) in enumerate(zip(inputs, found)):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {k} (shape {list(t.shape)}) is not used to compute the outputs; "
                "pass allow_unused=True to get None for it")
        if g is not None and not create_graph:
            found[k] = new_tensor(g._value)
    return found


def _propagate(node, node_cts, cts, create_graph, blocked, wanted_leaves, add):
    if node.op.vjp is None:
        return
    if create_graph:  # the outputs a rule reads carry their history
        outs = []
        for i, v in enumerate(node.out_values):
            t = new_tensor(v, False)
            t._node, t._out_index = node, i
            outs.append(t)
    else:
        outs = [new_tensor(v) for v in node.out_values]
    inputs, grads = autograd.node_vjp(node, node_cts, outs)
    for x, g in zip(inputs, grads):
        if g is None or x.stop_gradient or id(x) in blocked:
            continue
        if x._node is None:
            k = wanted_leaves.get(id(x))
            if k is not None:
                add(k, g)
        else:
            slot = cts.setdefault(id(x._node), [None] * x._node.op.num_outputs)
            prev = slot[x._out_index]
            slot[x._out_index] = g if prev is None else prev + g


# ---- hooks ---------------------------------------------------------------------------
# id(leaf) -> (weakref to it, [hooks]); a non-leaf's hooks live on its node.
_leaf_hooks = {}
# id(node) -> {out_index: [hooks]} (weak in the node: dropped with it)
_node_hooks = weakref.WeakKeyDictionary()


class HookHandle:
    """What `register_hook` returns: `remove()` takes the hook away."""
    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def register_hook(t, hook):
    if t.stop_gradient:
        raise RuntimeError("register_hook: the tensor does not require grad "
                           "(stop_gradient=True); no gradient will reach it")
    if t._node is None:
        entry = _leaf_hooks.get(id(t))
        if entry is None or entry[0]() is not t:
            key = id(t)
            entry = _leaf_hooks[key] = (weakref.ref(t, lambda _: _leaf_hooks.pop(key, None)),
                                        [])
        hooks = entry[1]
    else:
        hooks = _node_hooks.setdefault(t._node, {}).setdefault(t._out_index, [])
    hooks.append(hook)
    autograd.hooks_seen[0] = True
    return HookHandle(hooks, hook)


def _apply(hooks, g):
    for hook in list(hooks):
        new = hook(g)
        if new is not None:
            g = new if isinstance(new, Tensor) else new_tensor(np.asarray(new, g.dtype))
    return g


def has_leaf_hooks(leaf):
    entry = _leaf_hooks.get(id(leaf))
    return entry is not None and entry[0]() is leaf and bool(entry[1])


def _leaf_hooked(leaf, g):
    entry = _leaf_hooks.get(id(leaf))
    if entry is None or entry[0]() is not leaf:
        return g
    return _apply(entry[1], g)


def _run_hooks(node, node_cts):
    hooks = _node_hooks.get(node) if _node_hooks else None
    if not hooks:
        return node_cts
    node_cts = list(node_cts)
    for i, hs in hooks.items():
        if node_cts[i] is not None:
            node_cts[i] = _apply(hs, node_cts[i])
    return node_cts
