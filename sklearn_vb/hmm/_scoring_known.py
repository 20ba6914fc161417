"""Known states (``states=``, -1 unknown) in the scoring models of the HMM.

A fit with known states bounds ``ln p(X, known states)``: its q(s) is clamped at the
known frames (:mod:`sklearn_vb.hmm._clamp`).  The evidence scores of such a model
estimate the same quantity, ``ln int p(theta) p(X, s_t = k_t for the known t | theta)
dtheta``: every likelihood, E step and complete-data term sums over the state paths that
agree with the known states only.  As in the estimator this is a mask on the emission
weights, which the forward recursion turns into zero probability for the other paths:

* per-frame tables (continuous emissions, :class:`~sklearn_vb.hmm._state.HMMSequences`):
  the other states of a known frame get ``-inf`` (:func:`clamp_frames`);
* symbol-indexed emission rows (categorical emissions,
  :class:`~sklearn_vb.hmm._state.SymbolSequences`): a known frame reads an extra column
  of its own, the column of its symbol with every other state's weight 0, one extra
  column per (symbol, known state) pair (:func:`clamped_columns`,
  :func:`extend_emissions`); its counts fold back onto the symbol's column.
"""

from __future__ import annotations

import numpy as np

from .emissions._base import forward_on_tables

__all__ = ["clamp_frames", "clamped_columns", "consistent_paths", "extend_emissions",
           "forward_on_tables", "known_or_none", "random_consistent_completion"]


def known_or_none(known):
    """``known`` (-1 unknown) as an int64 array when some state is known, else None."""
    if known is None:
        return None
    known = np.asarray(known, dtype=np.int64)
    return known if np.any(known >= 0) else None


def clamp_frames(table, known):
    """The per-frame log emission table(s) ``table`` (..., T, K) with the other states
    of every known frame at ``-inf`` (a copy; ``table`` itself when ``known`` is None)."""
    if known is None:
        return table
    frames = np.flatnonzero(known >= 0)
    states = known[frames]
    out = np.array(table, dtype=float, copy=True)
    allowed = out[..., frames, states]
    out[..., frames, :] = -np.inf
    out[..., frames, states] = allowed
    return out


def clamped_columns(symbols, known, n_columns, K):
    """``(columns, column_symbol, column_state)``: the emission column every frame reads
    when the frames of ``known`` read columns of their own after the ``n_columns``
    ordinary ones, one per (symbol, known state) pair, and the symbol and the state of
    each extra column."""
    frames = np.flatnonzero(known >= 0)
    pairs, inverse = np.unique(symbols[frames] * K + known[frames], return_inverse=True)
    columns = np.array(symbols, dtype=np.int64, copy=True)
    columns[frames] = n_columns + np.asarray(inverse).ravel()
    return columns, pairs // K, pairs % K


def extend_emissions(B, column_symbol, column_state):
    """Emission weights ``B`` (..., K, V') with the extra columns appended: column ``j``
    is ``B[..., :, column_symbol[j]]`` with every state but ``column_state[j]`` at 0."""
    K = B.shape[-2]
    keep = np.arange(K)[:, None] == column_state[None, :]
    return np.concatenate([B, B[..., :, column_symbol] * keep], axis=-1)


def random_consistent_completion(known, K, n, rng):
    """A uniformly random state for every frame, the known state at a known frame."""
    Z = rng.integers(0, K, size=n)
    return Z if known is None else np.where(known >= 0, known, Z)


def consistent_paths(paths, known):
    """The rows of ``paths`` (M, T) that agree with the known states."""
    if known is None:
        return paths
    frames = np.flatnonzero(known >= 0)
    return paths[np.all(paths[:, frames] == known[frames], axis=1)]
