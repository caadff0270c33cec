"""KL(p || q) dispatch: `register_kl(P, Q)` registers a closed form for a
pair of distribution types; `kl_divergence(p, q)` picks the most specific
registered pair for type(p), type(q) (the smallest total distance along the
two MROs; a tie between different rules is ambiguous and raises)."""
from __future__ import annotations

_TABLE = {}


def register_kl(cls_p, cls_q):
    """Decorator: `fn(p, q)` computes KL(p || q) for p a `cls_p`, q a `cls_q`."""
    from ._distribution import Distribution
    for c in (cls_p, cls_q):
        if not (isinstance(c, type) and issubclass(c, Distribution)):
            raise TypeError(f"register_kl: {c!r} is not a Distribution subclass")

    def decorator(fn):
        _TABLE[cls_p, cls_q] = fn
        return fn
    return decorator


def _dispatch(tp, tq):
    matches = sorted(
        ((tp.__mro__.index(cp) + tq.__mro__.index(cq), fn)
         for (cp, cq), fn in _TABLE.items() if issubclass(tp, cp) and issubclass(tq, cq)),
        key=lambda m: m[0])
    if not matches:
        return None
    if len(matches) > 1 and matches[1][0] == matches[0][0] and matches[1][1] is not matches[0][1]:
        raise NotImplementedError(
            f"kl_divergence: more than one rule matches ({tp.__name__}, {tq.__name__}) "
            "equally well; register_kl the exact pair to choose")
    return matches[0][1]


def kl_divergence(p, q):
    """KL(p || q) elementwise over the batch (Paddle's `paddle.distribution.kl_divergence`)."""
    from . import _kl_rules  # noqa: F401  (registers the closed forms)
    fn = _dispatch(type(p), type(q))
    if fn is None:
        raise NotImplementedError(
            f"kl_divergence: no closed form for ({type(p).__name__}, {type(q).__name__}); "
            "register one with d2s.distribution.register_kl, or estimate it by Monte Carlo: "
            "(p.log_prob(x) - q.log_prob(x)).mean(0) with x = p.sample([n])")
    return fn(p, q)
