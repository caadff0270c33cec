"""Exported models hold no constant nothing reads, so ONNX Runtime opens them
without its "Removing initializer ... not used by any node" warning (one per
session otherwise, on every user's run)."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_helpers import session

import d2s
import d2s.onnx
from d2s.jit import to_static
from d2s.static import InputSpec


@to_static
def running_sums(x):
    """A list built in a loop (a scan output): its rule once left a constant unread."""
    outs = []
    total = d2s.zeros([3])
    for t in range(len(x)):
        total = total + x[t]
        outs.append(total * 1.0)
    return d2s.stack(outs), len(outs)


@to_static
def branchy(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def _unread(graph):
    """Names of Constant outputs and initializers no node (at any depth) reads."""
    def reads(g, out):
        for node in g.node:
            out.update(node.input)
            for attr in node.attribute:
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    reads(sub, out)
        out.update(o.name for o in g.output)
        return out

    def made(g):
        names = [t.name for t in g.initializer]
        for node in g.node:
            if node.op_type == "Constant":
                names += list(node.output)
            for attr in node.attribute:
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    names += made(sub)
        return names

    read = reads(graph, set())
    return [n for n in made(graph) if n not in read]


@pytest.mark.parametrize("fn, spec, feed", [
    (running_sums, [InputSpec([None, 3])], np.arange(12.0, dtype=np.float32).reshape(4, 3)),
    (branchy, [InputSpec([2, 3])], -np.ones((2, 3), np.float32)),
])
def test_exports_have_no_unread_constants_and_runtime_stays_quiet(fn, spec, feed, capfd):
    model = d2s.onnx.to_model(fn, input_spec=spec)
    assert _unread(model.graph) == []
    capfd.readouterr()
    sess = session(model)  # ONNX Runtime writes its warnings to the process's stderr
    sess.run(None, {sess.get_inputs()[0].name: feed})
    err = capfd.readouterr().err
    assert "Removing initializer" not in err and "W:onnxruntime" not in err, err
