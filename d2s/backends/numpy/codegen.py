"""The compiled executor: a Program becomes one generated Python function.

After the passes (`passes`: the target-neutral ones, then in-place
reuse), every op becomes one line calling its registry kernel (bound as a
global of the generated module); control-flow ops write their own code
(their numpy rules, `rules.control_ops`: `cond` an `if`, `while` a Python
`while`) with the helpers below; values are Python locals, there is
no per-op dispatch or dictionary. The source is kept (`.source`) for
inspection. Errors raised inside are mapped back, through a line -> op
table, to the op and the user's line that built it (same exception type).

Gradients through control flow compile too: a forward `cond` packs the
values its gradient blocks read into a tuple (with the branch taken), a
forward `while` appends one tuple per iteration; `cond_grad` / `while_grad`
unpack them and run the gradient blocks inline (the latter in reverse
order), gradients through a branch that leaves a name undefined included
(backward gives such names real zero cotangents).
"""
from __future__ import annotations

import itertools
import keyword
import linecache
import re

import numpy as np

from ...bytecode_cache import compile_module
from ...core.attr_schema import is_safe_name
from ...core.ops.indexing import index_source
from ...core.registry import OPS
from ...static.control_ops import control_op, kept_names, restored_var, saved_var
from ...static.passes import ProgramView
from .heap import keep_freed_pages
from .passes import optimize
from .inplace import is_ufunc_op
from ...static.scope import UndefinedValue
from ...static.scope import relocate as _relocate
from .update_plan import UpdateBuffers
from . import rules  # noqa: F401  (the control ops' numpy rules register)


class NotCompilable(Exception):
    pass


_counter = itertools.count()
# Binary ufunc ops emitted as Python operators when not written in place:
# numpy's operators call the same ufunc on arrays, and numpy scalars (0-d
# results, loop counters) skip the ufunc call overhead.
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/",
              "floor_divide": "//", "remainder": "%", "pow": "**", "less_than": "<",
              "less_equal": "<=", "greater_than": ">", "greater_equal": ">=", "equal": "==",
              "not_equal": "!="}
_BOOL_OPERATORS = {"logical_and": "&", "logical_or": "|"}  # (both operands bool)
_SIMPLE = (type(None), bool, int, str)
_WORD = re.compile(r"[^0-9A-Za-z_]")  # ASCII: what is left is always part of an identifier
_KERNEL_NAMES = {}  # op type -> the global its kernel is bound to
# Builtins the generated code calls: never a variable's identifier.
_RESERVED = frozenset({"int", "float", "bool", "len", "range", "reversed", "tuple", "list",
                       "print", "isinstance", "type"})


def _literal(v):
    """Python source for a simple attribute value, or None (then the value is
    a global of the generated function). Only `repr` of exact builtin types is
    ever written: numbers, bools, None, strings (their repr is a literal
    whatever they hold), tuples and lists of those; nothing else from a
    program, nor from a loaded file, becomes source text."""
    t = type(v)
    if t in _SIMPLE:
        return repr(v)
    if t is float:
        return repr(v) if np.isfinite(v) else None
    if t is tuple or t is list:
        parts = [_literal(x) for x in v]
        if any(p is None for p in parts):
            return None
        if t is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return "[" + ", ".join(parts) + "]"
    return None


_UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
           "divide": np.true_divide, "floor_divide": np.floor_divide, "remainder": np.remainder,
           "pow": np.power, "less_than": np.less, "less_equal": np.less_equal,
           "greater_than": np.greater, "greater_equal": np.greater_equal, "equal": np.equal,
           "not_equal": np.not_equal}


_HANDLERS = {}  # op type -> the _Emitter method `op_<type>` emitting it, or None


