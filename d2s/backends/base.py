"""What a backend is: the declared shape every backend has, numpy included.

`jit` and `static.Executor` run a Program through these types only, never
through a backend's name: a `Backend` turns the parts of a traced program
(`ProgramParts`) into an `Executable`, which runs each part of a call
(forward, forward keeping what the backward reads, backward, a whole
training step). A backend that cannot run a program raises `Unsupported`
(or its executable does, for one part); the registry (`d2s.backends`) then
runs that part on the numpy backend after one `BackendFallbackWarning`:
the policy lives there, once, not in each backend.

The rule-context protocols at the end declare what translation rules may
use of the context a target hands them (`ns` for an op's rule, `low` for a
control op's xla rule, `ex` for a control op's ONNX rule): the members the
rules use today, so that a new target knows what it must provide.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable


class BackendFallbackWarning(UserWarning):
    """A program ran on the numpy backend because the chosen backend cannot
    run one of its ops (the message names the op, the file and the line)."""


class Unsupported(Exception):
    """A backend cannot run this program (or this part of it): `reason` says
    why, `op` (when known) is the op it stopped at, whose origin names the
    user's file and line."""

    def __init__(self, reason, op=None):
        super().__init__(reason)
        self.reason = reason
        self.op = op


@runtime_checkable
class ProgramParts(Protocol):
    """What `jit` computes for one traced program, handed to a backend.

    `main_program` is the forward Program; `inputs` / `outputs` its data
    and output Variables; `main_program.captured` the names of the eager
    Tensors it reads besides its inputs (fed after the inputs, in order).
    `backward_program()` builds the program's backward (static.backward) on
    first need and `saved_for_backward()` names what it reads of the
    forward. `input_names()` are the feeds in order (inputs, then captured)."""

    main_program: Any
    inputs: Sequence[Any]
    outputs: Sequence[Any]

    def input_names(self) -> list: ...

    def backward_program(self) -> Any: ...

    def saved_for_backward(self) -> list: ...


@runtime_checkable
class StepParts(ProgramParts, Protocol):
    """The parts of a whole training step (jit.train_step.StepProgram): the
    pure function `run_inputs` -> `run_outputs`, `captured_writes()` (new
    value's name -> the captured name it replaces), and `finish(tensors,
    values)`, which commits a run's values to the eager objects and returns
    the step's outputs."""

    run_inputs: Sequence[str]
    run_outputs: Sequence[str]
    check_finite: bool

    def captured_writes(self) -> dict: ...


@runtime_checkable
class Executable(Protocol):
    """One traced program on one backend. Arrays in, arrays (the backend's,
    e.g. device arrays) out; `captured` is the list of captured eager
    Tensors to read now (a backend may keep their values between calls)."""

    def forward(self, feeds: list, captured: list, feed_attrs=None) -> list:
        """The output values."""

    def forward_for_grad(self, feeds: list, captured: list, feed_attrs=None) -> tuple:
        """(output values, saved): `saved` is what `backward` reads."""

    def backward(self, saved: Any, cts: list, wanted: tuple) -> list:
        """Per differentiated input (inputs, then captured): its gradient, an
        UndefinedValue (zero) or None (not wanted / none exists)."""

    def step(self, tensors: list) -> Any:
        """Run a whole training step (StepParts) on eager input Tensors and
        commit it: the step's outputs."""

    def text(self, feeds: list) -> str:
        """What runs the forward, as text (generated code, StableHLO, ...)."""

    # Optional: `plain_call` (feeds, captured) -> output values, a one-frame
    # forward a call that needs no gradient may take; None while there is none.
    plain_call: Optional[Callable]
    # Optional: `direct_fn` (*input arrays, *captured arrays) -> output values,
    # `plain_call`'s own function once there is one (None before), with
    # `direct_located(error)` (the error to raise for one it raised) and
    # `as_arrays(values)` (outputs that are not arrays made arrays).


@runtime_checkable
class Backend(Protocol):
    """A registered backend (see `d2s.backends.register_backend`)."""

    name: str

    def executable(self, parts: ProgramParts) -> Executable:
        """The executable of a to_static program (or of a StepParts: a
        training step); may raise `Unsupported`."""

    def runner(self, program, feed_names, fetch_names) -> Any:
        """What `static.Executor` runs one (program, feeds, fetches) with:
        `run(feeds) -> fetched values`, `output_attrs(feeds, attrs)` and
        `text(feeds)`; may raise `Unsupported`."""


