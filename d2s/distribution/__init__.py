"""Probability distributions (PaddlePaddle's `paddle.distribution`): sampling,
log densities, entropies and KL divergences built from d2s ops, so they run
eagerly and inside converted code on every backend. The package lists its
API only (as Paddle's module does): the families live in private modules,
the transforms also in `d2s.distribution.transform`."""
from ._categorical import Categorical, Multinomial
from ._discrete import Bernoulli, Binomial, Geometric, Poisson
from ._distribution import Distribution
from ._continuous_bernoulli import ContinuousBernoulli
from ._exponential_family import ExponentialFamily
from ._gamma import Beta, Chi2, Dirichlet, Gamma
from ._independent import Independent
from ._kl import kl_divergence, register_kl
from ._lkj_cholesky import LKJCholesky
from ._multivariate_normal import MultivariateNormal
from ._normal import LogNormal, Normal
from ._simple import Cauchy, Exponential, Gumbel, Laplace
from ._studentt import StudentT
from . import transform  # noqa: F401  (paddle.distribution.transform)
from .transform import (AbsTransform, AffineTransform, ExpTransform, PowerTransform,
                        SigmoidTransform, TanhTransform, Transform)
from ._transform_structured import (ChainTransform, IndependentTransform, ReshapeTransform,
                                   SoftmaxTransform, StackTransform, StickBreakingTransform)
from ._transformed_distribution import TransformedDistribution
from ._uniform import Uniform

__all__ = ["transform", "Distribution", "Normal", "LogNormal", "Uniform", "Categorical", "Multinomial",
           "Bernoulli", "Binomial", "Geometric", "Poisson", "Beta", "Dirichlet", "Gamma",
           "Laplace", "Gumbel", "Cauchy", "Exponential", "MultivariateNormal", "Independent",
           "TransformedDistribution", "Transform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "kl_divergence", "register_kl", "Chi2",
           "StudentT", "ContinuousBernoulli", "ExponentialFamily", "AbsTransform",
           "PowerTransform", "ChainTransform", "IndependentTransform", "ReshapeTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "LKJCholesky"]
