"""Snapshots of what tracing, passes and codegen produce, to prove a speed-up changed nothing.

`collect()` runs the conversion table (tests/jit/test_conversion_table.py,
tensor inputs, gradients where the entry asks), the generated functions of
benchmarks/first_call.py and the benchmark workloads (benchmarks/workloads.py),
and records, in the order they are made, the printed Program of every trace
(`str(program)`) and the generated source of every compiled function
(forward, forward-for-gradient, backward). tests/jit/test_program_snapshots.py
compares that with the file saved next to this module.

When a change is *meant* to change programs or generated code, look at the
diff and save the new snapshots:

    PYTHONPATH=. python tests/jit/program_snapshots.py --update
"""
import contextlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SNAPSHOT_FILE = os.path.join(HERE, "program_snapshots.txt")
FIRST_CALL_BLOCKS = (1, 5)

# Scratch names of generated code come from a process-wide counter: the
# number depends on what compiled before, never on the program itself.
_SCRATCH = re.compile(r"\b_(branch|saved|carried|acc|step)\d+\b")
# Labels quote lines of the test file: adding a table entry moves them.
_LINES = re.compile(r"\b(lines?) \d+(?:, \d+)*")


def normalized(text):
    return _LINES.sub(r"\1 #", _SCRATCH.sub(lambda m: f"_{m.group(1)}#", text))


@contextlib.contextmanager
def recording(into):
    """Append to `into` each traced Program's text and each compiled source."""
    from d2s.jit.concrete_program import ConcreteProgram
    from d2s.backends.numpy import codegen

    trace, init = ConcreteProgram.__dict__["trace"], codegen.CompiledFunction.__init__

    def traced(cls, *args, **kwargs):
        concrete = trace.__func__(cls, *args, **kwargs)
        into.append(("program", normalized(str(concrete.main_program))))
        return concrete

    def compiled(self, view, name="program"):
        init(self, view, name)
        into.append((f"compiled {name}", normalized(self.source.rstrip("\n"))))

    ConcreteProgram.trace = classmethod(traced)
    codegen.CompiledFunction.__init__ = compiled
    try:
        yield into
    finally:
        ConcreteProgram.trace = trace
        codegen.CompiledFunction.__init__ = init


def _table_cases(out):
    sys.path.insert(0, HERE)
    try:
        import test_conversion_table as table
    finally:
        sys.path.remove(HERE)
    from d2s.jit import to_static
    for entry in table.CASES:
        if not entry.tensors or entry.raises is not None or "tensor" in entry.xfail:
            continue
        texts = []
        with recording(texts):
            sf = to_static(entry.fn, input_spec=entry.spec)
            for args in entry.tensors:
                sf(*table._tensorize(args))
                if entry.grad and "grad" not in entry.xfail:
                    table._loss_and_inputs(sf, args)
        out[f"table/{entry.fn.__name__}"] = texts


def _benchmark_module(name):
    """A module of benchmarks/ (not a package), imported by name."""
    import importlib
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _first_call_functions(out):
    import importlib.util
    import tempfile

    import numpy as np

    import d2s
    first_call = _benchmark_module("first_call")
    with tempfile.TemporaryDirectory() as tmp:
        for blocks in FIRST_CALL_BLOCKS:
            path = os.path.join(tmp, f"generated_{blocks}.py")
            with open(path, "w") as f:
                f.write(first_call.generated_source(blocks))
            spec = importlib.util.spec_from_file_location(f"d2s_snapshot_gen_{blocks}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            texts = []
            with recording(texts):
                x = d2s.to_tensor(np.linspace(-1.0, 1.0, 4).astype("float32"))
                d2s.jit.to_static(module.generated)(x)
            out[f"first_call/{blocks}"] = texts


def _workloads(out):
    import numpy as np

    import d2s
    workloads = _benchmark_module("workloads")
    for key, build in workloads.WORKLOADS.items():
        w = build(np.random.default_rng(0))
        texts = []
        with recording(texts):
            call = w.fresh_call()
            if w.no_grad:
                with d2s.no_grad():
                    call()
            else:
                call()
        w.reset()
        out[f"workload/{key}"] = texts


def collect():
    """{case: [(kind, text)]} for every case, in a fixed order."""
    out = {}
    _table_cases(out)
    _first_call_functions(out)
    _workloads(out)
    return out


def dump(snapshots, f):
    """One text file, diffable line by line: `=== case`, then `--- kind` + text."""
    for case, texts in snapshots.items():
        f.write(f"=== {case}\n")
        for kind, text in texts:
            f.write(f"--- {kind}\n{text}\n")


def load(f):
    snapshots, texts, kind, lines = {}, None, None, []

    def close():
        if kind is not None:
            texts.append((kind, "\n".join(lines)))

    for line in f.read().splitlines():
        if line.startswith("=== "):
            close()
            texts, kind = snapshots.setdefault(line[4:], []), None
        elif line.startswith("--- "):
            close()
            kind, lines = line[4:], []
        else:
            lines.append(line)
    close()
    return snapshots


def main(argv):
    """`--update`: rewrite the saved snapshots; `--write PATH`: write them to PATH."""
    if len(argv) == 1 and argv[0] == "--update":
        path = SNAPSHOT_FILE
    elif len(argv) == 2 and argv[0] == "--write":
        path = argv[1]
    else:
        print(__doc__)
        return 2
    snapshots = collect()
    with open(path, "w") as f:
        dump(snapshots, f)
    print(f"{len(snapshots)} cases, {sum(map(len, snapshots.values()))} texts -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
