"""Every registered operator against a numpy reference, in both modes.

`CASES` maps each op name in `d2s.core.registry.OPS` to one or more cases.
For each case the op is bound

* eagerly on Tensors: forward equals the reference; for differentiable ops
  the gradient of a random projection `sum(out * r)`, taken with
  `.backward()`, equals central finite differences of the op's kernel;
* in a static Program fed through `d2s.static.data` (concrete shapes, and
  again with the first dim `None`): the inferred output shape/dtype agree
  with the eager result, the executor's output equals the reference and
  `d2s.static.gradients` equals the same finite differences.

An op registered without a case fails `test_every_op_has_a_case`.
"""
from __future__ import annotations

import math
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest

import d2s
from d2s.core import bind
from d2s.core.ops.indexing import encode_index
from d2s.backends.base import BackendFallbackWarning
from d2s.core.registry import OPS, NotLowerable
import d2s.backends.xla.rules  # noqa: F401,E402  (the targets' rules: which ops each refuses;
import d2s.onnx.rules  # noqa: F401,E402   neither imports its library)
from d2s.static import Executor, Program, data, gradients, program_guard

F64 = np.float64
_rng = np.random.default_rng(20240601)


# ---- input makers -------------------------------------------------------------------
def U(*shape, lo=-1.0, hi=1.0):
    """Uniform float64 in [lo, hi)."""
    return _rng.uniform(lo, hi, size=shape)


def P(*shape):
    """Positive float64, away from 0 (log, sqrt, pow bases)."""
    return _rng.uniform(0.5, 2.0, size=shape)


def A(*shape, gap=0.2, hi=1.5):
    """Float64 with |x| in [gap, hi]: away from the kink of abs/relu/sign at 0."""
    return _rng.uniform(gap, hi, size=shape) * _rng.choice([-1.0, 1.0], size=shape)


def I(*shape, lo=-3, hi=4):
    return _rng.integers(lo, hi, size=shape).astype(np.int64)


def B(*shape):
    return _rng.random(shape) < 0.5


def away_from(x, bounds, gap=0.05):
    """Push entries of `x` at least `gap` away from each of `bounds` (clip kinks)."""
    x = np.array(x, dtype=F64)
    for b in bounds:
        near = np.abs(x - b) < gap
        x[near] = b + np.where(x[near] >= b, gap, -gap) * 2
    return x


def quotient_pair(*shape):
    """(x, y) with x / y at least 0.2 away from an integer: floor/mod are smooth there."""
    y = A(*shape, gap=0.5, hi=2.0)
    q = _rng.integers(-3, 3, size=shape) + _rng.uniform(0.2, 0.8, size=shape)
    return q * y, y


def no_tie_pair(shape_x, shape_y):
    """(x, y) broadcastable with |x - y| >= 0.1 everywhere (max/min kinks)."""
    y = U(*shape_y)
    x = np.broadcast_to(y, np.broadcast_shapes(shape_x, shape_y)) + A(
        *np.broadcast_shapes(shape_x, shape_y), gap=0.1)
    assert x.shape == tuple(shape_x)
    return x, y


# ---- cases ----------------------------------------------------------------------------
@dataclass
class Case:
    inputs: tuple
    ref: Optional[Callable]
    attrs: dict = field(default_factory=dict)
    label: str = ""
    # Inputs whose first dim becomes None in the `static_none` variant;
    # None: every input of rank >= 1; (): no such variant.
    none: Optional[tuple] = None
    # The output shape depends on values (bool masks, tensor slice bounds):
    # even with concrete inputs the static shape may hold None dims.
    dynamic: bool = False
    grad: bool = True
    wrt: Optional[tuple] = None     # default: every float64 input
    seed: Optional[int] = None      # random ops: reseed before every run
    check: Optional[Callable] = None  # extra forward check on the outputs (random ops)
    stdout: Optional[Callable] = None  # side-effect ops: () -> the text a run prints
    raises: Optional[tuple] = None     # (exception type, message regex) a run raises
    # A known bug outside d2s/core/ops: ((modes...), reason) -> strict xfail in those modes.
    known_bug: Optional[tuple] = None
    eps: float = 1e-6
    rtol: float = 1e-5
    atol: float = 1e-6

    def wrt_inputs(self):
        if self.wrt is not None:
            return self.wrt
        return tuple(i for i, a in enumerate(self.inputs) if np.asarray(a).dtype == F64)

    def float_inputs(self):
        return tuple(i for i, a in enumerate(self.inputs)
                     if np.issubdtype(np.asarray(a).dtype, np.floating))

    def none_inputs(self):
        if self.none is not None:
            return self.none
        return tuple(i for i, a in enumerate(self.inputs) if np.ndim(a) >= 1)


def C(*inputs, ref, label="", attrs=None, **kw):
    return Case(tuple(np.asarray(a) for a in inputs), ref, dict(attrs or {}), label, **kw)


CASES: dict[str, list[Case]] = {}


def cases(name, *cs):
    assert name not in CASES, name
    CASES[name] = list(cs)


# -- elementwise arithmetic ----------------------------------------------------------------
for _name, _np in [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply)]:
    cases(_name,
          C(U(3, 4), U(3, 4), ref=_np, label="same"),
          C(U(3, 1), U(4), ref=_np, label="bcast"),
          C(U(), U(2, 3), ref=_np, label="scalar"),
          C(I(3, 4), U(4), ref=_np, label="int_float"),
          C(U(3, 4).astype(np.float32), U(4), ref=_np, label="f32_f64"),
          C(I(2, 3), I(3), ref=_np, label="int"),
          C(U(0, 3), U(3), ref=_np, label="empty"))
cases("divide",
      C(U(3, 4), A(3, 4), ref=np.true_divide, label="same"),
      C(U(2, 1, 3), A(4, 1), ref=np.true_divide, label="bcast"),
      C(I(3, 4), I(4, lo=1), ref=np.true_divide, label="int"),
      C(A(4), U(3, 4).astype(np.float32), ref=np.true_divide, label="f64_f32"))
cases("floor_divide",
      C(*quotient_pair(3, 4), ref=np.floor_divide, label="float"),
      C(I(3, 4, lo=-9, hi=9), I(4, lo=1, hi=4), ref=np.floor_divide, label="int"))
cases("remainder",
      C(*quotient_pair(3, 4), ref=np.remainder, label="float"),
      C(quotient_pair(3, 4)[0], np.float32(0.75) * np.ones(4, np.float32), ref=np.remainder,
        label="f64_f32"),
      C(I(3, 4, lo=-9, hi=9), I(4, lo=1, hi=4), ref=np.remainder, label="int"))
cases("pow",
      C(P(3, 4), U(3, 4, lo=-2, hi=2), ref=np.power, label="same"),
      C(P(3, 4), U(4, lo=-2, hi=2), ref=np.power, label="bcast"),
      C(P(3, 4).astype(np.float32), U(4, lo=-2, hi=2), ref=np.power, label="f32_f64"),
      C(P(3, 4), np.array([2, 3, 1, 0]), ref=np.power, label="int_exponent"),
      C(I(5, lo=0, hi=5), I(5, lo=0, hi=4), ref=np.power, label="int"))
cases("maximum",
      C(*no_tie_pair((3, 4), (3, 4)), ref=np.maximum, label="same"),
      C(*no_tie_pair((3, 4), (4,)), ref=np.maximum, label="bcast"),
      C(no_tie_pair((3, 4), (4,))[0], no_tie_pair((3, 4), (4,))[1].astype(np.float32),
        ref=np.maximum, label="f64_f32"))
cases("minimum",
      C(*no_tie_pair((3, 4), (3, 4)), ref=np.minimum, label="same"),
      C(*no_tie_pair((2, 3, 4), (3, 1)), ref=np.minimum, label="bcast"))

# -- comparisons and logic ----------------------------------------------------------------
_ties = U(3, 4)
_ties_y = np.where(B(3, 4), _ties, U(3, 4))
for _name, _np in [("equal", np.equal), ("not_equal", np.not_equal), ("less_than", np.less),
                   ("less_equal", np.less_equal), ("greater_than", np.greater),
                   ("greater_equal", np.greater_equal)]:
    cases(_name,
          C(_ties, _ties_y, ref=_np, label="float"),
          C(I(3, 4, lo=0, hi=3), I(4, lo=0, hi=3), ref=_np, label="int_bcast"),
          C(U(3, 4), I(1, lo=0, hi=1), ref=_np, label="mixed"))
for _name, _np in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)]:
    cases(_name,
          C(B(3, 4), B(4), ref=_np, label="bool"),
          C(I(3, lo=0, hi=2), B(3), ref=_np, label="int_bool"))
cases("logical_not", C(B(3, 4), ref=np.logical_not, label="bool"),
      C(I(5, lo=0, hi=2), ref=np.logical_not, label="int"))

cases("bitwise_left_shift", C(I(3, 4, lo=-9, hi=9), I(4, lo=0, hi=4), ref=np.left_shift))
cases("bitwise_right_shift", C(I(3, 4, lo=-9, hi=9), I(4, lo=0, hi=4), ref=np.right_shift))

# -- unary math -------------------------------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[F64])
cases("neg", C(U(3, 4), ref=np.negative, label="float"), C(I(4), ref=np.negative, label="int"))
cases("exp", C(U(3, 4, lo=-2, hi=2), ref=np.exp), C(U(), ref=np.exp, label="0d"))
cases("log", C(P(3, 4), ref=np.log))
cases("sqrt", C(P(3, 4), ref=np.sqrt))
cases("tanh", C(U(3, 4, lo=-2, hi=2), ref=np.tanh))
cases("abs", C(A(3, 4), ref=np.abs, label="float"), C(I(5), ref=np.abs, label="int"))
cases("erf", C(U(3, 4, lo=-2, hi=2), ref=_erf, label="f64"),
      C(U(6).astype(np.float32), ref=lambda x: _erf(x).astype(np.float32), label="f32", grad=False))
cases("sign", C(A(3, 4), ref=np.sign))
cases("sigmoid",
      C(U(3, 4, lo=-4, hi=4), ref=lambda x: 1 / (1 + np.exp(-x)), label="f64"),
      C(np.array([-800.0, -30.0, 0.0, 30.0, 800.0]),
        ref=lambda x: 1 / (1 + np.exp(-np.clip(x, -700, 700))), label="large"),
      C(U(5).astype(np.float32), ref=lambda x: (1 / (1 + np.exp(-x))).astype(np.float32),
        label="f32", grad=False))
cases("relu", C(A(3, 4), ref=lambda x: np.maximum(x, 0), label="float"),
      C(I(5), ref=lambda x: np.maximum(x, 0), label="int"))

# -- where / clip / cast / full_like --------------------------------------------------------
cases("where",
      C(B(3, 4), U(3, 4), U(3, 4), ref=np.where, label="same"),
      C(B(3, 1), U(4), U(3, 4), ref=np.where, label="bcast"),
      C(B(4), U(4).astype(np.float32), U(4), ref=np.where, label="promote", wrt=(2,)),
      C(B(2, 3), I(2, 3), I(3), ref=np.where, label="int"))
_clip_x = away_from(U(3, 4, lo=-1.5, hi=1.5), (-0.5, 0.5))
cases("clip",
      C(_clip_x, attrs=dict(min=-0.5, max=0.5), ref=lambda x: np.clip(x, -0.5, 0.5),
        label="both"),
      C(_clip_x, attrs=dict(min=-0.5, max=None), ref=lambda x: np.clip(x, -0.5, None),
        label="min"),
      C(_clip_x, attrs=dict(min=None, max=0.5), ref=lambda x: np.clip(x, None, 0.5),
        label="max"),
      C(I(6), attrs=dict(min=-1.0, max=2.0), ref=lambda x: np.clip(x, -1, 2), label="int"))
cases("cast",
      C(U(3, 4), attrs=dict(dtype="float32"), ref=lambda x: x.astype(np.float32),
        label="f64_f32", eps=1e-3, rtol=1e-3, atol=1e-3),
      C(away_from(U(3, 4, lo=-3, hi=3), range(-3, 4), gap=0.1), attrs=dict(dtype="int64"),
        ref=lambda x: x.astype(np.int64), label="f64_i64"),
      C(U(3, 4).astype(np.float32), attrs=dict(dtype="float64"),
        ref=lambda x: x.astype(F64), label="f32_f64", grad=False),
      C(I(5), attrs=dict(dtype="float64"), ref=lambda x: x.astype(F64), label="i64_f64"),
      C(B(5), attrs=dict(dtype="float32"), ref=lambda x: x.astype(np.float32), label="bool"))
cases("full_like",
      C(U(3, 4), attrs=dict(fill_value=2.5, dtype=None), ref=lambda x: np.full_like(x, 2.5),
        label="same_dtype"),
      C(I(3), attrs=dict(fill_value=7, dtype="float32"),
        ref=lambda x: np.full(x.shape, 7, np.float32), label="dtype"))

# -- reductions --------------------------------------------------------------------------------
for _name, _np in [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)]:
    def _red(axes, keepdim, _np=_np):
        return lambda x: _np(x, axis=axes, keepdims=keepdim)
    cases(_name,
          C(U(2, 3, 4), attrs=dict(axes=(1,), keepdim=False), ref=_red((1,), False),
            label="axis1"),
          C(U(2, 3, 4), attrs=dict(axes=(0, 2), keepdim=True), ref=_red((0, 2), True),
            label="axes02_keep"),
          C(U(2, 3, 4), attrs=dict(axes=(0, 1, 2), keepdim=False), ref=_red((0, 1, 2), False),
            label="all"),
          C(U(3, 4), attrs=dict(axes=(0,), keepdim=True), ref=_red((0,), True),
            label="axis0_keep"),
          C(I(3, 4), attrs=dict(axes=(1,), keepdim=False), ref=_red((1,), False), label="int"),
          *([C(U(3, 4), attrs=dict(axes=(), keepdim=False), ref=_red((), False), label="noaxes"),
             C(B(3, 4), attrs=dict(axes=(0, 1), keepdim=False), ref=_red((0, 1), False),
               label="bool")] if _name in ("sum", "mean") else []))
