"""`StaticFunction`: a function (or Layer method) run through cached static programs."""
from __future__ import annotations

import copy
import functools
import threading
import types
import weakref

from ..convert import api as convert_api
from ..convert import origin as convert_origin
from ..convert import tracebacks as convert_tracebacks
from ..convert.errors import D2SConversionError
from ..core import state
from ..core import amp_state
from ..core.state import all_eager, forward_hooks_version, layer_modes_version
from ..core.state_lock import STATE as _STATE
from ..core.tensor import DeviceTensor, Tensor
from .. import backends as backend_state
from ..backends import get_backend
from ..static.origins import warn_in_user_code
from . import buckets as shape_buckets
from . import global_watch
from . import inline_cache
from .concrete_program import ConcreteProgram
from .concrete_program import EffectProgram, GuardedProgram
from .outliving import CALLS
from .train_step import RunEagerly, StepProgram
from .program_cache import CLOCK, ProgramCache, cache_limit
from .signature import Signature, make_signature, varying_arguments
from .switch import SWITCH, log_code, to_static_enabled

_EPOCH = _STATE.epoch  # (read inline by the per-call path: d2s.core.state_lock)
# Programs that write state after their run (a training step, replayed effects):
# they take the state lock as writers, and are never run twice for one call.
_WRITERS = (StepProgram, EffectProgram)

# A function that has built more programs than this (or that evicts one) gets
# one warning naming the argument that keeps changing.
WARN_AFTER_PROGRAMS = 10


