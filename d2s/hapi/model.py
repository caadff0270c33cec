"""`d2s.Model` (Paddle's `paddle.Model`): the high-level train / evaluate /
predict loop around a Layer, a loss, an optimizer and metrics, so that
tutorials and scripts written against `paddle.Model` run unchanged.

With `inputs` (InputSpecs) the network's forward runs converted
(`d2s.jit.to_static(input_spec=inputs)`), as Paddle does in static mode;
the loss, backward and optimizer step stay eager around it. Without
`inputs` everything runs eagerly."""
from __future__ import annotations

import inspect
import os

import numpy as np

from ..core.tensor import Tensor, to_tensor
from ..core.state import no_grad
from ..io import DataLoader, Dataset, IterableDataset
from ..io import load as _load, save as _save
from ..static import InputSpec
from . import callbacks as cbks_mod

__all__ = ["Model"]


def _to_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _to_tensor(x):
    return x if isinstance(x, Tensor) else to_tensor(np.asarray(x))


def _np(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _specs(specs, what):
    specs = _to_list(specs)
    for s in specs:
        if not isinstance(s, InputSpec):
            raise TypeError(f"Model: {what} must be d2s.static.InputSpec objects "
                            f"(InputSpec([None, 784], 'float32', 'x')), got {type(s).__name__}")
    return specs


def _names(metric):
    """A metric's result names: an Accuracy over several k gives one per k
    (`acc_top1`, `acc_top5`, Paddle's names)."""
    names = _to_list(metric.name())
    topk = tuple(getattr(metric, "topk", ()) or ())
    if len(names) == 1 and len(topk) > 1:
        return [f"{names[0]}_top{k}" for k in topk]
    return names


class Model:
    """`Model(network, inputs=None, labels=None)`; call `prepare` before
    training or evaluating."""

    def __init__(self, network, inputs=None, labels=None):
        self.network = network
        self._inputs = _specs(inputs, "inputs")
        self._labels = _specs(labels, "labels")
        self._optimizer, self._loss, self._metrics = None, None, []
        self.stop_training = False
        if self._inputs:
            from ..jit import to_static
            self._forward = to_static(network.forward, input_spec=self._inputs)
        else:
            self._forward = network
        self._n_inputs = len(self._inputs) if self._inputs else self._forward_arity()

    def _forward_arity(self):
        """Inputs a batch feeds the network without InputSpecs: forward's
        positional parameters without defaults (Paddle's rule)."""
        try:
            sig = inspect.signature(self.network.forward)
        except (TypeError, ValueError):
            return 1
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        n = sum(1 for p in sig.parameters.values()
                if p.kind in kinds and p.default is inspect.Parameter.empty)
        return max(n, 1)

    # -- setup ------------------------------------------------------------------
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        if amp_configs not in (None, "O0") and not (
                isinstance(amp_configs, dict) and amp_configs.get("level", "O0") == "O0"):
            raise NotImplementedError(
                "Model.prepare: amp_configs is not supported by d2s.Model; pass None and "
                "wrap the forward in d2s.amp.auto_cast yourself")
        if loss is not None and not callable(loss):
            raise TypeError("Model.prepare: loss must be callable (a d2s.nn loss Layer or "
                            f"a function), got {type(loss).__name__}")
        metrics = _to_list(metrics)
        for m in metrics:
            if not all(hasattr(m, a) for a in ("compute", "update", "accumulate", "reset",
                                                "name")):
                raise TypeError(f"Model.prepare: metric {type(m).__name__} is not a "
                                "d2s.metric.Metric (needs compute/update/accumulate/reset/name)")
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics

    def parameters(self, *args, **kwargs):
        return self.network.parameters(*args, **kwargs)

    def _metric_names(self):
        names = []
        for m in self._metrics:
            names.extend(_names(m))
        return names

    # -- one batch --------------------------------------------------------------
    def _run(self, inputs):
        outs = self._forward(*[_to_tensor(x) for x in _to_list(inputs)])
        return _to_list(outs)

    def _losses(self, outputs, labels):
        if self._loss is None:
            raise RuntimeError("Model: no loss; call model.prepare(optimizer, loss=...) first")
        return _to_list(self._loss(*(outputs + labels)))

    def _update_metrics(self, outputs, labels):
        results = []
        for m in self._metrics:
            res = m.update(*_to_list(m.compute(*(outputs + labels))))
            results.append(res)
        return results

    def train_batch(self, inputs, labels=None, update=True):
        """One optimizer step on a batch; returns [loss] (numpy), or
        ([loss], metric results) when metrics were prepared."""
        if self._optimizer is None:
            raise RuntimeError("Model.train_batch: no optimizer; call "
                               "model.prepare(optimizer=..., loss=...) first")
        self.network.train()
        labels = [_to_tensor(y) for y in _to_list(labels)]
        outputs = self._run(inputs)
        losses = self._losses(outputs, labels)
        total = losses[0]
        for extra in losses[1:]:
            total = total + extra
        total.backward()
        if update:
            self._optimizer.step()
            self._optimizer.clear_grad()
        metrics = self._update_metrics(outputs, labels)
        loss_np = [_np(l) for l in losses]
        return (loss_np, metrics) if self._metrics else loss_np

    def eval_batch(self, inputs, labels=None):
        """Loss (when a loss was prepared) and metric updates on a batch, no step."""
        self.network.eval()
        labels = [_to_tensor(y) for y in _to_list(labels)]
        with no_grad():
            outputs = self._run(inputs)
            losses = self._losses(outputs, labels) if self._loss is not None else []
            metrics = self._update_metrics(outputs, labels)
        loss_np = [_np(l) for l in losses]
        return (loss_np, metrics) if self._metrics else loss_np

    def predict_batch(self, inputs):
        """The network's outputs on a batch, as a list of numpy arrays."""
        self.network.eval()
        with no_grad():
            return [_np(o) for o in self._run(inputs)]

    # -- loops ------------------------------------------------------------------
    def _loader(self, data, batch_size, shuffle, drop_last, num_workers, what):
        if data is None or isinstance(data, DataLoader):
            return data
        if isinstance(data, Dataset):
            return DataLoader(data, batch_size=batch_size,
                              shuffle=shuffle and not isinstance(data, IterableDataset),
                              drop_last=drop_last, num_workers=num_workers)
        raise TypeError(f"Model.{what}: data must be a d2s.io.Dataset or d2s.io.DataLoader, "
                        f"got {type(data).__name__}")

    def _split(self, batch, with_labels=True):
        batch = _to_list(batch)
        n = self._n_inputs
        if len(batch) < n:
            raise ValueError(f"Model: a batch has {len(batch)} fields but the network takes "
                             f"{n} inputs; the dataset's samples must be (inputs..., labels...)")
        return batch[:n], (batch[n:] if with_labels else [])

    def _logs(self, outs):
        if self._metrics:
            losses, metrics = outs
        else:
            losses, metrics = outs, []
        logs = {}
        if losses:
            logs["loss"] = [float(np.asarray(l).reshape(-1)[0]) for l in losses]
        for m in self._metrics:
            for name, value in zip(_names(m), _to_list(m.accumulate())):
                logs[name] = value
        return logs

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1,
            log_freq=10, save_dir=None, save_freq=1, verbose=2, drop_last=False,
            shuffle=True, num_workers=0, callbacks=None, accumulate_grad_batches=1,
            num_iters=None):
        """Train for `epochs` over `train_data` (a Dataset, batched with
        `batch_size`/`shuffle`/`drop_last`, or a DataLoader used as is),
        evaluating on `eval_data` every `eval_freq` epochs and saving to
        `save_dir` every `save_freq` epochs (and `save_dir/final`)."""
        if train_data is None:
            raise ValueError("Model.fit: train_data is required")
        loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers, "fit")
        eval_loader = self._loader(eval_data, batch_size, False, False, num_workers, "fit")
        try:
            steps = len(loader)
        except TypeError:
            steps = None
        cbks = cbks_mod.config_callbacks(callbacks, self, epochs=epochs, steps=steps,
                                         log_freq=log_freq, verbose=verbose,
                                         save_freq=save_freq, save_dir=save_dir,
                                         metrics=self._metric_names())
        acc = max(int(accumulate_grad_batches), 1)
        self.stop_training, iters = False, 0
        cbks.on_train_begin()
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            for m in self._metrics:
                m.reset()
            logs = {}
            for step, batch in enumerate(loader):
                cbks.on_train_batch_begin(step)
                inputs, labels = self._split(batch)
                last = steps is not None and step + 1 == steps
                outs = self.train_batch(inputs, labels,
                                        update=(step + 1) % acc == 0 or last)
                logs = self._logs(outs)
                logs.update(step=step, batch_size=len(_np(inputs[0])))
                cbks.on_train_batch_end(step, logs)
                iters += 1
                if num_iters is not None and iters >= num_iters:
                    self.stop_training = True
                    break
            cbks.on_epoch_end(epoch, logs)
            if eval_loader is not None and (epoch + 1) % eval_freq == 0:
                self._evaluate(eval_loader, cbks)
            if self.stop_training:
                break
        cbks.on_train_end(logs)

    def _evaluate(self, loader, cbks):
        for m in self._metrics:
            m.reset()
        cbks.on_eval_begin()
        logs = {}
        for step, batch in enumerate(loader):
            cbks.on_eval_batch_begin(step)
            inputs, labels = self._split(batch)
            logs = self._logs(self.eval_batch(inputs, labels))
            cbks.on_eval_batch_end(step, logs)
        cbks.on_eval_end(logs)
        return logs

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0,
                 callbacks=None, num_samples=None):
        """{'loss': [the last batch's loss], metric name: accumulated value
        over the whole data} (Paddle's result)."""
        loader = self._loader(eval_data, batch_size, False, False, num_workers, "evaluate")
        cbks = cbks_mod.config_callbacks(callbacks, self, log_freq=log_freq, verbose=verbose,
                                         metrics=self._metric_names(), mode="eval")
        return self._evaluate(loader, cbks)

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False,
                verbose=1, callbacks=None):
        """One list per network output, of each batch's numpy output; with
        `stack_outputs` each list is concatenated into one array. A sample's
        fields beyond the network's inputs (labels) are ignored."""
        loader = self._loader(test_data, batch_size, False, False, num_workers, "predict")
        cbks = cbks_mod.config_callbacks(callbacks, self, verbose=0, mode="predict")
        cbks.on_predict_begin()
        outputs = []
        for step, batch in enumerate(loader):
            cbks.on_predict_batch_begin(step)
            inputs, _ = self._split(batch, with_labels=False)
            outs = self.predict_batch(inputs)
            if not outputs:
                outputs = [[] for _ in outs]
            for acc, o in zip(outputs, outs):
                acc.append(o)
            cbks.on_predict_batch_end(step, {"batch_size": len(_np(inputs[0]))})
        cbks.on_predict_end()
        if stack_outputs:
            outputs = [np.concatenate(o, axis=0) for o in outputs]
        return outputs

    # -- persistence ------------------------------------------------------------
    def save(self, path, training=True):
        """`training=True`: `path.pdparams` (the network's state) and
        `path.pdopt` (the optimizer's, when prepared). `training=False`: an
        inference model via `d2s.jit.save`, which needs `inputs`."""
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if training:
            _save(self.network.state_dict(), path + ".pdparams")
            if self._optimizer is not None:
                _save(self._optimizer.state_dict(), path + ".pdopt")
            return
        if not self._inputs:
            raise ValueError("Model.save(training=False): the inference model needs input "
                             "shapes; build Model(network, inputs=[InputSpec(...)])")
        from ..jit import save as jit_save
        jit_save(self.network, path, input_spec=self._inputs)

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Restore `path.pdparams` (and `path.pdopt` when it exists and an
        optimizer is prepared, unless `reset_optimizer`)."""
        params = _load(path + ".pdparams")
        if skip_mismatch:
            own = self.network.state_dict()
            params = {k: v for k, v in params.items()
                      if k in own and tuple(np.shape(_np(v))) == tuple(own[k].shape)}
        self.network.set_state_dict(params)
        opt_path = path + ".pdopt"
        if self._optimizer is not None and not reset_optimizer and os.path.exists(opt_path):
            self._optimizer.set_state_dict(_load(opt_path))

    def summary(self, input_size=None, dtype=None):
        """`d2s.summary` of the network; `input_size` defaults to the
        `inputs` specs' shapes."""
        from ..summary import summary
        if input_size is None:
            if not self._inputs:
                raise ValueError("Model.summary: give input_size, or build the Model with "
                                 "inputs=[InputSpec(...)]")
            shapes = [tuple(s.shape) for s in self._inputs]
            input_size = shapes[0] if len(shapes) == 1 else shapes
            dtype = dtype or [str(s.dtype) for s in self._inputs][0]
        return summary(self.network, input_size, dtypes=dtype)