cases("argmax",
      C(U(3, 4), attrs=dict(axis=None, keepdim=False), ref=lambda x: np.argmax(x), label="all"),
      C(U(3, 4), attrs=dict(axis=None, keepdim=True),
        ref=lambda x: np.argmax(x, keepdims=True), label="all_keep"),
      C(U(2, 3, 4), attrs=dict(axis=1, keepdim=True),
        ref=lambda x: np.argmax(x, axis=1, keepdims=True), label="axis1_keep"),
      C(I(3, 5), attrs=dict(axis=0, keepdim=False), ref=lambda x: np.argmax(x, axis=0),
        label="int_axis0"))

# -- broadcast helpers ---------------------------------------------------------------------------
cases("sum_to_like",
      C(U(2, 3, 4), U(3, 1), ref=lambda g, x: g.sum(0).sum(1, keepdims=True), label="lead_and_1"),
      C(U(3, 4), U(3, 4), ref=lambda g, x: g, label="same"),
      C(U(2, 3, 4), U(1, 1, 4), ref=lambda g, x: g.sum((0, 1), keepdims=True), label="ones"),
      C(U(3, 4), U(), ref=lambda g, x: g.sum(), label="to_0d", none=(0,)))
cases("broadcast_like",
      C(U(3, 1), U(2, 3, 4), ref=lambda g, x: np.broadcast_to(g, (2, 3, 4)), label="up"),
      C(U(4), U(3, 1), ref=lambda g, x: np.broadcast_to(g, (3, 4)), label="both"),
      C(U(3, 4), U(3, 4), ref=lambda g, x: g, label="same"))

def _raises(*inputs):
    """Reference of a case whose run raises (`raises=`): one placeholder output,
    never compared."""
    return np.empty(0)


# -- shape manipulation --------------------------------------------------------------------------
cases("reshape",
      C(U(2, 3, 4), attrs=dict(shape=(6, 4)), ref=lambda x: x.reshape(6, 4), label="plain"),
      C(U(2, 3, 4), attrs=dict(shape=(0, -1)), ref=lambda x: x.reshape(2, 12), label="copy_infer"),
      C(U(2, 3, 4), attrs=dict(shape=(4, 0, -1)), ref=lambda x: x.reshape(4, 3, 2),
        label="copy_mid"),
      C(U(2, 3), attrs=dict(shape=(-1,)), ref=lambda x: x.reshape(-1), label="flat"),
      C(U(), attrs=dict(shape=(1, 1)), ref=lambda x: x.reshape(1, 1), label="0d"),
      # a None in `shape` is the next input's run-time value (a dynamic `x.shape[i]`)
      C(U(2, 3, 4), np.array(6), attrs=dict(shape=(None, -1)), ref=lambda x, n: x.reshape(6, 4),
        dynamic=True, label="dynamic_infer"),
      C(U(2, 3, 4), np.array(4), np.array(3), attrs=dict(shape=(None, None, -1)),
        ref=lambda x, a, b: x.reshape(4, 3, 2), dynamic=True, label="two_dynamic"),
      C(U(2, 3), attrs=dict(shape=(-1, 4)), ref=_raises, grad=False,
        raises=(ValueError, r"\[-1, 4\]"), label="cannot_fit"),
      C(U(2, 3), np.array(4), attrs=dict(shape=(None, -1)), ref=_raises, dynamic=True, grad=False,
        raises=(ValueError, r"cannot reshape \(2, 3\) \(6 elements\) to \[4, -1\]"),
        label="dynamic_cannot_fit"))
cases("expand",
      C(U(3, 1), attrs=dict(shape=(2, 3, 4)), ref=lambda x: np.broadcast_to(x, (2, 3, 4)),
        label="lead"),
      C(U(3, 1), attrs=dict(shape=(-1, 5)), ref=lambda x: np.broadcast_to(x, (3, 5)),
        label="keep"),
      C(U(1, 4), np.array(3), attrs=dict(shape=(None, -1)),
        ref=lambda x, n: np.broadcast_to(x, (3, 4)), dynamic=True, label="dynamic"),
      C(U(2, 4), attrs=dict(shape=(3, 4)), ref=_raises, grad=False,
        raises=(ValueError, "cannot expand"), label="mismatch"))
cases("detach", C(U(3, 4), ref=lambda x: x, label="float"), C(I(3), ref=lambda x: x, label="int"))
# Placements never change numbers: an identity (on xla a sharding constraint).
cases("reshard",
      C(U(4, 6), attrs=dict(mesh=((1,), (0,), ("x",)), placements=("S0",)), ref=lambda x: x,
        label="shard"),
      C(I(3), attrs=dict(mesh=((1, 1), (0,), ("x", "y")), placements=("R", "P:sum")),
        ref=lambda x: x, label="replicate-partial"))
# Summed over the processes; alone, the value itself (two ranks:
# tests/distributed/test_sync_batch_norm.py).
cases("c_allreduce_sum", C(U(3, 4), ref=lambda x: x, label="alone"))
cases("reshape_like",
      C(U(6, 4), U(2, 3, 4), ref=lambda g, x: g.reshape(2, 3, 4), none=(1,)),
      C(U(6), U(6), ref=lambda g, x: g, label="same"))
cases("transpose",
      C(U(2, 3, 4), attrs=dict(perm=(2, 0, 1)), ref=lambda x: x.transpose(2, 0, 1), label="3d"),
      C(U(3, 4), attrs=dict(perm=(1, 0)), ref=lambda x: x.T, label="2d"))
cases("unsqueeze",
      C(U(2, 3), attrs=dict(axes=(0,)), ref=lambda x: x[None], label="front"),
      C(U(2, 3), attrs=dict(axes=(1, 3)), ref=lambda x: np.expand_dims(x, (1, 3)), label="two"),
      C(U(), attrs=dict(axes=(0,)), ref=lambda x: x.reshape(1), label="0d"))
cases("squeeze",
      C(U(1, 3, 1, 2), attrs=dict(axes=(0, 2)), ref=lambda x: x.reshape(3, 2), label="two"),
      C(U(1, 3, 1, 2), attrs=dict(axes=(2,)), ref=lambda x: x.reshape(1, 3, 2), label="one"),
      C(U(2, 3), attrs=dict(axes=()), ref=lambda x: x, label="none"))
cases("flatten",
      C(U(2, 3, 4), attrs=dict(start=1, stop=2), ref=lambda x: x.reshape(2, 12), label="tail"),
      C(U(2, 3, 4), attrs=dict(start=0, stop=1), ref=lambda x: x.reshape(6, 4), label="head"),
      C(U(), attrs=dict(start=0, stop=0), ref=lambda x: x.reshape(1), label="0d"),
      C(U(0, 3, 2), attrs=dict(start=1, stop=2), ref=lambda x: x.reshape(0, 6), label="empty"))
cases("concat",
      C(U(2, 3), U(1, 3), U(3, 3), attrs=dict(axis=0),
        ref=lambda *xs: np.concatenate(xs, 0), label="axis0"),
      C(U(2, 3), U(2, 1), attrs=dict(axis=1), ref=lambda *xs: np.concatenate(xs, 1),
        label="axis1"),
      C(U(4), attrs=dict(axis=0), ref=lambda x: x, label="single"),
      C(U(0, 3), U(2, 3), attrs=dict(axis=0), ref=lambda *xs: np.concatenate(xs, 0),
        label="empty_piece"),
      C(U(2, 3).astype(np.float32), U(1, 3), attrs=dict(axis=0),
        ref=lambda *xs: np.concatenate(xs, 0), label="f32_f64"))
cases("concat_piece",
      C(U(6, 3), U(2, 3), U(1, 3), U(3, 3), attrs=dict(axis=0, index=1),
        ref=lambda g, *xs: g[2:3], label="axis0"),
      C(U(2, 5), U(2, 3), U(2, 2), attrs=dict(axis=1, index=1),
        ref=lambda g, *xs: g[:, 3:], label="axis1"))
cases("stack",
      C(U(2, 3), U(2, 3), U(2, 3), attrs=dict(axis=0), ref=lambda *xs: np.stack(xs, 0),
        label="axis0"),
      C(U(2, 3), U(2, 3), attrs=dict(axis=2), ref=lambda *xs: np.stack(xs, 2), label="last"),
      C(U(), U(), attrs=dict(axis=0), ref=lambda *xs: np.stack(xs), label="0d"),
      C(U(2).astype(np.float32), U(2), attrs=dict(axis=1), ref=lambda *xs: np.stack(xs, 1),
        label="f32_f64"))


def _gather_grad_ref(g, x, index, axis):
    out = np.zeros(x.shape, g.dtype)
    np.add.at(out, (slice(None),) * axis + (index,), g)
    return out


cases("gather",
      C(U(4, 3), np.array([0, 2, 2, -1]), attrs=dict(axis=0),
        ref=lambda x, i: np.take(x, i, axis=0), label="rows_dups"),
      C(U(3, 4), np.array([[0, 3], [1, 1]]), attrs=dict(axis=1),
        ref=lambda x, i: np.take(x, i, axis=1), label="axis1_2d"),
      C(U(5), np.array(3), attrs=dict(axis=0), ref=lambda x, i: np.take(x, i), label="0d_index"),
      C(U(3, 2), np.zeros(0, np.int64), attrs=dict(axis=0), ref=lambda x, i: np.take(x, i, 0),
        label="empty_index"))
cases("gather_grad",
      C(U(4, 3), U(4, 3), np.array([0, 2, 2, -1]), attrs=dict(axis=0),
        ref=lambda g, x, i: _gather_grad_ref(g, x, i, 0), label="rows_dups"),
      C(U(3, 2, 2), U(3, 4), np.array([[0, 3], [1, 1]]), attrs=dict(axis=1),
        ref=lambda g, x, i: _gather_grad_ref(g, x, i, 1), label="axis1_2d"))


# -- indexing ---------------------------------------------------------------------------------
def _np_index(index):
    """The numpy spelling of an index whose slice bounds may be d2s Tensors."""
    def plain(b):
        return b.item() if isinstance(b, d2s.Tensor) else b
    items = index if isinstance(index, tuple) else (index,)
    return tuple(slice(plain(it.start), plain(it.stop), plain(it.step))
                 if isinstance(it, slice) else it for it in items)


def getitem_case(x, index, label, **kw):
    """A getitem case from a numpy-style index (arrays in it become op inputs)."""
    spec, tensors = encode_index(index)
    arrays = [t.numpy() for t in tensors]

    def ref(x, *ts):
        return x[_np_index(index)]
    return C(x, *arrays, attrs=dict(spec=spec), ref=ref, label=label, **kw)


def getitem_grad_case(x, index, label, **kw):
    spec, tensors = encode_index(index)
    arrays = [t.numpy() for t in tensors]
    g = U(*x[_np_index(index)].shape)

    def ref(g, x, *ts):
        out = np.zeros(x.shape, g.dtype)
        np.add.at(out, _np_index(index), g)
        return out
    return C(g, x, *arrays, attrs=dict(spec=spec), ref=ref, label=label, **kw)


_x345 = U(3, 4, 5)
_arr = np.array([[0, 2], [1, 1]])
cases("getitem",
      getitem_case(_x345, 1, "int"),
      getitem_case(_x345, (slice(None, None, -1), -1), "neg_step_neg_int"),
      getitem_case(_x345, (None, Ellipsis, slice(1, None, 2)), "none_ellipsis_step"),
      getitem_case(_x345, (slice(3, 0, -2), None, slice(-3, None)), "neg_slices"),
      getitem_case(_x345, (slice(5, 9),), "empty_slice"),
      getitem_case(_x345, _arr, "int_array_dups"),
      getitem_case(_x345, (slice(None), np.array([3, 0, 3]), slice(1, 3)), "array_mid"),
      getitem_case(_x345, (np.array([2, 0]), slice(None), np.array([4, 1])), "array_split"),
      getitem_case(U(2, 3, 4, 5), (0, slice(None), np.array([1, 3])), "int_array_split"),
      getitem_case(U(2, 3, 4, 5), (slice(None), 1, np.array([[1], [3]]), np.array([0, 4])),
                   "int_array_adjacent"),
      getitem_case(_x345, B(3, 4), "bool_mask", dynamic=True),
      getitem_case(_x345, np.zeros((3, 4), bool), "bool_mask_none_true", dynamic=True),
      getitem_case(_x345, (Ellipsis, B(5)), "bool_last", dynamic=True),
      getitem_case(_x345, np.array(2), "0d_int_tensor"),
      getitem_case(_x345, (slice(d2s.to_tensor(1), d2s.to_tensor(3)),
                           slice(None, d2s.to_tensor(-1))),
                   "tensor_bounds", dynamic=True))
cases("getitem_grad",
      getitem_grad_case(_x345, (slice(None, None, -1), 1), "slices"),
      getitem_grad_case(_x345, _arr, "int_array_dups"),
      getitem_grad_case(_x345, B(3, 4), "bool_mask", none=()))



def set_item_case(x, index, v, label, **kw):
    spec, tensors = encode_index(index)
    arrays = [t.numpy() for t in tensors]

    def ref(x, v, *ts):
        out = x.copy()
        out[_np_index(index)] = v
        return out
    return C(x, v, *arrays, attrs=dict(spec=spec), ref=ref, label=label, **kw)


