"""Lowering a Program's ops to JAX, op by op, inside one trace.

Each op's XLA rule comes from the registry (`OpDef.lowerings["xla"]`),
beside its numpy kernel; a control-flow op's from its home
(`static.control_ops`), written with the services of `control_flow`.
Every value a rule produces is checked against the op's output Variable:
the dtype numpy gives and every known dim must match — a mismatch is a bug
in the rule, raised at once (`LoweringError`).
"""
from __future__ import annotations

import numpy as np

from ...core.registry import OPS, NotLowerable
from ...static.control_ops import control_op
from ...static.scope import UndefinedValue
from ...static.scope import relocate as _relocate
from ._jax import jax, jnp, lax, special, strong
from .control_flow import ControlFlowSupport
from ...static.definedness import maybe_undefined
from .errors import LoweringError, RaisesOnNumpy, Unsupported
from .ragged import lower_array_op
from .sharding import constrain
from .values import Env, TensorArray, unshift_rows
from . import rules as _rules  # noqa: F401  (registers the rules kept in this target's package)

# Ops whose rules accept a TensorArray operand (through `ns`); any other op
# reading one is lowered by `ragged`, or not at all.
_ARRAY_AWARE = frozenset({"array_append", "shape"})


def rule_for(op):
    """The op's XLA rule (a control-flow op's from its home); `Unsupported`
    naming the reason when it has none."""
    opdef = control_op(op.type) or OPS.get(op.type)
    rule = None if opdef is None else opdef.lowerings.get("xla")
    if isinstance(rule, NotLowerable):
        raise Unsupported(rule.reason, op)
    if rule is None:
        raise Unsupported("no XLA lowering rule is declared for it", op)
    return rule


