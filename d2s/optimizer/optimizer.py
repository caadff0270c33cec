"""Optimizers. The update arithmetic lives once, in the registered update
ops (`sgd_update`, `adam_update`): eager `step()` binds them now, static
`minimize()` appends them to the program so each executor run is one step,
and inside a function `to_static` traces, `step()` and `clear_grad()` act
through the trace's state overlay (`d2s.core.effects`): the updates become
ops of the step's program and their results its writes."""
from __future__ import annotations

import numpy as np

from ..core import effects, state
from ..core.dispatch import Symbolic, bind, run_eager
from ..core.ops import cast, full, reshape
from ..core.registry import OPS
from ..core.tensor import Tensor, to_tensor
from ..core.param_attrs import param_attr_of

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "Momentum", "RMSProp", "Adagrad"]


class Optimizer:
    """Base: holds the learning rate and the parameters; subclasses name their
    update op and their per-parameter state."""

    _op = None           # registered update op
    _state_names = ()    # per-parameter state, in the op's input order after the grad

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        from .lr import LRScheduler
        self._scheduler = None
        if isinstance(learning_rate, LRScheduler):
            self._scheduler = learning_rate
            learning_rate = learning_rate.last_lr
        elif isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number or an "
                            f"LRScheduler, got {type(learning_rate).__name__}")
        # The rate is a 0-d float64 Tensor that the update ops read as an input:
        # programs read it by reference, so `set_lr` reaches them on their next run.
        self._lr = Tensor._from_array(np.asarray(float(learning_rate), np.float64))
        self._lr.name = "learning_rate"
        if self._scheduler is not None:
            self._scheduler._bind(self)
        if parameters is not None:
            parameters = list(parameters)
            for i, p in enumerate(parameters):
                if isinstance(p, dict):
                    raise NotImplementedError(
                        f"{type(self).__name__}: parameter groups (dicts in parameters) are "
                        "not supported; give one optimizer per group")
                if not isinstance(p, Tensor):
                    raise TypeError(f"{type(self).__name__}: parameters[{i}] is a "
                                    f"{type(p).__name__}, expected an eager Tensor")
        self._parameter_list = parameters
        self._state = {}  # id(param) -> (param, tuple of state Tensors)
        self._masters = {}  # id(param) -> (param, float32 master copy): multi_precision
        self.regularization = _as_regularizer(weight_decay, type(self).__name__)
        if grad_clip is not None and not callable(grad_clip):
            raise TypeError(f"{type(self).__name__}: grad_clip must be a ClipGradBy* object, "
                            f"got {grad_clip!r}")
        self._grad_clip = grad_clip

    # ---- learning rate -----------------------------------------------------------
    def get_lr(self):
        """The learning rate: a float; inside a traced step, the value standing for
        it at that point of the step (a schedule computed from it then runs on
        every call instead of being fixed when the step was traced)."""
        ov = effects.overlay()
        if ov is not None:
            # weakly typed, as the Python float eager code gets: next to a
            # float32 tensor it is float32, the same bits as eagerly
            rate = bind("detach", ov.read(self._lr))
            rate.weak = True
            return rate
        return float(self._lr._value)

    def set_lr(self, value):
        """New learning rate for later steps: eager ones, and every program that
        updates with this optimizer (a traced step, a `minimize` program) on its
        next run. Inside a traced step the new rate is a write of the step."""
        if self._scheduler is not None:
            raise RuntimeError(f"{type(self).__name__}.set_lr: the learning rate follows an "
                               "LRScheduler; step the scheduler (or give a number as "
                               "learning_rate) instead")
        ov = effects.overlay()
        if ov is not None:
            # a write of the step, even one with no backward or update (a
            # schedule stepped in its own function); not under a tensor `if`,
            # whose branch the write could not follow (d2s.where can)
            ov.activate("optimizer.set_lr()", instead="for a rate chosen by a tensor, set "
                        "it on every call: opt.set_lr(opt.get_lr() * d2s.where(cond, 0.5, 1.0))")
            ov.assign(self._lr, _as_rate(value))
            return
        self._lr._value = np.asarray(float(value), np.float64)

    def _set_rate(self, value):
        """The scheduler's new rate (eager: schedulers refuse to step in a trace)."""
        self._lr._value = np.asarray(float(value), np.float64)

    # ---- per-op hooks ----------------------------------------------------------------
    def _attrs(self):
        return {}

    def _attrs_for(self, param):
        return self._attrs()

    _decoupled = False   # AdamW: the optimizer's weight_decay is not added to gradients

    def _rate_scale(self, param):
        attr = param_attr_of(param)
        return 1.0 if attr is None else attr.learning_rate

    def _rate_for(self, param, lr=None):
        """The rate input of `param`'s update: the optimizer's, scaled by its
        ParamAttr's `learning_rate` (and AdamW's `lr_ratio`) when not 1."""
        lr = self._lr if lr is None else lr
        scale = self._rate_scale(param)
        return lr if scale == 1.0 else lr * float(scale)

    def _prepared(self, pairs, value=None):
        """(param, grad) pairs as the updates take them: clipped by `grad_clip`,
        then with weight decay added (Paddle's order). `value(p)`: the value to
        compute with for parameter `p` (itself, or its static Variable)."""
        if self._grad_clip is not None:
            pairs = self._grad_clip(list(pairs))
        out = []
        for p, g in pairs:
            attr = param_attr_of(p)
            reg = attr.regularizer if attr is not None and attr.regularizer is not None else (
                None if self._decoupled else self.regularization)
            if reg is not None:
                g = reg(p if value is None else value(p), g)
            out.append((p, g))
        return out

    def _new_state(self, param):
        return ()

    def _param_state(self, param, overlay=None):
        entry = self._state.get(id(param))
        if entry is None:  # holding `param` keeps its id from being reused
            master = self._master(param, overlay)
            # a parameter updated through a master copy keeps float32 state too
            template = param if master is None else _StateTemplate(param, master)
            entry = self._state[id(param)] = (param, self._new_state(template))
            if overlay is not None:  # made while tracing: gone again if the trace fails
                overlay.on_abort(lambda: self._state.pop(id(param), None))
        return entry[1]

    # ---- multi-precision ------------------------------------------------------------------
    # Paddle's `multi_precision=True` (and `amp.decorate(level="O2")`, whose
    # `master_weight` defaults to it): a float16/bfloat16 parameter is updated
    # through a float32 master copy, the update op runs in float32 on the
    # master (grad cast up, float32 optimizer state), and the parameter
    # becomes the master cast down. Without it, small updates round away in
    # float16 (1 + 1e-4 == 1), so a long O2 run stalls.
    _multi_precision = False
    _master_grad = False   # amp.decorate(master_grad=True): clip and decay in float32

    def _master(self, param, overlay=None):
        """`param`'s float32 master copy, made from its value on first use, or
        None when `param` needs none (multi-precision off, or float32/64)."""
        if not self._multi_precision or not _is_low_float(param.dtype):
            return None
        entry = self._masters.get(id(param))
        if entry is None:
            entry = self._masters[id(param)] = (param, _master_copy(param, param._value))
            if overlay is not None:
                overlay.on_abort(lambda: self._masters.pop(id(param), None))
        return entry[1]

    def _seed_master(self, param, value):
        """Start `param`'s master copy from `value`: amp.decorate hands the
        float32 values it is about to cast down, so nothing is rounded."""
        self._masters[id(param)] = (param, _master_copy(param, value))

    def _grads_for_update(self, pairs):
        """`master_grad`: low-precision gradients in float32 before clipping and
        weight decay (the update casts them anyway)."""
        if not self._master_grad:
            return pairs
        return [(p, cast(g, "float32") if _is_low_float(g.dtype) else g) for p, g in pairs]

    def _params(self):
        if self._parameter_list is None:
            raise ValueError(f"{type(self).__name__}: no parameters; pass parameters=... "
                             "(e.g. model.parameters())")
        return self._parameter_list

    # ---- eager ---------------------------------------------------------------------------
    def step(self):
        """Apply one update to every trainable parameter that has a gradient."""
        ov = effects.overlay()
        if ov is not None:
            return self._step_traced(ov)
        op = OPS[self._op]
        with state.no_grad(), state.eager_guard():
            pairs = [(p, p.grad) for p in self._params()
                     if not p.stop_gradient and p.grad is not None]
            for p, grad in self._prepared(self._grads_for_update(pairs)):
                st = self._param_state(p)
                master = self._master(p)
                target = p if master is None else master
                if master is not None:
                    grad = cast(grad, "float32")
                # the op's registry kernel, run now (what `bind` does eagerly)
                outs = run_eager(op, (target, grad) + tuple(st) + (self._rate_for(p),),
                                 self._attrs_for(p))
                if not isinstance(outs, tuple):
                    outs = (outs,)
                if master is not None:
                    master._value = outs[0]._value
                    p._value = np.asarray(outs[0]._value).astype(p.dtype)
                else:
                    p._value = outs[0]._value
                for t, new in zip(st, outs[1:]):
                    t._value = new._value

    def _step_traced(self, ov):
        """`step()` inside a traced function: the same op per parameter, bound into
        the step's program; its results become the parameter's and the state's
        values for the rest of the trace, and writes of the step."""
        params = self._params()
        ov.activate("optimizer.step()", branch_ok=True)
        ov.track_all(params)
        pairs = [(p, p.grad) for p in params  # the overlay's grads: Variables, or None
                 if not p.stop_gradient and p.grad is not None]
        for p, grad in self._prepared(self._grads_for_update(pairs)):
            st = self._param_state(p, ov)
            master = self._master(p, ov)
            if master is None:
                outs = bind(self._op, p, grad, *st, self._rate_for(p), **self._attrs_for(p))
            else:
                outs = bind(self._op, master, cast(grad, "float32"), *st, self._rate_for(p),
                            **self._attrs_for(p))
            if not isinstance(outs, tuple):
                outs = (outs,)
            if master is not None:
                ov.assign(master, outs[0])
                outs = (cast(outs[0], p.dtype),) + outs[1:]
            for t, new in zip((p,) + tuple(st), outs):
                ov.assign(t, new)

    def clear_grad(self, set_to_zero=False):
        params = self._params()
        ov = effects.overlay()
        if ov is not None:
            ov.activate("optimizer.clear_grad()", branch_ok=True)
            ov.track_all(params)
        for p in params:
            if set_to_zero and p.grad is not None:
                p.grad = (Tensor._from_array(np.zeros_like(p._value)) if ov is None
                          else full(p.shape, 0, p.dtype))
            else:
                p.clear_grad()

    clear_gradients = clear_grad

    # ---- checkpoints -----------------------------------------------------------------
    def state_dict(self):
        """{state Tensor's name: Tensor} for every per-parameter state made so far,
        and the scheduler's state under "LR_Scheduler" (Paddle's layout)."""
        out = {}
        for _, (param, st) in self._state.items():
            for t in st:
                out[t.name] = t
        if self._masters:  # Paddle's key: {parameter name: float32 master}
            out["master_weights"] = {p.name: m for p, m in self._masters.values()}
        if self._scheduler is not None:
            out["LR_Scheduler"] = self._scheduler.state_dict()
        return out

    def set_state_dict(self, state_dict):
        """Load what `state_dict()` gave: states are made for every parameter (so a
        fresh optimizer takes a checkpoint before its first step) and each
        found by name; a state of the wrong shape is an error naming it."""
        if self._scheduler is not None and "LR_Scheduler" in state_dict:
            self._scheduler.set_state_dict(state_dict["LR_Scheduler"])
        new = []
        for p in self._params():
            for t in self._param_state(p):
                if t.name not in state_dict:
                    continue
                value = state_dict[t.name]
                arr = np.asarray(value._value if isinstance(value, Tensor) else value)
                if arr.shape != t._value.shape:
                    raise ValueError(f"{type(self).__name__}.set_state_dict: {t.name!r} has "
                                     f"shape {list(arr.shape)}, expected "
                                     f"{list(t._value.shape)}")
                new.append((t, arr.astype(t._value.dtype, copy=True)))
        masters = state_dict.get("master_weights") or {}
        for p in self._params():
            master = self._master(p)
            if master is None or p.name not in masters:
                continue
            value = masters[p.name]
            arr = np.asarray(value._value if isinstance(value, Tensor) else value)
            if arr.shape != tuple(master.shape):
                raise ValueError(f"{type(self).__name__}.set_state_dict: master weight of "
                                 f"{p.name!r} has shape {list(arr.shape)}, expected "
                                 f"{list(master.shape)}")
            new.append((master, arr.astype(np.float32, copy=True)))
        for t, arr in new:
            t._value = arr

    set_dict = set_state_dict

    # ---- both modes ------------------------------------------------------------------------
    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Static `loss` (a Variable): append backward and update ops to its
        program, writing each parameter (and optimizer state) Variable in
        place, so that every `Executor.run` of the program is one training
        step; returns `(update_ops, [(param_var, grad_var)])`.

        Eager `loss`: as in PaddlePaddle, `loss.backward()` must have run;
        this applies `step()` and returns `(None, [(param, grad)])`. Inside a
        function `to_static` traces it does the same (the converted function
        behaves as the eager one): part of the traced step.
        """
        params = list(parameters) if parameters is not None else None
        ov = effects.overlay()
        if isinstance(loss, Symbolic) and ov is None:
            return self._minimize_static(loss, params, no_grad_set)
        if not isinstance(loss, (Tensor, Symbolic)):
            raise TypeError(f"minimize: loss must be a Tensor or a static Variable, got "
                            f"{type(loss).__name__}")
        if params is not None:
            saved, self._parameter_list = self._parameter_list, params
        try:
            if ov is not None:
                ov.activate("optimizer.minimize()")
                ov.track_all(self._params())
            plist = [p for p in self._params() if not p.stop_gradient]
            if plist and all(p.grad is None for p in plist):
                raise RuntimeError("minimize: no parameter has a gradient; call "
                                   "loss.backward() before minimize(loss) in dynamic mode")
            self.step()
            return None, [(p, p.grad) for p in plist]
        finally:
            if params is not None:
                self._parameter_list = saved

    def _minimize_static(self, loss, params, no_grad_set):
        from ..static.backward import append_backward

        program = loss.block.program
        if params is None:
            params = self._parameter_list
        if params is None:  # every trainable tensor the program captured
            params = [t for t in program.captured.values()
                      if isinstance(t, Tensor) and not t.stop_gradient]
        skip = {id(p) for p in (no_grad_set or ())}
        params = [p for p in params if not p.stop_gradient and id(p) not in skip]
        if not params:
            raise ValueError("minimize: no trainable parameters (stop_gradient=False) to "
                             "update")
        params_grads = append_backward(loss, params)
        block = program.global_block()
        builder = program._builder
        opdef = OPS[self._op]
        ops = []
        pvars = {id(p): pvar for p, (pvar, _) in zip(params, params_grads)}
        pairs = [(p, gvar) for p, (_, gvar) in zip(params, params_grads) if gvar is not None]
        if self._grad_clip is not None or self.regularization is not None or any(
                param_attr_of(p) is not None for p, _ in pairs):
            from ..static import program_guard
            with program_guard(program):  # clipping and decay: ops of this program
                pairs = self._prepared(pairs, value=lambda p: pvars[id(p)])
                rates = {id(p): self._rate_for(p, builder.capture(self._lr)) for p, _ in pairs}
        else:
            rates = {id(p): builder.capture(self._lr) for p, _ in pairs}
        for p, gvar in pairs:
            pvar = pvars[id(p)]
            attrs = self._attrs_for(p)
            svars = [builder.capture(t) for t in self._param_state(p)]
            master = self._master(p)
            target = pvar
            if master is not None:  # the update runs on the float32 master
                from ..static import program_guard
                target = builder.capture(master)
                with program_guard(program):
                    gvar = cast(gvar, "float32")
            ins = [target, gvar] + svars + [rates[id(p)]]
            opdef.infer(*ins, **attrs)  # the op's own shape rule checks the operands
            # outputs ARE the inputs' Variables: the param and state are written in
            # place, and the executor writes them back to the eager Tensors.
            outs = [target] + svars
            ops.append(block.append_op(self._op, ins, outs, dict(attrs)))
            if master is not None:
                ops.append(block.append_op("cast", [target], [pvar],
                                           {"dtype": np.dtype(p.dtype).name}))
        return ops, params_grads


def _as_rate(value):
    """Eager `set_lr`'s `float(value)` in a traced step: a tensor of one
    element (any dtype, any rank) becomes the 0-d float64 rate; other
    sizes are eager's `float()` error."""
    if not isinstance(value, (Tensor, Symbolic)):
        return value
    shape = tuple(value.shape)
    if None not in shape and int(np.prod(shape)) != 1:
        raise ValueError(f"float() of a Tensor with {int(np.prod(shape))} elements is "
                         "ambiguous; only one-element tensors convert")
    if np.dtype(value.dtype) != np.float64:
        value = cast(value, "float64")
    return reshape(value, []) if shape != () else value


