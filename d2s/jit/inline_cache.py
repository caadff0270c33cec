"""A StaticFunction's monomorphic inline cache: its last fast-path hit, as code.

A cached call of a converted function otherwise builds a key of every
argument (`static_function._fast_key`), hashes it, looks it up, and then
walks through the cache entry, the program and the state lock in general
code. Most call sites call one function with arguments of one signature
over and over: the inline cache remembers that signature as straight-line
checks generated for the call's arity and argument kinds (a Tensor's shape,
dtype and stop_gradient; a Python scalar's type and value) followed by the
program's per-call function under the state lock's optimistic read, all in
one frame. Any difference from what it was made for returns `MISS` and the
call takes the full path (which makes a new inline cache for its hit). Its
cache entry's recency is stamped when the cache next builds, the only time
recency is read (StaticFunction._build), not on every call.

For a plain or guarded forward program the program's per-call function
(`ConcreteProgram._fast_call`) is written inline too (`inline_parts`), and
on numpy the compiled forward's own function is called from it
(`direct_fn`), on xla the executable's C++ entry (`exe_call`): the frames a
cached call passes through are the StaticFunction's `__call__`, this one
and the generated program (numpy) or none (xla).

What it checks, besides the arguments, is what the full path reads on every
call: the to_static switch and eager mode, the Layer modes version (train /
eval, hooks, amp), the backend, the watched globals, and the bound Layer's
`training` flag. A StaticFunction drops its inline cache whenever its
program cache changes (a build, an eviction, a global rebinding, a pass).

Code is generated once per call shape (arity, kinds, options) and kept; an
inline cache is a closure of that code over one hit's constants.
"""
from __future__ import annotations

import inspect
import operator
import os
import threading

import numpy as np

from ..core.tensor import DEVICE_META, DeviceTensor, Tensor

_FILENAME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<inline cache>")
MISS = object()  # returned on any difference: take the full path

_INLINE_NAMES = 8  # watched globals checked inline (more: GlobalWatch.changed is called)
_TEMPLATES = {}  # call shape -> factory (the generated code, compiled once)
_TEMPLATES_LIMIT = 1024
_LOCK = threading.Lock()


def make(sf, entry, fast, args, positions, backend, step, context):
    """The inline cache of `sf`'s call `args` that hit `entry` (its program's
    per-call function `fast` on `backend`); `positions`: the tensor
    arguments' (None: all); `step`: a writer (the state lock's write);
    `context`: what the checks read (StaticFunction's `_INLINE_CONTEXT`)."""
    kinds = tuple("T" if type(a) in (Tensor, DeviceTensor) else "S" for a in args)
    unstop = tuple(getattr(entry.program, "_d2s_unstop", None) or ())
    bound = sf._bound_self
    bound_check = bound is not None and not _layer_flag(bound)
    parts = None
    if not step and not unstop and all(a.stop_gradient is True for a in args
                                       if type(a) in (Tensor, DeviceTensor)):
        parts = entry.program.inline_parts(backend)
    direct = None
    if parts is not None:
        structure = parts["structure"]
        direct = ("arrays" if parts["arrays"] is not None else "raw" if parts["raw"]
                  else "value", bool(parts["floating"]),
                  "single" if structure.single else "tuple" if structure.flat_tuple else "tree",
                  parts["holds"] is not None,
                  # (the generated function called itself, see _direct_lines)
                  hasattr(parts["exe"], "direct_fn") and not parts["arrays"]
                  and not parts["raw"], bool(parts["captured"].tensors),
                  # (the backend's executable entry called here: see _direct_lines)
                  None if parts.get("call") is None or parts["arrays"] is None else
                  "params" if parts.get("param_values") is not None else "bare")
    watch = context["watch"]
    names = None if watch is None else tuple(name for name, _ in watch.watched)
    if names is not None and (len(names) > _INLINE_NAMES or watch.contents or watch.cells):
        names = "call"  # (GlobalWatch.changed: arrays' contents, closure cells too)
    # (per tensor argument, the device type whose shape and dtype are read from
    # its `meta` attribute: the one registered, else the argument's own type)
    device = next(iter(DEVICE_META.items())) if len(DEVICE_META) == 1 else None
    devices = [device or (type(a._raw), DEVICE_META.get(type(a._raw)))
               if k == "T" else (None, None) for a, k in zip(args, kinds)]
    metas = tuple(meta for _, meta in devices)
    shape = (kinds, None if positions is None else tuple(positions), unstop,
             sf._backend is None, names, bound_check, step, direct, metas)
    factory = _TEMPLATES.get(shape)
    if factory is None:
        with _LOCK:
            factory = _TEMPLATES.get(shape) or _compile(shape)
            if len(_TEMPLATES) >= _TEMPLATES_LIMIT:
                _TEMPLATES.clear()  # (call shapes of programs long gone)
            _TEMPLATES[shape] = factory
    consts = []
    for a, (cls, meta) in zip(args, devices):
        if type(a) in (Tensor, DeviceTensor):
            v = a._raw
            consts += (v.shape, v.dtype, a.stop_gradient)
            if meta is not None:
                consts.append(cls)
        else:
            consts += (type(a), a)
    if names is not None and names != "call":
        consts += [value for _, value in watch.watched]
    return factory(sf, entry, fast, backend, context, bound, parts, *consts)