cases("set_item",
      set_item_case(_x345, (1, slice(None, None, -1)), U(5), "int_slice_bcast"),
      set_item_case(_x345, (None, Ellipsis, 2), U(1, 3, 4), "none_ellipsis"),
      set_item_case(_x345, (slice(None), np.array([3, 0])), U(3, 2, 5), "int_array"))

# -- linalg -------------------------------------------------------------------------------------
cases("matmul",
      C(U(3, 4), U(4, 5), ref=np.matmul, label="2d_2d"),
      C(U(4), U(4, 5), ref=np.matmul, label="1d_2d"),
      C(U(3, 4), U(4), ref=np.matmul, label="2d_1d"),
      C(U(4), U(4), ref=np.matmul, label="1d_1d"),
      C(U(2, 3, 4), U(4, 5), ref=np.matmul, label="batch_2d"),
      C(U(1, 3, 4), U(2, 4, 5), ref=np.matmul, label="batch_bcast"),
      C(U(4), U(2, 4, 5), ref=np.matmul, label="1d_batch"),
      C(U(2, 3, 4), U(4), ref=np.matmul, label="batch_1d"),
      C(I(2, 3), I(3, 2), ref=np.matmul, label="int"),
      C(U(0, 3), U(3, 2), ref=np.matmul, label="empty"),
      C(U(3, 4).astype(np.float32), U(4, 2), ref=np.matmul, label="f32_f64"),
      C(U(2, 3, 4), U(4).astype(np.float32), ref=np.matmul, label="f64_f32_vec"))


# -- nn ----------------------------------------------------------------------------------------
def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _ce(logits, label):
    logp = np.log(_softmax(logits, -1))
    return -np.mean(logp[np.arange(len(label)), label])


def _ce_grad(g, probs, label):
    p = probs.copy()
    p[np.arange(len(label)), label] -= 1
    return p * g / len(label)


cases("softmax",
      C(U(3, 4, lo=-3, hi=3), attrs=dict(axis=1), ref=lambda x: _softmax(x, 1), label="last"),
      C(U(3, 4, lo=-3, hi=3), attrs=dict(axis=0), ref=lambda x: _softmax(x, 0), label="first"))
cases("log_softmax",
      C(U(3, 4, lo=-3, hi=3), attrs=dict(axis=1), ref=lambda x: np.log(_softmax(x, 1)),
        label="last"),
      C(U(2, 3, 4, lo=-3, hi=3), attrs=dict(axis=1), ref=lambda x: np.log(_softmax(x, 1)),
        label="mid"))
cases("cross_entropy",
      C(U(4, 5, lo=-2, hi=2), np.array([0, 4, 2, 2]),
        ref=lambda logits, label: (_ce(logits, label), _softmax(logits, -1))))
cases("cross_entropy_grad",
      C(U(), _softmax(U(4, 5, lo=-2, hi=2), -1), np.array([0, 4, 2, 2]), ref=_ce_grad,
        none=(1, 2)))


def _batch_normalize(x, axes, epsilon):
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + epsilon), mu, var


cases("batch_normalize",  # every output projected: the mean's and variance's cotangents too
      C(U(4, 3, 2, 5), attrs=dict(axes=(0, 2, 3), epsilon=1e-5),
        ref=lambda x: _batch_normalize(x, (0, 2, 3), 1e-5), label="nchw"),
      C(U(6, 3), attrs=dict(axes=(0,), epsilon=0.1),
        ref=lambda x: _batch_normalize(x, (0,), 0.1), label="nc"))

# -- creation ------------------------------------------------------------------------------------
cases("full",
      C(attrs=dict(shape=(2, 3), fill_value=1.5, dtype="float64"),
        ref=lambda: np.full((2, 3), 1.5), label="f64"),
      C(attrs=dict(shape=(), fill_value=3, dtype="int64"),
        ref=lambda: np.array(3, np.int64), label="0d_int"),
      C(attrs=dict(shape=(0, 2), fill_value=True, dtype="bool"),
        ref=lambda: np.ones((0, 2), bool), label="empty_bool"),
      C(np.array(3), attrs=dict(shape=(2, None), fill_value=0.5, dtype="float64"),
        ref=lambda n: np.full((2, 3), 0.5), dynamic=True, label="dynamic"))
_const = U(2, 3)
def _resize_ref(n_in, n_out, corners=False):
    """Linear interpolation weights by np.interp of the identity's columns."""
    i = np.arange(n_out)
    src = (i * ((n_in - 1) / (n_out - 1)) if corners
           else np.maximum((i + 0.5) * n_in / n_out - 0.5, 0.0))
    eye = np.eye(n_in)
    return np.stack([np.interp(src, np.arange(n_in), eye[:, j]) for j in range(n_in)],
                    axis=1).astype(np.float32)


_RESIZE = dict(align_corners=False, align_mode=0, scale=None, dtype="float32")
cases("resize_weights",
      C(np.array(4), np.array(2), attrs=dict(_RESIZE, mode="nearest"),
        ref=lambda a, b: np.eye(4, dtype=np.float32)[[0, 2]], dynamic=True, grad=False,
        label="nearest_down"),
      C(np.array(3), np.array(5), attrs=dict(_RESIZE, mode="linear"),
        ref=lambda a, b: _resize_ref(3, 5), dynamic=True, grad=False, label="linear_up"),
      C(np.array(3), np.array(5), attrs=dict(_RESIZE, mode="linear", align_corners=True),
        ref=lambda a, b: _resize_ref(3, 5, True), dynamic=True, grad=False,
        label="linear_corners"),
      C(np.array(2), attrs=dict(_RESIZE, mode="nearest", scale=2.0),
        ref=lambda a: np.eye(2, dtype=np.float32)[[0, 0, 1, 1]], dynamic=True, grad=False,
        label="nearest_scale"))
cases("assign_value",
      C(attrs=dict(value=_const), ref=lambda: _const, label="f64"),
      C(attrs=dict(value=np.array([1, 2, 3], np.int32)),
        ref=lambda: np.array([1, 2, 3], np.int32), label="i32"))
cases("arange",
      C(attrs=dict(start=0, end=5, step=1, dtype="int64"), ref=lambda: np.arange(5), label="int"),
      C(attrs=dict(start=1.0, end=2.0, step=0.25, dtype="float64"),
        ref=lambda: np.arange(1.0, 2.0, 0.25), label="float"),
      C(attrs=dict(start=5, end=0, step=-2, dtype="int64"),
        ref=lambda: np.arange(5, 0, -2), label="neg_step"),
      C(attrs=dict(start=0, end=0.3, step=0.1, dtype="float64"),
        ref=lambda: np.arange(0, 0.3, 0.1), label="float_round"),
      C(attrs=dict(start=5, end=0, step=1, dtype="int64"),
        ref=lambda: np.arange(5, 0, 1), label="empty"),
      C(attrs=dict(start=0.5, end=3, step=1, dtype="int64"),
        ref=lambda: np.arange(0.5, 3, 1, dtype=np.int64), label="float_bounds_int"),
      C(np.array(5), attrs=dict(start=1, end=None, step=2, dtype="int64"),
        ref=lambda n: np.arange(1, 5, 2), dynamic=True, label="dynamic_end"),
      C(np.array(0.5), np.array(2.0), attrs=dict(start=None, end=None, step=0.5,
                                                 dtype="float64"),
        ref=lambda a, b: np.arange(0.5, 2.0, 0.5), dynamic=True, grad=False,
        label="dynamic_float_bounds"))
cases("shape",
      C(U(2, 3, 4), ref=lambda x: np.array(x.shape, np.int64), label="3d"),
      C(U(), ref=lambda x: np.array(x.shape, np.int64), label="0d"))
cases("numel",
      C(U(2, 3, 4), attrs=dict(axes=None), ref=lambda x: np.array(x.size), label="all"),
      C(U(2, 3, 4), attrs=dict(axes=(0, 2)), ref=lambda x: np.array(8), label="axes"))


# -- optimizer updates -----------------------------------------------------------------------------
def _adam_ref(p, g, m, v, step, lr, b1=0.9, b2=0.999, eps=1e-8):
    t = step + 1
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    new = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return new, m, v, np.asarray(t, step.dtype)


_adam_attrs = dict(beta1=0.9, beta2=0.999, epsilon=1e-8)
# The learning rate is an input (a 0-d float64 tensor the optimizer owns).
cases("sgd_update",
      C(U(3, 4), U(3, 4), np.float64(0.1), ref=lambda p, g, lr: p - 0.1 * g, label="f64"),
      C(U(3).astype(np.float32), U(3).astype(np.float32), np.float64(0.5),
        ref=lambda p, g, lr: (p - np.float32(0.5) * g).astype(np.float32), label="f32"))
cases("adam_update",
      C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(0), np.float64(0.01), attrs=_adam_attrs,
        ref=_adam_ref, label="first"),
      C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(7), np.float64(0.01), attrs=_adam_attrs,
        ref=_adam_ref, label="later"))


# -- random ----------------------------------------------------------------------------------------
def _check_uniform(low, high):
    def check(out):
        (x,) = out
        assert x.min() >= low and x.max() < high
        assert abs(x.mean() - (low + high) / 2) < 0.05 * (high - low)
        assert abs(x.std() - (high - low) / math.sqrt(12)) < 0.05 * (high - low)
    return check


def _check_normal(mean, std):
    def check(out):
        (x,) = out
        assert abs(x.mean() - mean) < 0.1 * std
        assert abs(x.std() - std) < 0.1 * std
    return check


def _check_dropout(p):
    def check(out):
        y, mask = out
        scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
        assert set(np.unique(mask)) <= {0.0, scale}
        if 0 < p < 1:
            assert abs((mask != 0).mean() - (1 - p)) < 0.08
    return check


cases("uniform",
      C(attrs=dict(shape=(2000,), dtype="float64", low=-2.0, high=3.0), ref=None, seed=1,
        check=_check_uniform(-2.0, 3.0), label="range"),
      C(attrs=dict(shape=(40, 50), dtype="float32"), ref=None, seed=2,
        check=_check_uniform(0.0, 1.0), label="default_f32"),
      C(np.array(40), attrs=dict(shape=(None, 50), dtype="float32"), ref=None, seed=8,
        check=_check_uniform(0.0, 1.0), dynamic=True, label="dynamic"))
cases("gaussian",
      C(attrs=dict(shape=(40, 50), dtype="float32", mean=1.0, std=2.0), ref=None, seed=3,
        check=_check_normal(1.0, 2.0), label="f32"),
      C(attrs=dict(shape=(3000,), dtype="float64"), ref=None, seed=4,
        check=_check_normal(0.0, 1.0), label="default_f64"),
      C(np.array(60), attrs=dict(shape=(50, None), dtype="float64"), ref=None, seed=9,
        check=_check_normal(0.0, 1.0), dynamic=True, label="dynamic"))
cases("dropout",
      C(U(20, 30), attrs=dict(p=0.3), ref=None, seed=5, check=_check_dropout(0.3), label="p03"),
      C(U(3, 4), attrs=dict(p=0.0), ref=None, seed=6, check=_check_dropout(0.0), label="p0"),
      C(U(3, 4), attrs=dict(p=1.0), ref=None, seed=7, check=_check_dropout(1.0), label="p1"))



# ---- issue 25 (opsmath): the primitives of math_more.py and random_extra.py ----------
# (their values against PyTorch are in tests/core/test_ops_math_more.py; here, the
# modes against references independent of the kernels where numpy has one)
def _erfinv_ref(y):
    """erf^-1 by bisection on math.erf (independent of the kernel's Newton steps)."""
    def one(v):
        lo, hi = -6.0, 6.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2
    return np.vectorize(one, otypes=[F64])(y)


def _kernel_of(name):
    return lambda *xs: OPS[name].kernel(*xs)


def _poisson_icdf_ref(lam, u):
    out = []
    for l_, v in zip(lam.ravel(), u.ravel()):
        k, p = 0, math.exp(-l_)
        c = p
        while c < v:
            k += 1
            p *= l_ / k
            c += p
        out.append(k)
    return np.array(out, F64).reshape(lam.shape)


cases("atan2",
      C(A(3, 4), A(4), ref=np.arctan2, label="bcast"),
      C(I(5), I(5, lo=1), ref=np.arctan2, label="int"))
cases("erfinv", C(U(3, 4, lo=-0.95, hi=0.95), ref=_erfinv_ref, label="float"))
cases("lgamma", C(A(3, 4, gap=0.3, hi=3.0), ref=np.vectorize(math.lgamma, otypes=[F64]),
                  label="float"))
cases("digamma", C(P(3, 4), ref=_kernel_of("digamma"), label="float"))
cases("trigamma", C(P(3, 4), ref=_kernel_of("trigamma"), grad=False, label="float"))
cases("signbit", C(np.array([-1.0, -0.0, 0.0, 2.0]), ref=np.signbit, label="float"),
      C(I(5), ref=np.signbit, label="int"))
cases("gcd", C(I(3, 4, lo=-12, hi=13), I(4, lo=-12, hi=13), ref=np.gcd, label="int"))
cases("poisson_icdf", C(P(3, 4) * 3, U(3, 4, lo=0.0, hi=1.0), ref=_poisson_icdf_ref,
                        grad=False, label="float"))
for _name, _np in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)]:
    cases(_name, C(I(3, 4, lo=-9, hi=9), I(4, lo=-9, hi=9), ref=_np, label="int"),
          C(B(3, 4), B(4), ref=_np, label="bool"))
cases("bitwise_not", C(I(3, 4, lo=-9, hi=9), ref=np.invert, label="int"),
      C(B(5), ref=np.invert, label="bool"))
