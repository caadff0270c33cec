"""Hostile saved programs, generated: thousands of mutated files per run.

Three small models are saved (an MLP, a function with a tensor `if` and a
`while`, one raising inside a tensor branch); then their JSON (keys, values,
types, structure, op types, block indices, variable names, raw text) and
their `.npz` (bytes, members, headers, compression) are mutated, and each
mutant is loaded and, when it loads, called twice (interpreted, then
compiled). Every mutant must end in one of:

* `ProgramFormatError` from `jit.load` (the loader raises nothing else);
* a run: both calls return the same values (the saved model's values when
  the mutant only renames variables, consistently, to hostile text), or both raise the same error, an
  ordinary `Exception` a hand-written program could raise (`RUN_ERRORS`: a
  mutant is a different program, it may divide by zero or index out of
  range), or the call is still looping after `LOOP_S` (a mutated loop
  condition may never end, as in Python).

Never a side effect (payloads try to `touch` a canary file), never an
exception outside `Exception` (`SystemExit`, `KeyboardInterrupt`), never a
`RecursionError` or `MemoryError`, never a crash of the interpreter (all
mutants run in this process).

Deterministic: `D2S_FUZZ_SEED` (default 0) seeds it and
`D2S_FUZZ_EXAMPLES` (default 2500; 1000 on the interpreter) sets how many
mutants in all; a failure names the seed, the mutant's index, what was
mutated and where its files were kept. Mutants run on the numpy backend
(a never-ending loop is stopped by a signal, which cannot interrupt an XLA
call); the unmutated files run on both backends in
`test_saved_program_security.py`.
"""
import copy as copy_module
import functools
import io
import itertools
import json
import os
import pathlib
import random
import shutil
import signal
import tempfile
import zipfile

import numpy as np
import pytest

import d2s
from d2s.core.registry import OPS
from d2s.jit import ProgramFormatError
from d2s.static.control_ops import CONTROL_OPS
from d2s.static.executor import set_interpreted_calls

from saved_program_models import save_all

# On the reference interpreter (D2S_EXECUTOR=interpreter, CI's second run)
# both calls interpret: a third as many there.
EXAMPLES = int(os.environ.get("D2S_FUZZ_EXAMPLES",
                              "1000" if os.environ.get("D2S_EXECUTOR") == "interpreter"
                              else "2500"))
SEED = int(os.environ.get("D2S_FUZZ_SEED", "0"))
LOOP_S = 0.25
RUN_ERRORS = (ValueError, TypeError, IndexError, KeyError, ArithmeticError, AssertionError,
              NameError, NotImplementedError, RuntimeError)
NOT_RUN_ERRORS = (RecursionError, MemoryError)


DEEP = "@DEEP@"


class _Looping(Exception):
    """A mutant's call that was still running after LOOP_S."""


def _payloads(canary):
    return [
        f"__import__('os').system('touch {canary}')",
        f"_=__import__('os').system('touch {canary}'),__z",
        f"x\nimport os; os.system('touch {canary}')\n",
        f"x)); __import__('os').system('touch {canary}'); ((x",
    ]


def _paths(node, prefix=(), out=None):
    """Every path (tuple of keys) into `node`."""
    out = [] if out is None else out
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        _paths(v, prefix + (k,), out)
    return out


RENAMED = "renamed everywhere"


def _replace_strings(node, old, new):
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for k, v in list(items):
        if v == old and isinstance(v, str):
            node[k] = new
        else:
            _replace_strings(v, old, new)


