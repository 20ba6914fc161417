"""Relabellings of the hidden states of a state-space model (the HMM adapters): the
permutations that leave the prior unchanged and their action on parameter batches."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["permute_hmm_blocks", "invariant_state_permutations"]


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
