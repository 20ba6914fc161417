"""The typed state of a mixture of factor analysers and the containers passed between
its functions.

Shapes: ``N`` rows, ``p`` features, ``S`` components, ``K`` loading columns per
component (``K + 1`` with the centre column of ``[Λ^s, μ^s]``).  Everything is in
fitting units (:mod:`sklearn_vb.mfa._estimator`).  The updates replace the arrays of
a state rather than edit them in place: the sufficient statistics are cached by the
identity of the arrays they come from (:class:`StatsCache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

__all__ = ["BoundTerms", "ComponentMass", "DataTerms", "MFACompleteStats", "MFAData",
           "MFAPointState", "MFAState", "PointEStep", "StatsCache", "SufficientStats"]


class SufficientStats(NamedTuple):
    """The expected statistics of q(s) q(x|s) on the data, per component."""

    Nk: np.ndarray  # (S,) responsibility mass Σ_i r_is
    W: np.ndarray  # (S, K+1, K+1) Σ_i r_is E[x̃ x̃ᵀ], x̃ = [x, 1]
    C: np.ndarray  # (S, p, K+1) Σ_i r_is y_i E[x̃]ᵀ
    D: np.ndarray  # (S, p) Σ_i r_is y_i ∘ y_i


class StatsCache(NamedTuple):
    """The statistics of a state and the arrays they were computed from (compared by
    identity: a state whose q(s) or q(x|s) was replaced no longer matches)."""

    resp: np.ndarray  # the q(s) they come from
    xbar: np.ndarray  # the factor means they come from
    sigma: np.ndarray  # the factor covariances they come from
    Z: np.ndarray  # the data they come from
    stats: SufficientStats

    def matches(self, resp, xbar, sigma, Z):
        """Whether these are the statistics of exactly these arrays."""
        return self.resp is resp and self.xbar is xbar and self.sigma is sigma and self.Z is Z


class ComponentMass(NamedTuple):
    """The responsibility mass of each component at the previous q(s) update."""

    ids: np.ndarray  # (S,) stable component ids
    mass: np.ndarray  # (S,) Σ_i r_is


@dataclass(eq=False)
class MFAState:
    """The variational state: q(s), q(x|s), q(Λ̃), q(π), q(ν) and the hyperparameters
    (Beal 2003, Section 4.2), plus the search's bookkeeping."""

    resp: np.ndarray  # (N, S) q(s) of every row
    lam_mean: np.ndarray  # (S, p, K+1) row means of [Λ^s, μ^s] (centre last)
    lam_cov: np.ndarray  # (S, p, K+1, K+1) row covariances of [Λ^s, μ^s]
    lam_logdet: np.ndarray  # (S, p) ln|covariance| of each row
    alpha_hat: np.ndarray  # (S,) Dirichlet counts of q(π)
    a_tilde: float  # shape of every q(ν^s_j)
    b_tilde: np.ndarray  # (S, K) rates of q(ν^s_j)
    psi: np.ndarray  # (p,) sensor noise variances Ψ
    mu_star: np.ndarray  # (p,) mean of the centres' prior
    nu_star: np.ndarray  # (p,) precisions of the centres' prior
    a_star: float  # shape of the ARD prior
    b_star: float  # rate of the ARD prior
    alpha_star: float  # Dirichlet strength α*
    ids: np.ndarray  # (S,) stable component ids
    next_id: int  # the id of the next new component
    sigma: Optional[np.ndarray] = None  # (S, K, K) covariance of q(x|s)
    logdet_sigma: Optional[np.ndarray] = None  # (S,) ln|sigma|
    xbar: Optional[np.ndarray] = None  # (N, S, K) means of q(x|s)
    active: Optional[np.ndarray] = None  # (S, K) bool, False: column decoupled; None: none
    stats_cache: Optional[StatsCache] = None  # statistics of the stored q(s), q(x|s)
    prev_mass: Optional[ComponentMass] = None  # masses at the previous q(s) update