cases("logcumsumexp",
      C(U(3, 4, lo=-3, hi=3) * 10, attrs=dict(axis=1, reverse=False),
        ref=lambda x: np.logaddexp.accumulate(x, 1), label="axis1"),
      C(U(4, 2), attrs=dict(axis=0, reverse=True),
        ref=lambda x: np.logaddexp.accumulate(x[::-1], 0)[::-1], label="reverse"))


def _cum_extreme_ref(largest):
    def ref(x):
        acc = np.maximum if largest else np.minimum
        v = acc.accumulate(x, 1)
        pos = np.where(x == v, np.arange(x.shape[1]), -1)
        return v, np.maximum.accumulate(pos, 1).astype(np.int64)
    return ref


cases("cum_extreme",
      C(U(3, 5), attrs=dict(axis=1, largest=True), ref=_cum_extreme_ref(True), label="max"),
      C(I(2, 6, lo=0, hi=3), attrs=dict(axis=1, largest=False), ref=_cum_extreme_ref(False),
        label="min_ties"))
# ---- end of the issue 25 (opsmath) block ----

def _python_draw_case():
    """`python_draw` (np.random / random in converted code): the call's numbers,
    drawn anew on every run (here from d2s's generator, which the case seeds:
    every mode draws the same)."""
    from d2s.core.ops.python_draws import PythonDraw
    from d2s.core.random import generator
    call = PythonDraw(lambda size: generator().uniform(2.0, 3.0, size), (), {"size": (400,)})

    def check(out):
        (x,) = out
        assert x.shape == (400,) and x.dtype == np.float64
        assert x.min() >= 2.0 and x.max() < 3.0 and len(np.unique(x)) == 400
    return C(attrs=dict(call=call, shape=(400,), dtype="float64"), ref=None, seed=10,
             check=check, label="uniform")


cases("python_draw", _python_draw_case())


# -- tensor arrays (list.append in converted loops; declared in d2s/static/tensor_array.py) --
cases("array_append",
      C(U(2, 3), U(3), ref=lambda buf, v: np.concatenate([buf, v[None]]), dynamic=True,
        label="rows"),
      C(U(1, 2, 2), U(2, 2).astype(np.float32), ref=lambda buf, v: np.concatenate([buf, v[None]]),
        dynamic=True, label="cast_value"),
      C(np.zeros((0, 3)), U(3), ref=lambda buf, v: v[None], dynamic=True, label="empty"))


# -- side effects (converted `print` / `assert`) -------------------------------------------------
_pv, _pn = U(2, 3), np.array(3)


def _printed():
    return f"x = {d2s.to_tensor(_pv)!r} | n: | {d2s.to_tensor(_pn)!r}!"


cases("print",
      C(_pv, _pn, attrs=dict(parts=(("text", "x ="), ("value", 0, True), ("text", "n:"),
                                    ("value", 1, True)), sep=" ", end="!"),
        ref=lambda *a: (), stdout=lambda: _printed().replace(" | ", " "), label="values"),
      C(attrs=dict(parts=(("text", "a"), ("text", "b")), sep="-", end="\n"), ref=lambda: (),
        stdout=lambda: "a-b\n", label="text_only"))
cases("assert",
      C(np.array([True, True]), attrs=dict(message="fine"), ref=lambda c: (), label="pass"),
      C(np.array([True, False]), attrs=dict(message="x must be positive"), ref=lambda c: (),
        raises=(AssertionError, "x must be positive"), label="fail"),
      C(np.array(0.0), attrs=dict(message=""), ref=lambda c: (), raises=(AssertionError, None),
        label="fail_0d_float"))


# ---- issue 27: tensor-level primitives (d2s/core/ops/math.py, scan.py, search.py,
# reduce_more.py); their composites are tested in tests/core/test_ops_<family>.py --------
def _off_whole(*shape, lo=-3, hi=3):
    """Floats whose fractional part is in [0.1, 0.4] or [0.6, 0.9]: floor, ceil,
    trunc and round are flat (zero gradient) around each."""
    whole = _rng.integers(lo, hi, size=shape)
    frac = _rng.uniform(0.1, 0.4, size=shape) + 0.5 * _rng.integers(0, 2, size=shape)
    return whole + frac


for _name, _np, _x in [("sin", np.sin, U(3, 4, lo=-3, hi=3)), ("cos", np.cos, U(3, 4, lo=-3, hi=3)),
                       ("tan", np.tan, U(3, 4)), ("asin", np.arcsin, U(3, 4, lo=-0.9, hi=0.9)),
                       ("acos", np.arccos, U(3, 4, lo=-0.9, hi=0.9)),
                       ("atan", np.arctan, U(3, 4, lo=-3, hi=3)), ("sinh", np.sinh, U(3, 4)),
                       ("cosh", np.cosh, U(3, 4)), ("rsqrt", lambda x: 1 / np.sqrt(x), P(3, 4)),
                       ("log1p", np.log1p, np.concatenate([U(8, lo=-0.5, hi=2), [1e-12, -1e-9]])),
                       ("expm1", np.expm1, np.concatenate([U(8, lo=-2, hi=2), [1e-12, -1e-9]])),
                       ("log2", np.log2, P(3, 4)), ("log10", np.log10, P(3, 4))]:
    cases(_name, C(_x, ref=_np, label="f64"), C(_x.reshape(-1)[0], ref=_np, label="0d"),
          C(I(5, lo=1, hi=3) if _name in ("rsqrt", "log2", "log10") else I(5, lo=0, hi=1),
            ref=_np, label="int"),
          C(_x.astype(np.float32), ref=lambda x, _np=_np: _np(x).astype(np.float32),
            label="f32", grad=False))


def _round_ref(x):
    return np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x))


for _name, _np in [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                   ("round", _round_ref)]:
    cases(_name, C(_off_whole(3, 4), ref=_np, label="f64"),
          C(I(5), ref=lambda x: x, label="int"),
          C(U(0, 3), ref=_np, label="empty"))
CASES["round"].append(C(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994]),
                        ref=lambda x: np.array([-3.0, -2, -1, 1, 2, 3, 0]), label="halves",
                        grad=False))
cases("cumsum",
      C(U(3, 4), attrs=dict(axis=1, reverse=False), ref=lambda x: np.cumsum(x, 1), label="axis1"),
      C(U(3, 4), attrs=dict(axis=0, reverse=True),
        ref=lambda x: np.flip(np.cumsum(np.flip(x, 0), 0), 0), label="reverse"),
      C(I(2, 3).astype(np.int32), attrs=dict(axis=1, reverse=False),
        ref=lambda x: np.cumsum(x, 1), label="int32"),
      C(B(4), attrs=dict(axis=0, reverse=False), ref=lambda x: np.cumsum(x), label="bool"),
      C(U(0, 3), attrs=dict(axis=0, reverse=False), ref=lambda x: np.cumsum(x, 0), label="empty"))
cases("cumprod",
      C(A(3, 4, gap=0.5), attrs=dict(axis=1, reverse=False), ref=lambda x: np.cumprod(x, 1),
        label="axis1"),
      C(A(3, 4, gap=0.5), attrs=dict(axis=0, reverse=True),
        ref=lambda x: np.flip(np.cumprod(np.flip(x, 0), 0), 0), label="reverse"),
      C(I(2, 3), attrs=dict(axis=1, reverse=False), ref=lambda x: np.cumprod(x, 1), label="int"))


def _stable_descending(x, axis):
    return np.argsort(-x, axis=axis, kind="stable")


cases("argsort",
      C(U(3, 4), attrs=dict(axis=1, descending=False),
        ref=lambda x: np.argsort(x, 1, kind="stable"), label="asc"),
      C(I(3, 6, lo=0, hi=3), attrs=dict(axis=1, descending=False),
        ref=lambda x: np.argsort(x, 1, kind="stable"), label="ties_asc"),
      C(I(3, 6, lo=0, hi=3), attrs=dict(axis=1, descending=True),
        ref=lambda x: _stable_descending(x, 1), label="ties_desc"),
      C(U(4, 3), attrs=dict(axis=0, descending=True), ref=lambda x: _stable_descending(x, 0),
        label="axis0_desc"),
      C(U(0, 3), attrs=dict(axis=0, descending=False),
        ref=lambda x: np.zeros((0, 3), np.int64), label="empty"))
cases("prod",
      C(A(2, 3, 4, gap=0.5), attrs=dict(axes=(1,), keepdim=False), ref=lambda x: np.prod(x, 1),
        label="axis1"),
      C(A(2, 3, gap=0.5), attrs=dict(axes=(0, 1), keepdim=True),
        ref=lambda x: np.prod(x, keepdims=True), label="all_keep"),
      C(I(2, 3).astype(np.int32), attrs=dict(axes=(1,), keepdim=False),
        ref=lambda x: np.prod(x, 1), label="int32"),
      C(U(0, 3), attrs=dict(axes=(0,), keepdim=False), ref=lambda x: np.prod(x, 0),
        label="empty"))
_spd = U(2, 3, 3) + 3 * np.eye(3)
cases("inverse",
      C(_spd, ref=np.linalg.inv, label="batch"),
      C(np.array([[2, 1], [1, 1]]), ref=np.linalg.inv, label="int"),
      C(np.zeros((2, 2)), ref=_raises, grad=False, raises=(np.linalg.LinAlgError, "Singular"),
        label="singular"))


def _logsumexp_ref(axes, keepdim):
    def ref(x):
        m = np.max(x, axis=axes, keepdims=True)
        out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        return out if keepdim else np.squeeze(out, axes)
    return ref


def _topk_ref(k, axis, largest):
    def ref(x):
        idx = np.argsort(-x if largest else x, axis=axis, kind="stable")
        idx = np.take(idx, np.arange(k), axis=axis)
        return np.take_along_axis(x, idx, axis), idx
    return ref


cases("logsumexp",
      C(U(3, 4, lo=-3, hi=3) * 10, attrs=dict(axes=(1,), keepdim=False),
        ref=_logsumexp_ref((1,), False), label="axis1"),
      C(U(2, 3), attrs=dict(axes=(0, 1), keepdim=True), ref=_logsumexp_ref((0, 1), True),
        label="all_keep"),
      C(U(0, 3), attrs=dict(axes=(1,), keepdim=False), ref=_logsumexp_ref((1,), False),
        label="empty"))
cases("topk",
      C(U(3, 5), attrs=dict(k=2, axis=1, largest=True), ref=_topk_ref(2, 1, True),
        label="largest"),
      C(U(4, 3), attrs=dict(k=3, axis=0, largest=False), ref=_topk_ref(3, 0, False),
        label="smallest_axis0"),
      C(I(3, 6, lo=0, hi=3), attrs=dict(k=4, axis=1, largest=True), ref=_topk_ref(4, 1, True),
        label="ties_int"),
      C(U(0, 3), attrs=dict(k=2, axis=1, largest=True), ref=_topk_ref(2, 1, True),
        label="empty"))
cases("one_hot",
      C(I(2, 3, lo=0, hi=4), attrs=dict(num_classes=4),
        ref=lambda i: np.eye(4, dtype=np.float32)[i], label="int"),
      C(np.array([0, 4]), attrs=dict(num_classes=4), ref=_raises, grad=False,
        raises=(IndexError, r"one_hot: values must be in \[0, 4\)"), label="out_of_range"))
cases("var",
      C(U(3, 4), attrs=dict(axes=(1,), unbiased=True, keepdim=False),
        ref=lambda x: np.var(x, 1, ddof=1), label="axis1"),
      C(U(2, 3, 2), attrs=dict(axes=(0, 2), unbiased=False, keepdim=True),
        ref=lambda x: np.var(x, (0, 2), keepdims=True), label="axes_keep"))
# ---- end of issue 27 block ----