class _Emitter:
    def __init__(self, view):
        self.view = view
        self.lines = []
        self.line_ops = {}  # line of the generated function (its header is 1) -> op
        self.globals = {"_Undefined": UndefinedValue}
        self.names = {}      # name (after renaming) -> its Python identifier
        self._ident_of = {}  # name as asked -> its Python identifier (see ident)
        self._bound = {}     # ("kernel", op type) / ("scalar", name) -> its global
        self.taken = set(self.globals)

    # ---- names -------------------------------------------------------------------
    def ident(self, name):
        # Asked a few times per op emitted: the answer per name as asked
        # (before renaming) is one lookup.
        found = self._ident_of.get(name)
        if found is None:
            found = self._ident_of[name] = self._resolved_ident(self.view.rename.get(name, name))
        return found

    def _resolved_ident(self, name):
        found = self.names.get(name)
        if found is not None:
            return found
        # Any name becomes an ASCII identifier (names of a loaded file included):
        # never a keyword or a builtin the generated code calls.
        base = name if name.isascii() and name.isidentifier() else _WORD.sub("_", name)
        # (Helpers of the generated code are globals named `_...`: no variable is.)
        if not base or base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED \
                or base[0] == "_":
            base = "v" + base if base[:1] == "_" else "v_" + base
        cand = self.names[name] = self._fresh(base[:64])
        return cand

    def _fresh(self, base):
        """`base`, or `base_1`, `base_2`, ...: the first no variable or global has.
        Variables and globals never share a name, whichever came first: a
        local of that name would hide the global."""
        cand, k = base, 1
        while cand in self.taken:
            cand, k = f"{base}_{k}", k + 1
        self.taken.add(cand)
        return cand

    def global_value(self, prefix, value):
        name = self._fresh(f"{prefix}{len(self.globals)}")
        self.globals[name] = value
        return name

    def constant(self, value):
        """Source for `value` in generated code: its literal when it is a simple
        value of an exact builtin type (`_literal`), else a global holding it."""
        lit = _literal(value)
        return lit if lit is not None else self.global_value("c", value)

    def scalar_const(self, name):
        """A 0-d constant as a numpy scalar (cheaper next to another scalar)."""
        name = self.view.rename.get(name, name)
        value = self.view.consts.get(name)
        if value is None or value.ndim:
            return None
        ident = self._bound.get(("scalar", name))
        if ident is None:
            ident = self._bound[("scalar", name)] = self._fresh(self.ident(name) + "_s")
            self.globals[ident] = value[()]
        return ident

    def kernel(self, op_type):
        key = _KERNEL_NAMES.get(op_type)
        if key is None:
            safe = _WORD.sub("_", op_type)[:64]
            # an op type that is no identifier gets a numbered global: two such
            # types never share one (a user op "a.b" next to "a_b")
            key = _KERNEL_NAMES[op_type] = "k_" + safe if safe == op_type else \
                f"k_{safe}_{len(_KERNEL_NAMES)}"
        bound = self._bound.get(("kernel", op_type))
        if bound is None:
            bound = self._bound[("kernel", op_type)] = self._fresh(key)
            self.globals[bound] = OPS[op_type].kernel
        return bound

    # ---- emission --------------------------------------------------------------------
    def emit(self, text, indent, op=None):
        lines = self.lines
        lines.append("    " * indent + text)
        if op is not None:
            self.line_ops[len(lines) + 1] = op  # the header is line 1

    def block(self, idx, indent):
        ops = self.view.blocks[idx]
        if not ops:
            self.emit("pass", indent)
        for op in ops:
            decl = control_op(op.type)
            try:
                handler = _HANDLERS[op.type]
            except KeyError:  # a failed getattr per op costs more than emitting it
                handler = _HANDLERS[op.type] = getattr(_Emitter, "op_" + op.type, None)
            if decl is not None:
                rule = decl.lowerings.get("numpy") or decl.emit
                if rule is None:
                    raise NotCompilable(f"control op {op.type!r} has no numpy rule")
                rule(self, op, indent)
            elif handler is not None:
                handler(self, op, indent)
            elif op.type in OPS:
                self.op_kernel(op, indent)
            else:
                raise NotCompilable(f"op {op.type!r}")

    def attrs_source(self, op):
        """Keyword arguments passing `op`'s attributes: `name=literal` where the
        name is a plain identifier (the loader admits no other), and every
        other attribute through one `**dict` global: no attribute name or value
        is spliced into the source as text."""
        parts, rest = [], {}
        for k, v in op.attrs.items():
            if not is_safe_name(k):
                rest[k] = v
                continue
            lit = _literal(v)
            parts.append(f"{k}={lit if lit is not None else self.global_value('a', v)}")
        if rest:
            parts.append(f"**{self.global_value('a', rest)}")
        return parts

    def op_kernel(self, op, indent):
        args = [self.ident(v.name) for v in op.inputs]
        buf = self.view.inplace.get(id(op))
        symbol = _OPERATORS.get(op.type)
        if isinstance(buf, UpdateBuffers):  # an update writing into these arrays
            kwargs = self.attrs_source(op) + buf.kwargs_source(self.ident)
            call = f"{self.kernel(op.type)}({', '.join(args + kwargs)})"
        elif buf is not None and is_ufunc_op(op):
            call = f"{self.kernel(op.type)}({', '.join(args + ['out=' + self.ident(buf)])})"
        elif op.type in _BOOL_OPERATORS and len(args) == 2 \
                and all(v.dtype == np.bool_ for v in op.inputs):
            # bool `&`/`|` is logical_and/or, and skips the ufunc call on numpy
            # scalars (a converted `while a and b` test: d2s.static.inline_operand)
            call = f"{args[0]} {_BOOL_OPERATORS[op.type]} {args[1]}"
        elif symbol is not None and len(args) == 2 and OPS[op.type].kernel is _UFUNCS[op.type]:
            if all(not v.shape for v in op.inputs):  # scalar arithmetic (loop counters)
                args = [self.scalar_const(v.name) or a for v, a in zip(op.inputs, args)]
            call = f"{args[0]} {symbol} {args[1]}"
        else:
            call = f"{self.kernel(op.type)}({', '.join(args + self.attrs_source(op))})"
        outs = [self.ident(v.name) for v in op.outputs]
        if not outs:
            self.emit(call, indent, op)
        elif len(outs) == 1:
            self.emit(f"{outs[0]} = {call}", indent, op)
        else:
            self.emit(f"{', '.join(outs)} = {call}", indent, op)

    def op_getitem(self, op, indent):
        """`x[...]` as Python subscription: the spec is known at compile time,
        only its tensor parts are read at run time (`indexing.index_source`)."""
        x, tensors = op.inputs[0], op.inputs[1:]

        def ref(k):
            v = tensors[k]
            return self.ident(v.name), not v.shape and v.dtype.kind in "iu"

        index = index_source(op.attrs["spec"], ref)
        self.emit(f"{self.ident(op.outputs[0].name)} = {self.ident(x.name)}[{index}]",
                  indent, op)

    # ---- what control-flow ops emit with (their rules in `rules.control_ops`) ----------
    def decline(self, reason):
        """This program is not compiled (the interpreter runs it): `reason`."""
        raise NotCompilable(reason)

    def kept(self, op, block_ids):
        """The names forward `op` keeps for its gradient that `block_ids` define:
        packed in the forward, unpacked in the backward, in this order."""
        return kept_names(self.view.program, op, block_ids)

    def forward_op(self, grad_op):
        """The forward op that saves what gradient op `grad_op` restores."""
        name = restored_var(grad_op)
        for block in self.view.program.blocks:
            for op in block.ops:
                if saved_var(op) == name:
                    return op
        raise NotCompilable(f"no forward op saves {name!r}")

    def pack(self, names):
        items = [self.ident(n) for n in names]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def unpack(self, names, source, indent, op):
        if not names:
            return
        # A name that is a compile-time constant here is a global of this
        # function: rebinding it would make it a local everywhere, so skip it.
        consts = self.view.consts
        rename = self.view.rename
        targets = ["_" if rename.get(n, n) in consts else self.ident(n) for n in names]
        self.emit(f"({', '.join(targets)}{',' if len(targets) == 1 else ''}) = {source}",
                  indent, op)

    def temp(self, prefix):
        return self._fresh(f"_{prefix}{next(_counter)}")


