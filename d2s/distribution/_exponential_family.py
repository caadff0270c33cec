"""ExponentialFamily: densities h(x) exp(<theta, T(x)> - F(theta)). A
subclass gives `_natural_parameters` (a tuple of tensors), `_log_normalizer(*theta)`
and `_mean_carrier_measure` (E[log h(X)]); the entropy is then the Bregman
divergence form F(theta) - <theta, grad F(theta)> - E[log h], with grad F
from d2s's eager autograd (eager only: inside converted code, override
`entropy` with the closed form)."""
from __future__ import annotations

from ..core import ops as _ops
from ..core.grad_api import grad as _grad
from ._distribution import Distribution


class ExponentialFamily(Distribution):

    @property
    def _natural_parameters(self):
        raise NotImplementedError(f"{type(self).__name__}: define _natural_parameters")

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError(f"{type(self).__name__}: define _log_normalizer")

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError(f"{type(self).__name__}: define _mean_carrier_measure")

    def entropy(self):
        from ..core.tensor import Tensor
        thetas = [_ops.detach(t) for t in self._natural_parameters]
        for t in thetas:
            if not isinstance(t, Tensor):
                raise NotImplementedError(
                    f"{type(self).__name__}.entropy: the Bregman form needs eager tensors; in "
                    "converted code override entropy() with its closed form")
            t.stop_gradient = False
        log_norm = self._log_normalizer(*thetas)
        grads = _grad(_ops.sum(log_norm), thetas, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for t, g in zip(thetas, grads):
            result = result - t * g
        return result