def _dequant_ref(bits, k, transpose=False):
    def ref(q, scale):
        if bits == 4:
            lo, hi = (q & 15).astype(np.int64) - 8, (q >> 4).astype(np.int64) - 8
            q = np.stack([lo, hi], axis=1).reshape(-1, q.shape[1])
        w = (q.astype(scale.dtype) * np.repeat(scale, q.shape[0] // scale.shape[0], 0))[:k]
        return w.T if transpose else w
    return ref


cases("weight_dequantize",
      C(I(6, 3, lo=-127, hi=128).astype(np.int8), P(2, 3).astype(np.float32),
        attrs=dict(bits=8, k=5, transpose=False), ref=_dequant_ref(8, 5), label="int8",
        grad=False, none=()),
      C(I(4, 3, lo=0, hi=256).astype(np.uint8), P(2, 3),
        attrs=dict(bits=4, k=7, transpose=True), ref=_dequant_ref(4, 7, True),
        label="int4_transposed", grad=False, none=()))
cases("gather_dequantize",
      C(I(5, 3, lo=-127, hi=128).astype(np.int8), P(5, 1).astype(np.float32),
        np.array([[4, 0], [2, 4]]), ref=lambda q, s, i: q[i].astype(np.float32) * s[i],
        label="rows_2d_index", grad=False, none=()))


# ---- nn ops (conv/pool, optimizers, softplus) ----
# References written from each op's meaning with plain loops over output
# positions (never d2s's im2col kernels). Padding is (top, bottom, left, right).
def _out_len(size, k, s, lo, hi, d=1, ceil=False):
    span = size + lo + hi - (d * (k - 1) + 1)
    n = (-(-span // s) if ceil else span // s) + 1
    # ceil mode: a last window starting in the trailing padding is dropped
    return n - 1 if ceil and (n - 1) * s >= size + lo else n


def _conv_ref(x, w, stride, padding, dilation, groups):
    t, b, l, r = padding
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    (sh, sw), (dh, dw) = stride, dilation
    o, cg, kh, kw = w.shape
    oh = _out_len(x.shape[2], kh, sh, t, b, dh)
    ow = _out_len(x.shape[3], kw, sw, l, r, dw)
    out = np.zeros((x.shape[0], o, oh, ow))
    for oc in range(o):
        cs = slice(oc // (o // groups) * cg, (oc // (o // groups) + 1) * cg)
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, cs, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = np.sum(patch * w[oc], axis=(1, 2, 3))
    return out


def _conv_grad_input_ref(g, w, input_hw, stride, padding, dilation, groups):
    """The adjoint of `_conv_ref` in x: each output position scatters g * w back."""
    t, b, l, r = padding
    (sh, sw), (dh, dw) = stride, dilation
    o, cg, kh, kw = w.shape
    n, _, oh, ow = g.shape
    gxp = np.zeros((n, cg * groups, input_hw[0] + t + b, input_hw[1] + l + r))
    for oc in range(o):
        cs = slice(oc // (o // groups) * cg, (oc // (o // groups) + 1) * cg)
        for i in range(oh):
            for j in range(ow):
                contrib = g[:, oc, i, j, None, None, None] * w[oc]
                gxp[:, cs, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                    j * sw:j * sw + dw * (kw - 1) + 1:dw] += contrib
    return gxp[:, :, t:t + input_hw[0], l:l + input_hw[1]]


def _conv_grad_filter_ref(x, g, kernel_hw, stride, padding, dilation, groups):
    """The adjoint of `_conv_ref` in w: sum over samples and positions of g * patch."""
    t, b, l, r = padding
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    (sh, sw), (dh, dw) = stride, dilation
    (kh, kw), o = kernel_hw, g.shape[1]
    cg = x.shape[1] // groups
    dw_ = np.zeros((o, cg, kh, kw))
    for oc in range(o):
        cs = slice(oc // (o // groups) * cg, (oc // (o // groups) + 1) * cg)
        for i in range(g.shape[2]):
            for j in range(g.shape[3]):
                patch = xp[:, cs, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                dw_[oc] += np.einsum("n,nchw->chw", g[:, oc, i, j], patch)
    return dw_


def _pool_windows(hw, kernel, stride, padding, ceil_mode):
    """[(i, j, rows, cols)]: each output position's window clipped to the input,
    and its unclipped extent inside the padded input (avg's non-exclusive count)."""
    t, b, l, r = padding
    oh = _out_len(hw[0], kernel[0], stride[0], t, b, ceil=ceil_mode)
    ow = _out_len(hw[1], kernel[1], stride[1], l, r, ceil=ceil_mode)
    out = []
    for i in range(oh):
        r0 = i * stride[0] - t
        for j in range(ow):
            c0 = j * stride[1] - l
            rows = range(max(r0, 0), min(r0 + kernel[0], hw[0]))
            cols = range(max(c0, 0), min(c0 + kernel[1], hw[1]))
            padded = ((min(r0 + kernel[0], hw[0] + b) - r0) * (min(c0 + kernel[1], hw[1] + r) - c0))
            out.append((i, j, rows, cols, padded))
    return out, (oh, ow)


def _first_argmax(win):
    """(row, col) of the first maximum in row-major order."""
    return np.unravel_index(np.argmax(win), win.shape)


def _max_pool_ref(x, kernel, stride, padding, ceil_mode):
    wins, (oh, ow) = _pool_windows(x.shape[2:], kernel, stride, padding, ceil_mode)
    out = np.zeros(x.shape[:2] + (oh, ow), x.dtype)
    for i, j, rows, cols, _ in wins:
        out[:, :, i, j] = x[:, :, rows.start:rows.stop, cols.start:cols.stop].max(axis=(2, 3))
    return out


def _max_pool_route(x, v_or_g, kernel, stride, padding, ceil_mode, pick):
    """pick: v read at each window's first maximum of x; else g routed there (adjoint)."""
    wins, (oh, ow) = _pool_windows(x.shape[2:], kernel, stride, padding, ceil_mode)
    out = np.zeros(x.shape[:2] + (oh, ow)) if pick else np.zeros(x.shape)
    for i, j, rows, cols, _ in wins:
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                a, bb = _first_argmax(x[n, c, rows.start:rows.stop, cols.start:cols.stop])
                at = (n, c, rows.start + a, cols.start + bb)
                if pick:
                    out[n, c, i, j] = v_or_g[at]
                else:
                    out[at] += v_or_g[n, c, i, j]
    return out


def _avg_pool_ref(x, kernel, stride, padding, ceil_mode, exclusive):
    wins, (oh, ow) = _pool_windows(x.shape[2:], kernel, stride, padding, ceil_mode)
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i, j, rows, cols, padded in wins:
        s = x[:, :, rows.start:rows.stop, cols.start:cols.stop]
        out[:, :, i, j] = s.sum(axis=(2, 3)) / (s.shape[2] * s.shape[3] if exclusive else padded)
    return out


def _avg_pool_grad_ref(g, input_hw, kernel, stride, padding, ceil_mode, exclusive):
    wins, _ = _pool_windows(input_hw, kernel, stride, padding, ceil_mode)
    gx = np.zeros(g.shape[:2] + tuple(input_hw))
    for i, j, rows, cols, padded in wins:
        cnt = len(rows) * len(cols) if exclusive else padded
        share = (g[:, :, i, j] / cnt)[:, :, None, None]
        gx[:, :, rows.start:rows.stop, cols.start:cols.stop] += share
    return gx


def _conv_attrs_(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


_CONV = [("plain", (2, 3, 5, 5), (4, 3, 3, 3), _conv_attrs_(padding=(1, 1, 1, 1))),
         ("stride_dil_groups", (2, 4, 7, 6), (4, 2, 2, 3),
          _conv_attrs_(stride=(2, 1), padding=(0, 1, 2, 0), dilation=(2, 1), groups=2))]
cases("conv2d", *[C(U(*xs), U(*ws), attrs=a, label=lb, ref=lambda x, w, a=a: _conv_ref(x, w, **a))
                  for lb, xs, ws, a in _CONV])
cases("conv2d_grad_input", *[
    C(U(*_conv_ref(np.zeros(xs), np.zeros(ws), **a).shape), U(*ws),
      attrs=dict(a, input_hw=xs[2:]), label=lb,
      ref=lambda g, w, a=a, hw=xs[2:]: _conv_grad_input_ref(g, w, hw, **a))
    for lb, xs, ws, a in _CONV])
cases("conv2d_grad_filter", *[
    C(U(*xs), U(*_conv_ref(np.zeros(xs), np.zeros(ws), **a).shape),
      attrs=dict(a, kernel_hw=ws[2:]), label=lb,
      ref=lambda x, g, a=a, k=ws[2:]: _conv_grad_filter_ref(x, g, k, **a))
    for lb, xs, ws, a in _CONV])

# (label, x shape, attrs): overlapping windows with padding; disjoint windows in ceil mode
# (the last row/column of windows overhangs the input)
_POOL = [("overlap_pad", (2, 3, 5, 5), dict(kernel=(3, 3), stride=(2, 1), padding=(1, 1, 0, 1),
                                            ceil_mode=False)),
         ("ceil", (2, 2, 5, 7), dict(kernel=(2, 3), stride=(2, 3), padding=(0, 0, 1, 0),
                                     ceil_mode=True))]
_ties_x = np.zeros((1, 2, 3, 3)) + np.array([[1., 5, 5], [5, 0, 2], [3, 5, 1]])
_POOL_TIES = ("ties", _ties_x, dict(kernel=(2, 2), stride=(1, 1), padding=(0, 0, 0, 0),
                                    ceil_mode=False))
# Random floats: every window's maximum is unique and far (vs eps) from the
# runner-up, so max_pool2d is smooth there and the gradient check applies; the
# tied input has no derivative at its ties (forward only).
cases("max_pool2d", *[C(U(*xs), attrs=a, label=lb,
                        ref=lambda x, a=a: _max_pool_ref(x, **a)) for lb, xs, a in _POOL],
      C(_POOL_TIES[1], attrs=_POOL_TIES[2], label="ties", grad=False,
        ref=lambda x: _max_pool_ref(x, **_POOL_TIES[2])))
_POOL_MP = [(lb, U(*xs), a) for lb, xs, a in _POOL] + [_POOL_TIES]


def _mp_grad_case(lb, x, a):
    best = _max_pool_ref(x, **a)
    # wrt g only: the kernel compares x with `best` (an input), so it is not even
    # continuous in x or best; its vjp gives them no gradient (None).
    return C(U(*best.shape), x, best, attrs=a, label=lb, wrt=(0,),
             ref=lambda g, x, best, a=a: _max_pool_route(x, g, pick=False, **a))


def _mp_pick_case(lb, x, a):
    # wrt v only, as above: x only selects positions
    return C(U(*x.shape), x, attrs=a, label=lb, wrt=(0,),
             ref=lambda v, x, a=a: _max_pool_route(x, v, pick=True, **a))


cases("max_pool2d_grad", *[_mp_grad_case(*c) for c in _POOL_MP])
cases("max_pool2d_pick", *[_mp_pick_case(*c) for c in _POOL_MP])
_POOL_AVG = [(lb + ("_excl" if ex else "_incl"), xs, dict(a, exclusive=ex))
             for lb, xs, a in _POOL for ex in (True, False)]
cases("avg_pool2d", *[C(U(*xs), attrs=a, label=lb, ref=lambda x, a=a: _avg_pool_ref(x, **a))
                      for lb, xs, a in _POOL_AVG])
cases("avg_pool2d_grad", *[
    C(U(*_avg_pool_ref(np.zeros(xs), **a).shape), attrs=dict(a, input_hw=xs[2:]), label=lb,
      ref=lambda g, a=a, hw=xs[2:]: _avg_pool_grad_ref(g, hw, **a))
    for lb, xs, a in _POOL_AVG])


# Optimizer updates, from PaddlePaddle's documented rules (d2s's comments in
# optim_ops.py name the same variants). They have no vjp: forward checks only.
def _momentum_ref(p, g, v, lr, mu, nesterov):
    v = mu * v + g
    return (p - lr * (g + mu * v) if nesterov else p - lr * v), v


def _rmsprop_ref(p, g, ms, mg, mom, lr, rho, eps, momentum, centered):
    # Paddle's RMSProp: epsilon inside the square root (not Hinton's sqrt(ms) + eps)
    ms = rho * ms + (1 - rho) * g ** 2
    if centered:
        mg = rho * mg + (1 - rho) * g
        mom = momentum * mom + lr * g / np.sqrt(ms - mg ** 2 + eps)
    else:
        mom = momentum * mom + lr * g / np.sqrt(ms + eps)
    return p - mom, ms, mg, mom


def _adagrad_ref(p, g, acc, lr, eps):
    acc = acc + g ** 2
    return p - lr * g / (np.sqrt(acc) + eps), acc


def _adamw_ref(p, g, m, v, step, lr, b1, b2, eps, coeff):
    # Paddle's AdamW (= Loshchilov & Hutter as PyTorch has it): the decay
    # p * (1 - lr * coeff) comes first, from the old parameter, then Adam's step.
    new, m, v, t = _adam_ref(p * (1 - lr * coeff), g, m, v, step, lr, b1, b2, eps)
    return new, m, v, t


def _adamax_ref(p, g, m, u, step, lr, b1, b2, eps):
    # Paddle's Adamax: epsilon is added inside the max (Kingma & Ba divide by u alone)
    t = step + 1
    m = b1 * m + (1 - b1) * g
    u = np.maximum(b2 * u + eps, np.abs(g))
    return p - lr / (1 - b1 ** t) * m / u, m, u, np.asarray(t, step.dtype)


for _nest in (False, True):
    CASES.setdefault("momentum_update", []).append(
        C(U(3, 4), U(3, 4), U(3, 4), np.float64(0.1), attrs=dict(mu=0.9, use_nesterov=_nest),
          ref=lambda p, g, v, lr, n=_nest: _momentum_ref(p, g, v, 0.1, 0.9, n),
          label="nesterov" if _nest else "plain"))
for _cen in (False, True):
    CASES.setdefault("rmsprop_update", []).append(
        C(U(3, 4), U(3, 4), P(3, 4), U(3, 4, lo=-0.1, hi=0.1), U(3, 4), np.float64(0.01),
          attrs=dict(rho=0.95, epsilon=1e-6, momentum=0.5, centered=_cen),
          ref=lambda p, g, ms, mg, mom, lr, c=_cen: _rmsprop_ref(p, g, ms, mg, mom, 0.01, 0.95,
                                                                 1e-6, 0.5, c),
          label="centered" if _cen else "plain"))
cases("adagrad_update",
      C(U(3, 4), U(3, 4), P(3, 4), np.float64(0.1), attrs=dict(epsilon=1e-6),
        ref=lambda p, g, acc, lr: _adagrad_ref(p, g, acc, 0.1, 1e-6), label="f64"))
cases("adamw_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(s), np.float64(0.01),
      attrs=dict(_adam_attrs, coeff=0.1), label=lb,
      ref=lambda p, g, m, v, st, lr: _adamw_ref(p, g, m, v, st, 0.01, 0.9, 0.999, 1e-8, 0.1))
    for lb, s in (("first", 0), ("later", 7))])
cases("adamax_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(s), np.float64(0.01), attrs=_adam_attrs,
      label=lb, ref=lambda p, g, m, u, st, lr: _adamax_ref(p, g, m, u, st, 0.01, 0.9, 0.999,
                                                           1e-8))
    for lb, s in (("first", 0), ("later", 7))])


# -- 3-D convolution and pooling (d2s/core/ops/conv3d.py): loop-based references ----------------
def _c3_pad(x, padding, value=0.0):
    return np.pad(x, [(0, 0), (0, 0)] + [(padding[2 * i], padding[2 * i + 1]) for i in range(3)],
                  constant_values=value)


def _c3_windows(spatial, kernel, stride, padding, dilation):
    out = [(spatial[i] + padding[2 * i] + padding[2 * i + 1] - dilation[i] * (kernel[i] - 1) - 1)
           // stride[i] + 1 for i in range(3)]
    for idx in np.ndindex(*out):
        yield idx, tuple(slice(o * s, o * s + d * (k - 1) + 1, d)
                         for o, s, d, k in zip(idx, stride, dilation, kernel))


def _conv3d_ref(x, w, stride, padding, dilation, groups):
    xp = _c3_pad(x, padding)
    o, cg = w.shape[:2]
    og = o // groups
    wins = list(_c3_windows(x.shape[2:], w.shape[2:], stride, padding, dilation))
    out_shape = tuple(np.max([idx for idx, _ in wins], axis=0) + 1)
    out = np.zeros((x.shape[0], o) + out_shape)
    for oc in range(o):
        gi = oc // og
        for idx, sl in wins:
            win = xp[(slice(None), slice(gi * cg, (gi + 1) * cg)) + sl]
            out[(slice(None), oc) + idx] = np.einsum("ncdhw,cdhw->n", win, w[oc])
    return out


def _conv3d_grad_input_ref(g, w, input_dhw, stride, padding, dilation, groups):
    o, cg = w.shape[:2]
    og = o // groups
    gxp = _c3_pad(np.zeros((g.shape[0], cg * groups) + tuple(input_dhw)), padding)
    for oc in range(o):
        gi = oc // og
        for idx, sl in _c3_windows(input_dhw, w.shape[2:], stride, padding, dilation):
            gxp[(slice(None), slice(gi * cg, (gi + 1) * cg)) + sl] += (
                g[(slice(None), oc) + idx][:, None, None, None, None] * w[oc])
    return gxp[(slice(None), slice(None)) + tuple(
        slice(padding[2 * i], padding[2 * i] + input_dhw[i]) for i in range(3))]


def _conv3d_grad_filter_ref(x, g, kernel_dhw, stride, padding, dilation, groups):
    xp = _c3_pad(x, padding)
    o = g.shape[1]
    cg = x.shape[1] // groups
    og = o // groups
    gw = np.zeros((o, cg) + tuple(kernel_dhw))
    for oc in range(o):
        gi = oc // og
        for idx, sl in _c3_windows(x.shape[2:], kernel_dhw, stride, padding, dilation):
            win = xp[(slice(None), slice(gi * cg, (gi + 1) * cg)) + sl]
            gw[oc] += np.einsum("n,ncdhw->cdhw", g[(slice(None), oc) + idx], win)
    return gw


_CONV3 = [("plain", (2, 2, 3, 4, 3), (3, 2, 2, 2, 2),
           dict(stride=(1, 1, 1), padding=(1, 0, 0, 1, 1, 1), dilation=(1, 1, 1), groups=1)),
          ("stride_dil_groups", (1, 4, 5, 4, 5), (4, 2, 2, 2, 2),
           dict(stride=(2, 1, 2), padding=(0, 1, 1, 0, 0, 0), dilation=(1, 2, 1), groups=2))]
cases("conv3d", *[C(U(*xs), U(*ws), attrs=a, label=lb,
                    ref=lambda x, w, a=a: _conv3d_ref(x, w, **a)) for lb, xs, ws, a in _CONV3])
cases("conv3d_grad_input", *[
    C(U(*_conv3d_ref(np.zeros(xs), np.zeros(ws), **a).shape), U(*ws),
      attrs=dict(a, input_dhw=xs[2:]), label=lb,
      ref=lambda g, w, a=a, s=xs[2:]: _conv3d_grad_input_ref(g, w, s, **a))
    for lb, xs, ws, a in _CONV3])
cases("conv3d_grad_filter", *[
    C(U(*xs), U(*_conv3d_ref(np.zeros(xs), np.zeros(ws), **a).shape),
      attrs=dict(a, kernel_dhw=ws[2:]), label=lb,
      ref=lambda x, g, a=a, k=ws[2:]: _conv3d_grad_filter_ref(x, g, k, **a))
    for lb, xs, ws, a in _CONV3])


def _pool3d_windows(spatial, kernel, stride, padding, ceil_mode):
    """(output index, clipped window slices, unclipped extent inside the padded input)."""
    outs = []
    for n, k, s, lo, hi in zip(spatial, kernel, stride, padding[0::2], padding[1::2]):
        span = n + lo + hi - k
        m = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (m - 1) * s >= n + lo:
            m -= 1
        outs.append(m)
    for idx in np.ndindex(*outs):
        sls, padded = [], 1
        for i, (o, k, s, lo, hi) in enumerate(zip(idx, kernel, stride, padding[0::2],
                                                 padding[1::2])):
            start = o * s - lo
            sls.append(slice(max(start, 0), min(start + k, spatial[i])))
            padded *= min(start + k, spatial[i] + hi) - start
        yield idx, tuple(sls), padded, tuple(outs)


def _max_pool3d_ref(x, kernel, stride, padding, ceil_mode):
    wins = list(_pool3d_windows(x.shape[2:], kernel, stride, padding, ceil_mode))
    out = np.zeros(x.shape[:2] + wins[0][3], x.dtype)
    for idx, sl, _, _ in wins:
        out[(slice(None), slice(None)) + idx] = x[(slice(None), slice(None)) + sl].max(
            axis=(2, 3, 4))
    return out


def _max_pool3d_grad_ref(g, x, kernel, stride, padding, ceil_mode):
    gx = np.zeros(x.shape)
    for idx, sl, _, _ in _pool3d_windows(x.shape[2:], kernel, stride, padding, ceil_mode):
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                win = x[(n, c) + sl]
                at = np.unravel_index(np.argmax(win), win.shape)  # the first maximum
                gx[(n, c) + tuple(s.start + a for s, a in zip(sl, at))] += g[(n, c) + idx]
    return gx


def _avg_pool3d_ref(x, kernel, stride, padding, ceil_mode, exclusive):
    wins = list(_pool3d_windows(x.shape[2:], kernel, stride, padding, ceil_mode))
    out = np.zeros(x.shape[:2] + wins[0][3])
    for idx, sl, padded, _ in wins:
        s = x[(slice(None), slice(None)) + sl]
        out[(slice(None), slice(None)) + idx] = s.sum(axis=(2, 3, 4)) / (
            np.prod(s.shape[2:]) if exclusive else padded)
    return out


def _avg_pool3d_grad_ref(g, input_dhw, kernel, stride, padding, ceil_mode, exclusive):
    gx = np.zeros(g.shape[:2] + tuple(input_dhw))
    for idx, sl, padded, _ in _pool3d_windows(input_dhw, kernel, stride, padding, ceil_mode):
        cnt = np.prod([s.stop - s.start for s in sl]) if exclusive else padded
        gx[(slice(None), slice(None)) + sl] += (g[(slice(None), slice(None)) + idx] / cnt)[
            :, :, None, None, None]
    return gx


_POOL3 = [("overlap_pad", (2, 2, 4, 5, 4), dict(kernel=(3, 2, 3), stride=(2, 1, 1),
                                                padding=(1, 1, 0, 1, 1, 0), ceil_mode=False)),
          ("ceil", (1, 2, 5, 4, 5), dict(kernel=(2, 2, 3), stride=(2, 2, 3),
                                         padding=(0, 0, 1, 0, 0, 0), ceil_mode=True))]
cases("max_pool3d", *[C(U(*xs), attrs=a, label=lb, ref=lambda x, a=a: _max_pool3d_ref(x, **a))
                      for lb, xs, a in _POOL3])
_POOL3_MP = [(lb, U(*xs), a) for lb, xs, a in _POOL3]


def _max_pool3d_pick_ref(v, x, kernel, stride, padding, ceil_mode):
    out = np.zeros(_max_pool3d_ref(x, kernel, stride, padding, ceil_mode).shape)
    for idx, sl, _, _ in _pool3d_windows(x.shape[2:], kernel, stride, padding, ceil_mode):
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                at = np.unravel_index(np.argmax(x[(n, c) + sl]), x[(n, c) + sl].shape)
                out[(n, c) + idx] = v[(n, c) + tuple(s.start + a for s, a in zip(sl, at))]
    return out


# wrt g (and v) only, as in 2-D: x and best only select positions
cases("max_pool3d_grad", *[
    C(U(*_max_pool3d_ref(x, **a).shape), x, _max_pool3d_ref(x, **a), attrs=a, label=lb,
      wrt=(0,), ref=lambda g, x, best, a=a: _max_pool3d_grad_ref(g, x, **a))
    for lb, x, a in _POOL3_MP])
cases("max_pool3d_pick", *[
    C(U(*x.shape), x, attrs=a, label=lb, wrt=(0,),
      ref=lambda v, x, a=a: _max_pool3d_pick_ref(v, x, **a)) for lb, x, a in _POOL3_MP])
_POOL3_AVG = [(lb + ("_excl" if ex else "_incl"), xs, dict(a, exclusive=ex))
              for lb, xs, a in _POOL3 for ex in (True, False)]
cases("avg_pool3d", *[C(U(*xs), attrs=a, label=lb, ref=lambda x, a=a: _avg_pool3d_ref(x, **a))
                      for lb, xs, a in _POOL3_AVG])
cases("avg_pool3d_grad", *[
    C(U(*_avg_pool3d_ref(np.zeros(xs), **a).shape), attrs=dict(a, input_dhw=xs[2:]), label=lb,
      ref=lambda g, a=a, s=xs[2:]: _avg_pool3d_grad_ref(g, s, **a))
    for lb, xs, a in _POOL3_AVG])


# -- Adadelta and Lamb updates (d2s/core/ops/optim_more.py), Paddle's documented rules ---------
def _adadelta_ref(p, g, eg, edx, lr, rho, eps):
    eg = rho * eg + (1 - rho) * g ** 2
    u = -np.sqrt((edx + eps) / (eg + eps)) * g
    edx = rho * edx + (1 - rho) * u ** 2
    return p + lr * u, eg, edx


def _lamb_ref(p, g, m, v, step, lr, b1, b2, eps, wd, adapt):
    t = step + 1
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    r = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p
    ratio = 1.0
    if adapt and np.linalg.norm(p) > 0 and np.linalg.norm(r) > 0:
        ratio = np.linalg.norm(p) / np.linalg.norm(r)
    return p - lr * ratio * r, m, v, np.asarray(t, step.dtype)


cases("adadelta_update",
      C(U(3, 4), U(3, 4), P(3, 4), P(3, 4), np.float64(0.5), attrs=dict(rho=0.9, epsilon=1e-6),
        ref=lambda p, g, eg, edx, lr: _adadelta_ref(p, g, eg, edx, 0.5, 0.9, 1e-6),
        label="f64"))
cases("lamb_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(s), np.float64(0.01),
      attrs=dict(_adam_attrs, weight_decay=wd, adapt=ad), label=lb,
      ref=lambda p, g, m, v, st, lr, wd=wd, ad=ad: _lamb_ref(p, g, m, v, st, 0.01, 0.9, 0.999,
                                                              1e-8, wd, ad))
    for lb, s, wd, ad in (("first_decay", 0, 0.1, True), ("later_no_adapt", 7, 0.0, False))])


# -- NAdam, RAdam, Rprop, ASGD updates (d2s/core/ops/optim_adaptive.py) -----------------------
def _nadam_ref(p, g, m, v, prod, step, lr, b1, b2, eps, psi):
    t = step + 1
    mu, mu1 = (b1 * (1 - 0.5 * 0.96 ** (k * psi)) for k in (t, t + 1))
    m, v, prod = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g, prod * mu
    denom = np.sqrt(v / (1 - b2 ** t)) + eps
    p = p - lr * (1 - mu) / (1 - prod) * g / denom - lr * mu1 / (1 - prod * mu1) * m / denom
    return p, m, v, np.asarray(prod), np.asarray(t, step.dtype)


def _radam_ref(p, g, m, v, step, lr, b1, b2, eps):
    t = step + 1
    m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    step_dir = m / (1 - b1 ** t)
    if rho > 5:
        r = np.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        step_dir = step_dir * r * np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
    return p - lr * step_dir, m, v, np.asarray(t, step.dtype)


def _rprop_ref(p, g, prev, size, lo, hi, em, ep):
    size = np.clip(size * np.select([g * prev > 0, g * prev < 0], [ep, em], 1.0), lo, hi)
    g = np.where(g * prev < 0, 0.0, g)
    return p - np.sign(g) * size, g, size


def _asgd_ref(p, g, d, ys, step, lr, n):
    i = int(step) % n
    d = d - ys[i] + g
    ys = ys.copy()
    ys[i] = g
    return p - lr * d / min(int(step) + 1, n), d, ys, np.asarray(step + 1, step.dtype)


_nadam_attrs = dict(_adam_attrs, momentum_decay=0.004)
cases("nadam_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(pr), np.array(s), np.float64(0.01),
      attrs=_nadam_attrs, label=lb,
      ref=lambda p, g, m, v, pr, st, lr: _nadam_ref(p, g, m, v, pr, st, 0.01, 0.9, 0.999, 1e-8,
                                                    0.004))
    for lb, pr, s in (("first", 1.0, 0), ("later", 0.3, 7))])
cases("radam_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.array(s), np.float64(0.01), attrs=_adam_attrs,
      label=lb, ref=lambda p, g, m, v, st, lr: _radam_ref(p, g, m, v, st, 0.01, 0.9, 0.999, 1e-8))
    for lb, s in (("momentum_only", 0), ("rectified", 9))])