class SGD(Optimizer):
    """`param -= learning_rate * grad`."""

    _op = "sgd_update"

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)


def _is_low_float(dtype):
    return np.dtype(dtype).name in ("float16", "bfloat16")


def _master_copy(param, value):
    master = Tensor._from_array(np.array(value, dtype=np.float32))
    master.name = f"{param.name or 'param'}_fp32_master_0"
    return master


class _StateTemplate:
    """What `_new_state` reads of a parameter (shape, dtype, name), with the
    master's float32 dtype: the optimizer state of a multi-precision
    parameter is float32, named after the parameter."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, param, master):
        self.shape, self.dtype, self.name = param.shape, master.dtype, param.name


def _zeros_like_param(param, suffix):
    t = to_tensor(np.zeros(param.shape, param.dtype))
    t.name = f"{param.name or 'param'}_{suffix}"
    return t


class Adam(Optimizer):
    """Adam with bias correction; per-parameter state (m, v, step) are eager
    Tensors shared by eager steps and static programs. `weight_decay` is
    added to the gradient (L2, coupled) as in Paddle; AdamW decouples it."""

    _op = "adam_update"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameters=None, weight_decay=None, grad_clip=None, lazy_mode=False,
                 multi_precision=False, use_multi_tensor=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._multi_precision = bool(multi_precision)

    def _attrs(self):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _new_state(self, param):
        m, v = _zeros_like_param(param, "moment1"), _zeros_like_param(param, "moment2")
        step = to_tensor(np.zeros((), np.int64))
        step.name = f"{param.name or 'param'}_step"
        return m, v, step


class AdamW(Adam):
    """Adam with decoupled weight decay: `param *= 1 - lr * coeff` before each
    update, for the parameters `apply_decay_param_fun(name)` accepts (all by
    default); `lr_ratio(param)` scales the rate per parameter."""

    _op = "adamw_update"
    _decoupled = True

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameters=None, weight_decay=0.01, lr_ratio=None, apply_decay_param_fun=None,
                 grad_clip=None, lazy_mode=False, multi_precision=False, name=None):
        from .regularizer import WeightDecayRegularizer
        if isinstance(weight_decay, WeightDecayRegularizer):
            weight_decay = weight_decay.coeff
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)):
            raise TypeError(f"AdamW: weight_decay must be a number, got {weight_decay!r}")
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip,
                         lazy_mode, multi_precision, name=name)
        self._coeff = float(weight_decay)
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun

    def _attrs_for(self, param):
        decay = self._apply_decay_param_fun is None or self._apply_decay_param_fun(param.name)
        return dict(self._attrs(), coeff=self._coeff if decay else 0.0)

    def _rate_scale(self, param):
        scale = super()._rate_scale(param)
        return scale if self._lr_ratio is None else scale * float(self._lr_ratio(param))


class Adamax(Adam):
    """Adamax (Adam with the infinity norm): `u = max(beta2 u + epsilon, |g|)`,
    `param -= lr / (1 - beta1^t) * m / u`."""

    _op = "adamax_update"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, weight_decay,
                         grad_clip, name=name)

    def _new_state(self, param):
        m, u = _zeros_like_param(param, "moment"), _zeros_like_param(param, "inf_norm")
        step = to_tensor(np.zeros((), np.int64))
        step.name = f"{param.name or 'param'}_step"
        return m, u, step


class Momentum(Optimizer):
    """`velocity = momentum * velocity + grad`; `param -= lr * velocity`
    (Nesterov: `param -= lr * (grad + momentum * velocity)`)."""

    _op = "momentum_update"

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, multi_precision=False, rescale_grad=1.0,
                 use_multi_tensor=False, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        if rescale_grad != 1.0:
            raise NotImplementedError("Momentum: rescale_grad other than 1.0 is not supported; "
                                      "scale the loss instead")
        self._momentum, self._use_nesterov = float(momentum), bool(use_nesterov)
        self._multi_precision = bool(multi_precision)

    def _attrs(self):
        return {"mu": self._momentum, "use_nesterov": self._use_nesterov}

    def _new_state(self, param):
        return (_zeros_like_param(param, "velocity"),)


class RMSProp(Optimizer):
    """Paddle's RMSProp: `ms = rho ms + (1 - rho) g^2`; `mom = momentum mom + lr g /
    sqrt(ms + epsilon)` (centered: `ms - mg^2` under the root); `param -= mom`."""

    _op = "rmsprop_update"

    def __init__(self, learning_rate, rho=0.95, epsilon=1e-6, momentum=0.0, centered=False,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._rho, self._epsilon = float(rho), float(epsilon)
        self._momentum, self._centered = float(momentum), bool(centered)

    def _attrs(self):
        return {"rho": self._rho, "epsilon": self._epsilon, "momentum": self._momentum,
                "centered": self._centered}

    def _new_state(self, param):
        return (_zeros_like_param(param, "mean_square"), _zeros_like_param(param, "mean_grad"),
                _zeros_like_param(param, "momentum"))


class Adagrad(Optimizer):
    """`moment += grad^2`; `param -= lr * grad / (sqrt(moment) + epsilon)`."""

    _op = "adagrad_update"

    def __init__(self, learning_rate, epsilon=1e-6, parameters=None, weight_decay=None,
                 grad_clip=None, name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._epsilon, self._initial = float(epsilon), float(initial_accumulator_value)

    def _attrs(self):
        return {"epsilon": self._epsilon}

    def _new_state(self, param):
        m = to_tensor(np.full(param.shape, self._initial, param.dtype))
        m.name = f"{param.name or 'param'}_moment"
        return (m,)


def _as_regularizer(weight_decay, where):
    """`weight_decay`: None, a number (L2 decay with that coefficient) or a
    regularizer object."""
    from .regularizer import L2Decay, WeightDecayRegularizer
    if weight_decay is None:
        return None
    if isinstance(weight_decay, WeightDecayRegularizer):
        return weight_decay
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)):
        raise TypeError(f"{where}: weight_decay must be a number or a regularizer "
                        f"(d2s.regularizer.L2Decay / L1Decay), got {weight_decay!r}")
    return L2Decay(float(weight_decay)) if weight_decay else None