def _layer_flag(bound):
    """Whether `bound`'s `training` is a Layer's flag: every set bumps the
    Layer modes version (nn.Layer.training's setter), which the inline cache
    checks already."""
    prop = inspect.getattr_static(type(bound), "training", None)
    return (isinstance(prop, property) and getattr(prop.fget, "__qualname__", "")
            == "Layer.training" and "_training" in getattr(bound, "__dict__", {}))


def _compile(shape):
    kinds, positions, unstop, global_backend, watched, bound_check, step, direct, metas = shape
    n = len(kinds)
    params, checks = [], []
    for i, k in enumerate(kinds):
        a = f"a{i}"
        if k == "T":
            params += [f"S{i}", f"D{i}", f"G{i}"]
            checks += [f"    t = type({a})",
                       "    if t is not TENSOR and t is not DTENSOR:",
                       "        return MISS",
                       f"    r{i} = {a}._raw"]
            meta = metas[i]
            if meta is None:
                checks += [f"    m = r{i}"]
            else:  # (a device array: its shape and dtype read where they cost less)
                checks += [f"    m = r{i}.{meta} if type(r{i}) is DEV{i} else r{i}"]
                params += [f"DEV{i}"]
            checks += [f"    if m.shape != S{i} or {a}.stop_gradient is not G{i}:",
                       "        return MISS",
                       "    v = m.dtype",
                       "    m = None",  # (see `_clear`'s callers: references counted)
                       f"    if v is not D{i} and v != D{i}:",
                       "        return MISS"]
        else:
            params += [f"T{i}", f"V{i}"]
            checks += [f"    if type({a}) is not T{i} or {a} != V{i}:",
                       "        return MISS"]
    if watched and watched != "call":
        params += [f"W{j}" for j in range(len(watched))]
    tensors = "args" if positions is None else \
        "(" + "".join(f"a{i}, " for i in positions) + ")"
    lines = ["def factory(SF, ENTRY, FAST, BACKEND, C, BOUND, P, " + ", ".join(params) + "):",
             "  SWITCH, ALL_EAGER, TLS, GLOBAL = C['switch'], C['all_eager'], C['tls'], C['global']",
             "  MODES, MV, BSTATE, WATCH = C['modes'], C['modes_version'], C['backends'], C['watch']",
             "  EPOCH, LOCKED, WRITE = C['epoch'], C['locked'], C['write']",
             "  TR = getattr(BOUND, 'training', None)",
             "  if P is not None:",
             "    CAP, PLAIN, ARRAYS, NEW, STRUCT = P['captured'], P['plain'], P['arrays'], "
             "P['new'], P['structure']",
             "    SLOW, VERSION, PLACED, FLOATING = P['slow'], P['version'], P['placed'], "
             "P['floating']",
             "    HOLDS, EXE, CALL, PV = P['holds'], P['exe'], P.get('call'), "
             "P.get('param_values')",
             "  TENSOR, DTENSOR, MISS, EAGERLY = C['tensor'], C['dtensor'], C['miss'], C['eagerly']",
             "  def inline(args):",
             "    try:",
             "      " + "".join(f"a{i}, " for i in range(n)) + "= args",
             "    except ValueError:",
             "      return MISS",
             "    if MODES[0] != MV or not SWITCH['enabled']:",
             "        return MISS",
             "    if not ALL_EAGER[0] and (TLS.builders or GLOBAL['static']):",
             "        return MISS"]
    if global_backend:
        lines += ["    if (BSTATE['default'] or BSTATE['env']) != BACKEND:",
                  "        return MISS"]
    if watched == "call":
        lines += ["    if WATCH.changed():",
                  "        return MISS"]
    elif watched:  # (`GlobalWatch.changed` inline: its names are constants here)
        lines += ["    get = WATCH.namespace.get"]
        lines += [f"    if get({name!r}, MISS) is not W{j}:\n        return MISS"
                  for j, name in enumerate(watched)]
    if bound_check:
        lines += ["    if getattr(BOUND, 'training', None) != TR:",
                  "        return MISS"]
    lines += checks
    raws = [f"r{i}" for i, k in enumerate(kinds) if k == "T"]
    if raws and not (direct and direct[0] == "arrays"):
        # (the arrays' references dropped: a reader moving an array only its
        # Tensor holds counts them, jit.resident_inputs)
        lines += ["    " + _clear(raws)]
    lines += [f"    {tensors}[{j}].stop_gradient = False" for j in unstop]
    lines += [f"    tensors = {tensors}",
              "    try:"]
    if step:
        lines += ["      return WRITE(FAST, tensors)"]
    else:
        # the state lock's optimistic read (core.state_lock.StateLock.read), inline
        lines += ["      epoch = EPOCH[0]",
                  "      if not epoch & 1:",
                  "        try:",
                  ] + (_direct_lines(direct, positions, len(kinds)) if direct else
                       ["          out = FAST(tensors)"]) + [
                  "        except Exception:",
                  "          if EPOCH[0] == epoch:",
                  "            raise",
                  "        else:",
                  "          if EPOCH[0] == epoch:",
                  "            return out",
                  "      return LOCKED(FAST, tensors)"]
    lines += ["    except EAGERLY:",
              "      return SF.dygraph_function(*args)",
              "  inline.entry = ENTRY",
              "  return inline"]
    source = "\n".join(lines)
    namespace = {"_wants_grad": _wants_grad, "NDARRAY": np.ndarray,
                 "VALUE": operator.attrgetter("_value")}
    # (named as a file inside d2s: warnings and tracebacks skip its frames as d2s's)
    exec(compile(source, _FILENAME, "exec"), namespace)
    return namespace["factory"]