class CompiledFunction:
    """`fn(*inputs) -> tuple of outputs`, with readable `.source`."""

    def __init__(self, view, name="program"):
        keep_freed_pages()  # (once per process: its calls reuse their freed pages)
        em = _Emitter(view)
        params = [em.ident(n) for n in view.inputs]
        for cname, value in view.consts.items():
            em.globals[em.ident(cname)] = value
        em.block(0, 1)
        outs = []
        for n in view.outputs:
            ident = em.ident(n)
            # Constants are shared across calls: hand out copies.
            outs.append(f"{ident}.copy()" if n in view.consts else ident)
        em.emit(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})", 1)
        fname = _WORD.sub("_", name)[:64]
        if not fname or fname[0].isdigit() or keyword.iskeyword(fname):
            fname = "program_" + fname
        header = f"def {fname}({', '.join(params)}):"
        self.source = "\n".join([header] + em.lines) + "\n"
        self.filename = f"<d2s compiled {name} #{next(_counter)}>"
        namespace = dict(em.globals)
        exec(compile_module(self.source, self.filename), namespace)
        # tracebacks through generated code show its lines
        linecache.cache[self.filename] = (len(self.source), None,
                                          self.source.splitlines(True), self.filename)
        self.fn = namespace[fname]
        self._line_ops = em.line_ops
        self._idents = em.names
        # (not the view: its per-block op lists and notes are not needed
        # after emission, and a program's compiled function lives as long
        # as the program, each list one more object for the collector)
        self._rename = view.rename
        self.input_names = list(view.inputs)
        self.output_names = list(view.outputs)

    def __call__(self, *args):
        try:
            return self.fn(*args)
        except Exception as e:
            raise self.located(e) from None

    def located(self, e):
        """What to raise for `e`, raised by a call of `fn` (a caller that calls
        `fn` itself, to save a frame per call, raises this as `__call__` does):
        the error naming the user's line of the op that failed."""
        tb, frame_tb = e.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                frame_tb = tb
            tb = tb.tb_next
        op = self._line_ops.get(frame_tb.tb_lineno) if frame_tb is not None else None
        if op is None or getattr(e, "_d2s_located", False):
            return e
        local = frame_tb.tb_frame.f_locals
        for v in op.inputs:
            value = local.get(self.names_for(v.name))
            if type(value) is UndefinedValue:
                err = value.error(op)
                return err
        return _relocate(e, op)

    def names_for(self, name):
        """The Python identifier the generated code uses for variable `name`."""
        return self._idents.get(self._rename.get(name, name), name)


def compile_program(program, global_ops, inputs, outputs, name="program", passes=True):
    """Compile `global_ops` (ops of block 0) reading `inputs`, returning `outputs`."""
    view = ProgramView(program, global_ops, outputs, inputs)
    if passes:
        view = optimize(view)
    return CompiledFunction(view, name)
