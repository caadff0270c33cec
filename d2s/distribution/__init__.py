"""Probability distributions (PaddlePaddle's `paddle.distribution`): sampling,
log densities, entropies and KL divergences built from d2s ops, so they run
eagerly and inside converted code on every backend."""
from .categorical import Categorical, Multinomial
from .discrete import Bernoulli, Binomial, Geometric, Poisson
from .distribution import Distribution
from .continuous_bernoulli import ContinuousBernoulli
from .exponential_family import ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import LogNormal, Normal
from .simple import Cauchy, Exponential, Gumbel, Laplace
from .studentt import StudentT
from . import transform  # noqa: F401  (paddle.distribution.transform)
from .transform import (AbsTransform, AffineTransform, ExpTransform, PowerTransform,
                        SigmoidTransform, TanhTransform, Transform)
from .transform_structured import (ChainTransform, IndependentTransform, ReshapeTransform,
                                   SoftmaxTransform, StackTransform, StickBreakingTransform)
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "LogNormal", "Uniform", "Categorical", "Multinomial",
           "Bernoulli", "Binomial", "Geometric", "Poisson", "Beta", "Dirichlet", "Gamma",
           "Laplace", "Gumbel", "Cauchy", "Exponential", "MultivariateNormal", "Independent",
           "TransformedDistribution", "Transform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "kl_divergence", "register_kl", "Chi2",
           "StudentT", "ContinuousBernoulli", "ExponentialFamily", "AbsTransform",
           "PowerTransform", "ChainTransform", "IndependentTransform", "ReshapeTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform"]
