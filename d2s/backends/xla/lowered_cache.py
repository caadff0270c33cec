"""The lowered-program cache: a later process skips JAX's trace and lowering.

JAX's persistent compilation cache (`persistent`) spares a later process
XLA's compile, but not what comes before it: d2s's ops traced by JAX and
lowered to StableHLO, most of what is left of a second process's first
call on larger programs (W3's unrolled RNN, 290 ops: about half of it).
So each lowered program is also kept on disk, as its MLIR bytecode beside
the little d2s needs to read its results (which fetches may be undefined,
whether it uses room, its results' shapes and dtypes), under a key naming
everything the lowering depends on:

* the program itself, structurally: per block the lowering sees, every
  Variable (name, dtype, shape, and the flags rules read: weak, tensor
  array, may be undefined, dim of; a parameter named by its position, not
  by its process-wide name: see `_namer`) and every op (type, inputs, outputs,
  attributes, array attributes by their bytes). An attribute of a kind not
  known here (a Python object) makes the program uncacheable rather than
  risk two programs sharing a key;
* what the executable is asked for: feeds, fetches, written names, the
  parameters, donation, the room of tensor arrays, the arguments' shapes
  and dtypes;
* every d2s source file, by size and modification time (the rules live
  across `core`, `static` and this package: an edited d2s never reads
  another's lowering), JAX's and jaxlib's versions, the JAX options a
  lowering reads, and Python's (with its optimisation level: `python -O`
  drops d2s's own asserts);
* for each op of the program defined outside d2s (`register_op` by its
  user), the content of its kernel, shape rule, gradient rule and lowering
  rules (`cache_dir.function_digest`): an edited op or rule is lowered again.

Both processes run the same module: one jitted call of the stored module
(`stored_call`), whose arguments are the program's (parameters stay
device arrays; donated ones are the call's `donate_argnums`; the module
takes the ones JAX's lowering kept, recorded in the entry); the run is
the one the uncached path compiles (XLA inlines the call). That compiled
call is stored in the entry as well (`stored_executable`, with the
compiler environment it was built for): a later process in the same
environment loads it without lowering or compiling anything, the module's
lowering being left to whoever asks for its text; elsewhere the module is
compiled and the entry rewritten with this environment's executable.
(JAX's compilation cache, `persistent`, serves the programs left to the
uncached path.)

Programs that keep residuals for a backward, and backwards given them
(`XlaProgram`'s `keep` / `given`: a forward-only converted function whose
gradients are taken, W6a), are stored too: their structured arguments are
the module's flat ones, and their structured results are rebuilt from the
module's flat ones (`result_tree`: the structure is stored in the entry).
A given program's key also names the labels of the residuals that may be
undefined, which its lowering reads.

Left to the uncached path: sharded runs (layouts are this process's
devices), programs with host effects (`print`: JAX caches none) or
run-time error sites (each is a host closure naming the user's op, file
and line, made by the trace itself) other than kernels' checks (a
`RaisesOnNumpy` site is the same in every process: the entry records how
many), and modules calling LAPACK (see `stored_call`).

Entries are written to a temporary file and renamed into place; one that
does not parse, whose checksum (`cache_dir.digest` over its name, its
header's fields but the compiler environment, and its bytes) or recorded
key differ, or that does not fit the program, is ignored (and rewritten).
(A changed environment only compiles the module again.)  They are read and
written through `cache_dir.read_entry`/`write_entry`: the folder and each
entry are checked at every use. The folder rules are
`d2s.cache_dir`'s, as for converted source (the disk cache of `convert`,
which the backends may not import, uses the same helpers).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import sys

import numpy as np
from jax.interpreters import mlir
from jaxlib.mlir import ir

from ... import cache_dir as _cache_dir
from ...static.control_ops import sub_block_attrs
from ._jax import jax, x64
from .errors import RaisesOnNumpy
from . import persistent, result_tree, stored_call, stored_executable

__all__ = ["FORMAT", "SUBFOLDER", "program_key", "lower_and_compile"]

FORMAT = 4
SUBFOLDER = "xla-lowered"
_MAGIC = b"d2s-xla-lowered\n"
_D2S_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@functools.lru_cache(maxsize=None)
def _sources_fingerprint():
    """Hash naming every d2s source file (path, size, modification time: what
    Python itself checks before trusting a file's cached bytecode; reading
    them all would cost a second process several ms), JAX's versions and
    Python's."""
    import jaxlib
    digest = hashlib.sha256(f"jax {jax.__version__} jaxlib {jaxlib.__version__} "
                            f"{sys.implementation.name} {platform.python_version()} "
                            f"optimize {sys.flags.optimize}\n".encode())
    for folder, subfolders, files in os.walk(_D2S_DIR):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            info = os.stat(path)
            digest.update(f"{os.path.relpath(path, _D2S_DIR)} {info.st_size} "
                          f"{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _user_ops_token(ops):
    """What the key says of the ops named `ops` that were registered outside
    d2s: the content of each of their rules (d2s's own: `_sources_fingerprint`)."""
    from ...core.registry import OPS, NotLowerable
    parts = []
    for name in sorted(ops):
        opdef = OPS.get(name)
        if opdef is None:
            continue
        rules = [("kernel", opdef.kernel), ("infer", opdef.infer), ("vjp", opdef.vjp)]
        rules += sorted(opdef.lowerings.items(), key=lambda item: item[0])
        if all(_is_d2s(rule) for _, rule in rules):
            continue
        parts.append(f"op {name}: " + " ".join(
            f"{what}=" + ("-" if rule is None else f"not lowerable {rule.reason!r}"
                          if isinstance(rule, NotLowerable) else _cache_dir.function_digest(rule))
            for what, rule in rules))
    return parts


def _is_d2s(rule):
    code = getattr(rule, "__code__", None)
    if code is None:   # None, NotLowerable, a numpy ufunc: named by what d2s declares
        return not callable(rule) or isinstance(rule, np.ufunc)
    return os.path.abspath(code.co_filename).startswith(_D2S_DIR + os.sep)


class _Opaque(Exception):
    """An attribute value whose content this key cannot name."""


def _token(value):
    """A text naming `value` exactly (its type too), or `_Opaque`."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, np.dtype):
        return f"dtype:{value.str}"
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.hasobject:
            raise _Opaque
        data = np.ascontiguousarray(value).tobytes()
        return f"array:{value.dtype.str}{np.shape(value)}:{hashlib.sha256(data).hexdigest()}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}[" + ",".join(_token(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted((_token(k), _token(v)) for k, v in value.items())
        return "dict{" + ",".join(f"{k}={v}" for k, v in items) + "}"
    if isinstance(value, slice):
        return f"slice({_token(value.start)},{_token(value.stop)},{_token(value.step)})"
    if value is Ellipsis:
        return "..."
    raise _Opaque


def _var_token(v, name):
    dim_of = None if v.dim_of is None else (name(v.dim_of[0].name), v.dim_of[1])
    return (f"{name(v.name)}:{v.dtype.str}{tuple(v.shape)} sg={v.stop_gradient} "
            f"p={v.persistable} d={v.is_data} w={v.weak} a={v.is_array} "
            f"u={v.may_be_undefined} dim_of={dim_of}")


def _namer(param_names):
    """How the key writes a Variable's name. A captured Tensor's name comes
    from a process-wide counter (`linear_2.w_0` when two layers were made
    before, `linear_0.w_0` when none was), so it is written as its position
    among the parameters: the same function built after other code shares
    its entry. (Every other name is the program's own, numbered in build
    order.) The module's interface does not depend on these names: its
    arguments are the parameters by position, and the written ones come
    back in `written` order, which the key spells out in the positions.
    Tagged (`p:` / `n:`), no parameter's position reads as another name."""
    positions = {n: f"p:{i}" for i, n in enumerate(param_names)}
    return lambda n: positions.get(n) or f"n:{n}"


def program_key(xla_program, specs, given_labels=None):
    """The hex key of `xla_program`'s executable for argument `specs` (and the
    labels of the given residuals that may be undefined), or None when the
    program cannot be named (see the module docstring)."""
    program = xla_program.program
    name = _namer(xla_program.param_names)

    def names(seq):
        return [name(n) for n in seq]
    parts = [f"d2s xla lowered {FORMAT}", _sources_fingerprint(),
             f"precision {jax.config.jax_default_matmul_precision}",
             f"promotion {jax.config.jax_numpy_dtype_promotion}",
             f"feeds {names(xla_program.feed_names)}", f"fetches {names(xla_program.fetch_names)}",
             f"written {[(name(p), name(v)) for p, v in xla_program.written]}",
             f"params {names(xla_program.param_names)}",
             f"donated {xla_program.donated}", f"room {xla_program.room}",
             f"keep {names(xla_program.keep)}", f"given {names(xla_program.given)}"]
    leaves, tree = jax.tree_util.tree_flatten(specs)
    parts.append(f"args {tree} " + " ".join(f"{np.dtype(s.dtype).str}{tuple(s.shape)}"
                                           for s in leaves))
    try:
        parts.append(f"given labels {_token(given_labels)}")
        parts.extend(_user_ops_token({op.type for ops in xla_program.blocks.values()
                                      for op in ops}))
        for idx in sorted(xla_program.blocks):
            block = program.blocks[idx]
            parts.append(f"block {idx}")
            parts.extend(_var_token(v, name) for v in block.vars.values())
            for op in xla_program.blocks[idx]:
                subs = {key for key, _ in sub_block_attrs(op)}
                attrs = sorted((k, f"block {a}" if k in subs else _token(a))
                               for k, a in op.attrs.items())
                parts.append(f"{op.type}({','.join(name(v.name) for v in op.inputs)})->"
                             f"({','.join(name(v.name) for v in op.outputs)}) {attrs} "
                             f"g={op.is_grad}")
    except _Opaque:
        return None
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


# ---- entries ------------------------------------------------------------------------------
# One file per key: _MAGIC, one line of JSON (format, key, the checksum of the rest,
# d2s's metadata, the module's length, the executable's environment or null), then
# the module's serialization, then the executable's (when one was stored).

def _checksum(name, entry, blob):
    fields = {k: v for k, v in entry.items() if k not in ("checksum", "env")}
    return _cache_dir.digest(name, json.dumps(fields, sort_keys=True).encode(), b"\0", blob)


def _load(path, key):
    """(bytecode, metadata, executable bytes, their environment) stored at
    `path`, or None (absent or not usable)."""
    name = os.path.basename(path)
    data = _cache_dir.read_entry(SUBFOLDER, name)
    if data is None or not data.startswith(_MAGIC):
        return None
    header, sep, blob = data[len(_MAGIC):].partition(b"\n")
    try:
        entry = json.loads(header)
    except ValueError:
        return None
    if not (sep and isinstance(entry, dict) and entry.get("format") == FORMAT
            and entry.get("key") == key and entry.get("checksum") == _checksum(name, entry, blob)
            and isinstance(entry.get("module"), int) and 0 < entry["module"] <= len(blob)):
        return None
    n = entry["module"]
    return blob[:n], entry.get("meta"), blob[n:], entry.get("env")


def _store(path, bytecode, meta, executable=None, env=None):
    """Write the entry at `path` (best effort: a failure warns once, see cache_dir)."""
    name = os.path.basename(path)
    blob = bytecode + (executable or b"")
    entry = {"format": FORMAT, "key": name[:-len(".bin")], "meta": meta, "module": len(bytecode),
             "env": env if executable else None}
    entry = json.loads(json.dumps(entry))   # summed as its reader will see it
    entry["checksum"] = _checksum(name, entry, blob)
    _cache_dir.write_entry(SUBFOLDER, name, _MAGIC + json.dumps(entry).encode() + b"\n" + blob)


def _read_meta(meta, n_fetches, keep, n_args):
    """(layout, uses_room, result avals, kept labels, an example of the
    results' structure, the positions of the arguments the module takes,
    the number of its error sites: kernels' checks)
    from stored metadata, or None when it does not read as `_meta` wrote it
    for `n_fetches` fetches, the kept names `keep` and `n_args` arguments."""
    try:
        layout = [(int(a), lab) for a, lab in meta["layout"]]  # 1 + an array's axis
        uses_room = meta["uses_room"]
        avals = [jax.core.ShapedArray(tuple(int(d) for d in shape), np.dtype(dtype))
                 for shape, dtype in meta["results"]]
        kept_labels = meta["kept_labels"]
        results = result_tree.example(meta["results_tree"])
        taken = [int(i) for i in meta["taken"]]
        n_sites = meta["sites"]
    except (KeyError, TypeError, ValueError):
        return None
    if type(n_sites) is not int or n_sites < 0:
        return None
    if results is None or len(jax.tree_util.tree_leaves(results)) != len(avals):
        return None
    if not all(0 <= i < j for i, j in zip(taken, taken[1:] + [n_args])):
        return None
    if (len(layout) != n_fetches or not isinstance(uses_room, bool)
            or not all(lab is None or isinstance(lab, str) for _, lab in layout)):
        return None
    if keep:
        if not (isinstance(kept_labels, dict) and set(kept_labels) <= set(keep)
                and all(isinstance(lab, str) for lab in kept_labels.values())):
            return None
    elif kept_labels is not None:
        return None
    return layout, uses_room, avals, kept_labels, results, taken, n_sites


def _meta(traced, lowered, results_tree, taken, n_sites):
    return {"layout": [list(entry) for entry in traced["layout"]], "sites": n_sites,
            "uses_room": traced["uses_room"], "kept_labels": traced["kept_labels"],
            "results_tree": results_tree, "taken": taken,
            "results": [[list(a.shape), np.dtype(a.dtype).str]
                        for a in jax.tree_util.tree_leaves(lowered.out_info)]}


def _storable(lowered, specs):
    """(the lowered module as bytecode, the positions of the arguments its main
    takes), or None when it cannot be called as stored: arguments JAX's
    lowering does not account for (see `_taken`), a main that does not take
    those arguments' types in order, or one calling LAPACK."""
    leaves = jax.tree_util.tree_leaves(specs)
    taken = _taken(lowered, len(leaves))
    if taken is None:
        return None
    module = lowered.compiler_ir("stablehlo")
    main = ir.SymbolTable(module.operation)["main"]
    with module.context, ir.Location.unknown():
        want = [str(ir.RankedTensorType.get(leaves[i].shape,
                                            mlir.dtype_to_ir_type(np.dtype(leaves[i].dtype))))
                for i in taken]
    if [str(t) for t in main.type.inputs] != want:
        return None
    bytecode = mlir.module_to_bytecode(module)
    return None if b"lapack" in bytecode else (bytecode, taken)


def _taken(lowered, n_args):
    """The positions of the `n_args` arguments `lowered`'s main takes: JAX
    drops those the program never reads (a backward reads only some of its
    forward's residuals). None where JAX does not say (its lowering's record
    is not public; other versions: then every argument must be taken) or
    where constants became arguments too."""
    try:
        record = lowered._lowering.compile_args
        taken = sorted(record["kept_var_idx"])
        if len(record["all_args_info"].in_avals) != n_args:  # constants hoisted as arguments
            return None
    except (AttributeError, KeyError, TypeError):
        return list(range(n_args))
    return taken if all(0 <= i < n_args for i in taken) else None


# ---- compiling ------------------------------------------------------------------------------

def lower_and_compile(xla_program, fn, specs, traced, n_feeds, given, sites):
    """(jax Lowered, Compiled, positions of donated parameters) of `fn` (the
    program's traced function, which fills `traced` and `sites`, its
    `ErrorSites`) for `specs` (and the `Residuals` a given program reads),
    through the lowered-program cache; None when the cache does not serve
    this program (off, or not nameable): the caller lowers it."""
    folder = _cache_dir.subfolder(SUBFOLDER)
    if folder is None:  # caching off: not even a key to compute
        return None
    key = program_key(xla_program, specs, None if given is None else given.labels)
    if key is None:
        return None
    path = os.path.join(folder, key + ".bin")
    env = stored_executable.environment()
    hit = _load(path, key)
    n_args = len(jax.tree_util.tree_leaves(specs))
    read = None if hit is None else _read_meta(hit[1], len(xla_program.fetch_names),
                                               xla_program.keep, n_args)
    if read is not None:
        (bytecode, meta, executable, stored_env) = hit
        layout, uses_room, avals, kept_labels, results, taken, n_sites = read
        for _ in range(n_sites):  # (kernels' checks: see `errors.RaisesOnNumpy`)
            sites.add(RaisesOnNumpy)
        traced.update(effects=False, has_sites=bool(n_sites), sites_on_numpy=True,
                      uses_room=uses_room, layout=layout,
                      kept_labels=kept_labels, args=jax.tree_util.tree_leaves(specs))
        donates = _donated(xla_program, traced)
        compiled = None
        if executable and stored_env == env:
            compiled = stored_executable.load(executable, specs, results)
        jitted = _stored_call(bytecode, taken, avals, donates, n_feeds, results)
        if compiled is not None:
            return _Deferred(lambda: jitted.lower(*specs)), compiled, donates
    else:
        # the uncached path's own lowering (d2s's errors raise here, as uncached)
        lowered, donates = xla_program._lower(fn, specs, traced, None, n_feeds)
        if traced["effects"] or not traced["sites_on_numpy"]:
            return lowered, persistent.compile(lowered, cacheable=not traced["effects"]), donates
        storable = _storable(lowered, specs)
        tree = result_tree.describe(lowered.out_tree)
        if storable is None or tree is None:
            return lowered, persistent.compile(lowered), donates
        bytecode, taken = storable
        meta = _meta(traced, lowered, tree, taken, len(sites))
        avals = [jax.core.ShapedArray(tuple(s), np.dtype(d)) for s, d in meta["results"]]
        donates = _donated(xla_program, traced)
        results = result_tree.example(tree)
        jitted = _stored_call(bytecode, taken, avals, donates, n_feeds, results)
    lowered = jitted.lower(*specs)
    # To be stored, an executable is compiled here, not loaded from JAX's
    # compilation cache: one JAX loaded from it serializes without its kernels
    # (jaxlib 0.10 on CPU: the process loading it fails with "Function
    # dot_general.0_kernel not found"). JAX may still serve this compile from
    # its cache (once a process used the cache, JAX reads it for every compile):
    # such an executable is not stored. An entry stored without one (JAX could
    # not serialize it, or loaded it) is compiled through JAX's cache instead.
    storing = read is None or bool(executable)
    with persistent.watching_cache_hits() as loaded:
        compiled = persistent.compile(lowered, cacheable=not storing)
    if storing:  # stored (or rewritten for this environment) once compiled: complete
        executable = (None if loaded else
                      stored_executable.serialize(compiled, specs, results))
        if read is None or executable is not None:
            _store(path, bytecode, meta, executable, env)
    return lowered, compiled, donates


def _stored_call(bytecode, taken, avals, donates, n_feeds, results):
    """The jitted call of the stored module that both processes compile: its
    arguments as the program's function takes them (a given program's
    residuals: one structure; the module reads those at `taken`), its
    results structured as `results`, as that function returns them."""
    module = stored_call.StoredModule(bytecode, avals)
    tree = jax.tree_util.tree_structure(results)

    def call(*args):
        leaves = jax.tree_util.tree_leaves(args)
        flat = stored_call.call(module, *[leaves[i] for i in taken])
        return jax.tree_util.tree_unflatten(tree, flat)
    return jax.jit(call, donate_argnums=_positions(donates, n_feeds))


class _Deferred:
    """The jax Lowered of an executable loaded from the cache, lowered only
    when something reads it (its StableHLO text is for viewing)."""

    def __init__(self, lower):
        self._lower = lower
        self._lowered = None

    def __getattr__(self, name):
        if self._lowered is None:
            with x64():
                self._lowered = self._lower()
        return getattr(self._lowered, name)


def _donated(xla_program, traced):
    """As the uncached path (`XlaProgram.donated_for`): a program that may have
    to run again (more room) or may raise after its run keeps its inputs."""
    return xla_program.donated_for(traced)


def _positions(donates, n_feeds):
    return tuple(n_feeds + i for i in donates)
