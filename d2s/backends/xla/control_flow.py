"""What the XLA rules of control-flow ops are written with.

The rules themselves (`cond` -> `lax.cond`, `while` -> `lax.while_loop`,
their gradients, `undefined`, `raise`) live in each op's home,
`d2s.static.control_ops`, beside its other interpretations, as
`rule(low, op, env)`. `low` is the `Lowerer` (see `lowering`): this mixin
gives it the JAX modules and value types (static never imports jax) and the
few services every such rule needs — reading values as loop carries or
branch results with their "undefined" flags, binding names in a child
environment, tracing a body once to a jaxpr whose result shapes are known
before `lax` gets it (`trace`).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ...static.control_ops import kept_names, restored_var, saved_var
from ...static.scope import relocate
from ._jax import jax, jnp, lax, strong
from .errors import EmptyRowShape, LoweringError, Unsupported
from .values import Env, History, TensorArray


class ControlFlowSupport:
    """Mixed into `Lowerer`: the namespace of control-flow rules."""

    jax, jnp, lax = jax, jnp, lax
    Env, History, TensorArray = Env, History, TensorArray
    Unsupported, EmptyRowShape = Unsupported, EmptyRowShape
    relocate = staticmethod(relocate)

    @staticmethod
    @contextlib.contextmanager
    def branch_errors(op):
        """Lowering a branch with this call's concrete shapes can raise a user's
        error (an index past a dim, misaligned matmul operands) that numpy raises
        only on a run taking that branch: a branch a run skips must not raise.
        Such a program runs on numpy (`Unsupported`), which raises it or not."""
        try:
            yield
        except (Unsupported, LoweringError):
            raise
        except Exception as e:  # noqa: BLE001 - any user error: numpy decides
            raise Unsupported(f"lowering a branch with these shapes raised {type(e).__name__} "
                              f"({e}), which numpy raises only if a run takes that branch",
                              op) from None

    @staticmethod
    def undefined_stand_in(value, like, var):
        """Whether `value`, of a name that may be undefined, is empty in dims the
        program leaves unknown (`var`) where `like` (the other branch's value,
        or the loop body's), of the same dtype, is not: the zero-size stand-in
        for "no value yet" that `undefined` gives (a name a loop assigns
        first, e.g. an early `return` in a tensor loop). Where it is not a
        stand-in at run time (a real empty value), the caller sends the run
        to numpy (`ns.check_on_numpy` of its flag)."""
        shape, other = getattr(value, "shape", None), getattr(like, "shape", None)
        if (shape is None or other is None or len(shape) != len(other)
                or len(shape) != len(var.shape) or value.dtype != like.dtype
                or 0 not in shape or 0 in other):
            return False
        return all(a == b or (a == 0 and d is None) for a, b, d in zip(shape, other, var.shape))

    @staticmethod
    def scalar_bool(x):
        """`bool(np.asarray(pred).reshape(()))`, as the numpy backend reads a predicate."""
        x = jnp.reshape(jnp.asarray(x), ())
        return x if x.dtype == np.bool_ else x != 0

    @staticmethod
    def false():
        return jnp.zeros((), np.bool_)

    @staticmethod
    def carried(value):
        """A value as a lax carry or branch result: a strong JAX array (or structure)."""
        if isinstance(value, (TensorArray, History, tuple, dict)):
            return value
        return strong(jnp.asarray(value))

    @staticmethod
    def zeros_like(avals):
        return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), avals)

    @staticmethod
    def bind(env, pairs):
        """A child environment of `env` holding `pairs` of name -> (value, flag)."""
        child = Env(env)
        for name, (value, flag) in pairs:
            child.set(name, value, flag)
        return child

    def forward_op(self, grad_op):
        """The forward op whose saved values `grad_op` restores, or None."""
        name = restored_var(grad_op)
        for block in self.program.blocks:
            for op in block.ops:
                if saved_var(op) == name:
                    return op
        return None

    @staticmethod
    def as_tensor_array(value):
        """A cotangent of a tensor array as one: all its rows (see `TensorArray.of_rows`)."""
        if isinstance(value, TensorArray) or getattr(value, "ndim", 0) == 0:
            return value
        return TensorArray.of_rows(value)

    @staticmethod
    def rows_if_known(var, value):
        """A tensor array given to a Variable whose length the program knows (the
        gradient of a list's first items): that many rows, a plain array."""
        if isinstance(value, TensorArray) and var.shape and var.shape[0] is not None:
            return value.buf[:var.shape[0]]
        return value

    def kept(self, op, block_ids):
        """The names forward `op` keeps for its gradient that `block_ids` define
        (the others are read from the enclosing blocks)."""
        return kept_names(self.program, op, block_ids)

    def flagged(self, env, name):
        """(value, flag) of `name` as a branch result or loop carry: the flag is a
        bool array for names that may be undefined (see `static.definedness`), else None."""
        value = self.carried(env.get(name))
        if name not in self.undefined:
            return value, None
        flag = env.flag(name)
        return value, self.false() if flag is None else jnp.asarray(flag)

    def cotangents(self, env, op, variables):
        """(value, flag) of each cotangent input: a flag where it may be a zero cotangent."""
        out = []
        for v in variables:
            value, flag = self.read_flagged(env, v, op)
            out.append((self.carried(value), None if flag is None else jnp.asarray(flag)))
        return out

    def trace(self, fn, *args):
        """`fn(*args)` traced once to a jaxpr: `(step, out)`, where `out` is the
        abstract result (shapes and dtypes) and `step(*args)` evaluates the
        jaxpr, binding its primitives without running `fn` again. A rule
        that needs a body's result shapes before it builds the loop or cond
        (a history buffer, a placeholder for the other branch) reads them
        from `out` and gives `step` to `lax`: `fn` — the lowering of a block,
        and of every loop and cond nested in it — runs once. Tracing `fn`
        twice instead (once abstractly, once for `lax`) costs 2 ** depth
        lowerings of a block nested `depth` deep. Values `fn` reads from
        outer environments are the jaxpr's constants, as a closure's are.
        The lowering's status is left as it was."""
        status = self.status
        try:
            closed, out = jax.make_jaxpr(fn, return_shape=True)(*args)
        finally:
            self.status = status
        out_tree = jax.tree_util.tree_structure(out)

        def step(*args):
            leaves = jax.tree_util.tree_leaves(args)
            results = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
            return jax.tree_util.tree_unflatten(out_tree, results)
        return step, out
