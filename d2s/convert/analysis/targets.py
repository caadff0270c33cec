"""Attribute and subscript targets written inside an `if` / `while` / `for`.

A converted construct carries plain names as state; `acc[0] += x`,
`state["sum"] += v` or `self.h = ...` write state too, kept in a container
the construct only reads. As AutoGraph does, such a target on a local
container is a composite name: read through the container when the construct
starts and written back after it. That works when the target means the same
place for the whole construct: its root is a name the construct does not
rebind, and every subscript key is a constant or a name it does not change.

Annotates TARGETS on each If/While/For (see `annos`): the targets it carries
and those it cannot (a key the construct changes, a slice, a deletion), which
a construct on a tensor reports as an error naming them; with Python values
all of them behave as Python does.
"""
import ast

from . import annos
from .activity import scope_nodes

__all__ = ["annotate_targets", "composite_label"]

_CONSTRUCTS = (ast.If, ast.While, ast.For)


def composite_label(target):
    """How code and messages name a target: its source text, e.g. `acc[0]`."""
    return ast.unparse(target)


def _element_targets(target):
    """Attribute/Subscript targets inside an assignment target (tuples unpacked)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _element_targets(elt)
    elif isinstance(target, ast.Starred):
        yield from _element_targets(target.value)
    elif isinstance(target, (ast.Attribute, ast.Subscript)):
        yield target


def _written(nodes):
    """(target, deleted) for each Attribute/Subscript the statements write."""
    for node in scope_nodes(nodes):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign) or isinstance(node, ast.AnnAssign) and node.value:
            targets = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                for target in _element_targets(t):
                    yield target, True
            continue
        else:
            continue
        for t in targets:
            for target in _element_targets(t):
                yield target, False


def _stable_key(key, modified):
    """A subscript key that names the same item for the whole construct."""
    if isinstance(key, ast.Constant):
        return True
    if isinstance(key, ast.Name):
        return key.id not in modified
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, (ast.USub, ast.UAdd)):
        return isinstance(key.operand, ast.Constant)
    if isinstance(key, ast.Tuple):
        return all(_stable_key(k, modified) for k in key.elts)
    return False


def _classify(target, modified):
    """'carried', 'uncarried', or None (a container the construct rebinds or
    makes itself: its writes are the construct's own business)."""
    node = target
    stable = True
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not _stable_key(node.slice, modified):
            stable = False
        node = node.value
    if isinstance(node, ast.Name) and node.id in modified:
        return None
    if not isinstance(node, ast.Name):
        return "uncarried"  # e.g. `f().x = ...`: no name to read the container from
    return "carried" if stable else "uncarried"


def construct_targets(construct):
    """(carried, uncarried): lists of (label, target node), in source order,
    one entry per label."""
    modified = getattr(construct, annos.MODIFIED, frozenset())
    parts = construct.body + construct.orelse
    if isinstance(construct, ast.For):
        parts = [construct.target] + parts
    carried, uncarried, seen = [], [], set()
    written = sorted(_written(parts), key=lambda tw: (tw[0].lineno, tw[0].col_offset))
    for target, deleted in written:
        label = composite_label(target)
        if label in seen:
            continue
        kind = "uncarried" if deleted else _classify(target, modified)
        if kind is None:
            continue
        seen.add(label)
        (carried if kind == "carried" else uncarried).append((label, target))
    return carried, uncarried


def annotate_targets(fn_node):
    """Annotate TARGETS on every If/While/For of `fn_node`'s body (after
    liveness, which annotates what each construct modifies)."""
    for node in scope_nodes(fn_node.body):
        if isinstance(node, _CONSTRUCTS):
            setattr(node, annos.TARGETS, construct_targets(node))