class Mutator:
    def __init__(self, rng, canary, doc):
        self.rng = rng
        self.payloads = _payloads(canary)
        self.paths = _paths(doc)
        self.fresh = itertools.count()
        names = [v["name"] for b in doc["blocks"] for v in b["vars"]]
        self.names = names
        self.op_types = sorted(OPS) + sorted(CONTROL_OPS)
        self.scalars = [0, 1, -1, 2, 3, 7, 2 ** 31, 2 ** 63, -2 ** 63 - 1, 10 ** 30, 0.5,
                        float("inf"), float("nan"), -0.0, True, False, None, "", "x",
                        "float32", "int64", "object", "<U3", "V8", "tanh", "SystemExit"]
        self.tagged = [
            {"__exception__": "SystemExit"}, {"__exception__": "ValueError"},
            {"__exception__": "KeyboardInterrupt"}, {"__exception__": 3},
            {"__tuple__": [1, 2]}, {"__tuple__": []}, {"__tuple__": [{"__tuple__": ["int", 0]}]},
            {"__tuple__": [{"__tuple__": ["slice", None, 9, None]}]},
            {"__tuple__": [{"__tuple__": ["tensor", 0]}]},
            {"__array__": "param_0"}, {"__array__": "nope"}, {"__array__": [1]},
            {"__dtype__": "float64"}, {"__dtype__": "O"}, {"__dtype__": "i4,f4"},
            {"__dict__": [[1, 2]]}, {"__dict__": [[[1], 2]]}, {"__float__": "nan"},
            {"__float__": "1e999"}, {"__code__": "x"}, {"a": 1, "b": 2},
        ]

    def value(self):
        r = self.rng.random()
        if r < 0.35:
            return self.rng.choice(self.scalars)
        if r < 0.55:
            return copy_module.deepcopy(self.rng.choice(self.tagged))
        if r < 0.7:
            return self.rng.choice(self.payloads)
        if r < 0.85:
            return self.rng.choice(self.names)
        if r < 0.9:
            return DEEP  # replaced by nested lists in the text (json cannot write them)
        return [self.rng.choice(self.scalars) for _ in range(self.rng.randint(0, 4))]

    def key(self):
        return self.rng.choice(self.payloads + ["x", "out", "where", "dtype", "shape", "axis",
                                                "__class__", "true_block", "exception",
                                                "name", "parent", "type", "", "0"])

    # ---- where to mutate ----
    def _slots(self, doc):
        """(container, key) pairs of `doc`: a random sample of its paths (those
        of the saved file, found once), the ones still there after earlier
        mutations of this mutant."""
        out = []
        for path in self.rng.sample(self.paths, min(8, len(self.paths))):
            node = doc
            try:
                for k in path[:-1]:
                    node = node[k]
                node[path[-1]]
            except (KeyError, IndexError, TypeError):
                continue
            if not isinstance(node, (dict, list)):
                continue
            out.append((node, path[-1]))
        return out



    def rename_everywhere(self, doc):
        """Rename one variable consistently (every string equal to its name):
        the same program under a hostile name, which must run as before."""
        old = self.rng.choice(self.names)
        new = self.rng.choice(self.payloads) + str(next(self.fresh))  # no two alike
        _replace_strings(doc, old, new)
        return f"{RENAMED} {old!r} -> {new!r}"

    def mutate(self, doc):
        """Apply one mutation in place; returns what it did."""
        rng = self.rng
        kind = rng.choice(["replace", "replace", "delete", "insert", "rename", "splice",
                           "op_type", "block_index", "var_name", "attr"])
        blocks = doc.get("blocks") if isinstance(doc.get("blocks"), list) else []
        ops = [op for b in blocks if isinstance(b, dict) and isinstance(b.get("ops"), list)
               for op in b["ops"] if isinstance(op, dict)]
        if kind == "op_type" and ops:
            op = rng.choice(ops)
            op["type"] = rng.choice(self.op_types + self.payloads[:1])
            return f"op type -> {op['type']!r}"
        if kind == "block_index" and ops:
            op = rng.choice(ops)
            attrs = op.get("attrs")
            if isinstance(attrs, dict) and attrs:
                k = rng.choice(sorted(attrs))
                attrs[k] = rng.randint(-1, len(blocks) + 1)
                return f"attr {k} -> block {attrs[k]}"
        if kind == "var_name" and ops:
            op = rng.choice(ops)
            lists = [op[f] for f in ("inputs", "outputs") if isinstance(op.get(f), list) and op[f]]
            if lists:
                names = rng.choice(lists)
                i = rng.randrange(len(names))
                names[i] = rng.choice(self.names + self.payloads)
                return f"op {op.get('type')} name #{i} -> {names[i]!r}"
        if kind == "attr" and ops:
            op = rng.choice(ops)
            attrs = op.get("attrs")
            if isinstance(attrs, dict):
                k = rng.choice(sorted(attrs) + [self.key()])
                attrs[k] = self.value()
                return f"op {op.get('type')} attr {k!r} -> {str(attrs[k])[:60]}"
        slots = self._slots(doc)
        if not slots:
            return "nothing to mutate"
        container, k = rng.choice(slots)
        if kind == "delete":
            del container[k]
            return f"delete {str(k)[:40]}"
        if kind == "insert":
            if isinstance(container, dict):
                container[self.key()] = self.value()
            else:
                container.insert(k, self.value())
            return "insert"
        if kind == "rename" and isinstance(container, dict):
            container[self.key()] = container.pop(k)
            return f"rename {str(k)[:40]}"
        if kind == "splice":
            source = rng.choice(slots)
            container[k] = copy_module.deepcopy(source[0][source[1]])
            return f"splice into {str(k)[:40]}"
        container[k] = self.value()
        return f"replace {str(k)[:40]} -> {str(container[k])[:60]}"


