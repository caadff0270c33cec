"""`d2s.optimizer.lr`: learning-rate schedules (Paddle's classes and formulas).

A scheduler is plain Python state: `last_epoch` counts `step()` calls and
`last_lr` is the rate for the current one. An optimizer given a scheduler as
`learning_rate` reads `last_lr` whenever the scheduler steps (the optimizer's
rate is an input of its update ops, so programs that update with it see the
new rate on their next run without being traced again).

`step()` inside a function converted by `to_static` steps the scheduler on
every run of the program (`lr_step_per_run`); `ReduceOnPlateau.step(metric)`
there raises, naming the alternative (step it between calls, in eager code).
"""
from __future__ import annotations

import math
import weakref

from ..core import effects

__all__ = ["LRScheduler", "LinearWarmup", "CosineAnnealingDecay", "PiecewiseDecay",
           "LambdaDecay", "MultiplicativeDecay", "StepDecay", "MultiStepDecay",
           "ExponentialDecay", "NaturalExpDecay", "InverseTimeDecay", "NoamDecay",
           "PolynomialDecay", "ReduceOnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "CyclicLR"]


class LRScheduler:
    """Base: subclasses define `get_lr()` from `self.base_lr` and `self.last_epoch`."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number, got "
                            f"{type(learning_rate).__name__}")
        self.base_lr = float(learning_rate)
        self.last_lr = self.base_lr
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._optimizers = []  # weak references to the optimizers that follow this rate
        self.step()

    def __call__(self):
        return self.last_lr

    @property
    def last_lr(self):
        """The current rate; inside a converted function after a traced
        `step()`, the rate that step reaches on each run (lr_step_per_run)."""
        if effects.overlay() is not None:
            from .lr_step_per_run import rate_in_trace
            return rate_in_trace(self, effects.overlay())
        return self._last_lr

    @last_lr.setter
    def last_lr(self, value):
        self._last_lr = value

    def get_lr(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance to the next epoch (or to `epoch`) and recompute `last_lr`.
        Inside a converted function: on every run of its program
        (optimizer.lr_step_per_run)."""
        ov = effects.overlay()
        if ov is not None:
            from .lr_step_per_run import step_on_every_run
            step_on_every_run(self, ov, epoch)
            return
        self._advance(epoch)
        self._notify()

    def _current(self):
        return self._last_lr

    def _advance(self, epoch):
        """The schedule's own numbers move on; returns the new rate."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self.last_lr = float(self.get_lr())
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to "
                  f"{self.last_lr}.")
        return self.last_lr

    def _bind(self, optimizer):
        self._optimizers.append(weakref.ref(optimizer))

    def _notify(self):
        alive = []
        for ref in self._optimizers:
            opt = ref()
            if opt is not None:
                opt._set_rate(self.last_lr)
                alive.append(ref)
        self._optimizers = alive

    # ---- checkpoints ------------------------------------------------------------------
    def state_keys(self):
        self.keys = ["last_epoch", "last_lr"]

    def state_dict(self):
        """The numbers that define where the schedule stands (Paddle's keys)."""
        self.state_keys()
        out = {}
        for key in self.keys:
            value = getattr(self, key)
            out[key] = value
        return out

    def set_state_dict(self, state_dict):
        self.state_keys()
        for key in self.keys:
            if key not in state_dict:
                raise KeyError(f"{type(self).__name__}.set_state_dict: missing key {key!r}")
            setattr(self, key, state_dict[key])
        self._notify()

    set_dict = set_state_dict


def _number(v, where, name):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{where}: {name} must be a number, got {type(v).__name__}")
    return v


class LinearWarmup(LRScheduler):
    """From `start_lr` to `end_lr` linearly over `warmup_steps`, then
    `learning_rate` (a number, or a scheduler that then steps along)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1,
                 verbose=False):
        if not isinstance(learning_rate, (LRScheduler, int, float)):
            raise TypeError("LinearWarmup: learning_rate must be a number or an LRScheduler")
        self.learning_rate = learning_rate
        self.warmup_steps = int(warmup_steps)
        if self.warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be positive, got {warmup_steps}")
        self.start_lr, self.end_lr = float(start_lr), float(end_lr)
        base = learning_rate.last_lr if isinstance(learning_rate, LRScheduler) else learning_rate
        super().__init__(float(base), last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps \
                + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)

    def state_dict(self):
        out = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            out["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict):
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler) and "LinearWarmup_LR" in state_dict:
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])


class CosineAnnealingDecay(LRScheduler):
    """`eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2` (the closed form)."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        if self.T_max <= 0:
            raise ValueError(f"CosineAnnealingDecay: T_max must be positive, got {T_max}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * (
            1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class PiecewiseDecay(LRScheduler):
    """`values[i]` for epochs before `boundaries[i]`, `values[-1]` after the last."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        self.boundaries, self.values = list(boundaries), [float(v) for v in values]
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: needs len(values) == len(boundaries) + 1, got "
                             f"{len(self.values)} values and {len(self.boundaries)} boundaries")
        super().__init__(self.values[0], last_epoch, verbose)

    def get_lr(self):
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class LambdaDecay(LRScheduler):
    """`base * lr_lambda(epoch)`."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("LambdaDecay: lr_lambda must be a function of the epoch")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    """The previous rate times `lr_lambda(epoch)` at each step."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("MultiplicativeDecay: lr_lambda must be a function of the epoch")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch > 0:
            return self.last_lr * self.lr_lambda(self.last_epoch)
        return self.base_lr


class StepDecay(LRScheduler):
    """`base * gamma ** (epoch // step_size)`."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size, self.gamma = int(step_size), float(gamma)
        if self.step_size <= 0 or self.gamma >= 1.0:
            raise ValueError("StepDecay: step_size must be positive and gamma below 1")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    """`base * gamma ** (number of milestones reached)`."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        reached = sum(1 for m in self.milestones if self.last_epoch >= m)
        return self.base_lr * self.gamma ** reached


class ExponentialDecay(LRScheduler):
    """`base * gamma ** epoch`."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "ExponentialDecay", "gamma"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class NaturalExpDecay(LRScheduler):
    """`base * exp(-gamma * epoch)`."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "NaturalExpDecay", "gamma"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """`base / (1 + gamma * epoch)`."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "InverseTimeDecay", "gamma"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class NoamDecay(LRScheduler):
    """`base * d_model ** -0.5 * min(epoch ** -0.5, epoch * warmup_steps ** -1.5)`
    (epoch 0 counts as 1, as Paddle has it)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch = max(self.last_epoch, 1)
        return self.base_lr * self.d_model ** -0.5 * min(epoch ** -0.5,
                                                         epoch * self.warmup_steps ** -1.5)


class PolynomialDecay(LRScheduler):
    """`(base - end_lr) * (1 - epoch / decay_steps) ** power + end_lr`; with `cycle`
    the horizon grows to the next multiple of `decay_steps`."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False,
                 last_epoch=-1, verbose=False):
        self.decay_steps, self.end_lr = int(decay_steps), float(end_lr)
        self.power, self.cycle = float(power), bool(cycle)
        if self.decay_steps <= 0:
            raise ValueError(f"PolynomialDecay: decay_steps must be positive, got {decay_steps}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            div = math.ceil(epoch / steps) if epoch > 0 else 1
            steps = steps * max(div, 1)
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / steps) ** self.power + self.end_lr


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted after `T_0` epochs, each period `T_mult` times longer."""

    def __init__(self, learning_rate, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):
        self.T_0, self.T_mult, self.eta_min = int(T_0), int(T_mult), float(eta_min)
        if self.T_0 <= 0 or self.T_mult < 1:
            raise ValueError("CosineAnnealingWarmRestarts: T_0 must be positive, T_mult >= 1")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t, period = max(self.last_epoch, 0), self.T_0
        if self.T_mult == 1:
            t = t % period
        else:
            while t >= period:
                t -= period
                period *= self.T_mult
        return self.eta_min + (self.base_lr - self.eta_min) * (
            1 + math.cos(math.pi * t / period)) / 2


class OneCycleLR(LRScheduler):
    """Up from `max_learning_rate / divide_factor` to `max_learning_rate` over
    `phase_pct` of `total_steps`, then down to `end_learning_rate` (cosine or
    linear annealing; `three_phase` goes back to the start rate first)."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0,
                 end_learning_rate=0.0001, phase_pct=0.3, anneal_strategy="cos",
                 three_phase=False, last_epoch=-1, verbose=False):
        self.total_steps = int(total_steps)
        initial = float(max_learning_rate) / divide_factor
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self._anneal = anneal_strategy
        up = float(phase_pct * self.total_steps) - 1
        if three_phase:
            self._phases = [(up, initial, float(max_learning_rate)),
                            (2 * up, float(max_learning_rate), initial),
                            (self.total_steps - 1, initial, float(end_learning_rate))]
        else:
            self._phases = [(up, initial, float(max_learning_rate)),
                            (self.total_steps - 1, float(max_learning_rate),
                             float(end_learning_rate))]
        super().__init__(initial, last_epoch, verbose)

    def _interp(self, start, end, pct):
        if self._anneal == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps "
                             f"{self.total_steps}")
        begin = 0.0
        for end_step, start_lr, end_lr in self._phases:
            if step <= end_step or end_step == self._phases[-1][0]:
                pct = (step - begin) / (end_step - begin) if end_step > begin else 1.0
                return self._interp(start_lr, end_lr, min(pct, 1.0))
            begin = end_step
        return self._phases[-1][2]  # pragma: no cover


