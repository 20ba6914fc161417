"""ScoringModel for a fitted :class:`~sklearn_vb.hmm.VBHiddenMarkov` with Gaussian emissions.

The family-parameterised adapter :class:`~sklearn_vb.hmm.scoring_model.FamilyHMMScoringModel`
with the Gaussian families of :mod:`sklearn_vb.emissions`.  Parameter blocks (every
hyperparameter frozen at the estimator's fitted value):

=====================  ===========  =========  =============================================
block                  shape        constraint meaning
=====================  ===========  =========  =============================================
``startprob``          (K,)         simplex    initial distribution (absent when K = 1)
``transmat``           (K, K)       simplex    transition rows (absent when K = 1)
``means``              (K, D)       real       state means
``precisions``         (K, D)       positive   ``covariance_type="diag"``: per-dimension precisions
``prec_chol_diag``     (K, D)       positive   ``"full"``: diagonal of the lower Cholesky factor
                                               ``L_k`` of the precision ``Lambda_k = L_k L_k^T``
``prec_chol_offdiag``  (K, D(D-1)/2) real      ``"full"``, D > 1: strictly lower entries of ``L_k``
                                               in the order of ``numpy.tril_indices(D, -1)``
=====================  ===========  =========  =============================================

Prior (the estimator's): ``Dir(startprob | u_pi) prod_k Dir(transmat_k | u_A,k)`` times,
per state, Normal-Wishart ``mu | Lambda ~ N(m0, (beta0 Lambda)^-1)``,
``Lambda ~ Wishart(W0 = scale_prior^-1, nu0)`` (full) or per-dimension Normal-Gamma
``lambda_d ~ Gamma(nu0/2, rate scale_prior_d/2)`` (diag).  Every density of a full
precision is taken in the Cholesky coordinates (see
:class:`~sklearn_vb.hmm.emissions._gaussian.NormalWishartBlocks`); the unconstrained basis of the
ParamSpace then maps ``L_ii = exp(phi)`` and leaves the off-diagonal entries as they are.
"""

from __future__ import annotations

import numpy as np

from ._scoring_family import FamilyHMMPosterior, FamilyHMMScoringModel

__all__ = ["GaussianHMMScoringModel", "GaussianHMMPosterior"]

#: q(theta) (and the prior) of a Gaussian-emission HMM over the whole parameter space
GaussianHMMPosterior = FamilyHMMPosterior


class GaussianHMMScoringModel(FamilyHMMScoringModel):
    """The scoring view of a fitted Gaussian-emission VBHiddenMarkov.

    Parameters
    ----------
    estimator : VBHiddenMarkov
        Fitted with ``emission="gaussian"``; its prior hyperparameters
        (``startprob_prior_``, ``transmat_prior_``, ``means_prior_``, ``beta_prior_``,
        ``dof_prior_``, ``scale_prior_``) are frozen here, as ``m0``, ``beta0``, ``nu0``
        and ``scale0`` for the emissions.

    Expected statistics (``e_step(...).stats``) are an
    :class:`~sklearn_vb.hmm._state.HMMStats` with ``start`` (K,), ``trans`` (K, K) and
    an ``emission`` :class:`~sklearn_vb.emissions.GaussianStats` (``N`` (K,), ``S1``
    (K, D) and ``S2`` ((K, D, D) or (K, D)) with the frames centred at the prior mean
    ``m0``), exactly as the estimator's.
    """

    def __init__(self, estimator):
        if getattr(estimator, "emission", None) != "gaussian":
            raise ValueError("GaussianHMMScoringModel needs a VBHiddenMarkov with "
                             "emission='gaussian'.")
        super().__init__(estimator)
        prior = self.emission_prior
        self.covariance_type = estimator.covariance_type
        self.D = int(estimator.n_features_in_)
        self.m0 = prior.means.reshape(self.D)
        self.beta0 = float(prior.beta)
        self.nu0 = float(prior.dof)
        self.scale0 = np.array(prior.scale, dtype=float)
