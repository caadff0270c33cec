"""d2s.distribution and d2s.distribution.transform list their API only
(`dir()` == `__all__`, as the other API namespaces), with PaddlePaddle's
names, and kl_divergence is reachable the ways Paddle code reaches it."""
import inspect

import pytest

import d2s
import d2s.distribution as D
import d2s.distribution.transform as T

# paddle.distribution's distributions, kl functions and transforms
PADDLE_NAMES = {
    "Distribution", "ExponentialFamily", "Bernoulli", "Beta", "Binomial", "Categorical",
    "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet", "Exponential", "Gamma", "Geometric",
    "Gumbel", "Independent", "Laplace", "LogNormal", "Multinomial", "MultivariateNormal",
    "Normal", "Poisson", "StudentT", "TransformedDistribution", "Uniform", "kl_divergence",
    "register_kl", "Transform", "AbsTransform", "AffineTransform", "ChainTransform",
    "ExpTransform", "IndependentTransform", "PowerTransform", "ReshapeTransform",
    "SigmoidTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
    "TanhTransform", "LKJCholesky"}


@pytest.mark.parametrize("mod", [D, T], ids=lambda m: m.__name__)
def test_dir_lists_the_api_only(mod):
    public = {n for n in dir(mod) if not n.startswith("_")}
    assert public == set(mod.__all__), sorted(public ^ set(mod.__all__))
    for name in mod.__all__:
        obj = getattr(mod, name)
        assert inspect.ismodule(obj) or callable(obj), f"{mod.__name__}.{name}"


def test_paddle_names():
    assert PADDLE_NAMES <= set(D.__all__)
    assert set(T.__all__) <= set(D.__all__)
    assert d2s.distribution is D and D.transform is T
    p, q = D.Normal(0.0, 1.0), D.Normal(1.0, 2.0)
    assert float(D.kl_divergence(p, q)) == float(p.kl_divergence(q))