class Lowerer(ControlFlowSupport):
    """State of one trace: the ops per block, the names that may be undefined,
    the run-time error sites, and the run-time *status* threaded through
    every branch and loop: the error code (see `errors`) and the rows the
    tensor arrays and loop histories needed (more than `room`: the host
    recompiles with more room and runs again)."""

    def __init__(self, program, blocks, sites, room):
        self.program = program
        self.blocks = blocks                  # block index -> ops to lower
        self.undefined = maybe_undefined(blocks)  # name -> the user's variable name
        self.sites = sites
        self.room = room                      # free rows a tensor array starts with
        self.err = jnp.zeros((), np.int32)
        self.need = jnp.zeros((), np.int64)
        self.uses_room = False
        self.has_effects = False
        self.op = None                        # the op being lowered (error sites)
        self.block = 0                        # the block being lowered
        self.draws = []                       # (draw, shape, dtype) per host draw, in order
        self.drawn = None                     # the run's drawn values (None: discovering)
        self.transposes = {}                  # id(matrix transpose) -> (it, its operand)
        self.args = ()                        # its lowered inputs
        self.producers = None                 # name -> the op defining it (`constant_offset`)
        self.ns = RuleNamespace(self)

    def lower_block(self, idx, env):
        outer, self.block = self.block, idx
        try:
            for op in self.blocks[idx]:
                if control_op(op.type) is not None:  # its rule lowers its blocks through us
                    self.op = op
                    rule_for(op)(self, op, env)
                else:
                    self.lower_op(op, env)
        finally:
            self.block = outer

    def host_draw(self, draw, shape, dtype):
        """The value `draw()` gives on the host before the run (`OpDef.draws`):
        the run's next drawn input; while discovering what a run draws
        (`drawn` None), zeros of its shape."""
        if self.block != 0:
            raise Unsupported("a random draw inside a tensor `if` or loop: how many values "
                              "a run draws depends on the data (d2s's generator is numpy's, "
                              "on the host)", self.op)
        shape, dtype = tuple(int(d) for d in shape), np.dtype(dtype)
        self.draws.append((draw, shape, dtype))
        if self.drawn is None:
            return jnp.zeros(shape, dtype)
        return self.drawn[len(self.draws) - 1]

    def lower_op(self, op, env):
        rule = rule_for(op)
        args, flags = [], []
        for v in op.inputs:
            value, flag = self.read_flagged(env, v, op)
            args.append(value)
            flags.append(flag)
        arrays = any(isinstance(a, TensorArray) for a in args)
        if arrays and op.type in _ARRAY_AWARE:
            if any(isinstance(a, TensorArray) for a in args[1:]):  # e.g. appending one
                raise Unsupported("it reads a tensor array as other than its first input", op)
            arrays = False  # its rule reads it
        self.op, self.args = op, args
        try:
            if arrays:  # a list appended to in a tensor loop or `if`, read by an ordinary op
                result = lower_array_op(self.ns, op, rule, args, op.attrs)
            elif _foldable(op, args):  # small constants: numpy's own kernel, still a constant
                with np.errstate(all="ignore"):
                    result = OPS[op.type].kernel(*args, **op.attrs)
            else:
                result = rule(self.ns, *args, **op.attrs)
        except Unsupported as e:
            e.op = e.op or op
            raise
        except Exception as e:
            raise _relocate(_numpy_error(op, args) or e, op) from None
        n = OPS[op.type].num_outputs
        results = () if n == 0 else (result,) if n == 1 else tuple(result)
        for var, value in zip(op.outputs, results):
            env.set(var.name, self.checked(var, value, op))

    def constant_offset(self, start, stop):
        """c when the op being lowered reads `start` and `stop` as variables the
        program defines as `stop = start + c`, c an integer constant (a
        `full` of shape ()), else None. The program, not this trace: a
        gradient reads both from the forward's history."""
        names = {}
        for var, value in zip(self.op.inputs, self.args):
            names.setdefault(id(value), var.name)
        a, b = names.get(id(start)), names.get(id(stop))
        if self.producers is None:
            self.producers = {v.name: op for op in self.program.all_ops() for v in op.outputs}
        add = self.producers.get(b)
        if a is None or add is None or add.type != "add":
            return None
        x, y = (v.name for v in add.inputs)
        for base, const in ((x, y), (y, x)):
            full = self.producers.get(const)
            if base == a and full is not None and full.type == "full" and not full.inputs \
                    and tuple(full.attrs["shape"]) == () \
                    and np.dtype(full.attrs["dtype"]).kind in "iu":
                return int(full.attrs["fill_value"])
        return None

    def read(self, env, var, op):
        """The value of `var` (see `read_flagged`)."""
        return self.read_flagged(env, var, op)[0]

    def read_flagged(self, env, var, op):
        """(value, None). An op reading a name no path assigned sets the
        NameError the numpy backend raises (a gradient op never reads one:
        backward gives those cotangents real zeros)."""
        value = env.get(var.name)
        flag = env.flag(var.name) if var.name in self.undefined else None
        if flag is not None:
            label = self.undefined[var.name]
            self.fail_if(flag, lambda: UndefinedValue(label).error(op))
        return value, None

    @property
    def status(self):
        return self.err, self.need

    @status.setter
    def status(self, value):
        self.err, self.need = value

    def needs(self, rows):
        """A tensor array or loop history needed `rows` rows (of `room`)."""
        self.uses_room = True
        self.need = jnp.maximum(self.need, jnp.asarray(rows, np.int64))

    def fail_if(self, cond, make_error):
        """Set the error code to `make_error`'s site where `cond` holds (first error wins)."""
        code = self.sites.add(make_error)
        self.err = jnp.where((self.err == 0) & cond, np.int32(code), self.err)

    def checked(self, var, value, op):
        if var.dtype == object:  # a saved scope for gradients: a structure of values
            return value
        if isinstance(value, (np.generic, bool, int, float)):
            value = np.asarray(value)  # a constant stays a (numpy) constant
        elif not isinstance(value, (TensorArray, np.ndarray, jax.Array)):
            value = jnp.asarray(value)
        if isinstance(value, TensorArray):
            shape = list(value.buf.shape)
            shape[value.axis] = None
            dtype, shape = value.dtype, tuple(shape)
        else:
            value = strong(value)
            dtype, shape = value.dtype, tuple(value.shape)
        want = var.shape
        if np.dtype(dtype) != var.dtype or len(shape) != len(want) or any(
                w is not None and s is not None and w != s for w, s in zip(want, shape)):
            raise LoweringError(
                f"the XLA rule of op '{op.type}' gave {np.dtype(dtype).name}{list(shape)} for "
                f"'{var.name}', the program says {var.dtype.name}{list(want)}")
        return value


# Constants up to this size are computed by the numpy kernel while lowering:
# shape arithmetic (`x.shape[0] * 2`) stays a compile-time value.
_FOLD_LIMIT = 64


def _foldable(op, args):
    opdef = OPS[op.type]
    if opdef.stateful or opdef.num_outputs != 1:
        return False
    if not args:  # a fill: fold only a small one of known shape
        size = op.outputs[0].size
        return size is not None and size <= _FOLD_LIMIT
    return all(type(a) is np.ndarray and a.size <= _FOLD_LIMIT for a in args)


def _numpy_error(op, args):
    """The error the numpy kernel raises for operands of these shapes and dtypes
    (e.g. matmul of misaligned run-time shapes), so that both backends raise
    the same type and message; None when it raises nothing (a bug in the rule)."""
    if any(isinstance(a, TensorArray) for a in args):
        return None  # (no numpy shape: a run-time length)
    try:
        # Constants (a shape argument, say) as they are; traced values as zeros.
        arrays = [a if isinstance(a, (np.ndarray, np.generic)) else np.zeros(a.shape, a.dtype)
                  for a in args]
        with np.errstate(all="ignore"):
            OPS[op.type].kernel(*arrays, **op.attrs)
    except Exception as e:
        return e
    return None


