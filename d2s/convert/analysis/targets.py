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
all of them behave as Python does. An uncarried entry is (label, node,
keyed): `keyed` when a key varies only with names bound by `for` loops
inside the construct (`caches[i]["k"] = ...` under `for i in
range(layers)` in a tensor loop): a construct on a tensor finds the items
such a write reaches while it traces its body or branches
(runtime.loop_items), so it reports only the others.
"""
import ast

from . import annos
from .activity import child_statements

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


def _direct_writes(stmt):
    """(target, deleted) for each Attribute/Subscript that `stmt` itself writes."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign) or isinstance(stmt, ast.AnnAssign) and stmt.value:
        targets = [stmt.target]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    elif isinstance(stmt, ast.Delete):
        return [(target, True) for t in stmt.targets for target in _element_targets(t)]
    else:
        return []
    return [(target, False) for t in targets for target in _element_targets(t)]


def _collect(stmts, enclosing, written, inner_fors):
    """Walk statements (writes are statements: no expression needs a visit),
    adding each target written to every construct around it, and each name a
    `for` binds to every construct around that `for` (`inner_fors`)."""
    for stmt in stmts:
        is_construct = isinstance(stmt, _CONSTRUCTS)
        if isinstance(stmt, ast.For):
            bound = {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)}
            for construct in enclosing:
                inner_fors[construct] |= bound
        if is_construct:
            enclosing.append(stmt)
            written[stmt] = []
            inner_fors[stmt] = set()
        writes = _direct_writes(stmt)
        if writes:
            for construct in enclosing:
                written[construct].extend(writes)
        _collect(child_statements(stmt), enclosing, written, inner_fors)
        if is_construct:
            enclosing.pop()


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


def _classify(target, modified, inner_fors):
    """'carried', 'keyed', 'uncarried', or None (a container the construct
    rebinds or makes itself: its writes are the construct's own business).
    'keyed': a key varies only with names that `for` loops inside the
    construct bind (`caches[i]["k"]` under `for i in range(layers)`), which
    stay Python values when those loops run over Python values."""
    node = target
    stable, keyed = True, True
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not _stable_key(node.slice, modified):
            stable = False
            names = {n.id for n in ast.walk(node.slice) if isinstance(n, ast.Name)}
            keyed = keyed and (names & modified) <= inner_fors
        node = node.value
    if isinstance(node, ast.Name) and node.id in modified:
        return None
    if not isinstance(node, ast.Name):
        return "uncarried"  # e.g. `f().x = ...`: no name to read the container from
    if stable:
        return "carried"
    return "keyed" if keyed else "uncarried"


def _split(construct, written, inner_fors):
    """(carried, uncarried): lists of (label, target node) and of (label,
    target node, keyed), one entry per label."""
    modified = getattr(construct, annos.MODIFIED, frozenset())
    carried, uncarried, seen = [], [], set()
    inner = inner_fors.get(construct, set())
    for target, deleted in written:
        label = composite_label(target)
        if label in seen:
            continue
        kind = "uncarried" if deleted else _classify(target, modified, inner)
        if kind is None:
            continue
        seen.add(label)
        if kind == "carried":
            carried.append((label, target))
        else:
            uncarried.append((label, target, kind == "keyed"))
    return carried, uncarried


def annotate_targets(fn_node):
    """Annotate TARGETS on every If/While/For of `fn_node`'s body (after
    liveness, which annotates what each construct modifies)."""
    written = {}  # construct -> [(target, deleted)], in source order
    inner_fors = {}  # construct -> names bound by the `for` loops inside it
    _collect(fn_node.body, [], written, inner_fors)
    for construct, targets in written.items():
        setattr(construct, annos.TARGETS,
                _split(construct, targets, inner_fors) if targets else ([], []))
