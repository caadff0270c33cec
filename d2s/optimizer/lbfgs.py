"""Paddle's `LBFGS` (PyTorch's algorithm): limited-memory BFGS driven by a
closure that re-evaluates the loss and its gradients, `opt.step(closure)`.

The search directions come from the last `history_size` steps and gradient
changes (the two-loop recursion), kept on the host as flat float arrays of
the parameters' dtype; each step runs up to `max_iter` iterations with a
fixed step (`learning_rate`, the first one scaled down by the gradient's
1-norm), or the step a strong-Wolfe line search finds
(`line_search_fn="strong_wolfe"`, `line_search.py`). The closure runs
eagerly, so `step` runs eagerly only: inside a converted function it is an
error (convert the closure's body instead).
"""
from __future__ import annotations

import numpy as np

from ..core import effects, state
from .line_search import strong_wolfe
from .optimizer import Optimizer

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    def __init__(self, learning_rate=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if weight_decay is not None or grad_clip is not None:
            raise NotImplementedError(
                "LBFGS: weight_decay and grad_clip are not supported; add the decay to the "
                "loss the closure returns, clip inside the closure")
        super().__init__(learning_rate, parameters, None, None, name)
        self.max_iter = int(max_iter)
        self.max_eval = int(max_eval) if max_eval is not None else self.max_iter * 5 // 4
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(
            tolerance_change)
        self.history_size = int(history_size)
        self.line_search_fn = line_search_fn
        self._lbfgs = {"func_evals": 0, "n_iter": 0}

    # ---- flat views of the parameters and their gradients ------------------------------
    def _trainable(self):
        return [p for p in self._params() if not p.stop_gradient]

    def _flat_grad(self):
        parts = []
        for p in self._trainable():
            g = p.grad
            parts.append(np.zeros(int(np.prod(p.shape)), p.dtype) if g is None
                         else np.asarray(g._value, p.dtype).reshape(-1))
        return np.concatenate(parts)

    def _add(self, step, direction):
        start = 0
        for p in self._trainable():
            n = int(np.prod(p.shape))
            update = (step * direction[start:start + n]).reshape(p.shape)
            p._value = np.asarray(p._value + update, p.dtype)
            start += n

    def _evaluate(self, closure):
        with state.enable_grad():  # the closure's backward needs a tape
            loss = closure()
        return loss, float(loss.item() if hasattr(loss, "item") else loss)

    def step(self, closure=None):
        """Up to `max_iter` L-BFGS iterations; `closure()` must clear the
        gradients, compute the loss, call `backward()` and return the loss.
        Returns the loss of the first evaluation."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure: def closure(): opt.clear_grad(); "
                            "loss = ...; loss.backward(); return loss")
        if effects.overlay() is not None:
            raise RuntimeError("LBFGS.step inside a function converted by to_static: its "
                               "closure re-evaluates the loss several times per step, in "
                               "Python. Call opt.step(closure) in eager code (convert the "
                               "model's forward instead)")
        st = self._lbfgs
        lr = float(self._lr._value)
        orig_loss, loss = self._evaluate(closure)
        current_evals = 1
        st["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= self.tolerance_grad:
            return orig_loss
        d, t = st.get("d"), st.get("t")
        old_dirs, old_stps, ro = st.get("old_dirs", []), st.get("old_stps", []), st.get("ro", [])
        h_diag, prev_flat_grad = st.get("H_diag", 1.0), st.get("prev_flat_grad")
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == self.history_size:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y), old_stps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = (min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if st["n_iter"] == 1 else lr)
            gtd = flat_grad.dot(d)
            if gtd > -self.tolerance_change:  # not a descent direction
                break
            evals = 0
            opt_cond = False
            if self.line_search_fn == "strong_wolfe":
                start = [np.array(p._value, copy=True) for p in self._trainable()]

                def evaluate(step, start=start, d=d):
                    self._add(step, d)
                    _, value = self._evaluate(closure)
                    grad = self._flat_grad()
                    for p, v in zip(self._trainable(), start):
                        p._value = v.copy()
                    return value, grad
                # at most the evaluations this step has left (PyTorch's bound)
                loss, flat_grad, t, evals = strong_wolfe(evaluate, t, d, loss, flat_grad, gtd,
                                                         max_ls=self.max_eval - current_evals)
                self._add(t, d)
                opt_cond = np.abs(flat_grad).max() <= self.tolerance_grad
            else:
                self._add(t, d)
                if n_iter != self.max_iter:
                    _, loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= self.tolerance_grad
                    evals = 1
            current_evals += evals
            st["func_evals"] += evals
            if n_iter == self.max_iter or current_evals >= self.max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= self.tolerance_change:
                break
            if abs(loss - prev_loss) < self.tolerance_change:
                break
        st.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                  prev_flat_grad=prev_flat_grad)
        return orig_loss

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        raise NotImplementedError("LBFGS: use opt.step(closure) (the closure re-evaluates "
                                  "the loss); minimize(loss) cannot")

    def state_dict(self):
        out = super().state_dict()
        out["LBFGS"] = dict(self._lbfgs)
        return out

    def set_state_dict(self, state_dict):
        super().set_state_dict(state_dict)
        if "LBFGS" in state_dict:
            self._lbfgs = dict(state_dict["LBFGS"])

