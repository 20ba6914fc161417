"""ScoringModel for a fitted categorical :class:`~sklearn_vb.hmm.VBHiddenMarkov`.

theta = (initial distribution, transition rows, emission rows), all Dirichlet rows with
the estimator's (frozen) prior hyperparameters; exact ln p(X | theta) by the scaled
forward recursion, vectorised over parameter batches in numba; n = total time steps.

The module is the package's face to the scoring layer: it also exports the adapters of
the other emission families, :class:`FamilyHMMScoringModel` (any family) and
:class:`GaussianHMMScoringModel`, defined in ``_scoring_family`` and ``_scoring_gaussian``.
"""

from __future__ import annotations

import numpy as np

from ._scoring_dirichlet import DirichletCategoricalHMM
from ._scoring_family import FamilyHMMPosterior, FamilyHMMScoringModel
from ._scoring_gaussian import GaussianHMMPosterior, GaussianHMMScoringModel
from ._scoring_joint import JointCategoricalHMMMixin
from ._scoring_known import known_or_none
from ._state import SymbolSequences
from .emissions._categorical import MISSING_SYMBOL

__all__ = ["HMMScoringModel", "FamilyHMMScoringModel", "FamilyHMMPosterior",
           "GaussianHMMScoringModel", "GaussianHMMPosterior", "scoring_model_from_estimator"]


class HMMScoringModel(JointCategoricalHMMMixin, DirichletCategoricalHMM):
    """The scoring view of a fitted categorical VBHiddenMarkov."""

    def __init__(self, estimator):
        if getattr(estimator, "emission", "categorical") != "categorical":
            raise NotImplementedError(
                "the HMM scoring model supports categorical emissions only")
        if not hasattr(estimator, "startprob_posterior_"):
            raise ValueError("the estimator must be fitted.")
        K, V = estimator.emissionprob_posterior_.shape
        super().__init__(K, V, priors={"pi": estimator.startprob_prior_,
                                       "A": estimator.transmat_prior_,
                                       "B": estimator.emissionprob_prior_})
        self.estimator = estimator
        self.n_components = K

    def prepare_data(self, X, lengths=None, sequence_ids=None, states=None):
        """The sequences of ``X`` as the estimator validates them; ``states`` (-1 where
        unknown, as in ``fit``) restricts every score to the state paths that agree
        with them (the evidence of X and the known states)."""
        d = self.estimator.check_data(X, lengths=lengths, sequence_ids=sequence_ids,
                                      states=states)
        obs = np.asarray(d.X, dtype=np.int64).ravel()
        # a missing symbol is the extra symbol V of the scoring model's kernels
        obs = np.where(obs == MISSING_SYMBOL, self.V, obs)
        self._seq_fraction = len(d.starts) / obs.size
        # the sequences the prior draw of joint annealing's state paths needs
        self._sequence_bounds = (np.asarray(d.starts, np.int64), np.asarray(d.ends, np.int64))
        known = known_or_none(d.known_states)
        self._known_states_given = known is not None
        return SymbolSequences(symbols=obs, starts=np.asarray(d.starts, dtype=np.int64),
                               ends=np.asarray(d.ends, dtype=np.int64), known=known)

    def variational_posterior(self, X=None):
        est = self.estimator
        return self.variational_posterior_from({"pi": est.startprob_posterior_,
                                                "A": est.transmat_posterior_,
                                                "B": est.emissionprob_posterior_})


def scoring_model_from_estimator(estimator):
    return HMMScoringModel(estimator)
