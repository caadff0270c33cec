"""`d2s.amp.GradScaler` (Paddle's `paddle.amp.GradScaler`): dynamic loss
scaling for float16 training.

The loss is multiplied by a scale before backward, so small float16
gradients do not flush to zero; the gradients are divided by it again
before the update. A step whose gradients hold an inf or NaN (the scale
overflowed them) is skipped and, after `decr_every_n_nan_or_inf` such
steps, the scale shrinks by `decr_ratio` (never below 1); after
`incr_every_n_steps` good steps in a row it grows by `incr_ratio` (unless
that overflows float32) — the rule of Paddle's `update_loss_scaling` op.

The scale and both counters are 0-d Tensors, updated with tensor ops, so
the same code runs eagerly and inside a converted training step: there
the skip is a select between each parameter's (and optimizer state's) old
and new value, and the scale's update is a write of the step's program.
"""
from __future__ import annotations

import numpy as np

from ..core import amp_state, effects, state
from ..core.ops import cast, logical_not, logical_or, maximum, where
from ..core.ops.math import isfinite
from ..core.ops.reduce_more import all as _all
from ..core.tensor import Tensor

__all__ = ["GradScaler", "AmpScaler"]

_INIT, _UNSCALED, _STEPPED = "init", "unscaled", "stepped"


def _zero_d(value, dtype, name):
    t = Tensor._from_array(np.asarray(value, dtype))
    t.name = name
    return t


