"""Op attribute schemas (`core.attr_schema`): declared with `register_op(...,
attrs=)` or derived from the kernel, and what a loaded file must satisfy."""
import json

import numpy as np
import pytest

import d2s
from d2s.core import attr_schema as S
from d2s.core.dispatch import bind
from d2s.core.registry import OPS, Aval, NotLowerable, register_op
from d2s.jit import InputSpec, ProgramFormatError, to_static


@pytest.mark.parametrize("spec, good, bad", [
    (S.SHAPE, [(2, None, -1), [], (0, 5)], [(-2,), (2.0,), (True,), "3", (1 << 20, 1 << 20)]),
    (S.DTYPE, ["float32", "int64", "bool", np.dtype("float16")],
     ["object", "U3", "V8", "i4,f4", 3, "x" * 100]),
    (S.AXES, [None, 1, -1, (0, 2), [1]], [1.0, "0", (0, "1"), True]),
    (S.VALUE, [None, 1, 2.5, "s", (1, [2, {"k": 3}]), np.zeros(3), np.dtype("int8")],
     [ValueError, print, np.zeros(2, object), [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
    (S.int_range(0, 3), [0, 3], [-1, 4, 2.0, True]),
])
def test_specs_accept_what_a_program_holds_and_nothing_else(spec, good, bad):
    for v in good:
        assert spec(v) is None, v
    for v in bad:
        assert spec(v), v


def test_attribute_names_derive_from_the_kernel():
    assert S.kernel_attr_names(np.tanh) == ()  # ufunc keywords are no attributes
    assert S.kernel_attr_names(lambda x, axis, keepdim: x) == ("x", "axis", "keepdim")
    assert S.kernel_attr_names(lambda x, *dims, shape, out=None: x) == ("x", "shape")
    assert S.kernel_attr_names(lambda x, **kw: x) is None


def test_every_registered_op_has_a_closed_schema():
    """Unknown attribute names are refused for every op d2s declares."""
    open_ops = sorted(name for name, op in OPS.items() if S.op_schema(op) is None)
    assert open_ops == [], (f"{open_ops}: a kernel taking **kwargs has no attribute names to "
                            "derive; declare them: register_op(..., attrs={name: spec})")


@pytest.fixture()
def user_ops():
    """Two user ops scaling by `alpha`: one with a derived schema, one declared."""
    def kernel(x, *, alpha):
        return x * np.asarray(alpha, x.dtype)

    def infer(x, *, alpha):
        return Aval(x.shape, x.dtype)

    names = {"_sec_scale_derived": None, "_sec_scale_declared": {"alpha": S.int_range(1, 9)}}
    for name, attrs in names.items():
        register_op(name, kernel, infer, attrs=attrs).lowering(
            xla=NotLowerable("a test op"), onnx=NotLowerable("a test op"))
    yield list(names)
    for name in names:
        del OPS[name]


@pytest.mark.parametrize("which", [0, 1])
def test_user_ops_save_load_and_their_attributes_are_checked(user_ops, tmp_path, which):
    name = user_ops[which]

    def f(x):
        return bind(name, x, alpha=3)

    path = str(tmp_path / "user_op")
    d2s.jit.save(to_static(f), path, input_spec=[InputSpec([2], "float32")])
    x = np.array([1.0, -2.0], np.float32)
    previous = d2s.jit.get_backend()
    d2s.jit.set_backend("numpy")  # the test ops have no xla rule
    try:
        _check_user_op(path, name, which, x)
    finally:
        d2s.jit.set_backend(previous)


def _check_user_op(path, name, which, x):
    np.testing.assert_array_equal(d2s.jit.load(path)(x).numpy(), x * 3)

    def edit(change):
        with open(path + ".json") as fh:
            doc = json.load(fh)
        op = next(op for op in doc["blocks"][0]["ops"] if op["type"] == name)
        change(op["attrs"])
        with open(path + ".json", "w") as fh:
            json.dump(doc, fh)

    edit(lambda a: a.update(beta=1))
    with pytest.raises(ProgramFormatError, match=r"unknown attribute 'beta' \(this op takes: alpha"):
        d2s.jit.load(path)
    edit(lambda a: (a.pop("beta"), a.update(alpha=100)))
    if which == 1:  # declared: an int in [1, 9]
        with pytest.raises(ProgramFormatError, match=r"attribute 'alpha': expected an int in \[1, 9\]"):
            d2s.jit.load(path)
    else:  # derived: any plain value, as the kernel takes it
        np.testing.assert_array_equal(d2s.jit.load(path)(x).numpy(), x * 100)


def _registry_cases():
    """The per-op cases of tests/core/test_registry_ops.py (every op, with the
    attributes its callers pass)."""
    import importlib.util
    import pathlib
    import sys
    file = pathlib.Path(__file__).parents[1] / "core" / "test_registry_ops.py"
    spec = importlib.util.spec_from_file_location("_registry_op_cases", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.CASES


def test_every_op_schema_accepts_the_attributes_its_cases_use():
    """A schema that refused what tracing writes would make saved programs
    unloadable: each op's registry cases pass its schema and arity check."""
    refused, checked = [], 0
    for name, cases in _registry_cases().items():
        for case in cases:
            checked += bool(case.attrs)
            problem = S.check_attrs(S.op_schema(OPS[name]), case.attrs) or \
                S.arity_problem(OPS[name], len(case.inputs), case.attrs)
            if problem:
                refused.append(f"{name} [{case.label}]: {problem}")
    assert refused == [] and checked > 50


@pytest.mark.parametrize("template,kinds,ok", [
    ("loss {0:.4f} at step {1}", "tn", True),
    ("{0!r} / {1:%.3e}", "t-n", True),
    ("literal {{braces}} only", "", True),
    ("{0.__class__.__init__.__globals__}", "t", False),   # attribute access on a value
    ("{0[0]}", "t", False),                                 # item access
    ("{1}", "t", False),                                    # a value the op does not hold
    ("{0:999999999}", "t", False),                          # a gigabyte of padding
    ("{0:{1}}", "tn", False),                               # a nested field
    ("{0!x}", "t", False),
])
def test_message_templates_of_a_loaded_program_are_data(template, kinds, ok):
    """A `print` / `assert` / `raise` message template read from a saved
    program is formatted with the run's values: it may only name them by
    position, never reach their attributes or items, nor ask for huge
    widths (what converted code writes always passes)."""
    schema = S.op_schema(OPS["assert"])
    problem = S.check_attrs(schema, {"message": None, "fstring": (template, kinds)})
    assert (problem is None) is ok, problem
    part = S.check_attrs(S.op_schema(OPS["print"]),
                         {"parts": (("fstring", template, kinds),), "sep": " ", "end": "\n"})
    assert (part is None) is ok, part
