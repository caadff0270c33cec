"""A traced program -> an ONNX model, op by op.

Each op's ONNX rule comes from the registry (`OpDef.lowerings["onnx"]`),
beside its numpy kernel; a control-flow op's from its home
(`static.control_ops`), written with the services of `control_flow`.
The program first goes through the compiler's own passes (constant
folding, algebraic identities, CSE, dead-code elimination; not the numpy
backend's in-place buffer reuse): a `for` over `range` leaves `i * 1 + 0`
behind, and ONNX Runtime folds constants but not identities. Side-effect
ops are always kept, so a print or a random draw is refused even when
nothing reads it. Every value a rule returns is checked against the
program: its dtype must be the one d2s gives, else the rule has a bug
(raised at once, naming the op).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from ..core.registry import OPS, Aval, NotLowerable
from ..static.control_ops import control_op
from ..static.passes import ProgramView, constant_folding, cse, dce, simplify
from .control_flow import ControlFlowSupport, Env
from .errors import ExportError, Unsupported
from .graph import Graph, Names, RuleNamespace, Value
from .prune import drop_unused_constants
from . import rules as _rules  # noqa: F401  (registers the rules kept in this target's package)

# Rules use opset 18 forms (Reduce* take axes as an input, Split/Pad inputs, ...).
MIN_OPSET = 18
# The newest opset of the pair d2s is tested with: onnx 1.23 writes 28 and
# onnxruntime 1.32 registers CPU kernels up to 28; every ONNX test passes at
# each opset from 18 to 28. An older onnx caps it at the newest it writes.
DEFAULT_OPSET = min(28, onnx.defs.onnx_opset_version())

# The compiler's passes that change what runs (in this order, see
# `static.passes`); the in-place pass only annotates for numpy codegen.
PASSES = (constant_folding, simplify, cse, dce)


def rule_for(op):
    """The op's ONNX rule (a control-flow op's from its home); an `ExportError`
    naming the op, the reason and the user's line when it has none."""
    opdef = control_op(op.type) or OPS.get(op.type)
    rule = None if opdef is None else opdef.lowerings.get("onnx")
    if isinstance(rule, NotLowerable):
        raise ExportError(f"cannot export op '{op.type}'{site(op)}: {rule.reason}")
    if rule is None:
        raise ExportError(f"cannot export op '{op.type}'{site(op)}: no ONNX rule is "
                          "declared for it")
    return rule


def site(op):
    """` (built at FILE, line N: SOURCE)`: the user's line that built `op`."""
    if not op.origin:
        return ""
    text = op.origin[2] if len(op.origin) > 2 and op.origin[2] else ""
    return f" (built at {op.origin[0]}, line {op.origin[1]}{': ' + text if text else ''})"


class ProgramExporter(ControlFlowSupport):
    """Emits the live ops of a program's blocks into ONNX graphs."""

    def __init__(self, program, ops, outputs):
        self.program = program
        view = ProgramView(program, ops, outputs)
        for p in PASSES:
            view = p.run(view)
        self.view = view
        self.blocks = view.blocks
        self.consts = view.consts      # name -> array folded while exporting
        self.outputs = view.outputs    # the output names after the passes' renames
        self.names = Names()

    def doc(self, op):
        """The user's line that built `op`, kept on its nodes."""
        if op.origin:
            return f"{op.origin[0]}:{op.origin[1]}"
        return None

    def namespace(self, graph, op):
        outs = [Aval(v.shape, v.dtype) for v in op.outputs]
        return RuleNamespace(graph, op, outs, self.doc(op))

    def names_read(self):
        """Every name an op, a block result or the outputs read."""
        names = set(self.outputs)
        for ops in self.blocks.values():
            for op in ops:
                names.update(v.name for v in op.inputs)
                names.update(self.view.block_results(op))
        return names

    def emit_block(self, idx, graph, env, skip=frozenset()):
        """Emit the live ops of block `idx` (but those whose id is in `skip`)."""
        for op in self.blocks[idx]:
            if id(op) in skip:
                continue
            rule = rule_for(op)
            if control_op(op.type) is not None:  # its rule emits its blocks through us
                rule(self, op, graph, env)
            else:
                self.emit_op(rule, op, graph, env)

    def emit_op(self, rule, op, graph, env):
        args = [env.get(v.name) for v in op.inputs]
        try:
            result = rule(self.namespace(graph, op), *args, **op.attrs)
        except Unsupported as e:
            raise ExportError(f"cannot export op '{op.type}'{site(op)}: {e}") from None
        except Exception as e:
            raise ExportError(f"the ONNX rule of op '{op.type}' failed{site(op)}: "
                              f"{type(e).__name__}: {e} (a bug in d2s)") from e
        results = (result,) if len(op.outputs) == 1 else tuple(result)
        for var, value in zip(op.outputs, results):
            if not isinstance(value, Value) or value.dtype != var.dtype:
                got = value.dtype.name if isinstance(value, Value) else type(value).__name__
                raise ExportError(f"the ONNX rule of op '{op.type}' gave {got} for "
                                  f"'{var.name}', the program says {var.dtype.name} (a bug "
                                  f"in d2s){site(op)}")
            env.set(var.name, value.with_shape(var.shape))