class AmpScaler:
    """Paddle's `AmpScaler` (the defaults of `paddle.amp.GradScaler` are on the
    subclass)."""

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 15, incr_ratio=2.0,
                 decr_ratio=0.5, incr_every_n_steps=1000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        if incr_ratio <= 1.0:
            raise ValueError(f"GradScaler: incr_ratio must be > 1, got {incr_ratio}")
        if not 0.0 < decr_ratio < 1.0:
            raise ValueError(f"GradScaler: decr_ratio must be in (0, 1), got {decr_ratio}")
        if int(incr_every_n_steps) < 1 or int(decr_every_n_nan_or_inf) < 1:
            raise ValueError("GradScaler: incr_every_n_steps and decr_every_n_nan_or_inf "
                             "must be >= 1")
        self._enable = bool(enable)
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
        self._init_loss_scaling = float(init_loss_scaling)
        self._incr_ratio, self._decr_ratio = float(incr_ratio), float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._scale = _zero_d(init_loss_scaling, np.float32, "loss_scaling")
        self._incr_count = _zero_d(0, np.int32, "incr_count")
        self._decr_count = _zero_d(0, np.int32, "decr_count")
        self._found_inf = None        # of the last unscale_ (a Tensor, or a Variable in a trace)
        self._cache_found_inf = None  # of the last step
        self._optimizer_states = {}   # id(optimizer) -> _INIT / _UNSCALED / _STEPPED

    # ---- reading and writing the state in both modes --------------------------------------
    @staticmethod
    def _read(t):
        ov = effects.overlay()
        return t if ov is None else ov.read(t)

    @staticmethod
    def _write(t, value):
        ov = effects.overlay()
        if ov is not None:
            ov.assign(t, value)
        else:
            t._value = np.asarray(value._value, t._value.dtype)

    # ---- the API -----------------------------------------------------------------------
    def scale(self, var):
        """`var * scale` (in float32 when `var` is float16/bfloat16: 65536 is
        not a float16 number)."""
        if not self._enable:
            return var
        dt = np.dtype(var.dtype)
        with amp_state.suspended():
            if dt.itemsize < 4:
                var = cast(var, "float32")
            s = self._read(self._scale)
            if np.dtype(var.dtype) != np.float32:
                s = cast(s, var.dtype)
            return var * s

    def unscale_(self, optimizer):
        """Divide every gradient `optimizer` updates by the scale (in float32,
        stored back in the gradient's dtype) and note whether one holds an
        inf or NaN. Once per step: a second call before `update()` is an
        error, as in Paddle."""
        if not self._enable:
            return
        st = self._optimizer_states.get(id(optimizer), _INIT)
        if st == _UNSCALED:
            raise RuntimeError("GradScaler.unscale_() has already been called on this "
                               "optimizer since the last update()")
        if st == _STEPPED:
            raise RuntimeError("GradScaler.unscale_() is being called after step()")
        params = [p for p in optimizer._params() if not p.stop_gradient and p.grad is not None]
        ov = effects.overlay()
        if ov is not None:
            ov.activate("GradScaler.unscale_()")
            ov.track_all(optimizer._params())
        found = None
        with amp_state.suspended(), state.no_grad():
            inv = 1.0 / self._read(self._scale)
            for p in params:
                g = p.grad
                g32 = cast(g, "float32") if np.dtype(g.dtype) != np.float32 else g
                g32 = g32 * inv
                bad = logical_not(_all(isfinite(g32)))
                found = bad if found is None else logical_or(found, bad)
                p.grad = cast(g32, g.dtype) if np.dtype(g.dtype) != np.float32 else g32
            if found is None:
                found = _zero_d(False, np.bool_, "found_inf")
        self._found_inf = found
        self._optimizer_states[id(optimizer)] = _UNSCALED

    def step(self, optimizer):
        """Unscale (unless `unscale_` did), then `optimizer.step()` unless a
        gradient is inf or NaN. Call `update()` after."""
        if not self._enable:
            return optimizer.step()
        st = self._optimizer_states.get(id(optimizer), _INIT)
        if st == _STEPPED:
            raise RuntimeError("GradScaler.step() has already been called since the last "
                               "update()")
        if st == _INIT:
            self.unscale_(optimizer)
        found = self._found_inf
        ov = effects.overlay()
        if ov is None:
            if not bool(found._value):
                optimizer.step()
        else:
            self._gated_step(optimizer, ov, found)
        self._cache_found_inf = found
        self._optimizer_states[id(optimizer)] = _STEPPED

    @staticmethod
    def _gated_step(optimizer, ov, found):
        """The update in a traced step: every value it writes keeps its old
        value where `found` is true (the program cannot skip what it runs)."""
        ov.activate("GradScaler.step()")
        params = optimizer._params()
        ov.track_all(params)
        written = []
        for p in params:
            if not p.stop_gradient and p.grad is not None:
                written.append(p)
                written.extend(optimizer._param_state(p, ov))
                master = optimizer._master(p, ov)
                if master is not None:
                    written.append(master)
        old = [ov.read(t) for t in written]
        optimizer.step()
        with amp_state.suspended(), state.no_grad():
            for t, before in zip(written, old):
                after = ov.read(t)
                if after is not before:
                    ov.assign(t, where(found, before, after))

    def update(self):
        """Adjust the scale from the last step's inf/NaN check (dynamic loss
        scaling only) and start a new step."""
        if self._enable and self._use_dynamic_loss_scaling and self._cache_found_inf is not None:
            self._update(self._cache_found_inf)
        self._optimizer_states = {}
        self._cache_found_inf = None

    def _update(self, found):
        with amp_state.suspended(), state.no_grad():
            scale = self._read(self._scale)
            incr = self._read(self._incr_count)
            decr = self._read(self._decr_count)
            zero = incr * 0
            # a bad step: count it; every decr_every_n_nan_or_inf of them shrink
            bad_count = decr + 1
            shrink = bad_count >= self._decr_every_n_nan_or_inf
            bad_scale = where(shrink, maximum(scale * self._decr_ratio, scale * 0 + 1.0), scale)
            bad_count = where(shrink, zero, bad_count)
            # a good step: count it; every incr_every_n_steps of them grow
            good_count = incr + 1
            grow = good_count >= self._incr_every_n_steps
            grown = scale * self._incr_ratio
            good_scale = where(grow, where(isfinite(grown), grown, scale), scale)
            good_count = where(grow, zero, good_count)
            self._write(self._scale, where(found, bad_scale, good_scale))
            self._write(self._incr_count, where(found, zero, good_count))
            self._write(self._decr_count, where(found, bad_count, zero))

    def minimize(self, optimizer, *args, **kwargs):
        """`step(optimizer)` then `update()` (Paddle's one-call form; `args` are
        `optimizer.minimize`'s, which eagerly only applies the step)."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        self.step(optimizer)
        self.update()
        return None, None

    # ---- settings ------------------------------------------------------------------------
    def is_enable(self):
        return self._enable

    def is_use_dynamic_loss_scaling(self):
        return self._use_dynamic_loss_scaling

    def get_loss_scaling(self):
        """The current scale (a Tensor)."""
        return self._scale

    def get_init_loss_scaling(self):
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling):
        self._init_loss_scaling = float(new_init_loss_scaling)
        self._scale._value = np.asarray(new_init_loss_scaling, np.float32)

    def get_incr_ratio(self):
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio):
        if new_incr_ratio <= 1.0:
            raise ValueError("incr_ratio must be > 1")
        self._incr_ratio = float(new_incr_ratio)

    def get_decr_ratio(self):
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio):
        if not 0.0 < new_decr_ratio < 1.0:
            raise ValueError("decr_ratio must be in (0, 1)")
        self._decr_ratio = float(new_decr_ratio)

    def get_incr_every_n_steps(self):
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps):
        self._incr_every_n_steps = int(new_incr_every_n_steps)

    def get_decr_every_n_nan_or_inf(self):
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf):
        self._decr_every_n_nan_or_inf = int(new_decr_every_n_nan_or_inf)

    def state_dict(self):
        """Paddle's keys; empty when disabled."""
        if not self._enable:
            return {}
        return {"scale": self._scale._value.copy(), "incr_ratio": self._incr_ratio,
                "decr_ratio": self._decr_ratio, "incr_every_n_steps": self._incr_every_n_steps,
                "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf,
                "incr_count": int(self._incr_count._value),
                "decr_count": int(self._decr_count._value),
                "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling}

    def load_state_dict(self, state_dict):
        if not self._enable:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (was it "
                               "saved from a disabled GradScaler?)")
        scale = state_dict["scale"]
        scale = scale.numpy() if isinstance(scale, Tensor) else scale
        self._scale._value = np.asarray(scale, np.float32).reshape(())
        self._init_loss_scaling = float(self._scale._value)
        self._incr_ratio = float(state_dict["incr_ratio"])
        self._decr_ratio = float(state_dict["decr_ratio"])
        self._incr_every_n_steps = int(state_dict["incr_every_n_steps"])
        self._decr_every_n_nan_or_inf = int(state_dict["decr_every_n_nan_or_inf"])
        self._incr_count._value = np.asarray(int(state_dict["incr_count"]), np.int32)
        self._decr_count._value = np.asarray(int(state_dict["decr_count"]), np.int32)
        self._use_dynamic_loss_scaling = bool(state_dict["use_dynamic_loss_scaling"])

    set_state_dict = load_state_dict


class GradScaler(AmpScaler):
    """Paddle's `paddle.amp.GradScaler`: `scale(loss)`, then `minimize(opt,
    scaled)` or `step(opt)` + `update()`; `unscale_(opt)` before gradient
    clipping by hand."""

    def __init__(self, enable=True, init_loss_scaling=65536.0, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=2000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps,
                         decr_every_n_nan_or_inf, use_dynamic_loss_scaling)