class StaticFunction:
    """Callable wrapper produced by `to_static`.

    In dynamic mode a call computes the input signature, builds the program
    for it once (converting the function's source the first time), and runs
    it on the eager inputs. Called while another program is being built, it
    traces inline into that program. With `enable_to_static(False)` it calls
    the original function.
    """

    def __init__(self, function, input_spec=None, full_graph=True, bound_self=None,
                 check_finite=False, backend=None, compile=None):
        self._function = function
        self._backend = backend  # None: the global default, read at each call
        self._compile = compile  # None / "sync" / "async": how xla compiles (see to_static)
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._full_graph = full_graph
        self._check_finite = bool(check_finite)
        self._bound_self = bound_self
        self._cache = ProgramCache()
        self._warned = False  # about rebuilding (once per function)
        self._lock = threading.RLock()
        self._converted = None
        self._fallback_reason = None
        self._bound = weakref.WeakKeyDictionary() if bound_self is None else None
        # Layers (weak references) besides the bound one whose `training` flag
        # a trace of this function read (a closed-over model, a Layer argument,
        # sublayers): their flags are part of every program's key, so that
        # `model.eval()` picks (or builds) the program for eval mode, as the
        # bound Layer's own flag always did. `_mode_memo`: (modes version,
        # their flags), read again only after some Layer's flag was set.
        self._mode_layers = []
        self._mode_memo = (-1, None)
        self._globals = None  # global_watch.GlobalWatch after a trace (None: nothing to watch)
        self._program_passes = ()  # see add_program_pass
        # InputSpecs with `buckets` (jit.buckets): position -> spec (their
        # programs are keyed by the mask input too); `_buckets_off` once a
        # program proved not pad-safe.
        self._bucket_specs = shape_buckets.bucketed_specs(self._input_spec)
        self._bucket_fast = {}  # see _call_bucketed
        self._buckets_off = False
        # The last fast-path hit as code (jit.inline_cache), None after any
        # change to the program cache; `_inline_misses`: hits the inline cache
        # missed, past INLINE_MISSES it is no longer replaced (a call site
        # alternating signatures keeps the dictionary path).
        self._inline = None
        self._inline_misses = 0
        functools.update_wrapper(self, function)

    # ---- descriptor: `@to_static` on a method -------------------------------------
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:  # unhashable / not weak-referenceable instance
            bound = None
        if bound is None:
            bound = StaticFunction(self._function, self._input_spec, self._full_graph,
                                   bound_self=instance, check_finite=self._check_finite,
                                   backend=self._backend, compile=self._compile)
            bound._program_passes = self._program_passes
            try:
                self._bound[instance] = bound
            except TypeError:
                pass
            # Later lookups find it in the instance dict first (this is a
            # non-data descriptor): no weak-dict lookup per call. Only when this
            # StaticFunction is the class's attribute (a decorated method):
            # `to_static(layer.forward)` binds one of its own, and must not
            # change what `layer.forward` (so `layer(x)`) runs.
            name = self._function.__name__
            if isinstance(getattr(instance, "__dict__", None), dict) \
                    and name not in instance.__dict__ \
                    and _class_attribute(type(instance), name) is self:
                instance.__dict__[name] = bound
        return bound

    def __deepcopy__(self, memo):
        """A new StaticFunction of the same function and options, with no
        programs: programs capture the parameters of the layer they were
        traced with, and the copy of a layer has its own (`memo` maps the
        bound layer to its copy). The copy converts and builds on its first
        call; the converted source is shared (cached per code object)."""
        import copy
        bound = None if self._bound_self is None else copy.deepcopy(self._bound_self, memo)
        return StaticFunction(self._function, copy.deepcopy(self._input_spec, memo),
                              self._full_graph, bound_self=bound,
                              check_finite=self._check_finite, backend=self._backend,
                              compile=self._compile)

    # ---- contract attributes ------------------------------------------------------------
    @property
    def dygraph_function(self):
        if self._bound_self is not None:
            return types.MethodType(self._function, self._bound_self)
        return self._function

    @property
    def code(self):
        return str(self._get_converted()[1])   # (printed on the first read)

    @property
    def program_cache(self):
        return self._cache

    @property
    def concrete_program(self):
        """The most recently built program (PaddlePaddle's attribute)."""
        return self._cache.last_program()

    def get_concrete_program(self, *args, **kwargs):
        return self._concrete_for(args, kwargs)[0]

    def add_program_pass(self, pass_):
        """Rewrite every program this function builds from now on with
        `pass_(program)` (in place, right after tracing); programs built
        before are dropped, so the next call builds a rewritten one. Used by
        `d2s.quantization.weight_only`."""
        with self._lock:
            self._program_passes = tuple(self._program_passes) + (pass_,)
            self._cache = ProgramCache()
            self._inline = None
            self._bucket_fast = {}
            self._globals = None  # (watched again from the next trace)
        return self

    @property
    def backend(self):
        """The backend the next call runs on (the global default unless chosen)."""
        return self._backend or backend_state.get_backend()

    def lowered_text(self, *args, **kwargs):
        """What runs for these arguments on this function's backend, as text:
        the backend's (the StableHLO XLA compiles, numpy's generated Python)
        (as `.code` shows the converted source)."""
        concrete, signature = self._concrete_for(args, kwargs)
        examples = [leaf for leaf, spec in zip(signature.leaves, signature.specs)
                    if spec is not None]
        return concrete.lowered_text(examples, self.backend)

    # ---- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        try:
            inline = self._inline
            if inline is not None and not kwargs:
                out = inline(args)
                if out is not inline_cache.MISS:
                    return out
            return self._call(*args, **kwargs)
        except Exception as e:
            # Where an error leaves d2s: the user's frames only (convert.tracebacks).
            raise convert_tracebacks.for_user(e)  # D2S_FULL_TRACEBACK=1: all frames

    def _call(self, *args, **kwargs):
        if self._bucket_specs and not self._buckets_off:
            out = self._call_bucketed(args, kwargs)
            if out is not _NOT_BUCKETED:
                return out
        if not kwargs and self._fallback_reason is None and SWITCH["enabled"] and (
                all_eager[0] or not state._tls.builders and not state._global["static"]):
            # Cache-hit fast path (eager caller): a key of (type, shape, dtype,
            # stop_gradient) or (type, value) per positional argument (None,
            # never a key, for other arguments). The program's per-call
            # function on the backend is called directly once it has one.
            memo = self._mode_memo
            modes = memo[1] if memo[0] == layer_modes_version[0] else self._modes_now()
            watch = self._globals
            if watch is not None and watch.changed():  # a read global was rebound
                self._switch_globals(watch)
            hit = self._cache.fast.get(_fast_key(args, self._bound_self, modes))
            if hit is not None:
                entry, positions = hit
                entry.last_used = next(CLOCK)
                program = entry.program
                tensors = args if positions is None else [args[i] for i in positions]
                if getattr(program, "_d2s_unstop", None):
                    _unstop(program, tensors)
                backend = self._backend or get_backend()
                fast = program.fast_calls.get(backend)
                if not self._bucket_specs:
                    self._remember_inline(entry, fast, args, positions, backend, modes)
                try:
                    # (one consistent parameter state per call: d2s.core.state_lock)
                    if type(program) is StepProgram:
                        if fast is not None:
                            return _STATE.write(fast, tensors)
                        return _STATE.write(program, tensors, backend)
                    if fast is not None and type(program) is EffectProgram:
                        # (its per-call path writes its inputs back: never run twice)
                        return _STATE.write(fast, tensors)
                    if fast is None:
                        if isinstance(program, _WRITERS):  # writes state after its run
                            return _STATE.write(program, tensors, backend)
                        return _STATE.read(program, tensors, backend)
                    epoch = _EPOCH[0]  # (`_STATE.read(fast, tensors)` inline)
                    if epoch & 1:  # a step under way: after it
                        return _STATE.locked(fast, tensors)
                    try:
                        out = fast(tensors)
                    except Exception:
                        if _EPOCH[0] == epoch:
                            raise
                        return _STATE.locked(fast, tensors)
                    if _EPOCH[0] == epoch:
                        return out
                    return _STATE.locked(fast, tensors)
                except RunEagerly:
                    return self.dygraph_function(*args, **kwargs)
        if not to_static_enabled() or self._fallback_reason is not None:
            return self.dygraph_function(*args, **kwargs)
        if not state.in_dynamic_mode():
            # Inside another program's build (or static mode): trace inline.
            return self._call_converted(args, kwargs)
        watch = self._globals
        if watch is not None and watch.changed():
            self._switch_globals(watch)
        try:
            concrete, signature = self._concrete_for(args, kwargs)
        except _FallBack:
            return self.dygraph_function(*args, **kwargs)
        tensors = [leaf for leaf, spec in zip(signature.leaves, signature.specs)
                   if spec is not None]
        if getattr(concrete, "_d2s_unstop", None):
            _unstop(concrete, tensors)
        if not kwargs:
            key = _fast_key(args, self._bound_self, self._modes_now())
            positions = [i for i, a in enumerate(args) if type(a) in (Tensor, DeviceTensor)]
            if key is not None and len(positions) == len(tensors):
                # None: every argument is a tensor input, passed on as the tuple
                self._cache.remember_fast(key, signature.key,
                                          None if len(positions) == len(args) else positions)
        try:
            if isinstance(concrete, _WRITERS):
                # (writes into the arguments' containers go to this call's: outliving)
                with CALLS.running(signature.args, signature.kwargs):
                    return _STATE.write(concrete, tensors, self.backend)
            return _STATE.read(concrete, tensors, self.backend)
        except RunEagerly:
            return self.dygraph_function(*args, **kwargs)

    def _remember_inline(self, entry, fast, args, positions, backend, modes):
        """Serve the next calls like this one from an inline cache (jit.inline_cache)."""
        if self._inline is not None:
            self._inline_misses += 1
            if self._inline_misses > INLINE_MISSES:
                return
        program = entry.program
        # as the dictionary path below runs it: a writer under the state lock's write
        # (an EffectProgram's per-call path, writing its inputs back, too)
        step = isinstance(program, _WRITERS)
        if fast is None:
            fast = functools.partial(program, backend=backend)
        if self._mode_memo != (layer_modes_version[0], modes):
            return  # (the modes changed meanwhile: made by the next call)
        context = dict(_INLINE_CONTEXT, watch=self._globals,
                       modes_version=layer_modes_version[0])
        self._inline = inline_cache.make(self, entry, fast, args, positions, backend, step,
                                         context)

    # ---- shape buckets (jit.buckets) -------------------------------------------------
    def _call_bucketed(self, args, kwargs):
        """Run with the bucketed inputs padded to their bucket, the outputs
        sliced back; `_NOT_BUCKETED` when this call takes the ordinary path
        (no bucketed tensor, not converting, or the program not pad-safe).

        A flat call of Tensors and scalars is served by `_bucket_fast` after
        the first (its key: shapes, dtypes and values, as the ordinary fast
        path's), skipping the signature."""
        if not to_static_enabled() or self._fallback_reason is not None \
                or not state.in_dynamic_mode():
            return _NOT_BUCKETED
        watch = self._globals
        if watch is not None and watch.changed():  # a read global was rebound
            self._switch_globals(watch)
        key = None if kwargs else _fast_key(args, self._bound_self, self._modes_now())
        hit = self._bucket_fast.get(key) if key is not None else None
        if hit is not None:
            entry, length, bucket, mask = hit
            entry.last_used = next(CLOCK)
            concrete = entry.program
            padded, _ = shape_buckets.pad_args(self._bucket_specs, args, length, bucket, mask)
            tensors = [padded[i] for i in entry.positions] + [mask]
            result = _STATE.read(concrete, tensors, self.backend)
            return shape_buckets.slice_outputs(result, concrete._d2s_bucket_axes, length)
        planned = shape_buckets.plan(self._bucket_specs, args)
        if planned is None:
            return _NOT_BUCKETED
        length, bucket = planned
        padded, mask = shape_buckets.pad_args(self._bucket_specs, args, length, bucket)
        kw = dict(kwargs)
        kw[shape_buckets.MASK_NAME] = mask
        fn = self._function
        if self._bound_self is not None:
            fn = _without_first_param(fn)
        signature = make_signature(fn, padded, kw, self._input_spec, self._training_flag())
        concrete = self._cache.get(signature.key)
        if concrete is None:
            with self._lock:
                concrete = self._cache.get(signature.key)
                if concrete is None:
                    concrete = self._build_bucketed(signature, padded)
                    if concrete is None:
                        return _NOT_BUCKETED
                    if self._globals is None and not self._cache.builds:
                        self._globals = global_watch.watch(self._function)
                    if self._cache.add(signature, concrete):  # evicted some
                        self._bucket_fast.clear()
        tensors = [leaf for leaf, spec in zip(signature.leaves, signature.specs)
                   if spec is not None]
        positions = [i for i, a in enumerate(padded) if any(a is t for t in tensors)]
        if key is not None and len(positions) + 1 == len(tensors):
            entry = self._cache._entries.get(signature.key)
            if entry is not None:
                if len(self._bucket_fast) >= 1024:
                    self._bucket_fast.clear()
                self._bucket_fast[key] = _BucketHit(entry, positions), length, bucket, mask
        result = _STATE.read(concrete, tensors, self.backend)
        return shape_buckets.slice_outputs(result, concrete._d2s_bucket_axes, length)

    def _build_bucketed(self, signature, padded):
        """The program rewritten for padded inputs (`_d2s_bucket_axes`: output
        leaf -> padded axis), or None after warning once that the function
        is not pad-safe."""
        converted, _ = self._get_converted()
        try:
            concrete = ConcreteProgram.trace(shape_buckets.dropping_mask(converted), signature,
                                             self._bound_self, self._check_finite,
                                             self._program_passes)
        except Exception as e:
            if not self._full_graph:  # the ordinary path falls back as it says
                self._buckets_off = True
                return None
            new = convert_origin.rewrite_exception(e)
            if new is e:
                raise
            raise new from None
        why = None
        if type(concrete) is GuardedProgram:  # (conditions on values it read: jit.read_guards)
            def retrace(tensors):
                """The program for the values read now, padded likewise."""
                with self._lock:
                    again = self._build_bucketed(signature, padded)
                if again is None:
                    raise RuntimeError(f"{self._function.__qualname__}: traced again for "
                                       "the Python values it reads, the program is no longer "
                                       "pad-safe for InputSpec buckets")
                return again
            concrete._retrace = retrace
        if type(concrete) not in (ConcreteProgram, GuardedProgram):
            why = "it writes state (a training step or side effects): buckets pad inference only"
        else:
            input_axes = {}
            leaves = [leaf for leaf, spec in zip(signature.leaves, signature.specs)
                      if spec is not None]
            for pos, spec in self._bucket_specs.items():
                for var, leaf in zip(concrete.inputs, leaves):
                    if pos < len(padded) and leaf is padded[pos]:
                        input_axes[var.name] = spec.bucket_axis
            try:
                out_axes = shape_buckets.make_pad_safe(concrete, input_axes)
            except shape_buckets.NotPadSafe as e:
                why = str(e)
        if why is not None:
            self._buckets_off = True
            warn_in_user_code(f"{self._function.__qualname__}: InputSpec buckets are not used, "
                              f"one program per length is built instead: {why}", UserWarning)
            return None
        positions = concrete.output_structure.positions
        concrete._d2s_bucket_axes = {positions[i]: axis for i, axis in out_axes.items()}
        return concrete

    def _switch_globals(self, watch):
        """The programs for the values of the read globals now (jit.global_watch)."""
        with self._lock:
            if watch.changed():
                self._cache = watch.switch(self._cache, ProgramCache)
                self._inline = None
                self._bucket_fast.clear()  # (its entries are the old cache's)

    def _call_converted(self, args, kwargs):
        try:
            fn = self._get_converted()[0]
        except _FallBack:
            return self.dygraph_function(*args, **kwargs)
        if self._bound_self is not None:
            args = (self._bound_self,) + tuple(args)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            new = convert_origin.rewrite_exception(e)
            if new is e:
                raise
            raise new from None

    def _training_flag(self):
        """The `training` flags in the signature: the bound Layer's, and with
        it those of the other Layers a trace read (see `_mode_layers`)."""
        flag = getattr(self._bound_self, "training", None)
        modes = self._modes_now()
        return flag if modes is None else (flag, modes)

    def _modes_now(self):
        """The current flags of `_mode_layers` (None while there are none)."""
        version = layer_modes_version[0]
        memo = self._mode_memo
        if memo[0] == version:
            return memo[1]
        modes = None
        if self._mode_layers:
            modes = tuple(_flag_of(ref()) for ref in self._mode_layers)
        modes = _with_call_context(modes)
        self._mode_memo = (version, modes)
        return modes

    def _keyed_by_modes(self, concrete, signature):
        """`signature` keyed by the flags of the Layers `concrete`'s trace read
        (those not yet in `_mode_layers` are added), as that trace read them."""
        read = getattr(concrete, "modes_read", None)
        if not read or isinstance(concrete, StepProgram):  # (a step guards its own)
            return signature
        known = {id(ref()) for ref in self._mode_layers}
        for layer, _ in read:
            if layer is not self._bound_self and id(layer) not in known:
                try:
                    self._mode_layers.append(weakref.ref(layer))
                except TypeError:  # not weak-referenceable: cannot be watched
                    continue
                known.add(id(layer))
        self._mode_memo = (-1, None)
        as_read = {id(layer): flag for layer, flag in read}
        modes = _with_call_context(
            tuple(as_read.get(id(ref()), _flag_of(ref())) for ref in self._mode_layers))
        bound = signature.key[2][0] if isinstance(signature.key[2], tuple) else signature.key[2]
        return Signature((signature.key[0], signature.key[1], (bound, modes)), signature.leaves,
                         signature.tree, signature.specs, signature.names, signature.args,
                         signature.kwargs, signature.tops)

    def _concrete_for(self, args, kwargs):
        fn = self._function
        if self._bound_self is not None:
            fn = _without_first_param(fn)
        signature = make_signature(fn, args, kwargs, self._input_spec, self._training_flag())
        concrete = self._cache.get(signature.key)
        if concrete is not None:
            return concrete, signature
        with self._lock:
            concrete = self._cache.get(signature.key)
            if concrete is None:
                concrete, signature = self._build(signature)
        return concrete, signature

    def _build(self, signature):
        """(the program traced for `signature`, the signature it is cached under)."""
        converted, _ = self._get_converted()
        try:
            concrete = self._trace(converted, signature)
        except _FallBack:
            raise
        except Exception as e:
            if not self._full_graph:
                self._fall_back(e)
            new = convert_origin.rewrite_exception(e)
            if new is e:
                raise
            raise new from None
        signature = self._keyed_by_modes(concrete, signature)
        if self._globals is None and not self._cache.builds:
            self._globals = global_watch.watch(self._function)  # as this trace read them
        inline = self._inline
        if inline is not None:  # it served the calls since its entry was stamped
            inline.entry.last_used = next(CLOCK)
        evicted = self._cache.add(signature, concrete)
        self._inline = None  # (it may serve an evicted program)
        if not self._warned and (evicted or self._cache.builds > WARN_AFTER_PROGRAMS):
            self._warned = True
            built = [s for s in evicted + self._cache.signatures() if s is not signature]
            warn_in_user_code(self._rebuild_warning(built + [signature]), UserWarning)
        return concrete, signature

    def _trace(self, converted, signature):
        concrete = self._tiering(ConcreteProgram.trace(converted, signature, self._bound_self,
                                                       self._check_finite,
                                                       self._program_passes))
        _note_unstopped_inputs(concrete)
        if isinstance(concrete, (StepProgram, GuardedProgram)):
            def retrace(tensors):
                """Another program of this signature, for the eager state of `tensors`."""
                it = iter(tensors)
                leaves = [leaf if spec is None else next(it)
                          for leaf, spec in zip(signature.leaves, signature.specs)]
                again = Signature(signature.key, leaves, signature.tree, signature.specs,
                                  signature.names, signature.args, signature.kwargs,
                                  signature.tops)
                with self._lock:
                    try:
                        return self._tiering(ConcreteProgram.trace(
                            converted, again, self._bound_self, self._check_finite,
                            self._program_passes))
                    except Exception as e:
                        new = convert_origin.rewrite_exception(e)
                        if new is e:
                            raise
                        raise new from None
            concrete._retrace = retrace
        return concrete

    def _tiering(self, concrete):
        """`concrete` told how a backend that compiles should (`compile=`, see
        `to_static`) and which function it is, for its reports."""
        concrete.compile_mode = self._compile
        concrete.label = getattr(self._function, "__qualname__", None) or repr(self._function)
        return concrete

    def with_backend(self, backend, compile=None):
        """This function on `backend` (and `compile=`, unless None keeps this
        one's): a StaticFunction sharing the converted code and the programs
        built so far (programs are the same on every backend)."""
        other = copy.copy(self)
        other._backend = backend
        other._inline = None
        if compile is not None and compile != self._compile:
            other._compile = compile  # (a program keeps the mode it was built with)
            other._cache = ProgramCache()
        if other._bound is not None:
            other._bound = weakref.WeakKeyDictionary()
        return other

    def _rebuild_warning(self, signatures):
        """The warning text; `signatures` are the ones built, the newest last."""
        names, kind = varying_arguments(signatures)
        what = ", ".join(names)
        if kind == "python":
            advice = (f"each new value of {what} builds a new program: pass it as a tensor "
                      "(d2s.to_tensor) so that one program serves every value")
        elif kind == "tensor":
            advice = (f"the shape or dtype of {what} keeps changing: give an InputSpec with "
                      "None for the dims that vary (to_static(input_spec=[...]))")
        else:
            advice = f"{what} keeps changing"
        return (f"{self._function.__qualname__} has built {self._cache.builds} programs "
                f"(at most {cache_limit()} are kept, least recently used evicted); {advice}.")

    def _get_converted(self):
        if self._converted is None:
            with self._lock:
                if self._converted is None:
                    try:
                        fn, code = convert_api.convert_function(self._function)
                    except D2SConversionError as e:
                        if self._full_graph:
                            raise
                        self._fall_back(e)
                    log_code(self._function.__qualname__, code)
                    self._converted = (fn, code)
        return self._converted

    def _fall_back(self, error):
        self._fallback_reason = str(error)
        warn_in_user_code(f"d2s.jit.to_static(full_graph=False): {self._function.__qualname__} "
                          f"runs eagerly because it cannot be converted: {error}", UserWarning)
        raise _FallBack()

    def __repr__(self):
        return f"<StaticFunction {self._function.__qualname__}>"


