"""Online (stochastic natural-gradient) variational Bayes for a mixture of factor
analysers with a fixed number of components.

Hoffman, Blei, Wang & Paisley (2013), "Stochastic variational inference", Algorithm 1,
with scikit-learn's ``LatentDirichletAllocation`` conventions (step sizes and
minibatches from :mod:`sklearn_vb._core.online`).  The local variational factors are
q(x|s) and q(s) of every row; the global ones q(π) (Dirichlet), q(Λ̃) (a Gaussian for
each row of every ``[Λ^s, μ^s]``) and q(ν) (the ARD Gammas), with the hyperparameters
(Ψ and those selected by ``optimize_hyperparameters``).  One step on a minibatch of
``n_b`` rows, with ``scale = total_samples / n_b``:

1. the local step, exact given q(θ): q(x|s), then q(s), of the minibatch's rows
   (:func:`~sklearn_vb.mfa._vbem.update_factors`,
   :func:`~sklearn_vb.mfa._vbem.update_responsibilities`), and their expected
   statistics ``N_s, W_s, C_s, D_s`` (:func:`~sklearn_vb.mfa._vbem.sufficient_statistics`);
2. the intermediate global parameters, the batch updates as if the data set were
   ``scale`` copies of the minibatch: q̂(π) with counts ``α*/S + scale N_s``
   (:func:`~sklearn_vb.mfa._vbem.weights_from_statistics`) and q̂(Λ̃) from
   ``scale W_s``, ``scale C_s`` (:func:`~sklearn_vb.mfa._vbem.loadings_from_statistics`);
3. the natural-gradient step of length ``rho``: a convex combination of natural
   parameters, the Dirichlet counts for q(π) and, for every row of q(Λ̃), the precision
   ``Γ⁻¹`` and the precision times the mean ``Γ⁻¹ λ̄`` (Hoffman et al. 2013, eq. 25);
4. q(ν) given the new q(Λ̃), as in batch VBEM (:func:`~sklearn_vb.mfa._vbem.update_ard`:
   q(ν) depends on the data only through q(Λ̃), so its coordinate update is exact);
5. the point hyperparameters: Ψ, when estimated, by the same convex combination of
   its value and the batch estimate from the scaled statistics
   (:func:`~sklearn_vb.mfa._vbem.noise_from_statistics`, a Robbins-Monro step towards
   the maximiser of the bound), then the other selected hyperparameters by their batch
   updates from the current q(θ), which involve no data.

With ``rho = 1`` and one minibatch of all rows (``scale = 1``) the step is the sweep
q(x|s), q(s), q(Λ̃), q(π), q(ν), Ψ, hyperparameters of the batch update functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core.kernels.linalg import spd_inverse_jittered
from ._vbem import (bound_terms, loadings_from_statistics, noise_from_statistics,
                    sufficient_statistics, update_ard, update_factors,
                    update_responsibilities, weights_from_statistics)

__all__ = ["OnlineStep", "data_terms", "loading_from_natural", "loading_natural",
           "natural_step"]


class OnlineStep(NamedTuple):
    """What one natural-gradient step reports."""

    rho: float  # the step size used
    scale: float  # total_samples / n_b
    data_terms: float  # F_assign + F_x + F_lik of the minibatch after its local step
    scaled_mass: np.ndarray  # (S,) the minibatch's responsibility masses times scale


def loading_natural(lam_mean, lam_cov):
    """The natural parameters of q(Λ̃) row by row: the precisions ``Γ⁻¹`` (S, p, K+1,
    K+1) and ``Γ⁻¹ λ̄`` (S, p, K+1)."""
    precision = spd_inverse_jittered(lam_cov)[0]
    return precision, np.einsum("sqkl,sql->sqk", precision, lam_mean)


def loading_from_natural(precision, shift):
    """``(mean, cov, logdet cov)`` of q(Λ̃) from its natural parameters (the inverse of
    :func:`loading_natural`)."""
    cov, logdet_precision = spd_inverse_jittered(precision)
    return np.einsum("sqkl,sql->sqk", cov, shift), cov, -logdet_precision


def data_terms(st, batch):
    """``F_assign + F_x + F_lik`` of the rows of ``batch`` for the stored q(s), q(x|s)
    (the part of F that sums over rows)."""
    t = bound_terms(st, batch)
    return float(np.sum(t.assign) + np.sum(t.factor) + np.sum(t.lik))


def natural_step(st, batch, scale, rho, noise, global_hyper_steps=()):
    """One step of stochastic VB on the state ``st`` from the minibatch ``batch`` (a
    ``_FitData`` of its rows; ``batch.psi_floor`` bounds Ψ) standing for ``scale``
    copies of itself: steps 1-5 of the module docstring.  ``noise``: whether Ψ is
    estimated; ``global_hyper_steps``: callables ``f(batch)`` updating the other
    selected hyperparameters from the state.  The state's q(s), q(x|s) become the
    minibatch's.  Returns an :class:`OnlineStep`."""
    update_factors(st, batch)
    update_responsibilities(st, batch)
    local = data_terms(st, batch)
    Nk, W, C, D = sufficient_statistics(st, batch)
    scaled = (scale * Nk, scale * W, scale * C, scale * D)
    target_mean, target_cov, _ = loadings_from_statistics(st, scaled[1], scaled[2])
    precision, shift = loading_natural(st.lam_mean, st.lam_cov)
    target_precision, target_shift = loading_natural(target_mean, target_cov)
    st.lam_mean, st.lam_cov, st.lam_logdet = loading_from_natural(
        (1.0 - rho) * precision + rho * target_precision,
        (1.0 - rho) * shift + rho * target_shift)
    st.alpha_hat = (1.0 - rho) * st.alpha_hat + rho * weights_from_statistics(st, scaled[0])
    update_ard(st, batch)
    if noise:
        target_psi = noise_from_statistics(st, scaled, scale * batch.n_samples,
                                           batch.psi_floor)
        st.psi = (1.0 - rho) * st.psi + rho * target_psi
    for step in global_hyper_steps:
        step(batch)
    st.stats_cache = None  # the statistics are the minibatch's, not of any fit data
    return OnlineStep(float(rho), float(scale), local, scaled[0])
