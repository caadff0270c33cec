"""Probability distributions (PaddlePaddle's `paddle.distribution`): sampling,
log densities, entropies and KL divergences built from d2s ops, so they run
eagerly and inside converted code on every backend."""
from .categorical import Categorical, Multinomial
from .discrete import Bernoulli, Binomial, Geometric, Poisson
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .simple import Cauchy, Exponential, Gumbel, Laplace
from .transform import AffineTransform, ExpTransform, SigmoidTransform, TanhTransform, Transform
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "LogNormal", "Uniform", "Categorical", "Multinomial",
           "Bernoulli", "Binomial", "Geometric", "Poisson", "Beta", "Dirichlet", "Gamma",
           "Laplace", "Gumbel", "Cauchy", "Exponential", "MultivariateNormal", "Independent",
           "TransformedDistribution", "Transform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "kl_divergence", "register_kl"]
