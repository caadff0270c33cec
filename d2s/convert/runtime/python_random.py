"""`np.random.beta(a, a)`, `random.random()`, `self.rng.normal()` ... called
by converted code while `to_static` traces: an op drawing again on every run
(core.ops.python_draws), not a number drawn once and frozen into the
program. The generators drawn so: the module-level ones, and those the
caller held before the trace (an attribute of `self`, an argument, a
closure cell or global, or inside their containers: `generators_held`).
Eager calls (no trace), draws whose arguments hold tensors and generators
the code makes itself during the call are Python's own calls (eagerly such
a generator starts afresh on every call)."""
from __future__ import annotations

import contextlib
import functools
import random
import threading

import numpy as np

# The methods of a generator that draw numbers (not its state methods, nor
# those shuffling a list in place or returning lists).
_DRAWS = frozenset((
    # random.Random
    "random", "uniform", "randint", "randrange", "gauss", "normalvariate",
    "lognormvariate", "expovariate", "betavariate", "gammavariate", "triangular",
    "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits", "choice", "binomialvariate",
    # numpy RandomState / Generator
    "rand", "randn", "random_sample", "ranf", "sample", "normal", "standard_normal", "beta",
    "gamma", "binomial", "poisson", "exponential", "integers", "permutation", "laplace",
    "lognormal", "geometric", "multinomial", "dirichlet", "standard_gamma", "standard_cauchy",
    "standard_t", "chisquare", "logistic", "gumbel", "rayleigh", "vonmises", "wald", "weibull",
    "zipf", "pareto", "power", "hypergeometric", "negative_binomial", "multivariate_normal",
    "standard_exponential", "random_integers"))


def _global_generators():
    """The module-level generators (`random.random`, `np.random.beta` are
    their methods). A generator the code makes itself (`np.random.
    RandomState(0)` inside the function) is left to Python: eagerly it starts
    afresh on every call, which a draw continuing its stream would not."""
    return (random._inst, np.random.mtrand._rand)


_GENERATORS = (random.Random, np.random.RandomState, np.random.Generator)
_held = threading.local()   # .ids: generators the caller held before the trace


def is_generator(value):
    """A random generator whose draws d2s can replay per run."""
    return isinstance(value, _GENERATORS)


@contextlib.contextmanager
def generators_held(ids):
    """While a trace runs: `ids` are the generators the caller held before it
    (`self.rng`, an argument, a global): their draws continue their stream
    on every run, as eagerly, like the module-level generators'."""
    before = getattr(_held, "ids", None)
    _held.ids = frozenset(ids)
    try:
        yield
    finally:
        _held.ids = before


def _drawn_per_run(owner):
    if any(owner is g for g in _global_generators()):
        return True
    held = getattr(_held, "ids", None)
    return held is not None and id(owner) in held and is_generator(owner)


def draw_call(f):
    """A call drawing on every run for `f`, when `f` is a drawing method of
    a module-level generator or of one the caller held before the trace, and
    a `to_static` trace is being built; else None (converted code calls `f`
    itself)."""
    owner = getattr(f, "__self__", None)
    if (owner is None or getattr(f, "__name__", None) not in _DRAWS
            or not _drawn_per_run(owner)):
        return None
    from d2s.core import effects
    if effects.overlay() is None:
        return None
    return functools.partial(_draw, f, owner)


def _draw(f, owner, *args, **kwargs):
    from d2s.core.dispatch import Symbolic
    from d2s.core.tensor import Tensor
    if any(isinstance(a, (Symbolic, Tensor)) for a in list(args) + list(kwargs.values())):
        return f(*args, **kwargs)   # Python's own call (its errors too)
    state = _get_state(owner)
    example = f(*args, **kwargs)
    if not _numeric(example):
        return example              # a list item that is no number: drawn now, as Python
    _set_state(owner, state)        # the program draws it, from the same state
    from d2s.core.ops.python_draws import python_draw
    out = python_draw(f, args, kwargs, example)
    if isinstance(example, (int, float)) and not isinstance(example, bool):
        out.weak = True             # a Python number: next to a tensor it takes its dtype
    return out


def _numeric(v):
    if isinstance(v, (bool, int, float, np.number, np.bool_)):
        return True
    return isinstance(v, np.ndarray) and v.dtype.kind in "biuf"


def _get_state(owner):
    if isinstance(owner, random.Random):
        return owner.getstate()
    if isinstance(owner, np.random.RandomState):
        return owner.get_state()
    return owner.bit_generator.state


def _set_state(owner, state):
    if isinstance(owner, random.Random):
        owner.setstate(state)
    elif isinstance(owner, np.random.RandomState):
        owner.set_state(state)
    else:
        owner.bit_generator.state = state
