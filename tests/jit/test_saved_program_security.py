"""A saved program is hostile input: nothing in it becomes code, and every
bound is checked before allocation (issue 24, DESIGN.md §14).

Each test reproduces one way a crafted file attacked the loader before the
fix (a command run from an attribute key, `SystemExit` from a `raise` op,
`RecursionError` from deep JSON or a block that runs itself, gigabytes
decompressed from a small `.npz`) and checks it now gives a clear
`ProgramFormatError`, with no side effect."""
import io
import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest

import d2s
from d2s.jit import ProgramFormatError
from d2s.backends.numpy.codegen import compile_program

from saved_program_models import save_all


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return save_all(str(tmp_path_factory.mktemp("models")))


@pytest.fixture()
def copy(models, tmp_path):
    """`copy(name)` -> (path of a fresh copy of that saved model, its doc, inputs, expected)."""
    def make(name):
        src, inputs, ref = models[name]
        dst = str(tmp_path / name)
        for ext in (".json", ".npz"):
            with open(src + ext, "rb") as f, open(dst + ext, "wb") as g:
                g.write(f.read())
        with open(dst + ".json") as f:
            return dst, json.load(f), inputs, ref
    return make


def _write(path, doc):
    with open(path + ".json", "w") as f:
        json.dump(doc, f)


def _ops(doc, op_type):
    return [op for b in doc["blocks"] for op in b["ops"] if op["type"] == op_type]


# ---- attribute keys and values never become code --------------------------------------
def test_an_attribute_key_holding_code_is_refused_and_never_runs(copy, tmp_path):
    path, doc, inputs, _ = copy("mlp")
    canary = tmp_path / "CANARY"
    key = f"_=__import__('os').system('touch {canary}'),__z"
    _ops(doc, "tanh")[0]["attrs"][key] = 1
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match="is not an identifier"):
        d2s.jit.load(path)(*inputs)
    assert not canary.exists()


def test_the_code_generator_never_splices_an_attribute_key(copy, tmp_path):
    """Even a program that reached the code generator without the loader (an
    attribute key set in memory) runs no text of it: the key is passed as data."""
    path, doc, inputs, _ = copy("mlp")
    model = d2s.jit.load(path)
    canary = tmp_path / "CANARY2"
    program = model.program
    ops = program.global_block().ops
    next(op for op in ops if op.type == "tanh").attrs[
        f"_=__import__('os').system('touch {canary}'),__z"] = 1
    compiled = compile_program(program, ops, ["x"] + list(program.captured),
                               [v.name for v in model._concrete.outputs], passes=False)
    assert "system" not in compiled.source
    with pytest.raises(TypeError):  # np.tanh refuses the unknown keyword
        compiled(inputs[0], *(t.numpy() for t in program.captured.values()))
    assert not canary.exists()


@pytest.mark.parametrize("op_type, key, value, message", [
    ("tanh", "where", False, "unknown attribute 'where'"),  # a ufunc keyword is no attribute
    ("relu", "out", None, "unknown attribute 'out'"),
    ("add", "dtype", "float64", "unknown attribute 'dtype'"),
    ("matmul", "__class__", 1, "unknown attribute '__class__'"),
])
def test_unknown_attribute_names_are_refused(copy, op_type, key, value, message):
    path, doc, _, _ = copy("mlp")
    _ops(doc, op_type)[0]["attrs"][key] = value
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match=message):
        d2s.jit.load(path)


@pytest.mark.parametrize("name, op_type, key, value, message", [
    ("control", "full", "dtype", "object", "numeric dtype"),
    ("control", "full", "shape", {"__tuple__": [10 ** 6, 10 ** 6]}, "D2S_LOAD_MAX_ELEMENTS"),
    ("control", "full", "shape", "abc", "shape"),
    ("control", "getitem", "spec", {"__tuple__": [{"__tuple__": ["int", "0]+[1"]}]},
     "malformed index item"),
    ("control", "getitem", "spec", {"__tuple__": [{"__tuple__": ["tensor", 5]}]},
     "tensor references"),
    ("raising", "raise", "args", {"__dtype__": "float32"}, "raise.args"),
    ("control", "while", "num_loop_vars", "1); import os; (", "num_loop_vars"),
])
def test_attribute_values_are_checked_against_the_schema(copy, name, op_type, key, value,
                                                         message):
    path, doc, _, _ = copy(name)
    _ops(doc, op_type)[0]["attrs"][key] = value
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match=message):
        d2s.jit.load(path)


