"""Building ONNX graphs: values, fresh names, nodes, constants, and the
namespace (`ns`) that each op's ONNX rule receives.

ONNX graphs are SSA *across nesting*: a name defined in the main graph must
not be defined again in an `If` branch or a `Loop` body. One `Names` per
model hands out every name, so emitting the same d2s block twice (a loop's
condition: before the loop and at the end of its body) gives distinct names.
"""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from .errors import Unsupported


def onnx_type(dtype):
    """The TensorProto element type of a numpy dtype."""
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class Value:
    """An ONNX value as the rules see it: its name, numpy dtype and shape
    (`None` for an unknown dim; the whole shape `None` when even the rank is
    unknown, e.g. inside a rule)."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape=None):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = None if shape is None else tuple(shape)

    @property
    def ndim(self):
        if self.shape is None:
            raise Unsupported(f"the rank of ONNX value '{self.name}' is not known")
        return len(self.shape)

    def with_shape(self, shape):
        return Value(self.name, self.dtype, shape)

    def __repr__(self):
        return f"Value({self.name}: {self.dtype.name}{list(self.shape or ())})"


class Names:
    """Fresh value names for one model (see the module doc)."""

    def __init__(self):
        self._used = set()

    def fresh(self, hint):
        name, k = hint, 0
        while name in self._used:
            k += 1
            name = f"{hint}_{k}"
        self._used.add(name)
        return name


def value_info(name, dtype, shape, dim_names=None):
    """A ValueInfoProto; unknown dims get the symbolic name `dim_names(i)` if given."""
    if shape is not None:
        shape = [d if d is not None else (dim_names(i) if dim_names else None)
                 for i, d in enumerate(shape)]
    return helper.make_tensor_value_info(name, onnx_type(dtype), shape)


class Graph:
    """One ONNX graph being built: the model's main graph, an `If` branch or a
    `Loop` body (`parent` is the enclosing graph, whose values it may read)."""

    def __init__(self, names, parent=None):
        self.names = names
        self.parent = parent
        self.nodes = []
        self.inputs = []           # ValueInfoProtos
        self.initializers = []     # TensorProtos (main graph: the weights)
        self.defined = set()       # names this graph's inputs and nodes define
        self._consts = {}          # (dtype, shape, bytes) -> Value

    def add_input(self, hint, dtype, shape, dim_names=None):
        name = self.names.fresh(hint)
        self.inputs.append(value_info(name, dtype, shape, dim_names))
        self.defined.add(name)
        return Value(name, dtype, shape)

    def add_initializer(self, hint, array):
        array = np.asarray(array)
        name = self.names.fresh(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        self.defined.add(name)
        return Value(name, array.dtype, array.shape)

    def add_node(self, op_type, inputs, outputs, attrs=None, doc=None):
        """Append a node reading `inputs` (Values, None for an omitted optional
        input) and defining `outputs` (Values with fresh names)."""
        node = helper.make_node(op_type, ["" if v is None else v.name for v in inputs],
                                [v.name for v in outputs], **(attrs or {}))
        if doc:
            node.doc_string = doc
        self.nodes.append(node)
        self.defined.update(v.name for v in outputs)
        return outputs

    def const(self, array, hint="const"):
        """A constant (one `Constant` node per distinct value, shared with the
        graphs nested in this one)."""
        array = np.require(array, requirements="C")  # (ascontiguousarray makes 0-d 1-d)
        key = (array.dtype.str, array.shape, array.tobytes())
        g = self
        while g is not None:
            found = g._consts.get(key)
            if found is not None:
                return found
            g = g.parent
        out = Value(self.names.fresh(hint), array.dtype, array.shape)
        self.add_node("Constant", [], [out], {"value": numpy_helper.from_array(array, out.name)})
        self._consts[key] = out
        return out

    def to_proto(self, name, outputs, dim_names=None):
        """The GraphProto returning `outputs` (Values). ONNX wants each output
        defined in this graph and named once: others go through an Identity."""
        seen, out_infos = set(), []
        for i, v in enumerate(outputs):
            if v.name not in self.defined or v.name in seen:
                v = self.add_node("Identity", [v], [Value(self.names.fresh(v.name), v.dtype,
                                                          v.shape)])[0]
            seen.add(v.name)
            out_infos.append(value_info(v.name, v.dtype, v.shape,
                                        dim_names and (lambda d, i=i: dim_names(i, d))))
        return helper.make_graph(self.nodes, name, self.inputs, out_infos,
                                 initializer=self.initializers)


# Output dtypes that are not the first input's: fixed ones, and Where's (its second input).
_FIXED_DTYPES = dict.fromkeys(["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                               "Not", "And", "Or", "Xor", "IsNaN", "IsInf"], np.dtype(np.bool_))
_FIXED_DTYPES.update(dict.fromkeys(["Shape", "Size", "NonZero", "ArgMax", "ArgMin"],
                                   np.dtype(np.int64)))


class RuleNamespace:
    """What an op's ONNX rule receives as `ns` (the core never imports onnx).

    A rule is `rule(ns, *inputs, **attrs)`: inputs are `Value`s (name, dtype,
    and the shape the program knows, `None` for dims known only at run
    time); it emits nodes with `ns.node(...)` and returns the op's output
    Value(s). `ns.outputs` holds the program's (shape, dtype) of each output.
    """

    Unsupported = Unsupported

    def __init__(self, graph, op, outputs, doc=None):
        self.graph = graph
        self.outputs = outputs
        self._hint = op.outputs[0].name if op.outputs else op.type
        self._doc = doc

    # ---- nodes -------------------------------------------------------------------------
    def node(self, op_type, *inputs, dtype=None, shape=None, **attrs):
        """Emit one node with one output; inputs are Values, None (an omitted
        optional input) or numpy values (made constants). The output's dtype
        defaults to the first input's (bool for comparisons and logic, int64
        for Shape and friends, the branches' for Where)."""
        ins = [v if v is None or isinstance(v, Value) else self.const(v) for v in inputs]
        if dtype is None:
            dtype = _FIXED_DTYPES.get(op_type) or (
                ins[1].dtype if op_type == "Where" else next(v.dtype for v in ins if v is not None))
        out = Value(self.graph.names.fresh(self._hint), dtype, shape)
        self.graph.add_node(op_type, ins, [out], attrs, self._doc)
        return out

    def const(self, value, dtype=None):
        return self.graph.const(np.asarray(value, dtype=dtype))

    def ints(self, values):
        """A 1-D int64 constant (axes, shapes, slice bounds)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def scalar(self, value, dtype):
        return self.const(np.asarray(value, dtype=dtype))

    # ---- dtypes ------------------------------------------------------------------------
    def cast(self, x, dtype):
        dtype = np.dtype(dtype)
        if x.dtype == dtype:
            return x
        return self.node("Cast", x, to=onnx_type(dtype), dtype=dtype, shape=x.shape)

    def promote(self, *xs):
        """The operands cast to the dtype NumPy 2 gives them together (ONNX ops
        take one type: d2s's implicit promotion becomes explicit Casts)."""
        dtype = np.result_type(*(x.dtype for x in xs))
        return tuple(self.cast(x, dtype) for x in xs)

    # ---- shapes ------------------------------------------------------------------------
    def shape_of(self, x):
        """The run-time shape of `x`, a 1-D int64 value (a constant where known)."""
        if x.shape is not None and None not in x.shape:
            return self.ints(x.shape)
        return self.node("Shape", x, dtype=np.int64, shape=(None if x.shape is None
                                                            else len(x.shape),))

    def dim(self, x, axis):
        """Dim `axis` of `x`: an int where the program knows it, else a 1-element
        int64 value read at run time."""
        if x.shape is not None and x.shape[axis] is not None:
            return x.shape[axis]
        axis = axis % x.ndim
        return self.node("Shape", x, start=axis, end=axis + 1, dtype=np.int64, shape=(1,))

    def shape_vector(self, dims):
        """A 1-D int64 value from dims that are ints or int64 values (0-d or
        1-element): a constant when all are ints, else a Concat."""
        if all(isinstance(d, (int, np.integer)) for d in dims):
            return self.ints(dims)
        parts, run = [], []
        for d in dims:
            if isinstance(d, (int, np.integer)):
                run.append(int(d))
                continue
            if run:
                parts.append(self.ints(run))
                run = []
            parts.append(self.node("Reshape", self.cast(d, np.int64), self.ints([1]),
                                   shape=(1,)))
        if run:
            parts.append(self.ints(run))
        if len(parts) == 1:
            return parts[0]
        return self.node("Concat", *parts, axis=0, shape=(len(dims),))

    def reshape(self, x, dims):
        """`x` reshaped to `dims` (ints or int64 values; no 0 / -1 magic: a 0 is
        a zero-size dim, as in numpy)."""
        return self.node("Reshape", x, self.shape_vector(dims), allowzero=1)

    def concat_rows(self, buf, rows, shape):
        """A tensor array's `buf` followed by `rows` (a `Concat` along axis 0),
        shaped `shape`. An empty array's trailing dims may be zero placeholders
        (`array_init`): `buf` is first reshaped to `[-1] + rows.shape[1:]` (a
        no-op when it holds rows)."""
        dims = [-1] + [self.dim(rows, i) for i in range(1, len(shape))]
        return self.node("Concat", self.node("Reshape", buf, self.shape_vector(dims)), rows,
                         axis=0).with_shape(shape)