@dataclass(eq=False)
class MFAPointState:
    """A point fit (``method="ml"`` or ``"map"``): the parameters, the prior's
    hyperparameters and, after an E step, the exact posterior over ``(s, x)``."""

    weights: np.ndarray  # (S,) mixing proportions
    lam_mean: np.ndarray  # (S, p, K+1) [Λ^s, μ^s] (centre last)
    lam_cov: np.ndarray  # (S, p, K+1, K+1) zeros: a point has no spread
    psi: np.ndarray  # (p,) sensor noise variances Ψ
    mu_star: np.ndarray  # (p,) mean of the centres' prior
    nu_star: np.ndarray  # (p,) precisions of the centres' prior
    a_star: float  # shape of the ARD prior
    b_star: float  # rate of the ARD prior
    alpha_star: float  # Dirichlet strength α*
    ids: np.ndarray  # (S,) stable component ids
    next_id: int  # the id of the next new component
    resp: Optional[np.ndarray] = None  # (N, S) responsibilities of the last E step
    sigma: Optional[np.ndarray] = None  # (S, K, K) factor posterior covariances
    logdet_sigma: Optional[np.ndarray] = None  # (S,) ln|sigma|
    xbar: Optional[np.ndarray] = None  # (N, S, K) factor posterior means
    stats: Optional[SufficientStats] = None  # statistics of the last E step
    loglik: Optional[float] = None  # ln p(X | θ) there (with the Jacobian)
    objective: Optional[float] = None  # the EM objective there


class PointEStep(NamedTuple):
    """The exact posterior over ``(s_i, x_i)`` at one point
    (:func:`~sklearn_vb.mfa._point.point_e_step`)."""

    loglik: float  # ln p(Z | θ)
    resp: np.ndarray  # (N, S)
    sigma: np.ndarray  # (S, K, K)
    logdet_sigma: np.ndarray  # (S,)
    xbar: np.ndarray  # (N, S, K)
    stats: SufficientStats


class DataTerms(NamedTuple):
    """The terms of F that involve the loadings, the factors or the data, per
    component (S,) each."""

    loading: np.ndarray  # F_Λ: q(Λ̃) against its prior given q(ν)
    assign: np.ndarray  # F_assign: E[ln π_s] N_s plus the entropy of q(s)
    factor: np.ndarray  # F_x: q(x|s) against its prior
    lik: np.ndarray  # F_lik: the expected log-likelihood


@dataclass(eq=False)
class BoundTerms:
    """The named terms of F (Beal 2003, eq. 4.29) in fitting units."""

    pi: float  # -KL(q(π) || p(π))
    nu: np.ndarray  # (S,) -KL(q(ν^s) || p(ν^s))
    loading: np.ndarray  # (S,) see DataTerms
    assign: np.ndarray  # (S,)
    factor: np.ndarray  # (S,)
    lik: np.ndarray  # (S,)

    def as_dict(self):
        """``{name: value}`` (the estimator's ``bound_terms_``)."""
        return {"pi": self.pi, "nu": self.nu, "loading": self.loading,
                "assign": self.assign, "factor": self.factor, "lik": self.lik}


class MFAData(NamedTuple):
    """The data of the scoring model (:meth:`MFAScoringModel.prepare_data
    <sklearn_vb.mfa.scoring_model.MFAScoringModel.prepare_data>`)."""

    Z: np.ndarray  # (n, p) the rows in fitting units (0.0 at missing entries)
    log_jac: float  # -Σ_q ln feature_scale_q, the Jacobian of one complete row
    # with entries missing (NaN in X): which are observed (``sklearn_vb.mfa._missing``),
    # and the Jacobian of every row, over its observed entries only (n,)
    missing: Optional[tuple] = None  # a sklearn_vb.mfa._missing.MissingPattern
    row_log_jac: Optional[np.ndarray] = None


@dataclass(eq=False)
class MFACompleteStats:
    """The expected statistics of an exact E step of the scoring model
    (``e_step(...).stats``).  With entries missing, ``W`` is per component and
    dimension (S, p, K+1, K+1), counting the rows that observe the dimension, and the
    fields after ``resp`` are set."""

    Nk: np.ndarray  # (S,) responsibility mass
    W: np.ndarray  # (S, K+1, K+1) Σ_i r_is E[x̃ x̃ᵀ]
    C: np.ndarray  # (S, p, K+1) Σ_i r_is y_i E[x̃]ᵀ
    D: np.ndarray  # (S, p) Σ_i r_is y_i ∘ y_i
    n: int  # number of rows
    log_jac: float  # the Jacobian of one row
    resp: np.ndarray  # (n, S) responsibilities
    Nd: Optional[np.ndarray] = None  # (S, p) Σ_i r_is m_iq: the rows observing q
    factor_sq: Optional[np.ndarray] = None  # (S,) Σ_i r_is tr E[x xᵀ] over every row
    jacobian: Optional[float] = None  # the Jacobian of the data, over the observed entries