class RuleNamespace:
    """What an XLA lowering rule receives as `ns` (the core never imports jax):
    the JAX modules, and the few services that need the lowering's state."""

    Unsupported = Unsupported
    jax = jax   # (jax.vjp: a rule that wants the exact form jax's autodiff emits)
    jnp = jnp
    lax = lax
    special = special

    def __init__(self, lowerer):
        self._lowerer = lowerer

    @staticmethod
    def promote(*xs):
        """The operands cast to the dtype NumPy 2 gives them together."""
        dtype = np.result_type(*(np.dtype(x.dtype) for x in xs))
        return tuple(x if np.dtype(x.dtype) == dtype else x.astype(dtype) for x in xs)

    @staticmethod
    def static(values):
        """Values a rule needs while compiling (dims of a shape, range bounds):
        constants of the program, or `Unsupported` when they are computed at
        run time (XLA compiles one shape)."""
        for v in values:
            if not isinstance(v, (np.ndarray, np.generic)):
                raise Unsupported("a shape (or range bound) is a value computed at run time; "
                                  "XLA needs it while compiling")
        return values

    def transpose(self, x, perm):
        """`x` with its axes permuted. A matrix transpose is remembered, so that
        a matrix product reading it contracts the matrix itself (`transposed`)."""
        out = jnp.transpose(x, perm)
        if tuple(perm) == (1, 0):
            self._lowerer.transposes[id(out)] = (out, x)
        return out

    def transposed(self, x):
        """The matrix whose transpose `x` is (lowered by `transpose` in this
        trace: the very value, so nothing else can have changed it), or None."""
        entry = self._lowerer.transposes.get(id(x))
        return entry[1] if entry is not None and entry[0] is x else None

    def constant_offset(self, start, stop):
        """c when the op's inputs `start` and `stop` are, in the program,
        `stop = start + c` for an integer constant c (`x[t:t + c]`: a slice of
        static size c at a run-time start), else None."""
        return self._lowerer.constant_offset(start, stop)

    @staticmethod
    def shape_of(x):
        if isinstance(x, TensorArray):
            return x.shape_vector()
        return np.array(x.shape, dtype=np.int64)

    @staticmethod
    def is_tensor_array(x):
        """A tensor array carried by a loop (capacity + length: `values.TensorArray`)."""
        return isinstance(x, TensorArray)

    # what the "tensor_array" rules build their results with (`rules/_tensor_arrays`)
    TensorArray = TensorArray
    unshift_rows = staticmethod(unshift_rows)

    def needs(self, rows):
        """A tensor array needed `rows` rows (more than it had: run again with room)."""
        self._lowerer.needs(rows)

    def host_draw(self, draw, shape, dtype):
        """`draw()` (numpy arrays of `shape` and `dtype` from d2s's generator) made
        on the host before the run, in program order, and read by the program
        as an input: the numpy backend's numbers (see `OpDef.draws`)."""
        return self._lowerer.host_draw(draw, shape, dtype)

    def host_effect(self, fn, *values):
        """Run `fn(*numpy arrays)` on the host, in program order, unless an
        error was already set (numpy would have stopped before it)."""
        low = self._lowerer
        low.has_effects = True

        def call(err, *arrays):
            if int(err) == 0:
                fn(*arrays)
        jax.debug.callback(call, low.err, *values, ordered=True)

    @staticmethod
    def sharding_constraint(x, mesh, placements):
        """`x` laid out as a `reshard` op's placements say (see `sharding`)."""
        return constrain(jnp.asarray(x), mesh, placements)

    def check(self, ok, make_error):
        """Raise `make_error()` (at the op's line) after the run unless `ok`."""
        op = self._lowerer.op
        self._lowerer.fail_if(~ok, lambda: _relocate(make_error(), op))

    def check_on_numpy(self, ok):
        """Unless `ok`, the kernel's own check fails: the call runs again on the
        numpy backend, which raises its error, message and all (`RaisesOnNumpy`)."""
        self._lowerer.fail_if(~ok, RaisesOnNumpy)


def lower_program(low, feeds, params, residual=None):
    """Bind feeds, parameters and residual values ({name: (value, flag)}, kept
    by another executable) in a fresh environment and lower block 0."""
    env = Env()
    for name, value in list(feeds.items()) + list(params.items()):
        env.set(name, value)
    for name, (value, flag) in (residual or {}).items():
        env.set(name, value, flag)
    low.lower_block(0, env)
    return env
