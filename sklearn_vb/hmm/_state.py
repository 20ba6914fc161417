"""The typed state of an HMM fit and of its scoring models: hyperparameter triples of
q(theta) and p(theta), expected statistics of q(s), and the prepared sequences that the
scoring models pass between their methods.

The emission part of each is the emission family's own dataclass
(:mod:`sklearn_vb.hmm.emissions`: e.g. ``GaussianPosterior``, ``GaussianStats``).
Parameter batches of the scoring layer stay dicts of named blocks (the
:class:`~sklearn_vb._core.evidence.params.ParamSpace` convention every model shares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = ["DirichletHMM", "HMMStats", "HMMSequences", "SymbolSequences"]


class DirichletHMM(NamedTuple):
    """Hyperparameters of q(theta) or p(theta): initial and transition Dirichlet counts
    and the emission family's hyperparameters."""

    startprob: np.ndarray  # (K,): Dirichlet counts of the initial distribution
    transmat: np.ndarray  # (K, K): Dirichlet counts of every transition row
    emission: Any  # the family's prior_type or posterior_type (e.g. GaussianPosterior)


@dataclass(eq=False)
class HMMStats:
    """Expected sufficient statistics of q(s) (or of the exact posterior over state
    paths at a point): the counts of the initial state and of the transitions, and the
    emission family's statistics."""

    start: np.ndarray  # (K,): sum over sequences of q(s_1 = k)
    trans: np.ndarray  # (K, K): sum over inner frames of q(s_{t-1} = j, s_t = k)
    emission: Any  # the family's statistics (e.g. GaussianStats, CategoricalStats)


class HMMSequences(NamedTuple):
    """Sequences prepared by :meth:`FamilyHMMScoringModel.prepare_data` (immutable; a
    tuple, so that the scoring layer's point cache can fingerprint it)."""

    frames: np.ndarray  # (T,) int64 symbols or (T, D) floats, as the emission family prepared them
    starts: np.ndarray  # (n_sequences,) int64: first frame of every sequence
    ends: np.ndarray  # (n_sequences,) int64: one past the last frame of every sequence
    index: np.ndarray  # (T,) int64: arange(T), the table row of every frame


class SymbolSequences(NamedTuple):
    """Symbol sequences prepared by the categorical HMM scoring models (immutable; a
    tuple, so that the scoring layer's point cache can fingerprint it)."""

    symbols: np.ndarray  # (T,) int64: the symbols of all sequences, concatenated
    starts: np.ndarray  # (n_sequences,) int64: first frame of every sequence
    ends: np.ndarray  # (n_sequences,) int64: one past the last frame of every sequence