cases("rprop_update",
      C(U(3, 4), U(3, 4), U(3, 4), P(3, 4), np.float64(0.01),
        attrs=dict(eta_minus=0.5, eta_plus=1.2, step_min=0.05, step_max=1.5), label="f64",
        ref=lambda p, g, prev, size, lr: _rprop_ref(p, g, prev, size, 0.05, 1.5, 0.5, 1.2)))
cases("nextafter",
      C(U(3, 4), U(4), ref=np.nextafter, grad=False, label="f64"),
      C(U(3).astype(np.float32), np.array([0.0, 1.0, -1.0], np.float32), ref=np.nextafter,
        grad=False, label="f32"))
cases("asgd_update", *[
    C(U(3, 4), U(3, 4), U(3, 4), U(3, 3, 4), np.array(s), np.float64(0.1),
      attrs=dict(batch_num=3), label=lb,
      ref=lambda p, g, d, ys, st, lr: _asgd_ref(p, g, d, ys, st, 0.1, 3))
    for lb, s in (("filling", 1), ("wrapped", 7))])


# -- gather_tree (d2s/core/ops/beam_ops.py): the backtrace, one beam at a time ------------------
def _gather_tree_ref(ids, parents):
    out = np.zeros_like(ids)
    steps, batch, beam = ids.shape
    for b in range(batch):
        for k in range(beam):
            p = k
            for t in range(steps - 1, -1, -1):
                out[t, b, k] = ids[t, b, p]
                p = parents[t, b, p]
    return out


