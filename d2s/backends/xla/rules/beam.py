"""XLA rule of `gather_tree` (`d2s/core/ops/beam_ops.py`): a reverse scan over
time carrying each beam's current ancestor."""
from __future__ import annotations

from ....core.registry import lowers


@lowers("xla", "gather_tree")
def _gather_tree(ns, ids, parents):
    jnp, lax = ns.jnp, ns.lax
    start = jnp.broadcast_to(jnp.arange(ids.shape[2], dtype=parents.dtype), ids.shape[1:])

    def step(beam, xs):
        ids_t, parents_t = xs
        return (jnp.take_along_axis(parents_t, beam, axis=1),
                jnp.take_along_axis(ids_t, beam, axis=1))

    _, out = lax.scan(step, start, (ids, parents), reverse=True)
    return out