# ---- npz mutations -------------------------------------------------------------------------
def _members(npz_bytes):
    with zipfile.ZipFile(io.BytesIO(npz_bytes)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _zip(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, data in members.items():
            z.writestr(n, data, compression)
    return buf.getvalue()


@functools.lru_cache(maxsize=None)
def _bomb(n):
    return _npy(np.zeros(n, np.float32))


def _npy(array):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def mutate_npz(rng, data):
    kind = rng.choice(["flip", "truncate", "member", "array", "header", "compress", "extra"])
    if kind == "flip" and len(data) > 0:
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b), "flip bytes"
    if kind == "truncate":
        return data[:rng.randrange(len(data))], "truncate"
    members = _members(data)
    if not members and kind in ("member", "array", "header"):
        kind = "extra"
    name = rng.choice(sorted(members)) if members else None
    if kind == "member":
        members[rng.choice(["x.pkl", "../up.npy", name[:-4] + "2.npy"])] = members.pop(name)
        return _zip(members), f"rename member {name}"
    if kind == "array":
        arr = np.lib.format.read_array(io.BytesIO(members[name]))
        choice = rng.choice([arr.astype(np.float64), arr.reshape(-1), arr[:0],
                             np.zeros((2, 2), np.int8), np.array(["a"]), arr.T])
        members[name] = _npy(np.asarray(choice))
        return _zip(members), f"replace array {name}"
    if kind == "header":
        head = io.BytesIO()
        shape = rng.choice([(1 << 40,), (3, 1 << 30), (4,), ()])
        np.lib.format.write_array_header_1_0(
            head, {"descr": rng.choice(["<f4", "|O", "<i8", "|V4"]), "fortran_order": False,
                   "shape": shape})
        members[name] = head.getvalue() + b"\0" * rng.choice([0, 16, 64])
        return _zip(members), f"header of {name} -> {shape}"
    if kind == "compress":
        return _zip(members, zipfile.ZIP_DEFLATED), "compressed"
    members["bomb.npy"] = _bomb(rng.choice([10, 1 << 20]))
    return _zip(members, zipfile.ZIP_DEFLATED), "extra (zeros) member"


# ---- running a mutant ----------------------------------------------------------------------
def _alarm(signum, frame):
    raise _Looping()


def _call(model, inputs):
    signal.setitimer(signal.ITIMER_REAL, LOOP_S)
    try:
        return ("ok", model(*inputs).numpy())
    except _Looping:
        return ("looping", None)
    except NOT_RUN_ERRORS as e:
        return ("bad", e)
    except RUN_ERRORS as e:
        return ("error", type(e))
    except BaseException as e:  # noqa: B036  (what this test exists to catch)
        return ("bad", e)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _outcome(path, inputs):
    """('refused' | 'ran' | 'looping', detail) or ('FAIL', why)."""
    try:
        model = d2s.jit.load(path)
    except ProgramFormatError as e:
        return "refused", str(e)
    except BaseException as e:  # noqa: B036
        return "FAIL", f"load raised {type(e).__name__}: {str(e)[:300]}"
    first = _call(model, inputs)
    second = _call(model, inputs) if first[0] != "looping" else first
    for kind, detail in (first, second):
        if kind == "bad":
            return "FAIL", f"call raised {type(detail).__name__}: {str(detail)[:300]}"
    if "looping" in (first[0], second[0]):
        return "looping", ""
    if first[0] != second[0]:
        return "FAIL", f"interpreted call gave {first}, compiled call {second}"
    if first[0] == "error":
        if first[1] is not second[1]:
            return "FAIL", f"interpreted call raised {first[1]}, compiled {second[1]}"
        return "ran", first[1].__name__
    a, b = first[1], second[1]
    if not (a.shape == b.shape and a.dtype == b.dtype
            and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)):
        return "FAIL", "interpreted and compiled calls disagree"
    return "ran", "values"


def _same_values(path, inputs, ref, kind, detail):
    """A renamed program loads and gives the saved model's values."""
    if kind != "ran" or detail != "values":
        return "FAIL", f"the renamed program did not run ({kind}: {detail})"
    out = d2s.jit.load(path)(*inputs).numpy()
    if not np.allclose(out, ref, rtol=1e-5, atol=1e-6):
        return "FAIL", "the renamed program gives other values"
    return "renamed", "values"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return save_all(str(tmp_path_factory.mktemp("fuzz_models")))


