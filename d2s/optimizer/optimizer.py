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

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """Base: holds the learning rate and the parameters; subclasses name their
    update op and their per-parameter state."""

    _op = None           # registered update op
    _state_names = ()    # per-parameter state, in the op's input order after the grad

    def __init__(self, learning_rate, parameters=None):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number, got "
                            f"{type(learning_rate).__name__}")
        # The rate is a 0-d float64 Tensor that the update ops read as an input:
        # programs read it by reference, so `set_lr` reaches them on their next run.
        self._lr = Tensor._from_array(np.asarray(float(learning_rate), np.float64))
        self._lr.name = "learning_rate"
        if parameters is not None:
            parameters = list(parameters)
            for i, p in enumerate(parameters):
                if not isinstance(p, Tensor):
                    raise TypeError(f"{type(self).__name__}: parameters[{i}] is a "
                                    f"{type(p).__name__}, expected an eager Tensor")
        self._parameter_list = parameters
        self._state = {}  # id(param) -> (param, tuple of state Tensors)

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

    # ---- per-op hooks ----------------------------------------------------------------
    def _attrs(self):
        return {}

    def _new_state(self, param):
        return ()

    def _param_state(self, param, overlay=None):
        entry = self._state.get(id(param))
        if entry is None:  # holding `param` keeps its id from being reused
            entry = self._state[id(param)] = (param, self._new_state(param))
            if overlay is not None:  # made while tracing: gone again if the trace fails
                overlay.on_abort(lambda: self._state.pop(id(param), None))
        return entry[1]

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
        op, attrs, lr = OPS[self._op], self._attrs(), self._lr
        with state.no_grad(), state.eager_guard():
            for p in self._params():
                grad = p.grad
                if p.stop_gradient or grad is None:
                    continue
                st = self._param_state(p)
                # the op's registry kernel, run now (what `bind` does eagerly)
                outs = run_eager(op, (p, grad) + tuple(st) + (lr,), attrs)
                if not isinstance(outs, tuple):
                    outs = (outs,)
                p._value = outs[0]._value
                for t, new in zip(st, outs[1:]):
                    t._value = new._value

    def _step_traced(self, ov):
        """`step()` inside a traced function: the same op per parameter, bound into
        the step's program; its results become the parameter's and the state's
        values for the rest of the trace, and writes of the step."""
        params = self._params()
        ov.activate("optimizer.step()")
        ov.track_all(params)
        attrs = self._attrs()
        for p in params:
            grad = p.grad  # the overlay's: a Variable, or None
            if p.stop_gradient or grad is None:
                continue
            st = self._param_state(p, ov)
            outs = bind(self._op, p, grad, *st, self._lr, **attrs)
            if not isinstance(outs, tuple):
                outs = (outs,)
            for t, new in zip((p,) + tuple(st), outs):
                ov.assign(t, new)

    def clear_grad(self, set_to_zero=False):
        params = self._params()
        ov = effects.overlay()
        if ov is not None:
            ov.activate("optimizer.clear_grad()")
            ov.track_all(params)
        for p in params:
            if set_to_zero and p.grad is not None:
                p.grad = (Tensor._from_array(np.zeros_like(p._value)) if ov is None
                          else full(p.shape, 0, p.dtype))
            else:
                p.clear_grad()

    clear_gradients = clear_grad

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
        attrs = self._attrs()
        ops = []
        for p, (pvar, gvar) in zip(params, params_grads):
            if gvar is None:
                continue
            svars = [builder.capture(t) for t in self._param_state(p)]
            ins = [pvar, gvar] + svars + [builder.capture(self._lr)]
            opdef.infer(*ins, **attrs)  # the op's own shape rule checks the operands
            # outputs ARE the inputs' Variables: the param and state are written in
            # place, and the executor writes them back to the eager Tensors.
            outs = [pvar] + svars
            ops.append(block.append_op(self._op, ins, outs, dict(attrs)))
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

    def __init__(self, learning_rate=0.001, parameters=None):
        super().__init__(learning_rate, parameters)


class Adam(Optimizer):
    """Adam with bias correction; per-parameter state (m, v, step) are eager
    Tensors shared by eager steps and static programs."""

    _op = "adam_update"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameters=None):
        super().__init__(learning_rate, parameters)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _attrs(self):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _new_state(self, param):
        base = param.name or "param"
        m = to_tensor(np.zeros(param.shape, param.dtype))
        v = to_tensor(np.zeros(param.shape, param.dtype))
        step = to_tensor(np.zeros((), np.int64))
        m.name, v.name, step.name = f"{base}_moment1", f"{base}_moment2", f"{base}_step"
        return m, v, step