def test_hostile_variable_names_are_mapped_to_identifiers(copy, tmp_path):
    """A variable name is any text: the generated code never uses it as source."""
    path, doc, inputs, ref = copy("mlp")
    canary = tmp_path / "CANARY3"
    evil = f"x = 1\nimport os; os.system('touch {canary}')  # "
    text = json.dumps(doc)
    target = _ops(doc, "relu")[0]["outputs"][0]
    doc = json.loads(text.replace(json.dumps(target), json.dumps(evil)))
    _write(path, doc)
    model = d2s.jit.load(path)
    np.testing.assert_allclose(model(*inputs).numpy(), ref, rtol=1e-6)
    assert not canary.exists()


# ---- raise: an allow-list of exception types --------------------------------------------
@pytest.mark.parametrize("exc", ["SystemExit", "KeyboardInterrupt", "BaseException",
                                 "GeneratorExit", "StopIteration", "OSError", "print"])
def test_a_raise_op_can_raise_only_allowed_exception_types(copy, exc):
    path, doc, _, _ = copy("raising")
    _ops(doc, "raise")[0]["attrs"]["exception"] = {"__exception__": exc}
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match=f"exception type {exc} is not allowed"):
        d2s.jit.load(path)


@pytest.mark.parametrize("value", ["SystemExit", {"__dtype__": "int8"}, None,
                                   {"__exception__": "os.system"}])
def test_a_raise_op_exception_must_be_an_exception_type(copy, value):
    path, doc, _, _ = copy("raising")
    _ops(doc, "raise")[0]["attrs"]["exception"] = value
    _write(path, doc)
    with pytest.raises(ProgramFormatError):
        d2s.jit.load(path)


def test_allowed_and_user_exception_types_still_raise(copy):
    path, doc, inputs, _ = copy("raising")
    big = (inputs[0] + 100.0,)
    with pytest.raises(ValueError, match="too big"):
        d2s.jit.load(path)(*big)
    _ops(doc, "raise")[0]["attrs"]["exception"] = {"__exception__": "MyOwnError"}
    _write(path, doc)
    with pytest.raises(RuntimeError, match="too big"):  # a class d2s cannot rebuild
        d2s.jit.load(path)(*big)


# ---- structure: nesting, keys, block references -----------------------------------------
@pytest.mark.parametrize("depth", [40, 100_000])
def test_deeply_nested_json_is_a_format_error(copy, depth):
    path, doc, _, _ = copy("mlp")
    _ops(doc, "tanh")[0]["attrs"]["x"] = "@"
    text = json.dumps(doc).replace('"@"', "[" * depth + "]" * depth)
    with open(path + ".json", "w") as f:
        f.write(text)
    with pytest.raises(ProgramFormatError, match="nested"):
        d2s.jit.load(path)


def test_deeply_nested_output_structure_is_a_format_error(copy):
    path, doc, _, _ = copy("mlp")
    tree = doc["out_tree"]
    for _ in range(200):
        tree = {"t": "tuple", "c": [tree]}
    doc["out_tree"] = tree
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match="nested deeper"):
        d2s.jit.load(path)


@pytest.mark.parametrize("where", ["doc", "block", "var", "op", "param"])
def test_unknown_fields_are_refused(copy, where):
    path, doc, _, _ = copy("mlp")
    record = {"doc": doc, "block": doc["blocks"][0], "var": doc["blocks"][0]["vars"][0],
              "op": doc["blocks"][0]["ops"][0], "param": doc["params"][0]}[where]
    record["__init__"] = 1
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match="unknown field|malformed"):
        d2s.jit.load(path)


def _self_ref(doc):
    cond = _ops(doc, "cond")[0]
    body = doc["blocks"][cond["attrs"]["true_block"]]
    clone = json.loads(json.dumps(cond))
    clone["attrs"]["true_block"] = cond["attrs"]["true_block"]
    clone["attrs"]["false_block"] = cond["attrs"]["false_block"]
    body["ops"].append(clone)


def _shared(doc):
    cond = _ops(doc, "cond")[0]
    cond["attrs"]["false_block"] = cond["attrs"]["true_block"]


def _cycle(doc):
    """Blocks 6 and 7 each hold a cond running the other."""
    cond = _ops(doc, "cond")[0]
    n = len(doc["blocks"])
    doc["blocks"] += [{"parent": 0, "vars": [], "ops": []} for _ in range(4)]
    for holder, runs in ((n, (n + 1, n + 2)), (n + 1, (n, n + 3))):
        clone = json.loads(json.dumps(cond))
        clone["attrs"].update(true_block=runs[0], false_block=runs[1])
        doc["blocks"][holder]["ops"].append(clone)


@pytest.mark.parametrize("change, message", [
    (_self_ref, "would run itself"),
    (_shared, "already used"),
    (_cycle, "would run itself"),
])
def test_block_references_form_a_tree(copy, change, message):
    path, doc, _, _ = copy("control")
    change(doc)
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match=message):
        d2s.jit.load(path)