# What every inline cache reads (jit.inline_cache: `make`'s `context`).
_INLINE_CONTEXT = {
    "switch": SWITCH, "all_eager": all_eager, "tls": state._tls, "global": state._global,
    "modes": layer_modes_version, "backends": backend_state._STATE, "epoch": _EPOCH,
    "locked": _STATE.locked, "write": _STATE.write, "tensor": Tensor,
    "dtensor": DeviceTensor, "miss": inline_cache.MISS, "eagerly": RunEagerly,
}
INLINE_MISSES = 32

_SCALARS = frozenset((int, float, bool, str, type(None)))  # (by hash: no == per type)


def _fast_key(args, bound_self, modes=None):
    """A hashable key for flat positional calls of Tensors and Python scalars,
    or None (nested or other arguments take the full signature path).

    Flat, to cost little to build and hash on every cache hit: a Tensor adds
    (shape, dtype, stop_gradient), a scalar (type, value); read left to right
    the first item of each group (a tuple, or a type) says which it is, so two
    different calls never share a key."""
    key = [getattr(bound_self, "training", None), modes]
    for a in args:
        t = type(a)
        if t is Tensor or t is DeviceTensor:
            v = a._raw  # (a device-resident Tensor: its shape without a host copy)
            key += (v.shape, v.dtype, a.stop_gradient)
        elif t in _SCALARS:
            key += (t, a)
        else:
            return None
    return tuple(key)


