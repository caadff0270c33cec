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

__all__ = ["transform", "Distribution", "ExponentialFamily",
           # continuous
           "Normal", "LogNormal", "Uniform", "Laplace", "Gumbel", "Cauchy", "Exponential",
           "Gamma", "Chi2", "Beta", "Dirichlet", "StudentT", "ContinuousBernoulli",
           "MultivariateNormal", "LKJCholesky",
           # discrete
           "Bernoulli", "Categorical", "Multinomial", "Binomial", "Geometric", "Poisson",
           # combinators and transforms
           "Independent", "TransformedDistribution", "Transform", "AbsTransform",
           "AffineTransform", "ChainTransform", "ExpTransform", "IndependentTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "StackTransform", "StickBreakingTransform", "TanhTransform",
           # KL divergence
           "kl_divergence", "register_kl"]