# ---- rule contexts ------------------------------------------------------------------
@runtime_checkable
class OpRuleContext(Protocol):
    """`ns`: what an op's translation rule gets (for xla: `backends.xla.
    lowering`, for ONNX: `onnx.export`'s graph context). Rules use these."""

    jnp: Any          # the array namespace of the target (xla)
    lax: Any
    special: Any
    graph: Any        # the graph under construction (ONNX)
    static: Any       # the op's static attributes helper
    Unsupported: type

    def node(self, *args, **kwargs) -> Any: ...
    def scalar(self, *args, **kwargs) -> Any: ...
    def cast(self, *args, **kwargs) -> Any: ...
    def ints(self, *args, **kwargs) -> Any: ...
    def check_on_numpy(self, *args, **kwargs) -> Any: ...
    def promote(self, *args, **kwargs) -> Any: ...
    def shape_vector(self, *args, **kwargs) -> Any: ...
    def outputs(self, *args, **kwargs) -> Any: ...
    def dim(self, *args, **kwargs) -> Any: ...
    def reshape(self, *args, **kwargs) -> Any: ...
    def shape_of(self, *args, **kwargs) -> Any: ...
    def host_draw(self, *args, **kwargs) -> Any: ...
    def const(self, *args, **kwargs) -> Any: ...
    def concat_rows(self, *args, **kwargs) -> Any: ...
    def transposed(self, *args, **kwargs) -> Any: ...
    def is_tensor_array(self, *args, **kwargs) -> Any: ...
    def constant_offset(self, *args, **kwargs) -> Any: ...
    def transpose(self, *args, **kwargs) -> Any: ...
    def sharding_constraint(self, *args, **kwargs) -> Any: ...
    def needs(self, *args, **kwargs) -> Any: ...
    def host_effect(self, *args, **kwargs) -> Any: ...
    def check(self, *args, **kwargs) -> Any: ...


@runtime_checkable
class ControlLoweringContext(Protocol):
    """`low`: what a control op's (cond, while, undefined, raise) xla rule
    gets (`backends.xla.lowering`)."""

    jnp: Any
    lax: Any
    jax: Any
    ns: OpRuleContext
    program: Any
    status: Any
    kept: Any
    draws: Any
    drawn: Any
    cotangents: Any
    branch_errors: Any
    Unsupported: type
    TensorArray: type
    History: type
    Env: type
    EmptyRowShape: type

    def undefined(self, *args, **kwargs) -> Any: ...
    def lower_block(self, *args, **kwargs) -> Any: ...
    def false(self, *args, **kwargs) -> Any: ...
    def trace(self, *args, **kwargs) -> Any: ...
    def flagged(self, *args, **kwargs) -> Any: ...
    def checked(self, *args, **kwargs) -> Any: ...
    def room(self, *args, **kwargs) -> Any: ...
    def carried(self, *args, **kwargs) -> Any: ...
    def err(self, *args, **kwargs) -> Any: ...
    def bind(self, *args, **kwargs) -> Any: ...
    def uses_room(self, *args, **kwargs) -> Any: ...
    def undefined_stand_in(self, *args, **kwargs) -> Any: ...
    def scalar_bool(self, *args, **kwargs) -> Any: ...
    def rows_if_known(self, *args, **kwargs) -> Any: ...
    def read(self, *args, **kwargs) -> Any: ...
    def has_effects(self, *args, **kwargs) -> Any: ...
    def as_tensor_array(self, *args, **kwargs) -> Any: ...
    def zeros_like(self, *args, **kwargs) -> Any: ...
    def need(self, *args, **kwargs) -> Any: ...
    def forward_op(self, *args, **kwargs) -> Any: ...
    def fail_if(self, *args, **kwargs) -> Any: ...


@runtime_checkable
class ControlExportContext(Protocol):
    """`ex`: what a control op's ONNX rule gets (`d2s.onnx`)."""

    namespace: Any
    blocks: Any
    program: Any
    label: Any
    doc: Any
    Env: type
    Value: type
    Graph: type

    def emit_block(self, *args, **kwargs) -> Any: ...
    def zeros(self, *args, **kwargs) -> Any: ...
    def scalar_bool(self, *args, **kwargs) -> Any: ...


__all__ = ["Backend", "Executable", "ProgramParts", "StepParts", "Unsupported",
           "BackendFallbackWarning", "OpRuleContext", "ControlLoweringContext",
           "ControlExportContext"]
