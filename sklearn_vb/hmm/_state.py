"""The typed state of an HMM fit and of its scoring models: hyperparameter triples of
q(theta) and p(theta), the point estimate of a ``method="ml"``/``"map"`` fit, expected
statistics of q(s), and the prepared sequences that the scoring models pass between
their methods.

The emission part of each is the emission family's own dataclass
(:mod:`sklearn_vb.hmm.emissions`: e.g. ``GaussianPosterior``, ``GaussianFullPoint``,
``GaussianStats``).  Parameter batches of the scoring layer stay dicts of named blocks
(the :class:`~sklearn_vb._core.evidence.params.ParamSpace` convention every model
shares); :meth:`PointParameters.blocks` is the one conversion of a point to that form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

__all__ = ["DirichletHMM", "PointParameters", "HMMStats", "HMMSequences", "SymbolSequences"]


class DirichletHMM(NamedTuple):
    """Hyperparameters of q(theta) or p(theta): initial and transition Dirichlet counts
    and the emission family's hyperparameters."""

    startprob: np.ndarray  # (K,): Dirichlet counts of the initial distribution
    # (K, K) Dirichlet counts of every transition row ((L, K, K) with categorical
    # inputs), or with continuous inputs the Gaussian q(W) or p(W) of the logistic
    # transitions (a hmm._logistic_transitions.LogisticCoefficients)
    transmat: Any
    emission: Any  # the family's prior_type or posterior_type (e.g. GaussianPosterior)


@dataclass(eq=False)
class PointParameters:
    """A point estimate of the HMM's parameters (``method="ml"`` or ``"map"``): the
    initial distribution, the transition rows and the emission family's point.  With
    one state (K = 1) the initial and transition parts are the constant 1 and are None."""

    startprob: Optional[np.ndarray]  # (K,): initial distribution; None when K = 1
    transmat: Optional[np.ndarray]  # (K, K): transition rows; None when K = 1
    emission: Any  # the family's point_type (e.g. GaussianFullPoint, CategoricalPoint)

    def blocks(self):
        """The point as a parameter batch of one set (block name -> (1, ...) array), the
        form of the point-EM pieces shared with the scoring adapter
        (:mod:`sklearn_vb.hmm._point`); the initial and transition blocks are absent
        when K = 1."""
        out = {}
        if self.startprob is not None:
            out["startprob"] = self.startprob[None]
            out["transmat"] = self.transmat[None]
        out.update(self.emission.blocks())
        return out


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
    # (T,) int64 known states (``states=``), -1 where unknown; None when none is known
    known: Optional[np.ndarray] = None


class SymbolSequences(NamedTuple):
    """Symbol sequences prepared by the categorical HMM scoring models (immutable; a
    tuple, so that the scoring layer's point cache can fingerprint it)."""

    symbols: np.ndarray  # (T,) int64: the symbols of all sequences, concatenated
    starts: np.ndarray  # (n_sequences,) int64: first frame of every sequence
    ends: np.ndarray  # (n_sequences,) int64: one past the last frame of every sequence
    # (T,) int64 known states (``states=``), -1 where unknown; None when none is known
    known: Optional[np.ndarray] = None
