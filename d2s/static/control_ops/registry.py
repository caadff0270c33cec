"""The declaration every control-flow op makes once, and the questions it answers.

Ops with sub-blocks, or whose meaning is not a numpy kernel (`cond`,
`while`, their gradients, `undefined`, `raise`), are not in the core op
registry. Each is declared here by its home module (`cond.py`, `while_.py`,
...) as a `ControlOpDef`: the layout of its attributes — which name a
sub-block, which list the names its blocks hand back, which exist only at
run time — and, side by side, every interpretation of it:

* `interpret(op, scope, run_block)`: the reference interpreter
  (`static.executor`) runs it; `run_block(block_idx, scope)` runs a
  sub-block in `scope` (a child of the op's scope, or a saved one);
* `vjp(op, out_cts, req, differentiate)`: static backward builds its
  gradient op; `differentiate` is `backward.backward_block`;
* `check(op)`: its shape rule, checked when a saved program is loaded
  (the message of a mismatch, or None);
* `undefined_outputs(op, labels)`: the names it may leave with no value,
  given those already known (an analysis backends without run-time
  "undefined" objects need);
* `lowerings[backend]`: how a compiling backend or an exporter lowers it,
  or `NotLowerable(reason)`, registered like the core ops' by the target's
  own rules package (`register_lowering(target, COND, rule)` in
  `backends/numpy/rules/control_ops/`, `backends/xla/rules/control_ops/`,
  `onnx/rules/control_ops/`): static holds no rule. The rule reads the
  context the backend passes in: for numpy's code generator
  `rule(em, op, indent)` (`em` the generator, `backends.numpy.codegen`),
  for XLA `rule(low, op, env)` (`low` the lowering context,
  `backends.xla.control_flow`), for ONNX `rule(ex, op, graph, env)` (`ex`
  the exporter, `onnx.control_flow`);
* `emit`: optional, for an op declared outside d2s that brings its numpy
  code with it (same signature as numpy's rule, used where no numpy rule
  is registered); d2s's own control ops leave it None.

Passes, printing, serialization and backends read the layout from here;
none of them spells an attribute name of these ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

from ...core.attr_schema import VALUE
from ...core.registry import Lowerable


class SavedScope(NamedTuple):
    """Attributes of a forward op whose gradient reads its run-time values:
    `var` names the variable holding what it saved (a branch's scope, a
    loop's per-trip scopes), `keep` lists the names saved. Both are set by
    backward and exist only at run time (never saved to a file)."""
    var: str
    keep: str


def _nothing(op, labels):
    return ()


@dataclass(eq=False)
class ControlOpDef(Lowerable):
    name: str
    interpret: Callable
    emit: Optional[Callable] = None
    vjp: Optional[Callable] = None
    # attrs holding the index of a sub-block the op runs (printed beneath it)
    blocks: tuple = ()
    # attrs holding the index of a block that only declares names (while's
    # placeholders): kept with the op, never run or printed as a body
    scope_blocks: tuple = ()
    # its blocks run one after another in one scope (a loop's condition, then
    # its body), each seeing what the ones before wrote; else they are
    # alternatives (a branch each), each seeing only what is outside the op
    shared_scope: bool = False
    # attrs naming what its blocks hand back: a list (None where that path
    # sets nothing) or a single name
    results: tuple = ()
    # attrs listing names it binds inside its blocks
    binds: tuple = ()
    # its other attrs: plain values (numbers, text, an exception type), saved
    # as tagged JSON like a core op's
    values: tuple = ()
    # the type of each of `values` (`core.attr_schema` specs), checked when a
    # saved program is loaded; one not named here must be a plain VALUE
    value_types: dict = field(default_factory=dict)
    saves: Optional[SavedScope] = None
    # attr naming the saved variable it reads (its forward op's `saves.var`)
    restores: Optional[str] = None
    # kept by dead-code elimination even when nothing reads its outputs
    always_kept: bool = False
    check: Optional[Callable] = None
    undefined_outputs: Callable = _nothing
    lowerings: dict = field(default_factory=dict)

    @property
    def runtime_attrs(self):
        """Attributes that exist only while running (never saved)."""
        return tuple(self.saves) if self.saves else ()

    @property
    def attrs(self):
        """Every attribute the op may carry: the whole of its layout."""
        return (self.blocks + self.scope_blocks + self.results + self.binds + self.values
                + ((self.restores,) if self.restores else ()) + self.runtime_attrs)

    def attr_problem(self, attrs, n_blocks):
        """What is wrong with the attributes of a loaded op of this type (None:
        nothing): every name is part of its layout (run-time ones are never in
        a file), block indices name a block other than block 0, name lists
        hold names, values have their declared types."""
        saved = set(self.attrs) - set(self.runtime_attrs)
        for k, v in attrs.items():
            if k not in saved:
                return (f"unknown attribute {str(k)[:80]!r} (this op takes: "
                        f"{', '.join(sorted(saved))})")
        for k in self.blocks + self.scope_blocks:
            v = attrs.get(k)
            if not (type(v) is int and 0 < v < n_blocks):
                return f"{self.name}.{k} names no block ({str(v)[:80]})"
        for k in self.results + self.binds:
            v = attrs.get(k)
            names = [v] if type(v) is str and k in self.results else v  # a single result
            if not (type(names) is list and all(n is None or type(n) is str for n in names)):
                return f"{self.name}.{k} must list variable names, got {str(v)[:80]}"
        if self.restores and type(attrs.get(self.restores)) is not str:
            return f"{self.name}.{self.restores} must name a variable"
        for k in self.values:
            try:
                problem = self.value_types.get(k, VALUE)(attrs.get(k))
            except Exception as e:  # a spec that could not read the value: refused too
                problem = f"malformed value ({type(e).__name__}: {str(e)[:80]})"
            if problem:
                return f"{self.name}.{k}: {problem}"
        return None

    def __repr__(self):
        return f"ControlOpDef({self.name!r})"


CONTROL_OPS: dict[str, ControlOpDef] = {}


def register_control_op(opdef: ControlOpDef) -> ControlOpDef:
    if opdef.name in CONTROL_OPS:
        raise ValueError(f"control-flow op {opdef.name!r} is already registered")
    CONTROL_OPS[opdef.name] = opdef
    return opdef


def control_op(op_type):
    """The declaration of a control-flow op type, or None (a core op)."""
    return CONTROL_OPS.get(op_type)


# ---- questions passes, printing and serialization ask ------------------------------
def sub_block_attrs(op):
    """(attribute, block index) of each sub-block `op` runs, in declaration order."""
    decl = CONTROL_OPS.get(op.type)
    if decl is None:
        return []
    return [(k, op.attrs[k]) for k in decl.blocks if k in op.attrs]


def sub_block_ids(op):
    """The indices of the sub-blocks `op` runs (empty for core ops). Asked of
    every op by every pass: the common answer, none, is found in one lookup."""
    decl = CONTROL_OPS.get(op.type)
    if decl is None:
        return []
    attrs = op.attrs
    return [attrs[k] for k in decl.blocks if k in attrs]


def block_ref_attrs(op):
    """Every attribute of `op` holding a block index: its sub-blocks, then the
    blocks that only declare names."""
    decl = CONTROL_OPS.get(op.type)
    return () if decl is None else decl.blocks + decl.scope_blocks


def result_attrs(op):
    decl = CONTROL_OPS.get(op.type)
    return () if decl is None else decl.results


def block_results(op):
    """Names `op`'s sub-blocks hand back to it (branch / body outputs)."""
    names = []
    for key in result_attrs(op):
        names.extend(n for n in _names(op.attrs.get(key)) if n is not None)
    return names


def renamed_results(op, new_name):
    """`op`'s result attributes with names redirected (`new_name(name)` -> the
    new name, or None to keep it), or None when none of them changes."""
    attrs, hit = {}, False

    def renamed(n):
        nonlocal hit
        m = None if n is None else new_name(n)
        hit = hit or m is not None
        return n if m is None else m

    for key in result_attrs(op):
        value = op.attrs.get(key)
        if isinstance(value, str):
            attrs[key] = renamed(value)
        elif value is not None:
            attrs[key] = [renamed(n) for n in value]
    return attrs if hit else None


def saved_var(op):
    """The name of the variable `op` saves for its gradient, or None."""
    decl = CONTROL_OPS.get(op.type)
    return op.attrs.get(decl.saves.var) if decl is not None and decl.saves else None


def saved_values(op):
    """The names of the values a forward op keeps for its gradient (in its
    saved variable), or []."""
    decl = CONTROL_OPS.get(op.type)
    if decl is None or decl.saves is None:
        return []
    return list(op.attrs.get(decl.saves.keep, ()))


def saved_names(op):
    """Names a forward op keeps for its gradient (the saved variable, then the
    values in it): live, and never overwritten."""
    var = saved_var(op)
    return ([var] if var else []) + saved_values(op)


def restored_var(op):
    """The saved variable a gradient op reads, or None."""
    decl = CONTROL_OPS.get(op.type)
    return op.attrs.get(decl.restores) if decl is not None and decl.restores else None


def kept_names(program, op, block_ids):
    """The names `op` keeps for its gradient that `block_ids` define, in the
    order it keeps them: packed by the forward, unpacked by the gradient."""
    keep = op.attrs.get(CONTROL_OPS[op.type].saves.keep, ())
    return [n for n in keep if any(n in program.blocks[b].vars for b in block_ids)]


def always_kept(op):
    decl = CONTROL_OPS.get(op.type)
    return decl is not None and decl.always_kept


def names_read(ops):
    """Every variable name `ops` (and their sub-blocks, and the saved scopes
    they restore) may read at run time."""
    names, todo = set(), list(ops)
    while todo:
        op = todo.pop()
        names.update(v.name for v in op.inputs)
        restored = restored_var(op)
        if restored:
            names.add(restored)
        for sub in op.sub_blocks():
            todo.extend(sub.ops)
    return frozenset(names)


def _names(value):
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def type_mismatch(what, var, other):
    """Why `var` cannot hold the value `other` gives (dtype, rank or a known
    dim differ), or None: the comparison the control ops' shape rules make."""
    if var.dtype != other.dtype:
        return f"{what}: '{var.name}' is {var.dtype.name} but '{other.name}' is {other.dtype.name}"
    if len(var.shape) != len(other.shape) or any(
            x is not None and y is not None and x != y for x, y in zip(var.shape, other.shape)):
        return (f"{what}: '{var.name}' has shape {list(var.shape)} but '{other.name}' has "
                f"{list(other.shape)}")
    return None