class ReduceOnPlateau(LRScheduler):
    """Scale the rate by `factor` once the metric given to `step(metrics)` has
    not improved for `patience` epochs (then wait `cooldown` epochs)."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceOnPlateau: mode must be 'min' or 'max', threshold_mode "
                             "'rel' or 'abs'")
        if factor >= 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be below 1, got {factor}")
        self.mode, self.factor, self.patience = mode, float(factor), int(patience)
        self.threshold, self.threshold_mode = float(threshold), threshold_mode
        self.cooldown, self.min_lr, self.epsilon = int(cooldown), float(min_lr), float(epsilon)
        self.best = None
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        _number(learning_rate, "ReduceOnPlateau", "learning_rate")
        self.base_lr = self.last_lr = float(learning_rate)
        self.last_epoch = 0
        self.verbose = verbose
        self._optimizers = []

    def state_keys(self):
        self.keys = ["cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"]

    def _better(self, current, best):
        if self.threshold_mode == "rel":
            delta = best * self.threshold
        else:
            delta = self.threshold
        return current < best - delta if self.mode == "min" else current > best + delta

    def step(self, metrics, epoch=None):
        if effects.overlay() is not None:
            raise RuntimeError("ReduceOnPlateau.step() inside a function converted by "
                               "to_static: call it in eager code between calls")
        current = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
        elif self.best is None or self._better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
            if self.num_bad_epochs > self.patience:
                self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
                new = max(self.last_lr * self.factor, self.min_lr)
                if self.last_lr - new > self.epsilon:
                    self.last_lr = new
                    self._notify()
        if self.best is None:
            self.best = current


class CyclicLR(LRScheduler):
    """Between `base_learning_rate` and `max_learning_rate` over cycles of
    `step_size_up + step_size_down` steps: 'triangular', 'triangular2' (the
    amplitude halves each cycle), 'exp_range' (scaled by `exp_gamma ** step`),
    or a custom `scale_fn` of the cycle or of the step (`scale_mode`)."""

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None,
                 mode="triangular", exp_gamma=1.0, scale_fn=None, scale_mode="cycle",
                 last_epoch=-1, verbose=False):
        up = int(step_size_up)
        down = up if step_size_down is None else int(step_size_down)
        if up <= 0 or down < 0:
            raise ValueError("CyclicLR: step_size_up must be positive, step_size_down >= 0")
        self.max_lr, self.cycle_size = float(max_learning_rate), up + down
        self.step_up_pct = up / self.cycle_size
        if scale_fn is None:
            if mode not in ("triangular", "triangular2", "exp_range"):
                raise ValueError(f"CyclicLR: unknown mode {mode!r}")
            scale_fn = {"triangular": lambda x: 1.0,
                        "triangular2": lambda x: 1 / (2.0 ** (x - 1)),
                        "exp_range": lambda x: exp_gamma ** x}[mode]
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_fn, self.scale_mode = scale_fn, scale_mode
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self):
        it = self.last_epoch
        cycle = 1 + it // self.cycle_size
        pct = 1.0 + it / self.cycle_size - cycle
        scale = pct / self.step_up_pct if pct <= self.step_up_pct else \
            (1 - pct) / (1 - self.step_up_pct)
        amplitude = (self.max_lr - self.base_lr) * scale
        factor = self.scale_fn(cycle if self.scale_mode == "cycle" else it)
        return self.base_lr + amplitude * factor


class LinearLR(LRScheduler):
    """`learning_rate` times a factor going linearly from `start_factor` to
    `end_factor` over `total_steps` steps, then held (PyTorch's LinearLR; its
    closed form, so `step(epoch)` and checkpoints land on the same rates)."""

    def __init__(self, learning_rate, total_steps, start_factor=1.0 / 3, end_factor=1.0,
                 last_epoch=-1, verbose=False):
        if isinstance(total_steps, bool) or int(total_steps) != total_steps or total_steps <= 0:
            raise ValueError(f"LinearLR: total_steps must be a positive int, got {total_steps!r}")
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.total_steps = int(total_steps)
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        t = min(max(self.last_epoch, 0), self.total_steps)
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                               * t / self.total_steps)


__all__ += ["LinearLR"]