cases("gather_tree",
      C(I(4, 2, 3, lo=0, hi=20), I(4, 2, 3, lo=0, hi=3), ref=_gather_tree_ref, label="i64"))


# -- yolo_loss_targets (d2s/core/ops/yolo_ops.py): Paddle's YOLOv3 assignment, box by box ------
def _yolo_iou(a, b):
    iw = np.clip(min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2),
                 0, 1)
    ih = np.clip(min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2),
                 0, 1)
    return iw * ih / (a[2] * a[3] + b[2] * b[3] - iw * ih)


def _yolo_targets_ref(x, gt, label, score, anchors, anchor_mask, class_num, ignore_thresh,
                      downsample_ratio, use_label_smooth, scale_x_y):
    n, _, h, w = x.shape
    b, per, size = gt.shape[1], 5 + class_num, downsample_ratio * h
    v = x.reshape(n, len(anchor_mask), per, h, w)
    sig = lambda t: 1 / (1 + np.exp(-t))  # noqa: E731
    sw = min(1.0 / class_num, 1.0 / 40)
    pos, neg = (1 - sw, sw) if use_label_smooth else (1.0, 0.0)
    cell, valid = np.zeros((n, b), np.int64), np.zeros((n, b))
    tbox, weight = np.zeros((n, b, 4)), np.zeros((n, b))
    tclass, obj = np.full((n, b, class_num), neg), np.zeros((n, len(anchor_mask) * h * w))
    for i in range(n):
        for k, m in enumerate(anchor_mask):
            for r in range(h):
                for c in range(w):
                    t = v[i, k, :, r, c]
                    box = ((c + sig(t[0]) * scale_x_y - 0.5 * (scale_x_y - 1)) / w,
                           (r + sig(t[1]) * scale_x_y - 0.5 * (scale_x_y - 1)) / h,
                           np.exp(t[2]) * anchors[2 * m] / size,
                           np.exp(t[3]) * anchors[2 * m + 1] / size)
                    if max(_yolo_iou(box, g) for g in gt[i]) > ignore_thresh:
                        obj[i, (k * h + r) * w + c] = -1
        for j, g in enumerate(gt[i]):
            if g[2] + g[3] == 0:
                continue
            best = int(np.argmax([_yolo_iou((0, 0, g[2], g[3]),
                                            (0, 0, anchors[2 * a] / size,
                                             anchors[2 * a + 1] / size))
                                  for a in range(len(anchors) // 2)]))
            if best not in anchor_mask:
                continue
            k = anchor_mask.index(best)
            gi, gj = int(g[0] * w), int(g[1] * h)
            cell[i, j], valid[i, j] = (k * h + gj) * w + gi, 1.0
            tbox[i, j] = (g[0] * w - gi, g[1] * h - gj, np.log(g[2] * size / anchors[2 * best]),
                          np.log(g[3] * size / anchors[2 * best + 1]))
            weight[i, j] = (2 - g[2] * g[3]) * score[i, j]
            tclass[i, j, label[i, j]] = pos
            obj[i, cell[i, j]] = score[i, j]
    return cell, valid, tbox, weight, tclass, obj


_YOLO_ATTRS = dict(anchors=(10, 13, 16, 30, 33, 23, 30, 61), anchor_mask=(0, 1, 2), class_num=2,
                   ignore_thresh=0.4, downsample_ratio=8, use_label_smooth=True, scale_x_y=1.1)
_yolo_gt = np.concatenate([U(2, 3, 2, lo=0.05, hi=0.95), U(2, 3, 2, lo=0.05, hi=0.6)], -1)
_yolo_gt[1, 2] = 0.0  # a padding row
cases("yolo_loss_targets",
      C(U(2, 3 * 7, 3, 3, lo=-2, hi=2), _yolo_gt, I(2, 3, lo=0, hi=2), U(2, 3, lo=0.3, hi=1.0),
        attrs=_YOLO_ATTRS, grad=False, label="f64",
        ref=lambda x, g, lab, s: _yolo_targets_ref(x, g, lab, s, **_YOLO_ATTRS)))


def _softplus_ref(x):
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow at large |x|
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


cases("softplus",
      C(U(3, 4, lo=-4, hi=4), ref=_softplus_ref, label="f64"),
      C(np.array([-800.0, -40.0, 0.0, 40.0, 800.0]), ref=_softplus_ref, label="extremes"),
      C(U(3).astype(np.float32), ref=lambda x: _softplus_ref(x).astype(np.float32), grad=False,
        label="f32"))
# ---- end of nn ops block ----


# -- detection (d2s/core/ops/detection_ops.py): greedy NMS mask, RoI Align / Pool ------------
def _nms_keep_ref(boxes, groups, iou_threshold):
    keep = []
    for i, b in enumerate(boxes):
        ok = True
        for j in keep:
            a = boxes[j]
            iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
            ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
            ok &= not (groups[i] == groups[j] and iw * ih / union > iou_threshold)
        if ok:
            keep.append(i)
    return np.isin(np.arange(len(boxes)), keep)


_nms_lo = _rng.uniform(0, 1.5, size=(6, 2))
_NMS_BOXES = np.concatenate([_nms_lo, _nms_lo + _rng.uniform(0.5, 2, size=(6, 2))], 1)
cases("nms_keep",
      C(_NMS_BOXES, np.zeros(6, np.int64), attrs=dict(iou_threshold=0.3),
        ref=lambda b, g: _nms_keep_ref(b, g, 0.3), label="one_group"),
      C(_NMS_BOXES, np.array([0, 1, 0, 1, 1, 0]), attrs=dict(iou_threshold=0.1),
        ref=lambda b, g: _nms_keep_ref(b, g, 0.1), label="groups"))


def _proposal_nms_keep_ref(boxes, valid, iou_threshold, eta, pixel_offset):
    """Paddle's proposal NMS per image: IoU with a +1 pixel offset (boxes that
    do not touch overlap 0), invalid rows skipped, the threshold times eta
    after each kept box while above 0.5."""
    norm = 1.0 if pixel_offset else 0.0

    def iou(a, b):
        if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
            return 0.0
        inter = ((min(a[2], b[2]) - max(a[0], b[0]) + norm)
                 * (min(a[3], b[3]) - max(a[1], b[1]) + norm))
        area = [(x[2] - x[0] + norm) * (x[3] - x[1] + norm) for x in (a, b)]
        return inter / (area[0] + area[1] - inter)
    keep = np.zeros(valid.shape, bool)
    for n in range(len(boxes)):
        thr, kept = iou_threshold, []
        for i in np.flatnonzero(valid[n]):
            if all(iou(boxes[n, i], boxes[n, j]) <= thr for j in kept):
                keep[n, i] = True
                kept.append(i)
                if eta < 1 and thr > 0.5:
                    thr *= eta
    return keep


_PROP_BOXES = np.stack([_NMS_BOXES * 2, _NMS_BOXES[::-1] * 2])
_PROP_VALID = np.array([[1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 0, 1]], bool)
cases("proposal_nms_keep",
      C(_PROP_BOXES, _PROP_VALID, attrs=dict(iou_threshold=0.3, eta=1.0, pixel_offset=False),
        ref=lambda b, v: _proposal_nms_keep_ref(b, v, 0.3, 1.0, False), label="plain"),
      C(_PROP_BOXES, _PROP_VALID, attrs=dict(iou_threshold=0.8, eta=0.7, pixel_offset=True),
        ref=lambda b, v: _proposal_nms_keep_ref(b, v, 0.8, 0.7, True), label="eta_offset"))


def _linear_adjoint(f, x, g):
    """J^T g of the linear map f at x's shape, by its columns (unit inputs)."""
    out = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = 1.0
        out[i] = np.sum(np.asarray(f(e.reshape(x.shape)), F64) * g)
    return out.reshape(x.shape).astype(x.dtype)


_ROI_X = U(2, 2, 4, 5)
_ROI_BOXES = np.array([[0.5, 0.5, 3.0, 3.5], [1.0, 0.0, 4.5, 2.5], [-1.0, 1.0, 2.0, 5.0]])
_ROI_NUM = np.array([1, 2], np.int32)
_ROI_ALIGN = dict(pooled_height=2, pooled_width=2, spatial_scale=1.0, sampling_ratio=-1,
                  aligned=True)
_ROI_POOL = dict(pooled_height=2, pooled_width=2, spatial_scale=1.0)


def _roi_align_ref(x, boxes, num):
    from test_vision_roi_align import ref_roi_align
    return ref_roi_align(x, boxes, num, 2, 2)


def _roi_pool_ref(x, boxes, num):
    from test_vision_roi_pool import ref_roi_pool
    return ref_roi_pool(x, boxes, num, 2, 2)


def _roi_pool_grad_ref(g, x, boxes, num):
    """The max's derivative: 1 at each window's (unique) maximum."""
    out = np.zeros(x.size)
    base = _roi_pool_ref(x, boxes, num)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = 1e-3
        out[i] = np.sum((_roi_pool_ref(x + e.reshape(x.shape), boxes, num) - base) / 1e-3 * g)
    return out.reshape(x.shape)


_ROI_G = U(3, 2, 2, 2)
cases("roi_align",
      C(_ROI_X, _ROI_BOXES, _ROI_NUM, attrs=_ROI_ALIGN, ref=_roi_align_ref, wrt=(0,),
        none=(0, 1), label="adaptive"))
cases("roi_align_grad",
      C(_ROI_G, _ROI_X, _ROI_BOXES, _ROI_NUM, attrs=_ROI_ALIGN, wrt=(0,), none=(0, 1, 2),
        ref=lambda g, x, b, n: _linear_adjoint(lambda t: _roi_align_ref(t, b, n), x, g),
        label="adjoint"))
cases("roi_pool",
      C(_ROI_X, _ROI_BOXES, _ROI_NUM, attrs=_ROI_POOL, ref=_roi_pool_ref, wrt=(0,),
        none=(0, 1), label="max"))
cases("roi_pool_grad",
      C(_ROI_G, _ROI_X, _ROI_BOXES, _ROI_NUM, attrs=_ROI_POOL, grad=False, none=(0, 1, 2),
        ref=_roi_pool_grad_ref, label="to_argmax"))


# -- linear algebra (d2s/core/ops/linalg_decomp.py): numpy.linalg; the ops that read one
# -- triangle (cholesky, eigh) and svd's vectors have their gradients checked on symmetric
# -- inputs / through S in tests/core/test_linalg_decomp.py ------------------------------------
_SQ = U(2, 3, 3) + 3 * np.eye(3)
_SPD = _SQ @ np.swapaxes(_SQ, -1, -2)


def _lu_ref(x):
    import scipy.linalg as sl
    lu, piv = sl.lu_factor(x)
    return lu, (piv + 1).astype(np.int32), np.array(0, np.int32)


cases("det", C(_SQ, ref=np.linalg.det, label="batch"))
cases("slogdet", C(U(3, 3), ref=lambda x: tuple(np.linalg.slogdet(x)), label="signs"))
cases("solve", C(_SQ, U(2, 3, 2), ref=np.linalg.solve, label="batch"),
      C(_SQ[0], U(3), ref=np.linalg.solve, label="vector", none=(0,)))
cases("cholesky", C(_SPD, ref=np.linalg.cholesky, grad=False, label="spd"))
cases("qr", C(U(4, 3), attrs=dict(mode="reduced"), ref=lambda x: tuple(np.linalg.qr(x)),
              label="tall"))
cases("svd", C(U(3, 2), attrs=dict(full_matrices=False), grad=False,
               ref=lambda x: tuple(np.linalg.svd(x, full_matrices=False)),
               label="reduced"))
cases("eigh", C(_SPD, attrs=dict(uplo="L"), grad=False,
                ref=lambda x: tuple(np.linalg.eigh(x)), label="spd"))
cases("pinv", C(U(4, 3), attrs=dict(rcond=1e-15, hermitian=False),
                ref=lambda x: np.linalg.pinv(x, rcond=1e-15), label="tall"))
cases("lu", C(_SQ[0], ref=_lu_ref, grad=False, label="square"))
cases("eig", C(U(3, 3), grad=False, label="general",
               ref=lambda x: tuple(t.astype(complex) for t in np.linalg.eig(x))))


# -- Fourier transforms and complex parts (d2s/core/ops/fft_ops.py): numpy.fft; the adjoints
# -- against the transforms' matrices (their columns on unit inputs) --------------------------
_CX = U(3, 4) + 1j * U(3, 4)


def _adjoint_c(f, shape, g):
    """M^H g of a complex-linear (or real-to-complex) map f of inputs `shape`."""
    n = int(np.prod(shape))
    cols = np.stack([np.asarray(f(np.eye(n)[i].reshape(shape))).ravel() for i in range(n)], 1)
    return (cols.conj().T @ np.asarray(g).ravel()).reshape(shape)


def _irfft_adjoint(g, x, axes, norm):
    """dL/dRe + i dL/dIm of <g, irfftn(x)>, input entry by input entry."""
    out = np.zeros(x.shape, complex)
    for idx in np.ndindex(x.shape):
        for unit in (1.0, 1j):
            e = np.zeros(x.shape, complex)
            e[idx] = unit
            d = np.sum(np.fft.irfftn(e, s=[g.shape[a] for a in axes], axes=axes, norm=norm) * g)
            out[idx] += d * (1.0 if unit == 1.0 else 1j)
    return out


cases("fft_c2c",
      C(_CX, attrs=dict(axes=(1,), sizes=(6,), norm="ortho", inverse=False),
        ref=lambda x, **a: np.fft.fftn(x, s=(6,), axes=(1,), norm="ortho"), label="pad"),
      C(_CX, attrs=dict(axes=(0, 1), sizes=None, norm="backward", inverse=True),
        ref=lambda x, **a: np.fft.ifftn(x, axes=(0, 1)), label="inverse2d"))
cases("fft_c2c_adjoint",
      C(U(3, 3) + 1j * U(3, 3), _CX, attrs=dict(axes=(1,), norm="forward", inverse=False),
        grad=False, none=(), label="crop",
        ref=lambda g, x, **a: np.stack([_adjoint_c(
            lambda t: np.fft.fft(t, 3, norm="forward"), (4,), row) for row in g])))
cases("fft_r2c",
      C(U(3, 5), attrs=dict(axes=(1,), sizes=None, norm="backward"),
        ref=lambda x, **a: np.fft.rfftn(x, axes=(1,)), label="odd"))
cases("fft_r2c_adjoint",
      C(U(2, 3) + 1j * U(2, 3), U(2, 5), attrs=dict(axes=(1,), sizes=(4,), norm="ortho"),
        grad=False, none=(), label="crop",
        ref=lambda g, x, **a: np.stack([_adjoint_c(
            lambda t: np.fft.rfft(t, 4, norm="ortho"), (5,), row).real for row in g])))
cases("fft_c2r",
      C(_CX, attrs=dict(axes=(1,), sizes=(6,), norm="backward"),
        ref=lambda x, **a: np.fft.irfftn(x, s=(6,), axes=(1,)), label="even"))
cases("fft_c2r_adjoint",
      C(U(2, 5), U(2, 3) + 1j * U(2, 3), attrs=dict(axes=(1,), norm="forward"), grad=False,
        none=(), label="odd",
        ref=lambda g, x: _irfft_adjoint(g, x, (1,), "forward")))
cases("real", C(_CX, ref=np.real, label="c128"))
cases("imag", C(_CX.astype(np.complex64), ref=np.imag, label="c64"))
cases("complex", C(U(2, 3), U(3), ref=lambda a, b: a + 1j * b, label="broadcast"))


def _gamma_grad_ref(x, alpha):
    """-(dP/dalpha) / density, P(alpha, x) summed as its series in plain
    Python and differentiated by central differences."""
    def p(a, v):
        total, n, term = 0.0, 0, 1.0
        while n < 50 or term > 1e-18 * total:
            term = math.exp((a + n) * math.log(v) - v - math.lgamma(a + n + 1))
            total, n = total + term, n + 1
        return total

    def one(v, a):
        h = 1e-5 * a
        dp = (p(a + h, v) - p(a - h, v)) / (2 * h)
        return -dp / math.exp((a - 1) * math.log(v) - v - math.lgamma(a))
    return np.vectorize(one, otypes=[F64])(x, alpha)


# d2s.distribution's Gamma rsample (implicit reparameterization); no gradient of its own
cases("standard_gamma_grad", C(P(3, 4), P(4) * 2, ref=_gamma_grad_ref, grad=False,
                               label="bcast"))


# ---- the harness ---------------------------------------------------------------------------
def _as_tuple(x):
    if x is None:  # ops without outputs (print, assert)
        return ()
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_float(a):
    return np.issubdtype(np.asarray(a).dtype, np.floating)


def _reseed(case):
    if case.seed is not None:
        d2s.seed(case.seed)


def _expected(name, case):
    """Reference outputs; for random ops the kernel itself under the case's seed."""
    _reseed(case)
    if case.ref is None:
        return _as_tuple(OPS[name].kernel(*case.inputs, **case.attrs))
    return tuple(np.asarray(r) for r in _as_tuple(case.ref(*case.inputs)))


def _projections(name, idx, expected):
    rng = np.random.default_rng(zlib.crc32(f"{name}/{idx}".encode()))
    return {k: rng.standard_normal(e.shape) for k, e in enumerate(expected) if _is_float(e)}


def _wants_grad(name, case, expected):
    return (OPS[name].vjp is not None and case.grad and bool(case.wrt_inputs())
            and any(_is_float(e) for e in expected))


def _numeric(name, case, r, numgrad):
    op = OPS[name]

    def f(*args):
        _reseed(case)
        outs = _as_tuple(op.kernel(*args, **case.attrs))
        return sum(np.sum(np.asarray(outs[k], F64) * rk) for k, rk in r.items())
    return numgrad(f, case.inputs, case.wrt_inputs(), eps=case.eps)


def _projected_loss(outs, r):
    loss = None
    for k, rk in r.items():
        term = d2s.sum(outs[k] * d2s.to_tensor(rk))
        loss = term if loss is None else loss + term
    return loss


def run_eager(name, case, r):
    wrt = case.wrt_inputs()
    ts = [d2s.to_tensor(a, stop_gradient=i not in wrt) for i, a in enumerate(case.inputs)]
    _reseed(case)
    outs = _as_tuple(bind(name, *ts, **case.attrs))
    if wrt:  # only differentiable ops connect their outputs to the tape
        want_stop = OPS[name].vjp is None
        assert all(o.stop_gradient == want_stop for o in outs)
    grads = None
    if r:
        _projected_loss(outs, r).backward()
        grads = [ts[i].grad.numpy() if ts[i].grad is not None else
                 np.zeros_like(case.inputs[i]) for i in wrt]
    return [o.numpy() for o in outs], grads


def _compatible(static_shape, shape):
    return len(static_shape) == len(shape) and all(
        s is None or s == d for s, d in zip(static_shape, shape))


def run_static(name, case, r, none_dims):
    """Build, check and run the case in a program. Gradients are taken w.r.t. every
    float input (their static shape/dtype must match the input's); the values of
    those in `case.wrt_inputs()` are returned for the finite-difference check."""
    floats = case.float_inputs() if r else ()
    nones = case.none_inputs() if none_dims else ()
    prog = Program()
    with program_guard(prog):
        xs = [data(f"in{i}", (None,) + a.shape[1:] if i in nones else a.shape, a.dtype)
              for i, a in enumerate(case.inputs)]
        outs = _as_tuple(bind(name, *xs, **case.attrs))
        grad_vars = []
        if r:
            grad_vars = gradients([_projected_loss(outs, r)], [xs[i] for i in floats])
    for i, g in zip(floats, grad_vars):
        if g is not None:
            a = case.inputs[i]
            assert _compatible(g.shape, a.shape), f"grad of input {i}: {g.shape} vs {a.shape}"
            assert g.dtype == a.dtype, f"grad of input {i}: dtype {g.dtype}, input {a.dtype}"
    wanted = [(i, g) for i, g in zip(floats, grad_vars) if i in case.wrt_inputs()]
    fetch = list(outs) + [g for _, g in wanted if g is not None]
    _reseed(case)
    with warnings.catch_warnings():
        if any(isinstance(rule, NotLowerable) for rule in OPS[name].lowerings.values()):
            # declared not lowerable on some target: that backend runs it on numpy
            warnings.simplefilter("ignore", BackendFallbackWarning)
        got = Executor().run(prog, feed={f"in{i}": a for i, a in enumerate(case.inputs)},
                             fetch_list=fetch)
    values, rest = got[:len(outs)], iter(got[len(outs):])
    grads = [next(rest) if g is not None else np.zeros_like(case.inputs[i]) for i, g in wanted]
    return values, grads, [(o.shape, o.dtype) for o in outs]


def _assert_same(got, want, what, exact=False):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if exact or not (_is_float(want) or want.dtype.kind == "c"):  # (complex: as floats)
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        rtol = 1e-6 if want.dtype in (F64, np.complex128) else 1e-5
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12, err_msg=what)


def _params():
    out = []
    for name in sorted(CASES):
        for idx, case in enumerate(CASES[name]):
            label = case.label or str(idx)
            modes = ["eager", "static"]
            if case.inputs and case.none_inputs():
                modes.append("static_none")
            for m in modes:
                marks = ()
                if case.known_bug and m in case.known_bug[0]:
                    marks = pytest.mark.xfail(strict=True, reason=case.known_bug[1])
                out.append(pytest.param(name, idx, m, id=f"{name}-{label}-{m}", marks=marks))
    return out


def test_every_op_has_a_case():
    missing = sorted(set(OPS) - set(CASES))
    stale = sorted(set(CASES) - set(OPS))
    assert not missing, f"registered ops without a test case in CASES: {missing}"
    assert not stale, f"CASES names ops that are not registered: {stale}"


def _run(name, case, r, mode, capsys):
    """Run the case in `mode`; check what it prints or raises (side-effect ops)."""
    capsys.readouterr()
    run = (lambda: run_eager(name, case, r) + (None,)) if mode == "eager" else (
        lambda: run_static(name, case, r, none_dims=mode == "static_none"))
    if case.raises is not None:
        with pytest.raises(case.raises[0], match=case.raises[1]):
            run()
        return None
    result = run()
    if case.stdout is not None:
        assert capsys.readouterr().out == case.stdout()
    return result


@pytest.mark.parametrize("name,idx,mode", _params())
def test_op(name, idx, mode, numgrad, capsys):
    case = CASES[name][idx]
    op = OPS[name]
    expected = _expected(name, case)
    assert len(expected) == op.num_outputs
    r = _projections(name, idx, expected) if _wants_grad(name, case, expected) else {}
    result = _run(name, case, r, mode, capsys)
    if result is None:
        return
    values, grads, avals = result
    if mode != "eager":
        for k, ((shape, dtype), want) in enumerate(zip(avals, expected)):
            assert dtype == want.dtype, f"output {k}: inferred dtype {dtype} != {want.dtype}"
            assert _compatible(shape, want.shape), \
                f"output {k}: inferred shape {shape} incompatible with {want.shape}"
            if mode == "static" and not case.dynamic:
                assert shape == want.shape, f"output {k}: inferred {shape}, ran {want.shape}"
    for k, (got, want) in enumerate(zip(values, expected)):
        _assert_same(got, want, f"{name} output {k} ({mode})", exact=op.stateful)
    if case.check is not None:
        case.check(values)
    if r:
        for i, g, ng in zip(case.wrt_inputs(), grads, _numeric(name, case, r, numgrad)):
            np.testing.assert_allclose(g, ng, rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{name}: d/d input {i} ({mode})")


# ---- second order: the grad ops' own vjps, in a static program --------------------------------
_idx = np.array([2, 0, 2])
SECOND_ORDER = [  # the cotangent reaching each grad op depends on x
    ("getitem", lambda x: d2s.sum(x[d2s.to_tensor(_idx)] ** 3), U(4, 3)),
    ("gather", lambda x: d2s.sum(d2s.gather(x, d2s.to_tensor(_idx), axis=1) ** 3), U(2, 3)),
    ("concat", lambda x: d2s.sum(d2s.concat([x * x, x], axis=0) ** 3), U(4, 3)),
    ("cross_entropy",
     lambda x: bind("cross_entropy", x * x, d2s.to_tensor(np.array([0, 2, 1])))[0], U(3, 4)),
    ("batch_normalize",
     lambda x: d2s.sum(bind("batch_normalize", x, axes=(0,), epsilon=1e-5)[0] ** 3), U(4, 3)),
]


@pytest.mark.parametrize("fn,x0", [s[1:] for s in SECOND_ORDER], ids=[s[0] for s in SECOND_ORDER])
def test_static_hessian_vector_product(fn, x0, numgrad):
    """d/dx <grad f(x), r> built by applying `gradients` twice equals finite
    differences of the first gradient (run as its own program)."""
    r = np.random.default_rng(3).standard_normal(x0.shape)

    def build(second):
        prog = Program()
        with program_guard(prog):
            x = data("x", (None,) + x0.shape[1:], "float64")
            (g,) = gradients([fn(x)], [x])
            out = g
            if second:
                (out,) = gradients([d2s.sum(g * d2s.to_tensor(r))], [x])
                assert out is not None, "no second-order path"
        return prog, out

    grad_prog, g = build(False)
    hvp_prog, h = build(True)
    (got,) = Executor().run(hvp_prog, feed={"x": x0}, fetch_list=[h])

    def first(x):
        return np.sum(Executor().run(grad_prog, feed={"x": x}, fetch_list=[g])[0] * r)
    (want,) = numgrad(first, [x0], [0])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