def check_opset(opset_version):
    if opset_version is None:
        return DEFAULT_OPSET
    newest = onnx.defs.onnx_opset_version()
    if not isinstance(opset_version, int) or not MIN_OPSET <= opset_version <= newest:
        raise ValueError(f"opset_version must be an int from {MIN_OPSET} to {newest} (the "
                         f"newest this onnx writes), got {opset_version!r}")
    return opset_version


def program_to_model(concrete, opset_version=None):
    """The ONNX model of a `ConcreteProgram` (its forward ops; Python values
    it returns are not part of the model, nor are the values a forward writes
    into objects that outlive the call: a model cannot write back)."""
    program = concrete.main_program
    outputs, _ = concrete.result_outputs()
    names = None
    writes = getattr(concrete, "writes", None)
    if writes is not None and writes.writes_inputs:
        # an input the forward writes in place: one more output, `<input>_written`
        # (a model cannot write its caller's tensor; its runner assigns it)
        written = sorted((e.template.index, e.key) for e in writes.effects
                         if e.kind == "input")
        names = [f"output_{i}" for i in range(len(outputs))] + [
            f"{concrete.inputs[k].name}_written" for _, k in written]
        outputs = list(outputs) + [writes.variables[i] for i, _ in written]
    return export_program(program, program.global_block().ops[:concrete._n_forward],
                          concrete.inputs, outputs, opset_version, names)


def export_program(program, ops, inputs, outputs, opset_version=None, names=None):
    """The ONNX model computing `outputs` (Variables) of `ops` from `inputs`
    (data Variables; unknown dims named `<input>_dim<i>`), the program's
    captured weights as initializers, outputs named `output_0`, `output_1`,
    ... (or `names`, one per output). Checked by ONNX's full checker (an
    ExportError if it fails)."""
    opset = check_opset(opset_version)
    if not outputs:
        raise ExportError("the function returns no tensor: an ONNX model needs an output")
    exporter = ProgramExporter(program, ops, [v.name for v in outputs])
    graph, env = Graph(exporter.names), Env()
    for v in inputs:
        env.set(v.name, graph.add_input(v.name, v.dtype, v.shape,
                                        lambda i, n=v.name: f"{n}_dim{i}"))
    read = exporter.names_read()
    for name, tensor in program.captured.items():
        if name in read:
            env.set(name, graph.add_initializer(name, tensor._value))
    for name, array in exporter.consts.items():
        if name in read:
            env.set(name, _constant(graph, array))
    exporter.emit_block(0, graph, env)
    results = []
    for i, (v, name) in enumerate(zip(outputs, exporter.outputs)):
        value = env.get(name)
        out = Value(exporter.names.fresh(names[i] if names else f"output_{i}"), v.dtype,
                    v.shape)
        results.append(graph.add_node("Identity", [value], [out])[0])
    proto = graph.to_proto("d2s", results, dim_names=lambda i, d: f"output_{i}_dim{d}")
    drop_unused_constants(proto)  # else ONNX Runtime warns about each one, every session
    model = helper.make_model_gen_version(
        proto, producer_name="d2s", opset_imports=[helper.make_opsetid("", opset)])
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise ExportError(f"the exported model fails ONNX's checker: {e}") from e
    return model


def _constant(graph, array):
    """A folded value: a Constant, or a scalar expanded to its shape when all its
    elements are equal (zeros([512, 1024]) is not 2 MB of model)."""
    array = np.asarray(array)
    if array.size > 16 and (array == array.flat[0]).all():
        value = Value(graph.names.fresh("filled"), array.dtype, array.shape)
        graph.add_node("Expand", [graph.const(array.flat[0].reshape(())),
                                  graph.const(np.array(array.shape, np.int64))], [value])
        return value
    return graph.const(array)
