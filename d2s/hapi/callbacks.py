"""`d2s.callbacks` (Paddle's `paddle.callbacks`): hooks `Model.fit`,
`evaluate` and `predict` call around epochs and batches, so that logging,
checkpoints, early stopping and learning-rate schedules stay outside the
training loop, as ported scripts expect."""
from __future__ import annotations

import numbers
import os

import numpy as np

__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "EarlyStopping",
           "LRScheduler", "config_callbacks"]


class Callback:
    """The protocol: every hook is a no-op, a subclass overrides the ones it
    needs. `self.model` is the `d2s.Model`, `self.params` the run's settings
    (epochs, steps, verbose, metrics)."""

    def __init__(self):
        self.model, self.params = None, {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_eval_begin(self, logs=None): pass
    def on_eval_end(self, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, step, logs=None): pass
    def on_train_batch_end(self, step, logs=None): pass
    def on_eval_batch_begin(self, step, logs=None): pass
    def on_eval_batch_end(self, step, logs=None): pass
    def on_predict_batch_begin(self, step, logs=None): pass
    def on_predict_batch_end(self, step, logs=None): pass


def _fmt(logs, keys):
    parts = []
    for k in keys:
        if k not in logs:
            continue
        v = logs[k]
        v = v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v
        parts.append(f"{k}: {v:.4f}" if isinstance(v, numbers.Real) else f"{k}: {v}")
    return " - ".join(parts)


class ProgBarLogger(Callback):
    """Prints the loss and metrics: every `log_freq` steps with verbose=2...
    (Paddle prints per step with 2, per epoch with 1; 0 prints nothing)."""

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.log_freq, self.verbose = int(log_freq), int(verbose)

    def _keys(self):
        return ["loss"] + list(self.params.get("metrics", []))

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if self.verbose:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs')}")

    def on_train_batch_end(self, step, logs=None):
        if self.verbose == 2 and (step + 1) % self.log_freq == 0:
            print(f"step {step + 1}/{self.params.get('steps')} - "
                  f"{_fmt(logs or {}, self._keys())}")

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose == 1:
            print(f"step {self.params.get('steps')} - {_fmt(logs or {}, self._keys())}")

    def on_eval_end(self, logs=None):
        if self.verbose:
            print(f"Eval - {_fmt(logs or {}, self._keys())}")


class ModelCheckpoint(Callback):
    """Saves the model (`Model.save`, training state) to `save_dir/<epoch>`
    every `save_freq` epochs and to `save_dir/final` when training ends."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        self.save_freq, self.save_dir = int(save_freq), save_dir

    def on_epoch_end(self, epoch, logs=None):
        if self.save_dir and (epoch + 1) % self.save_freq == 0:
            self.model.save(os.path.join(self.save_dir, str(epoch)))

    def on_train_end(self, logs=None):
        if self.save_dir:
            self.model.save(os.path.join(self.save_dir, "final"))


class LRScheduler(Callback):
    """Steps the optimizer's learning-rate scheduler after each batch
    (`by_step`) or each epoch (`by_epoch`); nothing when its rate is a float."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step == by_epoch:
            raise ValueError("LRScheduler: choose exactly one of by_step and by_epoch")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _step(self):
        opt = getattr(self.model, "_optimizer", None)
        sched = getattr(opt, "_scheduler", None)
        if sched is not None:
            sched.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            self._step()

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            self._step()


class EarlyStopping(Callback):
    """Stops `fit` (sets `model.stop_training`) when the evaluated `monitor`
    has not improved by `min_delta` for `patience` evaluations; with
    `save_best_model` the best model is saved to `save_dir/best_model`.
    It reads the evaluation logs, so `fit` needs `eval_data`."""

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0,
                 baseline=None, save_best_model=True):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.monitor, self.mode, self.patience = monitor, mode, int(patience)
        self.verbose, self.min_delta = verbose, abs(float(min_delta))
        self.baseline, self.save_best_model = baseline, save_best_model

    def _better(self, a, b):
        return a < b - self.min_delta if self.mode == "min" else a > b + self.min_delta

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch = 0, 0
        self.best = self.baseline if self.baseline is not None else (
            np.inf if self.mode == "min" else -np.inf)

    def on_eval_end(self, logs=None):
        if not logs or self.monitor not in logs:
            raise KeyError(f"EarlyStopping: monitor {self.monitor!r} is not among the "
                           f"evaluation results {sorted(logs or {})}; monitor 'loss' or a "
                           "metric's name")
        value = logs[self.monitor]
        value = float(np.asarray(value).reshape(-1)[0])
        if self._better(value, self.best):
            self.best, self.wait = value, 0
            save_dir = self.params.get("save_dir")
            if self.save_best_model and save_dir:
                self.model.save(os.path.join(save_dir, "best_model"))
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.model.stop_training = True
                if self.verbose:
                    print(f"EarlyStopping: {self.monitor} did not improve for "
                          f"{self.wait} evaluations; stopping")


def config_callbacks(callbacks, model, epochs=None, steps=None, log_freq=10, verbose=2,
                     save_freq=1, save_dir=None, metrics=None, mode="train"):
    """The run's callback list: the user's, plus a ProgBarLogger, a
    ModelCheckpoint and (training) an LRScheduler by_step where none given."""
    if callbacks is None:
        cbks = []
    elif isinstance(callbacks, Callback):
        cbks = [callbacks]
    else:
        cbks = list(callbacks)
    for c in cbks:
        if not isinstance(c, Callback):
            raise TypeError(f"callbacks: {type(c).__name__} is not a d2s.callbacks.Callback; "
                            "subclass Callback and override its on_* hooks")
    if not any(isinstance(c, ProgBarLogger) for c in cbks):
        cbks.insert(0, ProgBarLogger(log_freq, verbose=verbose))
    if mode == "train":
        if not any(isinstance(c, ModelCheckpoint) for c in cbks):
            cbks.append(ModelCheckpoint(save_freq, save_dir))
        if not any(isinstance(c, LRScheduler) for c in cbks):
            cbks.append(LRScheduler())
    params = {"epochs": epochs, "steps": steps, "verbose": verbose, "metrics": metrics or [],
              "save_dir": save_dir}
    for c in cbks:
        c.set_model(model)
        c.set_params(params)
    return CallbackList(cbks)


class CallbackList:
    """Calls one hook on every callback in order."""

    def __init__(self, callbacks):
        self.callbacks = callbacks

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call(*args, **kwargs):
            for c in self.callbacks:
                getattr(c, hook)(*args, **kwargs)
        return call