def _direct_lines(direct, positions, n):
    """`ConcreteProgram._fast_call`'s per-call function, inline (the program
    gave its parts: `inline_parts`): the inputs are known to need no
    gradient, so only the captured tensors are looked at."""
    feeds, floating, result, guarded, own_fn, has_params, call = direct
    index = list(range(n) if positions is None else positions)
    names = [f"a{i}" for i in index]
    reader = []
    if feeds == "arrays":  # (the backend's reader only while an input is a host array)
        raws = ", ".join(f"r{i}" for i in index)
        host = " or ".join(f"type(r{i}) is NDARRAY" for i in index) or "False"
        # (its references to the host arrays dropped first: the reader moves
        # an array only its Tensor holds, counting references)
        reader = [f"            if {host}:",
                  "              " + _clear([f"r{i}" for i in index]),
                  "              feeds = ARRAYS(tensors)",
                  "            else:",
                  f"              feeds = [{raws}]"]
        arrays = "feeds"
        if call is not None:
            # `PLAIN(feeds, params)` inline: the executable's own entry called
            # here, no frame and no list between (`forward.exe_call`, xla)
            rest = ", *PV(params)" if call == "params" else ""
            reader = [f"            if {host}:",
                      "              " + _clear([f"r{i}" for i in index]),
                      f"              outs = CALL(*ARRAYS(tensors){rest})",
                      "            else:",
                      f"              outs = CALL({raws}{rest})"]
    else:
        attr = "_raw" if feeds == "raw" else "_value"
        arrays = "[" + ", ".join(f"{a}.{attr}" for a in names) + "]"
    wrap = {"single": "NEW(outs[0])", "tuple": "tuple(map(NEW, outs))",
            "tree": "STRUCT.restructure(list(map(NEW, outs)))"}[result]
    grad = "TLS.grad_enabled and _wants_grad(FLOATING, params)" if floating else "False"
    lines = ["          params = CAP.tensors",
             "          if PLACED or CAP.paths and VERSION[0] != CAP.version or " + grad + ":",
             ] + (["            " + _clear([f"r{i}" for i in index])] if reader else []) + [
             "            out = SLOW(BACKEND, tensors)",
             "          else:"] + reader + [
              ] + (_own_fn_lines(arrays, has_params, result) if own_fn else
                   [] if call is not None and feeds == "arrays" else [
             f"            outs = PLAIN({arrays}, params)"]) + [
             f"            out = {wrap}"]
    if guarded:  # (GuardedProgram._fast_call: its conditions first)
        lines = ["          if not HOLDS():",
                 "            out = FAST(tensors)",
                 "          else:"] + ["  " + line for line in lines]
    return lines


def _wants_grad(floating, params):
    """Whether a captured floating tensor wants its gradient (then the call is taped)."""
    for i in floating:
        if not params[i].stop_gradient:
            return True
    return False


def _clear(names):
    """A statement binding each of `names` to None."""
    return " = ".join(names) + " = None"


def _own_fn_lines(arrays, has_params, result):
    """`plain_call` (numpy's `ForwardExecutable._plain`) inline, once the
    backend has its generated function (`direct_fn`); before that, and on
    the interpreter, `plain_call` itself."""
    args = arrays[1:-1] + (", *map(VALUE, params)" if has_params else "")
    check = (["              if type(outs[0]) is not NDARRAY:",
              "                outs = EXE.as_arrays(outs)"] if result == "single" else
             ["              for o in outs:",
              "                if type(o) is not NDARRAY:",
              "                  outs = EXE.as_arrays(outs)",
              "                  break"])
    return ["            fn = EXE.direct_fn",
            "            if fn is None:",
            f"              outs = PLAIN({arrays}, params)",
            "            else:",
            "              try:",
            f"                outs = fn({args})",
            "              except Exception as e:",
            "                raise EXE.direct_located(e) from None"] + check
