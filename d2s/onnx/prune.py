"""Drop the constants and initializers no node of the model reads.

A rule may make a constant it ends up not using (a shape it only needed
when a dim was unknown, a branch's placeholder): ONNX Runtime removes each
with a warning on every session, so a user's export would be noisy for
nothing. Names are looked up across nested `If`/`Loop` graphs, which read
their parents' values by name.
"""
from __future__ import annotations


def _subgraphs(node):
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


def _read_names(graph, out):
    """Every name a node of `graph` (or of a graph nested in it) reads or returns."""
    for node in graph.node:
        out.update(node.input)
        for sub in _subgraphs(node):
            _read_names(sub, out)
    out.update(o.name for o in graph.output)
    return out


def _drop(graph, read):
    keep = [n for n in graph.node
            if not (n.op_type == "Constant" and not any(o in read for o in n.output))]
    if len(keep) != len(graph.node):
        del graph.node[:]
        graph.node.extend(keep)
    inits = [t for t in graph.initializer if t.name in read]
    if len(inits) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(inits)
    for node in graph.node:
        for sub in _subgraphs(node):
            _drop(sub, read)


def drop_unused_constants(graph):
    """Remove, in place, `Constant` nodes and initializers of `graph` (a
    GraphProto) and its nested graphs whose values nothing reads."""
    _drop(graph, _read_names(graph, set()))
    return graph