@pytest.fixture()
def workdir(tmp_path):
    """Where mutants are written: memory-backed where there is such a folder
    (thousands of small files; on a disk each write costs milliseconds)."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="d2s-fuzz-") as d:
            yield pathlib.Path(d)
    else:
        yield tmp_path


# (mutated programs compute nan and inf on purpose: numpy says so, quietly here)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mutated_saved_programs_fail_cleanly_or_run(models, workdir, tmp_path):
    canary = workdir / "CANARY"
    # On numpy whatever the suite's backend: a mutant's loop that never ends is
    # stopped by a signal between Python bytecodes, never inside an XLA call.
    previous_backend = d2s.jit.get_backend()
    d2s.jit.set_backend("numpy")
    previous_calls = set_interpreted_calls(1)  # first call interpreted, second compiled
    previous_handler = signal.signal(signal.SIGALRM, _alarm)
    old_env = {k: os.environ.get(k) for k in ("D2S_LOAD_MAX_ELEMENTS", "D2S_LOAD_MAX_BYTES")}
    os.environ["D2S_LOAD_MAX_ELEMENTS"] = str(1 << 20)  # mutants allocate little
    os.environ["D2S_LOAD_MAX_BYTES"] = str(64 << 20)
    rng = random.Random(SEED)
    counts, failures = {}, []
    try:
        originals = {}
        for name, (path, inputs, ref) in models.items():
            with open(path + ".json") as f, open(path + ".npz", "rb") as g:
                originals[name] = (f.read(), g.read(), inputs, ref)
            # the unmutated files load and give the eager values
            kind, detail = _outcome(path, inputs)
            assert kind == "ran", (name, kind, detail)
            np.testing.assert_allclose(d2s.jit.load(path)(*inputs).numpy(), ref, rtol=1e-5)
        mutators = {name: Mutator(rng, canary, json.loads(text))
                    for name, (text, *_) in originals.items()}
        path = str(workdir / "mutant")
        for index in range(EXAMPLES):
            name = rng.choice(sorted(originals))
            text, npz, inputs, _ = originals[name]
            doc = json.loads(text)  # a fresh copy
            what = []
            if rng.random() < 0.1:  # the same program under hostile names
                for _ in range(rng.choice([1, 2, 3])):
                    what.append(mutators[name].rename_everywhere(doc))
            else:
                for _ in range(rng.choice([1, 1, 1, 2, 3])):
                    what.append(mutators[name].mutate(doc))
            same_program = all(w.startswith(RENAMED) for w in what)
            try:
                text = json.dumps(doc)
            except (ValueError, RecursionError):  # a cycle or depth json cannot write
                continue
            while '"@DEEP@"' in text:
                depth = rng.choice([5, 40, 3000, 200_000])
                text = text.replace('"@DEEP@"', "[" * depth + "0" + "]" * depth, 1)
            if not same_program and rng.random() < 0.08:  # raw text: cut or change
                at = rng.randrange(len(text))
                text = text[:at] if rng.random() < 0.5 else \
                    text[:at] + rng.choice("[]{}\",:0a\\") + text[at + 1:]
                what.append(f"text at {at}")
            if not same_program and rng.random() < 0.12:
                npz, change = mutate_npz(rng, npz)
                what.append(change)
            with open(path + ".json", "w") as f:
                f.write(text)
            with open(path + ".npz", "wb") as f:
                f.write(npz)
            kind, detail = _outcome(path, inputs)
            if same_program:
                kind, detail = _same_values(path, inputs, originals[name][3], kind, detail)
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "FAIL" or canary.exists():
                kept = str(tmp_path / f"mutant_{index}")  # its files, to reproduce it
                for ext in (".json", ".npz"):
                    shutil.copyfile(path + ext, kept + ext)
                failures.append(f"seed {SEED} mutant {index} of {name} ({'; '.join(what)}): "
                                f"{detail}{' [CANARY CREATED]' if canary.exists() else ''} "
                                f"(files: {kept}.json/.npz)")
                if canary.exists():
                    canary.unlink()
    finally:
        signal.signal(signal.SIGALRM, previous_handler)
        d2s.jit.set_backend(previous_backend)
        set_interpreted_calls(previous_calls)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    print(f"\nfuzz: {EXAMPLES} mutants, {counts}")
    assert not failures, f"{len(failures)} mutants misbehaved:\n" + "\n".join(failures[:10])
    if EXAMPLES >= 500:  # the generator is worth its time: both outcomes are common
        assert counts.get("refused", 0) > EXAMPLES // 10 and counts.get("ran", 0) > EXAMPLES // 50