@pytest.mark.parametrize("shape", [[10 ** 6, 10 ** 6], [True, 3], [-1, 3], [1] * 100, "x"])
def test_variable_shapes_are_bounded(copy, shape):
    path, doc, _, _ = copy("mlp")
    doc["blocks"][0]["vars"][-1]["shape"] = shape
    _write(path, doc)
    with pytest.raises(ProgramFormatError, match="shape"):
        d2s.jit.load(path)


# ---- npz: sizes from the zip directory and the .npy header, before decompression -------
def _npy_bytes(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def _rewrite_npz(path, extra, compression=zipfile.ZIP_DEFLATED):
    """The model's arrays (stored) plus `extra` members (name -> bytes)."""
    with zipfile.ZipFile(path + ".npz") as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(path + ".npz", "w") as z:
        for n, data in members.items():
            z.writestr(n, data, zipfile.ZIP_STORED)
        for n, data in extra.items():
            z.writestr(n, data, compression)


def test_a_zip_bomb_is_refused_before_decompression(copy, monkeypatch):
    path, _, _, _ = copy("mlp")
    _rewrite_npz(path, {"bomb.npy": _npy_bytes(np.zeros(64 << 18, np.float32))})  # 64 MiB
    assert os.path.getsize(path + ".npz") < 1 << 20
    monkeypatch.setenv("D2S_LOAD_MAX_BYTES", str(16 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ProgramFormatError, match="D2S_LOAD_MAX_BYTES"):
            d2s.jit.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_an_array_over_the_element_cap_is_refused(copy, monkeypatch):
    path, _, _, _ = copy("mlp")
    _rewrite_npz(path, {"big.npy": _npy_bytes(np.zeros(5000, np.float32))})
    monkeypatch.setenv("D2S_LOAD_MAX_ELEMENTS", "1000")
    with pytest.raises(ProgramFormatError, match="D2S_LOAD_MAX_ELEMENTS"):
        d2s.jit.load(path)


@pytest.mark.parametrize("shape", [(1 << 27,), (4, 1 << 40)])
def test_a_header_promising_more_than_its_member_holds_is_refused(copy, shape):
    """The header says how much to allocate: it must agree with the member's
    declared size before anything is allocated (np.load allocates first)."""
    path, _, _, _ = copy("mlp")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    _rewrite_npz(path, {"liar.npy": header.getvalue() + b"\0" * 64})
    with pytest.raises(ProgramFormatError, match="declares|D2S_LOAD_MAX_ELEMENTS"):
        d2s.jit.load(path)


@pytest.mark.parametrize("member", ["evil.pkl", "../x.npy"])
def test_unexpected_npz_members_are_refused(copy, member):
    path, _, _, _ = copy("mlp")
    _rewrite_npz(path, {member: b"\x80\x04N."})
    with pytest.raises(ProgramFormatError):
        d2s.jit.load(path)


def test_a_json_over_the_byte_cap_is_refused(copy, monkeypatch):
    path, _, _, _ = copy("mlp")
    monkeypatch.setenv("D2S_LOAD_MAX_BYTES", "100")
    with pytest.raises(ProgramFormatError, match="D2S_LOAD_MAX_BYTES"):
        d2s.jit.load(path)


def test_valid_files_still_load_and_run_on_both_backends(models):
    previous = d2s.jit.get_backend()
    try:
        for name, (path, inputs, ref) in models.items():
            for backend in ("numpy", "xla"):
                d2s.jit.set_backend(backend)
                out = d2s.jit.load(path)(*inputs).numpy()
                np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name} on {backend}")
    finally:
        d2s.jit.set_backend(previous)


_GENERATED_LOOKING = ["k_tanh", "k_matmul", "a0", "a1", "a2", "e0", "e1", "c0", "x_s",
                      "_Undefined", "_zeros_like", "int", "reversed", "True", "None",
                      "__builtins__", "program", "v_x"]


def _rename(node, mapping):
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for k, v in list(items):
        if isinstance(v, str) and v in mapping:
            node[k] = mapping[v]
        else:
            _rename(v, mapping)


@pytest.mark.parametrize("name", ["mlp", "control", "raising"])
def test_variable_names_never_hide_what_the_generated_code_uses(copy, name):
    """Variables renamed to names the generated code could use itself (a
    kernel's, a constant's, a helper's, a builtin's): same values, same errors,
    interpreted and compiled."""
    path, doc, inputs, ref = copy(name)
    names = [v["name"] for b in doc["blocks"] for v in b["vars"]]
    _rename(doc, dict(zip(names, _GENERATED_LOOKING)))
    _write(path, doc)
    model = d2s.jit.load(path)
    for _ in range(2):
        np.testing.assert_allclose(model(*inputs).numpy(), ref, rtol=1e-5, atol=1e-6)
    if name == "raising":
        with pytest.raises(ValueError, match="too big"):
            model(inputs[0] + 100.0)
