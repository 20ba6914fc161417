"""Relabellings of the hidden states of a state-space model (the HMM adapters): the
permutations that leave the prior unchanged and their action on parameter batches."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np

from .._core.evidence.posteriors import relabelled_mixture

__all__ = ["permute_hmm_blocks", "invariant_state_permutations", "state_alias_posterior"]


def _permute(value, perm, kind, batched):
    """``value`` relabelled so that new state ``k`` is old ``perm[k]``; ``kind`` says
    which axes are state axes: "vector" (K,), "matrix" (K, K) (rows and columns),
    "rows" (K, ...) (the first axis)."""
    axis = 1 if batched else 0
    out = np.take(value, perm, axis=axis)
    if kind == "matrix":
        out = np.take(out, perm, axis=axis + 1)
    return out


def permute_hmm_blocks(params, perm, kinds):
    """A parameter batch (block -> (C, ...) array) with the states relabelled; blocks
    absent from ``kinds`` have no state axis and are kept."""
    perm = np.asarray(perm, dtype=np.int64)
    return {name: (_permute(np.asarray(v), perm, kinds[name], True) if name in kinds else v)
            for name, v in params.items()}


def invariant_state_permutations(K, arrays):
    """The permutations of ``K`` states (tuples, the identity first) under which every
    ``(array, kind)`` of ``arrays`` (prior hyperparameters, unbatched) is unchanged."""
    out = []
    for perm in itertools.permutations(range(int(K))):
        p = np.asarray(perm, dtype=np.int64)
        if all(np.array_equal(_permute(np.asarray(a, dtype=float), p, kind, False), a)
               for a, kind in arrays):
            out.append(perm)
    return out


def state_alias_posterior(model, q=None, max_components=24):
    """Equal-weight mixture of ``q`` (default: ``model``'s fitted q) over
    ``model.alias_permutations()``, each relabelled by ``model.permute_states`` (see
    :func:`~sklearn_vb._core.evidence.posteriors.relabelled_mixture`); a ValueError when the
    ``K!`` state permutations exceed ``max_components`` (checked before enumerating them)."""
    if factorial(model.K) > max_components:
        raise ValueError(f"{factorial(model.K)} state permutations exceed "
                         f"max_components={max_components}.")
    perms = model.alias_permutations()
    q = model.variational_posterior() if q is None else q
    return relabelled_mixture(q, perms, model.permute_states)