def _flag_of(layer):
    """A watched Layer's `training` flag (None once it is gone)."""
    return None if layer is None else layer.__dict__.get("_training")


def _note_unstopped_inputs(concrete):
    """Positions of the inputs the traced code set `stop_gradient = False` on
    (convert.runtime.gradients): each call sets it on the caller's tensors,
    as the eager statement does, so their gradients are computed."""
    # set by convert.runtime.gradients (UNSTOPPED_INPUTS) while tracing
    names = concrete.main_program.__dict__.get("_d2s_unstopped_inputs")
    concrete._d2s_unstop = tuple(i for i, v in enumerate(concrete.inputs)
                                 if v.name in names) if names else ()


def _unstop(concrete, tensors):
    for i in concrete._d2s_unstop:
        tensors[i].stop_gradient = False


_NOT_BUCKETED = object()  # _call_bucketed: take the ordinary path


class _BucketHit:
    """A bucketed program's cache entry and the positions of its tensor arguments."""
    __slots__ = ("entry", "positions")

    def __init__(self, entry, positions):
        self.entry, self.positions = entry, positions

    @property
    def program(self):
        return self.entry.program

    @property
    def last_used(self):
        return self.entry.last_used

    @last_used.setter
    def last_used(self, tick):
        self.entry.last_used = tick


class _FallBack(Exception):
    """Internal: conversion failed under full_graph=False; run eagerly."""


@functools.lru_cache(maxsize=None)
def _without_first_param(fn):
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    params = list(sig.parameters.values())[1:]

    def shim(*a, **k):  # pragma: no cover - only its signature is read
        pass
    shim.__signature__ = sig.replace(parameters=params)
    return shim


def _class_attribute(cls, name):
    """`name` as the class (or a base) holds it, without running descriptors."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _with_call_context(modes):
    """`modes` (the Layer flags, or None) with what else a program was built
    under: the forward hooks' version and the `auto_cast` state. One
    function for both the key a call looks up (`_modes_now`) and the key a
    new program is cached under (`_keyed_by_modes`): were they composed
    apart, every later lookup of that program would miss."""
    hooks = forward_hooks_version[0]
    if hooks:  # forward hooks were set (or removed): the program ran them
        modes = ("hooks", hooks) + (modes or ())
    amp = amp_state.key()
    if amp is not None:  # inside `auto_cast`: the program casts as it said
        modes = ("amp", amp) + (modes or ())
    return modes
