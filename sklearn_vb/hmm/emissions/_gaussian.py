"""Gaussian emissions: Normal-Wishart (full covariance) or per-dimension Normal-Gamma
(diagonal covariance) priors on every state's mean and precision.

Hyperparameters (the conjugate updates of Bishop 2006, section 10.2.1):

* ``means`` m (D,) or (K, D) and ``beta`` scalar or (K,): mu | Lambda ~ N(m, (beta Lambda)^-1);
* ``dof`` nu and ``scale`` S = W^-1: Lambda ~ Wishart(W, nu) (full, S (D, D) or (K, D, D)),
  or, per dimension, lambda_d ~ Gamma(shape nu/2, rate S_d/2) (diagonal, S (D,) or (K, D)).

Statistics are centred at the prior mean m0 so that the conjugate update needs no
large cancellations: ``N`` (K,) occupancies, ``S1`` (K, D) = sum_t r_tk (x_t - m0) and
``S2`` = sum_t r_tk (x_t - m0)(x_t - m0)^T ((K, D, D), full) or its diagonal ((K, D)).

Missing entries (NaN, missing at random), diagonal covariances: given the state the
dimensions are independent, so a missing entry drops out of its frame's log-density and
of ``S1`` and ``S2``, and the per-dimension occupancies ``Nd`` (K, D) count the frames in
which each dimension is observed.  The posterior's ``beta`` and ``dof`` are then per state
and dimension, (K, D): each dimension's Normal-Gamma factor has seen its own number of
frames.  Without missing entries ``Nd`` is None and ``beta``, ``dof`` stay (K,).

Missing entries with full covariances: the density of an observed sub-vector x_o,
N(x_o | mu_o, ((Lambda^-1)_oo)), is not of Normal-Wishart conjugate form in (mu, Lambda)
(its precision is the Schur complement Lambda_oo - Lambda_om Lambda_mm^-1 Lambda_mo).
The missing entries x_m of a partially observed frame are therefore latent variables
of the mean field, q(s) q(x_m | s) q(mu, Lambda).  With ``P_k = E[Lambda_k] = nu_k W_k``
and ``c_k = E[ln|Lambda_k|] / 2 - D ln(2 pi) / 2 - D / (2 beta_k)`` (the constant of a
complete frame), E_q(theta) ln N(x | mu_k, Lambda_k) = c_k - (x - m_k)^T P_k (x - m_k) / 2
is quadratic in x, so the optimal

* q(x_m | s = k) = N(m_k,m - P_mm^-1 P_mo (x_o - m_k,o), P_mm^-1) (blocks of P_k), and
* the VBE weight of state k, the integral over x_m of exp E ln N(x | ...), is
  ``c_k + |m| ln(2 pi) / 2 - ln|P_mm| / 2 - r^T Q r / 2`` with r = x_o - m_k,o and
  Q = P_oo - P_om P_mm^-1 P_mo: the entropy of q(x_m | s) is in it, so the forward
  algorithm's ln Z carries it into the bound.

The VBM step stays conjugate with expected statistics: a partially observed frame adds
r_tk E[x] to ``S1`` and r_tk E[x x^T] = r_tk (E[x] E[x]^T + Cov) to ``S2`` (Cov the
P_mm^-1 block), under the q(theta) of the VBE step that made r_tk
(the ``params`` of ``EmissionFamily.stats``).  The expected complete log-likelihood is linear in
``N``, ``S1``, ``S2``, so the bound after a VBM step is evaluated as for complete data.
A frame with nothing observed needs no augmentation: its likelihood is exactly 1 for
every theta, so its weight is 0 and it adds no statistics.  At a point (ML / MAP EM, the
plug-in scores) the same formulas give the exact Gaussian marginal of x_o and the exact
E step of EM with x_m missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np
from scipy.special import gammaln, polygamma

from ..._core.distributions import (
    cholesky_of_inverse as _cholesky_of_inverse,
    wishart_expected_logdet_terms as _expected_logdet,
    log_multigamma as _log_multigamma,
    gamma_expected_log,
    gamma_log_pdf,
    gamma_mean,
    gamma_sample,
    normal_gamma_kl,
    normal_gamma_log_pdf,
    normal_gamma_sample,
    normal_wishart_kl_inverse_scale,
    normal_wishart_log_pdf,
    normal_wishart_sample,
    wishart_log_pdf,
    wishart_sample,
)
from .. import kernels as _k
from ..._core.kernels.constants import LOG_2PI
from ..forward_backward import gaussian_hmm_log_likelihood_batch
from ..._core.validation import MISSING_IN_SEQUENCES, validate_float_data
from ._base import EmissionFamily, EmissionPoint
from ._checks import init_posterior_array
from ._missing import (check_observed_counts, impute_column_means, missing_patterns,
                       observed_counts_and_means, observed_parts)

__all__ = ["GaussianFullEmissions", "GaussianDiagEmissions", "GaussianPrior",
           "GaussianPosterior", "GaussianStats", "GaussianSummary", "GaussianFullPoint",
           "GaussianDiagPoint"]


@dataclass(eq=False)
class GaussianPrior:
    """The Normal-Wishart (full) or per-dimension Normal-Gamma (diag) prior, shared by
    every state: ``mu | Lambda ~ N(means, (beta Lambda)^-1)``, ``Lambda ~ Wishart(scale^-1,
    dof)`` (diag: ``lambda_d ~ Gamma(dof / 2, rate scale_d / 2)``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianPrior
    >>> prior = GaussianPrior(means=np.zeros(2), beta=1.0, dof=3.0, scale=3.0 * np.eye(2))
    >>> prior.scale / prior.dof          # the prior mean covariance of every state
    array([[1., 0.],
           [0., 1.]])
    """

    means: np.ndarray  # m0, (D,): prior mean of every state's mean
    beta: float  # beta0: scaling of the precision of the means
    dof: float  # nu0: Wishart degrees of freedom (diag: twice the Gamma shape)
    scale: np.ndarray  # S0 = W0^-1, (D, D) (full) or twice the Gamma rates, (D,) (diag)


@dataclass(eq=False)
class GaussianPosterior:
    """q(mu_k, Lambda_k) of every state: the conjugate family of :class:`GaussianPrior`
    with per-state hyperparameters.

    Examples
    --------
    The conjugate update of two states, one with the frames -1 and 1, one with 5:

    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianDiagEmissions, GaussianPrior
    >>> family = GaussianDiagEmissions()
    >>> prior = GaussianPrior(means=np.zeros(1), beta=1.0, dof=2.0, scale=np.ones(1))
    >>> X = np.array([[-1.0], [1.0], [5.0]])
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> post = family.vbm(prior, family.stats(resp, X, prior))
    >>> post.beta, post.means.ravel()                  # beta0 + N, S1 / (beta0 + N)
    (array([3., 2.]), array([0. , 2.5]))
    """

    means: np.ndarray  # m, (K, D)
    beta: np.ndarray  # (K,)
    dof: np.ndarray  # nu, (K,) (diag: twice the Gamma shapes)
    scale: np.ndarray  # S = W^-1, (K, D, D) (full) or twice the Gamma rates, (K, D) (diag)


@dataclass(eq=False)
class GaussianStats:
    """Expected sufficient statistics of state responsibilities r_tk, with the frames
    centred at the prior mean m0.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianDiagEmissions, GaussianPrior
    >>> prior = GaussianPrior(means=np.zeros(1), beta=1.0, dof=2.0, scale=np.ones(1))
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> stats = GaussianDiagEmissions().stats(resp, np.array([[-1.0], [1.0], [5.0]]), prior)
    >>> stats.N, stats.S1.ravel(), stats.S2.ravel()
    (array([2., 1.]), array([0., 5.]), array([ 2., 25.]))
    """

    N: np.ndarray  # (K,): sum_t r_tk
    S1: np.ndarray  # (K, D): sum_t r_tk (x_t - m0)
    S2: np.ndarray  # (K, D, D): sum_t r_tk (x_t - m0)(x_t - m0)^T (full); (K, D) its diagonal (diag)
    # (K, D), diag only: sum_t r_tk [x_td observed]; None when every entry is observed
    Nd: Optional[np.ndarray] = None

    def dimension_counts(self):
        """The occupancy of every state in every dimension, (K, D) (or (K, 1) when
        every entry is observed, the same for every dimension)."""
        return self.N[:, None] if self.Nd is None else self.Nd


class DiagParams(NamedTuple):
    """What the diagonal family's log tables need: ``const`` (K,) the frame constant
    with every dimension observed, ``precision`` (K, D), ``means`` (K, D) and
    ``const_d`` (K, D) the constant of each dimension (used where entries are missing)."""

    const: np.ndarray
    precision: np.ndarray
    means: np.ndarray
    const_d: np.ndarray


def _per_dim(v):
    """A (K,) per-state hyperparameter as a (K, 1) column; a (K, D) one as it is."""
    v = np.asarray(v)
    return v[:, None] if v.ndim == 1 else v


@dataclass(eq=False)
class GaussianSummary:
    """What the data-dependent default prior needs from the training frames.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianFullEmissions
    >>> summary = GaussianFullEmissions().summarise(np.array([[0.0, 1.0], [2.0, 3.0]]))
    >>> summary.mean
    array([1., 2.])
    """

    mean: np.ndarray  # (D,): mean of the frames
    var: np.ndarray  # (D,): their variances, floored
    cov: np.ndarray  # (D, D): their covariance, the floor added to the diagonal


class GaussianMoments(NamedTuple):
    """Moments of a set of frames, from which :class:`GaussianSummary` is made (and
    which the chunks of a distributed fit merge)."""

    n: int  # number of frames
    mean: np.ndarray  # (D,): of the observed entries of every dimension
    var: np.ndarray  # (D,): variances of the observed entries (divided by their number)
    cov: Optional[np.ndarray]  # (D, D): covariance (divided by n); None when some entry
    #                            is missing (the summary then uses diag(var))
    absmax: float  # largest magnitude of an observed value
    n_obs: np.ndarray  # (D,): number of observed entries of every dimension


@dataclass(eq=False)
class GaussianFullPoint(EmissionPoint):
    """A point estimate of every state's mean and full precision (``method="ml"`` or
    ``"map"``), the precision ``Lambda_k = L_k L_k^T`` by its lower Cholesky factor.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianFullEmissions, GaussianPrior
    >>> family = GaussianFullEmissions()
    >>> prior = GaussianPrior(means=np.zeros(2), beta=1.0, dof=3.0, scale=3.0 * np.eye(2))
    >>> X = np.array([[-1.0, 0.0], [1.0, 0.5], [0.0, -0.5], [4.0, 4.0]])
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> point = family.point_from_stats(prior, family.stats(resp, X, prior))
    >>> point.means.shape, point.prec_chol_diag.shape, point.prec_chol_offdiag.shape
    ((2, 2), (2, 2), (2, 1))
    """

    means: np.ndarray  # (K, D): state means
    prec_chol_diag: np.ndarray  # (K, D): diagonal of the lower Cholesky factor L_k
    # (K, D(D-1)/2): its strictly lower entries in numpy.tril_indices(D, -1) order; None when D = 1
    prec_chol_offdiag: Optional[np.ndarray] = None


@dataclass(eq=False)
class GaussianDiagPoint(EmissionPoint):
    """A point estimate of every state's mean and per-dimension precisions
    (``method="ml"`` or ``"map"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import GaussianDiagEmissions, GaussianPrior
    >>> family = GaussianDiagEmissions()
    >>> prior = GaussianPrior(means=np.zeros(1), beta=1.0, dof=2.0, scale=np.ones(1))
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> stats = family.stats(resp, np.array([[-1.0], [1.0], [5.0]]), prior)
    >>> family.point_from_stats(prior, stats, kind="ml").means.ravel()
    array([0., 5.])
    """

    means: np.ndarray  # (K, D): state means
    precisions: np.ndarray  # (K, D): per-dimension precisions


def _all_positive_definite(matrices):
    """Whether every matrix of a (K, D, D) stack is symmetric positive definite."""
    try:
        np.linalg.cholesky(matrices)
    except np.linalg.LinAlgError:
        return False
    return True


class _PatternFactors(NamedTuple):
    """A state's precision ``P = L L^T`` seen from one pattern of observed entries:
    ``o`` and ``m`` the observed and missing indices, and the Cholesky factor of ``P``
    with the missing dimensions first, whose blocks give ``P_mm = L_mm L_mm^T`` and the
    precision of the observed sub-vector ``Q = P_oo - P_om P_mm^-1 P_mo = L_oo L_oo^T``
    (the trailing block of a Cholesky factor factorises the Schur complement)."""

    o: np.ndarray
    m: np.ndarray
    L_mm: np.ndarray  # (K, |m|, |m|), lower
    L_om: np.ndarray  # (K, |o|, |m|)
    L_oo: np.ndarray  # (K, |o|, |o|), lower


def _pattern_factors(prec_chol, obs):
    """:class:`_PatternFactors` of the precisions with lower Cholesky factors
    ``prec_chol`` (K, D, D) for the observed mask ``obs`` (D,).  The permuted factor is
    the R of a QR decomposition of ``(Pi L)^T`` (``Pi`` the permutation), so that the
    precision itself, with its squared condition number, is never formed."""
    o, m = np.flatnonzero(obs), np.flatnonzero(~obs)
    perm = np.concatenate([m, o])
    R = np.linalg.qr(np.swapaxes(prec_chol[:, perm, :], 1, 2), mode="r")
    # rows of R with a negative diagonal flipped: a Cholesky factor has a positive one
    sign = np.where(np.diagonal(R, axis1=1, axis2=2) < 0, -1.0, 1.0)
    Lp = np.swapaxes(R * sign[:, :, None], 1, 2)
    j = m.size
    return _PatternFactors(o, m, Lp[:, :j, :j], Lp[:, j:, :j], Lp[:, j:, j:])


def _log_weights_missing(X, means, prec_chol, const):
    """Log emission weights (T, K) of full-covariance states for frames with missing
    entries (NaN), one pattern of observed entries at a time.

    With ``P = L L^T`` the precision of the quadratic (``prec_chol`` L) and ``const``
    the constant of a complete frame, the weight of a frame is the integral over its
    missing entries ``m`` of ``exp(const - (x - mu)^T P (x - mu) / 2)``:
    ``const + |m| ln(2 pi) / 2 - ln|P_mm| / 2 - r^T Q r / 2`` with ``r = x_o - mu_o`` and
    ``Q = P_oo - P_om P_mm^-1 P_mo`` the precision of the observed sub-vector.  At a
    point (``const = ln|P| / 2 - D ln(2 pi) / 2``) this is the Gaussian density of the
    observed entries; a frame with nothing observed gets 0 (likelihood 1).
    """
    T = X.shape[0]
    K = means.shape[0]
    out = np.zeros((T, K))
    for obs, rows in missing_patterns(X):
        if not obs.any():
            continue
        if obs.all():
            out[rows] = _k.gaussian_full_log_weights(
                np.ascontiguousarray(X[rows]), np.ascontiguousarray(means),
                np.ascontiguousarray(prec_chol), const)
            continue
        f = _pattern_factors(prec_chol, obs)
        with np.errstate(divide="ignore"):
            logdet_mm = 2.0 * np.log(np.diagonal(f.L_mm, axis1=1, axis2=2)).sum(axis=1)
        c = const + 0.5 * f.m.size * LOG_2PI - 0.5 * logdet_mm
        out[rows] = _k.gaussian_full_log_weights(
            np.ascontiguousarray(X[np.ix_(rows, f.o)]), np.ascontiguousarray(means[:, f.o]),
            np.ascontiguousarray(f.L_oo), c)
    return out


def _missing_stats(resp, X, m0, means, prec_chol):
    """Full-covariance :class:`GaussianStats` of frames with missing entries, which are
    latent: given the state k and the observed entries they have the posterior
    ``N(mu_m - P_mm^-1 P_mo (x_o - mu_o), P_mm^-1)`` under the E step's means ``means``
    and precisions ``P = L L^T`` (``prec_chol`` L), and enter ``S1`` and ``S2`` by
    their mean and second moment (module docstring).  A frame with nothing observed has
    likelihood 1 and no statistics."""
    K, D = means.shape
    N = np.zeros(K)
    S1 = np.zeros((K, D))
    S2 = np.zeros((K, D, D))
    for obs, rows in missing_patterns(X):
        if not obs.any():
            continue
        r = resp[rows]
        N += r.sum(axis=0)
        Xc = X[rows] - m0
        if obs.all():
            S1 += r.T @ Xc
            S2 += GaussianFullEmissions._second_moments(r, Xc)
            continue
        f = _pattern_factors(prec_chol, obs)
        o, m = f.o, f.m
        # P_mm^-1 P_mo = L_mm^-T L_om^T and P_mm^-1 = L_mm^-T L_mm^-1
        inv_mm = np.linalg.inv(f.L_mm)
        B = np.swapaxes(inv_mm, 1, 2) @ np.swapaxes(f.L_om, 1, 2)  # (K, |m|, |o|)
        cov_mm = np.swapaxes(inv_mm, 1, 2) @ inv_mm
        for k in range(K):
            xk = Xc.copy()
            xk[:, m] = (means[k, m] - m0[m]) - (X[np.ix_(rows, o)] - means[k, o]) @ B[k].T
            S1[k] += r[:, k] @ xk
            S2[k] += (xk * r[:, k, None]).T @ xk
            S2[k][np.ix_(m, m)] += r[:, k].sum() * cov_mm[k]
    return GaussianStats(N=N, S1=S1, S2=0.5 * (S2 + np.swapaxes(S2, 1, 2)))


class _GaussianEmissions(EmissionFamily):
    """What the full- and diagonal-covariance families share."""

    emission = "gaussian"
    covariance_type = ""
    hyper_names = ("means", "beta", "dof", "scale")
    prior_type = GaussianPrior
    posterior_type = GaussianPosterior
    default_inits = ("kmeans",)

    # ------------------------------------------------------------------ data
    def check_X(self, X, estimator, reset):
        X = validate_float_data(estimator, X, reset=reset, missing=MISSING_IN_SEQUENCES,
                                allow_nan=True, ensure_min_samples=1)
        return X

    def data_moments(self, X):
        X0, observed = observed_parts(X)
        if observed is not None:
            # the observed entries of every column (the default prior then uses the
            # per-feature variances, a diagonal scale)
            n_obs, mean = observed_counts_and_means(X)
            centred = np.where(observed > 0, X0 - mean, 0.0)
            var = (centred**2).sum(axis=0) / np.maximum(n_obs, 1)
            return GaussianMoments(X.shape[0], mean, var, None, float(np.max(np.abs(X0))),
                                   n_obs)
        mean = X.mean(axis=0)
        if X.shape[0] > 1:
            var = X.var(axis=0)
            cov = np.atleast_2d(np.cov(X, rowvar=False, bias=True))
        else:
            var = np.zeros(X.shape[1])
            cov = np.zeros((X.shape[1], X.shape[1]))
        return GaussianMoments(X.shape[0], mean, var, cov, float(np.max(np.abs(X))),
                               np.full(X.shape[1], X.shape[0]))

    def merge_moments(self, parts):
        # pairwise combination of means and (biased) variances of every dimension over
        # its observed entries, and of the covariances while no entry is missing: Chan,
        # Golub & LeVeque (1979), exact up to rounding however large the mean
        total = parts[0]
        for part in parts[1:]:
            n = total.n + part.n
            n_obs = total.n_obs + part.n_obs
            denom = np.maximum(n_obs, 1)
            delta = part.mean - total.mean
            w = total.n_obs * part.n_obs / denom
            if total.cov is None or part.cov is None:
                cov = None
            else:
                wn = total.n * part.n / n
                cov = (total.n * total.cov + part.n * part.cov
                       + wn * np.outer(delta, delta)) / n
            total = GaussianMoments(
                n, total.mean + delta * (part.n_obs / denom),
                (total.n_obs * total.var + part.n_obs * part.var + w * delta**2) / denom,
                cov, max(total.absmax, part.absmax), n_obs)
        return total

    def column_means_from_moments(self, moments):
        return moments.mean

    def summary_from_moments(self, moments):
        check_observed_counts(moments.n_obs, "Gaussian")
        mean, var, cov = moments.mean, moments.var, moments.cov
        if cov is None:  # some entry missing: the per-feature variances
            cov = np.diag(var)
        # a floor keeps the default prior proper for constant or tiny data sets; it is
        # relative to the data's own scale, so that data in other units (X * c) get the
        # same fit with the bound shifted by the Jacobian -n D ln c
        scale = float(np.max(var))
        if not scale > 0:  # constant data: the scale of the values themselves
            scale = float(np.max(mean**2)) if np.any(mean != 0) else 1.0
        floor = 1e-6 * scale
        if not floor > 0:
            # squares of values this small underflow: no precision could be represented
            raise ValueError(
                "X: the values are too small for Gaussian emissions in double precision "
                f"(largest magnitude {moments.absmax:.3g}, whose square "
                "underflows); rescale X.")
        return GaussianSummary(mean=mean, var=np.maximum(var, floor),
                               cov=cov + floor * np.eye(mean.shape[0]))

    # ------------------------------------------------------------------ priors
    def resolve_prior(self, estimator, summary):
        D = summary.mean.shape[0]
        full = self.covariance_type == "full"
        if estimator.means_prior is None:
            m0 = summary.mean.copy()
        else:
            m0 = np.asarray(estimator.means_prior, dtype=float)
            if not np.all(np.isfinite(m0)):
                raise ValueError("means_prior must be finite.")
            try:
                m0 = np.broadcast_to(m0, (D,)).copy()
            except ValueError:
                raise ValueError(
                    f"means_prior has shape {m0.shape}; expected a scalar or ({D},)."
                ) from None
        dof_prior = estimator.dof_prior
        nu0 = float(dof_prior) if dof_prior is not None else (D + 1.0 if full else 2.0)
        if full and nu0 <= D - 1:
            raise ValueError(f"dof_prior must exceed n_features - 1 = {D - 1}; got {nu0}.")
        if estimator.scale_prior is None:
            s0 = nu0 * (summary.cov if full else summary.var)
        else:
            s0 = self._check_scale_prior(np.asarray(estimator.scale_prior, dtype=float), D)
        return GaussianPrior(means=m0, beta=float(estimator.beta_prior), dof=nu0,
                             scale=np.array(s0, dtype=float))

    def check_init_posterior(self, init, prior, n_components):
        K, D = n_components, prior.means.shape[-1]
        return GaussianPosterior(
            means=init_posterior_array(init, "means", (K, D)),
            beta=init_posterior_array(init, "beta", (K,), positive=True),
            dof=init_posterior_array(init, "dof", (K,), positive=True),
            scale=self._check_init_scale(init, K, D),
        )

    # ------------------------------------------------------------------ VBEM
    def stats(self, resp, X, prior, params=None):
        Xc, observed = observed_parts(X - prior.means)
        return GaussianStats(N=resp.sum(axis=0), S1=resp.T @ Xc, S2=self._second_moments(resp, Xc),
                             Nd=None if observed is None else resp.T @ observed)

    def add_stats(self, a, b):
        if a.Nd is None and b.Nd is None:
            Nd = None
        else:  # a chunk without missing entries has every dimension counted N times
            Nd = a.dimension_counts() + b.dimension_counts()
        return GaussianStats(N=a.N + b.N, S1=a.S1 + b.S1, S2=a.S2 + b.S2, Nd=Nd)

    def vbm(self, prior, stats):
        N, S1, S2 = stats.N, stats.S1, stats.S2
        counts = N if stats.Nd is None else stats.Nd
        beta = prior.beta + counts
        return GaussianPosterior(
            means=prior.means + S1 / _per_dim(beta),
            beta=beta,
            dof=prior.dof + counts,
            scale=self._scale_update(prior.scale, S1, S2, beta),
        )

    def pack(self, post):
        """Natural parameters of every state's Normal-Wishart (Normal-Gamma) factor:
        beta, beta m, scale + beta m m^T (diag: + beta m^2) and dof, the coordinates in
        which the VBM update is affine in the expected statistics."""
        return self._natural_coordinates(post)

    def unpack(self, vector, like):
        """Inverse of :meth:`pack`; None unless beta > 0, dof > D - 1 (diag: > 0) and
        every scale is positive definite (diag: positive)."""
        return self._from_natural_coordinates(vector, like)

    def natural(self, post, prior):
        """The natural coordinates of :meth:`pack` with the means measured from the
        prior mean m0: beta, beta (m - m0), scale + beta (m - m0)(m - m0)^T and dof, an
        affine function of the natural parameters.  After :meth:`vbm` they are
        beta0 + N, S1, scale0 + S2 and nu0 + N, sums without cancellation (in
        uncentred coordinates, data far from the origin would lose digits to
        beta m m^T)."""
        return self._natural_coordinates(post, prior.means)

    def from_natural(self, vector, prior, like):
        """Inverse of :meth:`natural` (None when not a valid posterior, as :meth:`unpack`)."""
        return self._from_natural_coordinates(vector, like, prior.means)

    def _natural_coordinates(self, post, origin=None):
        m = post.means if origin is None else post.means - origin
        beta = post.beta
        if self._scale_ndim == 2:
            second = post.scale + beta[:, None, None] * m[:, :, None] * m[:, None, :]
        else:
            second = post.scale + _per_dim(beta) * m * m
        return np.concatenate([beta.ravel(), (_per_dim(beta) * m).ravel(), second.ravel(),
                               np.ravel(post.dof)])

    def _from_natural_coordinates(self, vector, like, origin=None):
        K, D = np.shape(like.means)
        # beta and dof per state (K,) or, diag with missing entries, per state and
        # dimension (K, D): the length of the vector tells which
        per_dim = self._scale_ndim == 1 and (
            vector.size == 4 * K * D if D > 1 else np.ndim(like.beta) == 2)
        nb = K * D if per_dim else K
        shape = (K, D) if per_dim else (K,)
        beta = vector[:nb].reshape(shape)
        beta_m = vector[nb:nb + K * D].reshape(K, D)
        n_scale = int(np.prod(np.shape(like.scale)))
        second = vector[nb + K * D:nb + K * D + n_scale].reshape(np.shape(like.scale))
        dof = vector[nb + K * D + n_scale:].reshape(shape)
        if not (np.all(np.isfinite(vector)) and np.all(beta > 0)):
            return None
        m = beta_m / _per_dim(beta)
        if self._scale_ndim == 2:
            scale = second - beta[:, None, None] * m[:, :, None] * m[:, None, :]
            scale = 0.5 * (scale + np.swapaxes(scale, 1, 2))
            if np.any(dof <= D - 1) or not _all_positive_definite(scale):
                return None
        else:
            scale = second - _per_dim(beta) * m * m
            if np.any(dof <= 0) or np.any(scale <= 0):
                return None
        means = m if origin is None else origin + m
        return GaussianPosterior(means=means, beta=beta.copy(), dof=dof.copy(), scale=scale)

    def expected_log_params(self, post):
        """Per state: ``const_k``, the precision factor of the quadratic term and the mean,
        with E[ln N(x | mu_k, Lambda_k)] = const_k - 0.5 (x - m_k)^T E[Lambda_k] (x - m_k)."""
        D = post.means.shape[1]
        e_logdet, precision = self._expected_logdet_and_precision(post.dof, post.scale)
        const = 0.5 * e_logdet - 0.5 * D * LOG_2PI - 0.5 * D / post.beta
        return const, precision, post.means.copy()

    def plugin_params(self, post):
        """``const_k``, precision factor and mean at the posterior mean (``means_``, ``covars_``)."""
        D = post.means.shape[1]
        logdet, precision = self._mean_logdet_and_precision(post.dof, post.scale)
        return 0.5 * logdet - 0.5 * D * LOG_2PI, precision, post.means.copy()

    def expected_log_likelihood(self, stats, params, prior):
        const, precision, means = params
        N = stats.N
        quad_term = self._expected_quadratic(stats, precision, means - prior.means)
        return float(np.sum(N * const - 0.5 * quad_term))

    def occupancy(self, stats):
        return stats.N.copy()

    def n_parameters(self, post):
        K, D = post.means.shape
        return K * (D + self._n_precision_parameters(D))

    # ------------------------------------------------------------------ scoring
    def param_density(self, hyper, n_components):
        K = n_components
        D = np.shape(hyper.means)[-1]
        m = np.broadcast_to(np.asarray(hyper.means, dtype=float), (K, D))
        # (K, D) per-dimension counts of a diagonal posterior fitted with missing entries
        per_state = (K, D) if np.ndim(hyper.beta) == 2 else (K,)
        beta = np.broadcast_to(np.asarray(hyper.beta, dtype=float), per_state)
        nu = np.broadcast_to(np.asarray(hyper.dof, dtype=float), per_state)
        scale = np.asarray(hyper.scale, dtype=float)
        if scale.ndim == self._scale_ndim:  # the prior: one scale for every state
            scale = np.broadcast_to(scale, (K,) + scale.shape)
        return self._density(m, beta, nu, scale)

    def log_likelihood_tables(self, params, X):
        mu = np.asarray(params["means"], dtype=float)
        L = self.precision_cholesky(params)
        D = X.shape[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            const = np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1) - 0.5 * D * LOG_2PI
        if self.latent_missing and np.isnan(X).any():
            # at fixed parameters the missing entries integrate out exactly: the
            # Gaussian marginal of the observed ones
            return np.stack([_log_weights_missing(X, mu[c], L[c], const[c])
                             for c in range(mu.shape[0])])
        return np.stack([
            _k.gaussian_full_log_weights(X, np.ascontiguousarray(mu[c]),
                                         np.ascontiguousarray(L[c]), const[c])
            for c in range(mu.shape[0])
        ])

    def log_likelihood_batch(self, log_pi, log_A, params, X, starts, ends):
        if self.latent_missing and np.isnan(X).any():
            # the compiled batch kernel has no missing entries: the tables of the family
            return EmissionFamily.log_likelihood_batch(self, log_pi, log_A, params, X,
                                                       starts, ends)
        # one compiled call for the whole batch: a diagonal precision is a diagonal L
        mu = np.ascontiguousarray(params["means"], dtype=float)
        L = np.ascontiguousarray(self.precision_cholesky(params))
        with np.errstate(invalid="ignore"):
            return gaussian_hmm_log_likelihood_batch(log_pi, log_A, mu, L, X, starts, ends)

    def log_emission_along(self, params, states, X):
        if self.latent_missing and np.isnan(X).any():
            tables = self.log_likelihood_tables(params, X)
            return tables[:, np.arange(X.shape[0]), states]
        mu = np.asarray(params["means"], dtype=float)
        L = self.precision_cholesky(params)[:, states]  # (C, T, D, D)
        r = X[None] - mu[:, states]
        u = np.einsum("ctdj,ctd->ctj", L, r)
        with np.errstate(divide="ignore"):
            return (np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
                    - 0.5 * X.shape[1] * LOG_2PI - 0.5 * np.sum(u * u, axis=-1))

    def complete_log_likelihood(self, params, stats, prior):
        mu = np.asarray(params["means"], dtype=float)
        D = mu.shape[-1]
        L = self.precision_cholesky(params)
        with np.errstate(divide="ignore"):
            half_logdet = np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
        quad = self._batch_quadratic(params, L, self._scatter(stats, mu - prior.means))
        return np.sum(stats.N * (half_logdet - 0.5 * D * LOG_2PI) - 0.5 * quad, axis=1)

    def point_from_stats(self, prior, stats, kind="map", basis="softmax"):
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        if basis not in ("softmax", "natural"):
            raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
        post = self.vbm(prior, stats)
        m = post.means
        if kind == "ml":
            N = np.maximum(stats.N, 1e-10)
            m = prior.means + stats.S1 / np.maximum(stats.dimension_counts(), 1e-10)
            prec = self._ml_precision(prior, stats, N)
        else:
            prec = self._posterior_point_precision(post, basis)
        return self._point(m, prec)

    def point_log_prior_terms(self, params, basis):
        L = self.precision_cholesky(params)[0]
        log_dg = np.log(np.diagonal(L, axis1=-2, axis2=-1))  # (K, D)
        terms = self._density_coordinate_terms(log_dg)
        if basis == "softmax":
            # the posterior mean of the precision is the mode of p(theta) |Lambda|^(1/2)
            terms.append(float(np.sum(log_dg)))
        return terms

    def point_attributes(self, point):
        """``means_`` and the covariances ``covars_`` of the point ((K, D, D) full,
        (K, D) diagonal), the attributes of a VB fit's plug-in."""
        L = self.precision_cholesky(point.blocks())[0]
        cov = np.linalg.inv(L @ np.swapaxes(L, -1, -2))
        if self.covariance_type != "full":
            cov = np.diagonal(cov, axis1=-2, axis2=-1).copy()
        return {"means_": np.array(point.means, dtype=float), "covars_": cov}

    def simulate(self, params, states, rng):
        mu = np.asarray(params["means"], dtype=float)[0]
        L = self.precision_cholesky(params)[0]
        z = rng.standard_normal((states.shape[0], mu.shape[1]))
        # x = mu + L^-T z has covariance (L L^T)^-1
        noise = np.linalg.solve(np.swapaxes(L, 1, 2)[states], z[..., None])[..., 0]
        return mu[states] + noise


class GaussianFullEmissions(_GaussianEmissions):
    """Full-covariance Gaussian states with Normal-Wishart priors.

    Hyperparameters: ``means`` (K, D), ``beta`` (K,), ``dof`` (K,), ``scale`` (K, D, D)
    (the prior: (D,), scalar, scalar, (D, D)).  Not in the thesis's HMM chapter (its
    emissions are categorical): the conjugate Normal-Wishart extension that Beal (2003),
    §2.4, covers for conjugate-exponential models.

    Examples
    --------
    The fitted posterior hyperparameters of an HMM, read back through its family:

    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.emissions import GaussianFullEmissions
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.randn(20, 2), rng.randn(20, 2) + 5])
    >>> hmm = VBHiddenMarkov(n_components=2, emission="gaussian", covariance_type="full",
    ...                      random_state=0).fit(X)
    >>> family = GaussianFullEmissions()
    >>> post = family.hyper_from_attributes(hmm, "posterior")
    >>> post.scale.shape, family.n_parameters(post)     # 2 x (2 means + 3 precision)
    ((2, 2, 2), 10)
    >>> sorted(family.point_estimates(post))
    ['covars_', 'means_']
    """

    covariance_type = "full"
    point_type = GaussianFullPoint
    _scale_ndim = 2
    # the density of the observed entries is not conjugate to the Normal-Wishart (the
    # precision of a sub-vector is a Schur complement): the missing entries of a
    # partially observed frame are latent variables (module docstring)
    latent_missing = True

    @staticmethod
    def _check_scale_prior(s0, D):
        if s0.ndim == 0:
            s0 = s0 * np.eye(D)
        if s0.shape != (D, D) or not np.all(np.isfinite(s0)):
            raise ValueError(f"scale_prior must be a scalar or a finite ({D}, {D}) matrix.")
        if not np.allclose(s0, s0.T) or np.any(np.linalg.eigvalsh(s0) <= 0):
            raise ValueError("scale_prior must be symmetric positive definite.")
        return s0

    @staticmethod
    def _check_init_scale(init, K, D):
        scale = init_posterior_array(init, "scale", (K, D, D))
        if np.any(np.linalg.eigvalsh(scale) <= 0):
            raise ValueError("init_posterior['scale'] must be positive definite.")
        return scale

    @staticmethod
    def _second_moments(resp, Xc):
        # one BLAS product per state: einsum's contraction path for this three-operand
        # product is several times slower and dominated the E step
        return np.stack([(Xc * resp[:, k, None]).T @ Xc for k in range(resp.shape[1])])

    @staticmethod
    def _scale_update(scale0, S1, S2, beta):
        scale = scale0 + S2 - S1[:, :, None] * S1[:, None, :] / beta[:, None, None]
        return 0.5 * (scale + np.swapaxes(scale, 1, 2))

    @staticmethod
    def _expected_logdet_and_precision(nu, scale):
        """E[ln|Lambda|] and the Cholesky factor of E[Lambda] = nu W under Wishart(W = S^-1, nu)."""
        inv_chol, logdet_s = _cholesky_of_inverse(scale)
        # ln|W| = -ln|S|
        e_logdet = _expected_logdet(scale.shape[-1], nu, -logdet_s)
        return e_logdet, GaussianFullEmissions._mean_precision_cholesky(nu, inv_chol)

    @staticmethod
    def _mean_precision_cholesky(nu, inv_chol):
        """Lower Cholesky factor of E[Lambda] = nu W from the factor of W = S^-1."""
        return np.sqrt(nu)[:, None, None] * inv_chol

    @staticmethod
    def _mean_logdet_and_precision(nu, scale):
        chol = GaussianFullEmissions._mean_precision_cholesky(nu, _cholesky_of_inverse(scale)[0])
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        return logdet, chol

    def log_table(self, params, X):
        const, precision, means = params
        if np.isnan(X).any():
            return _log_weights_missing(X, means, precision, const)
        return _k.gaussian_full_log_weights(X, means, np.ascontiguousarray(precision), const)

    def _conditioning(self, params):
        """The means (K, D) and precision Cholesky factors (K, D, D) of an E step's
        emission quantities: a ``(const, precision, means)`` triple of
        :meth:`expected_log_params` / :meth:`plugin_params`, or a parameter batch of
        one set (point EM)."""
        if isinstance(params, dict):
            return (np.asarray(params["means"], dtype=float)[0],
                    self.precision_cholesky(params)[0])
        return np.asarray(params[2], dtype=float), np.asarray(params[1], dtype=float)

    def stats(self, resp, X, prior, params=None):
        if not np.isnan(X).any():
            return super().stats(resp, X, prior)
        if params is None:
            # no E step to condition on (the hard labelling of a start): the missing
            # entries stand at their column's mean
            return super().stats(resp, impute_column_means(X), prior)
        means, chol = self._conditioning(params)
        return _missing_stats(resp, X, prior.means, means, chol)

    @staticmethod
    def _scatter(stats, delta):
        """sum_t r_tk (x_t - mu_k)(x_t - mu_k)^T from the centred statistics, for
        ``delta`` = mu_k - m0 of shape (K, D) or a batch (C, K, D)."""
        N, S1, S2 = stats.N, stats.S1, stats.S2
        return (
            S2
            - S1[:, :, None] * delta[..., None, :]
            - delta[..., :, None] * S1[:, None, :]
            + N[:, None, None] * delta[..., :, None] * delta[..., None, :]
        )

    def _expected_quadratic(self, stats, precision, delta):
        """sum_t r_tk E[(x_t - mu_k)^T Lambda_k (x_t - mu_k)] without the 1/beta part;
        ``precision`` the Cholesky factor of E[Lambda_k], ``delta`` = m_k - m0."""
        prec = precision @ np.swapaxes(precision, 1, 2)
        return np.einsum("kij,kji->k", prec, self._scatter(stats, delta))

    @staticmethod
    def _batch_quadratic(params, L, scatter):
        Lam = L @ np.swapaxes(L, -1, -2)
        return np.einsum("ckij,ckji->ck", Lam, scatter)

    def kl(self, post, prior):
        return float(
            np.sum(
                normal_wishart_kl_inverse_scale(
                    post.means, post.beta, post.scale, post.dof,
                    prior.means, prior.beta, prior.scale, prior.dof,
                )
            )
        )

    def point_estimates(self, post):
        return {
            "means_": post.means.copy(),
            "covars_": post.scale / post.dof[:, None, None],
        }

    @staticmethod
    def _n_precision_parameters(D):
        return D * (D + 1) // 2

    # ------------------------------------------------------------------ scoring
    def param_blocks(self, prior, n_components):
        K, D = n_components, np.shape(prior.means)[-1]
        blocks = [("means", (K, D), "real"), ("prec_chol_diag", (K, D), "positive")]
        if D > 1:
            blocks.append(("prec_chol_offdiag", (K, D * (D - 1) // 2), "real"))
        return blocks

    def precision_cholesky(self, params):
        """Lower Cholesky factors L of the precisions Lambda = L L^T, (C, K, D, D); the
        strictly lower entries are in the order of ``numpy.tril_indices(D, -1)``."""
        dg = np.asarray(params["prec_chol_diag"], dtype=float)
        C, K, D = dg.shape
        L = np.zeros((C, K, D, D))
        idx = np.arange(D)
        L[:, :, idx, idx] = dg
        if D > 1:
            lower = np.tril_indices(D, -1)
            L[:, :, lower[0], lower[1]] = params["prec_chol_offdiag"]
        return L

    def complete_log_likelihood_gradient(self, params, stats, prior):
        """Gradient of :meth:`complete_log_likelihood` in the blocks (batch shapes):
        ``Lambda (S1 - N delta)`` for the means (``delta = mu - m0``) and the lower
        entries of ``N diag(1 / L_ii) - Sc L`` for the Cholesky factor, ``Sc`` the
        scatter about ``mu``."""
        mu = np.asarray(params["means"], dtype=float)
        L = self.precision_cholesky(params)
        delta = mu - prior.means
        N = stats.N
        lam = L @ np.swapaxes(L, -1, -2)
        g_mu = np.einsum("ckij,ckj->cki", lam, stats.S1 - N[:, None] * delta)
        g_L = -self._scatter(stats, delta) @ L
        dg = np.diagonal(L, axis1=-2, axis2=-1)
        return self.emission_blocks(g_mu, _with_diagonal_added(g_L, N[:, None] / dg))

    @staticmethod
    def emission_blocks(means, chol):
        """Blocks from means (C, K, D) and precision Cholesky factors (C, K, D, D)."""
        D = chol.shape[-1]
        out = {"means": np.asarray(means, dtype=float),
               "prec_chol_diag": np.diagonal(chol, axis1=-2, axis2=-1).copy()}
        if D > 1:
            lower = np.tril_indices(D, -1)
            out["prec_chol_offdiag"] = chol[..., lower[0], lower[1]].copy()
        return out

    def _density(self, m, beta, nu, scale):
        return NormalWishartBlocks(self, m, beta, scale, nu)

    def log_marginal_likelihood(self, prior, stats):
        N = np.asarray(stats.N, dtype=float)
        post = self.vbm(prior, stats)
        beta, nu = post.beta, post.dof
        beta0, nu0 = prior.beta, prior.dof
        D = post.means.shape[1]
        logdet_S0 = np.linalg.slogdet(prior.scale)[1]
        logdet_S = np.linalg.slogdet(post.scale)[1]
        per = (-0.5 * N * D * np.log(np.pi) + _log_multigamma(0.5 * nu, D)
               - _log_multigamma(0.5 * nu0, D) + 0.5 * nu0 * logdet_S0
               - 0.5 * nu * logdet_S + 0.5 * D * (np.log(beta0) - np.log(beta)))
        return np.sum(per)

    @staticmethod
    def _ml_precision(prior, stats, N):
        D = stats.S1.shape[1]
        floor = 1e-6 * np.mean(np.diag(np.atleast_2d(prior.scale))) / prior.dof
        S1 = stats.S1
        scat = stats.S2 - S1[:, :, None] * S1[:, None, :] / N[:, None, None]
        cov = scat / N[:, None, None] + floor * np.eye(D)
        return np.linalg.inv(0.5 * (cov + np.swapaxes(cov, 1, 2)))

    @staticmethod
    def _posterior_point_precision(post, basis):
        nu, S = post.dof, post.scale
        if basis == "softmax":
            return nu[:, None, None] * np.linalg.inv(S)
        D = S.shape[-1]
        return np.maximum(nu - D, 1e-3)[:, None, None] * np.linalg.inv(S)

    def _point(self, m, prec):
        prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
        return GaussianFullPoint.from_blocks(
            self.emission_blocks(m[None], np.linalg.cholesky(prec)[None]))

    @staticmethod
    def _density_coordinate_terms(log_dg):
        # the density of the blocks is in L; the point maximises it in Lambda
        D = log_dg.shape[-1]
        return [-float(np.sum(D * np.log(2.0) + log_dg @ (D - np.arange(D))))]

    def kernel_curvature(self, post, n_components):
        K = n_components
        nu, S = np.asarray(post.dof, dtype=float), np.asarray(post.scale, dtype=float)
        D = S.shape[-1]
        prec = nu[:, None, None] * np.linalg.inv(S)
        cov = S / nu[:, None, None]
        lam = np.diagonal(prec, axis1=1, axis2=2).mean(axis=0)  # (D,)
        out = {"prec_chol_diag": 2.0 / K}
        if D > 1:
            sig = np.diagonal(cov, axis1=1, axis2=2).mean(axis=0)
            out["prec_chol_offdiag"] = np.tile(sig[np.tril_indices(D, -1)[0]] / K, K)
        out["means"] = np.tile(lam / K, K)
        return out

    def sample(self, post, states, rng):
        covars = post.scale / post.dof[:, None, None]
        z = rng.standard_normal((states.shape[0], covars.shape[-1]))
        L = np.linalg.cholesky(covars)
        return post.means[states] + np.einsum("nij,nj->ni", L[states], z)


class GaussianDiagEmissions(_GaussianEmissions):
    """Diagonal-covariance Gaussian states with per-dimension Normal-Gamma priors.

    Hyperparameters: ``means`` (K, D), ``beta`` (K,), ``dof`` (K,) = twice the Gamma
    shapes, ``scale`` (K, D) = twice the Gamma rates (the prior: (D,), scalar, scalar, (D,)).
    A conjugate extension of the thesis's HMM (Beal 2003, §2.4).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.emissions import GaussianDiagEmissions
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.randn(20, 2), rng.randn(20, 2) + 5])
    >>> hmm = VBHiddenMarkov(n_components=2, emission="gaussian", covariance_type="diag",
    ...                      random_state=0).fit(X)
    >>> family = GaussianDiagEmissions()
    >>> post = family.hyper_from_attributes(hmm, "posterior")
    >>> post.scale.shape, family.n_parameters(post)     # 2 x (2 means + 2 precisions)
    ((2, 2), 8)
    """

    covariance_type = "diag"
    point_type = GaussianDiagPoint
    _scale_ndim = 1

    @staticmethod
    def _check_scale_prior(s0, D):
        try:
            s0 = np.broadcast_to(s0, (D,)).copy()
        except ValueError:
            raise ValueError(f"scale_prior must be a scalar or of shape ({D},).") from None
        if not np.all(np.isfinite(s0)) or np.any(s0 <= 0):
            raise ValueError("scale_prior must contain positive finite values.")
        return s0

    @staticmethod
    def _check_init_scale(init, K, D):
        return init_posterior_array(init, "scale", (K, D), positive=True)

    def natural(self, post, prior):
        """As the full family's, with ``beta`` and ``dof`` always per state and
        dimension (K, D), so that a posterior fitted without missing entries ((K,)) and
        one fitted with them ((K, D)) combine in one online step."""
        return self._natural_coordinates(self._per_dimension(post), prior.means)

    def from_natural(self, vector, prior, like):
        post = self._from_natural_coordinates(vector, self._per_dimension(like), prior.means)
        if post is None or np.ndim(like.beta) == 2:
            return post
        # back to one count per state where every dimension has the same
        if np.all(post.beta == post.beta[:, :1]) and np.all(post.dof == post.dof[:, :1]):
            post.beta, post.dof = post.beta[:, 0].copy(), post.dof[:, 0].copy()
        return post

    @staticmethod
    def _per_dimension(post):
        """``post`` with ``beta`` and ``dof`` broadcast to (K, D)."""
        shape = np.shape(post.means)
        return GaussianPosterior(means=post.means,
                                 beta=np.broadcast_to(_per_dim(post.beta), shape).copy(),
                                 dof=np.broadcast_to(_per_dim(post.dof), shape).copy(),
                                 scale=post.scale)

    @staticmethod
    def _second_moments(resp, Xc):
        return resp.T @ (Xc * Xc)

    @staticmethod
    def _scale_update(scale0, S1, S2, beta):
        return scale0 + np.maximum(S2 - S1 * S1 / _per_dim(beta), 0.0)

    @staticmethod
    def _expected_logdet_and_precision(nu, scale):
        """sum_d E[ln lambda_d] and E[lambda] (K, D) under Gamma(nu/2, rate scale/2)."""
        a = 0.5 * _per_dim(nu)
        b = 0.5 * scale
        return gamma_expected_log(a, b).sum(axis=1), gamma_mean(a, b)

    @staticmethod
    def _mean_logdet_and_precision(nu, scale):
        prec = _per_dim(nu) / scale
        return np.log(prec).sum(axis=1), prec

    def expected_log_params(self, post):
        """``DiagParams`` with E[ln N(x_d | mu_kd, 1/lambda_kd)] =
        const_d[k, d] - 0.5 E[lambda_kd] (x_d - m_kd)^2 per dimension; ``const`` is the
        sum over the dimensions."""
        D = post.means.shape[1]
        a, b = 0.5 * _per_dim(post.dof), 0.5 * post.scale
        e_log = gamma_expected_log(a, b)
        const_d = 0.5 * e_log - 0.5 * LOG_2PI - 0.5 / _per_dim(post.beta)
        if np.ndim(post.beta) == 1:
            const = 0.5 * e_log.sum(axis=1) - 0.5 * D * LOG_2PI - 0.5 * D / post.beta
        else:
            const = const_d.sum(axis=1)
        return DiagParams(const, gamma_mean(a, b), post.means.copy(), const_d)

    def plugin_params(self, post):
        """``DiagParams`` at the posterior mean (``means_``, ``covars_``)."""
        D = post.means.shape[1]
        prec = _per_dim(post.dof) / post.scale
        log_prec = np.log(prec)
        return DiagParams(0.5 * log_prec.sum(axis=1) - 0.5 * D * LOG_2PI, prec,
                          post.means.copy(), 0.5 * log_prec - 0.5 * LOG_2PI)

    def log_table(self, params, X):
        if np.isnan(X).any():
            # the observed dimensions of every frame: the marginal of a diagonal Gaussian
            return _k.gaussian_diag_log_weights_missing(X, params.means, params.precision,
                                                       params.const_d)
        return _k.gaussian_diag_log_weights(X, params.means, params.precision, params.const)

    def expected_log_likelihood(self, stats, params, prior):
        quad_term = self._expected_quadratic(stats, params.precision,
                                             params.means - prior.means)
        if stats.Nd is None:
            return float(np.sum(stats.N * params.const - 0.5 * quad_term))
        return float(np.sum(stats.Nd * params.const_d) - 0.5 * np.sum(quad_term))

    @staticmethod
    def _scatter(stats, delta):
        """sum_t r_tk (x_td - mu_kd)^2 over the frames where dimension d is observed,
        from the centred statistics, ``delta`` = mu - m0."""
        S1, S2 = stats.S1, stats.S2
        return S2 - 2.0 * S1 * delta + stats.dimension_counts() * delta**2

    def _expected_quadratic(self, stats, precision, delta):
        return np.sum(precision * self._scatter(stats, delta), axis=1)

    @staticmethod
    def _batch_quadratic(params, L, scatter):
        return np.sum(np.asarray(params["precisions"], dtype=float) * scatter, axis=-1)

    def kl(self, post, prior):
        return float(
            np.sum(
                normal_gamma_kl(
                    post.means, _per_dim(post.beta), 0.5 * _per_dim(post.dof),
                    0.5 * post.scale,
                    prior.means, prior.beta, 0.5 * prior.dof, 0.5 * prior.scale,
                )
            )
        )

    def point_estimates(self, post):
        return {"means_": post.means.copy(), "covars_": post.scale / _per_dim(post.dof)}

    @staticmethod
    def _n_precision_parameters(D):
        return D

    # ------------------------------------------------------------------ scoring
    def param_blocks(self, prior, n_components):
        K, D = n_components, np.shape(prior.means)[-1]
        return [("means", (K, D), "real"), ("precisions", (K, D), "positive")]

    def log_likelihood_tables(self, params, X):
        if not np.isnan(X).any():
            return super().log_likelihood_tables(params, X)
        mu = np.asarray(params["means"], dtype=float)
        lam = np.asarray(params["precisions"], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            const_d = 0.5 * np.log(lam) - 0.5 * LOG_2PI
        return np.stack([
            _k.gaussian_diag_log_weights_missing(X, np.ascontiguousarray(mu[c]),
                                                 np.ascontiguousarray(lam[c]),
                                                 np.ascontiguousarray(const_d[c]))
            for c in range(mu.shape[0])
        ])

    def log_likelihood_batch(self, log_pi, log_A, params, X, starts, ends):
        if not np.isnan(X).any():
            return super().log_likelihood_batch(log_pi, log_A, params, X, starts, ends)
        # the compiled batch kernel has no missing entries: the tables of the family
        return EmissionFamily.log_likelihood_batch(self, log_pi, log_A, params, X, starts, ends)

    def log_emission_along(self, params, states, X):
        X0, observed = observed_parts(X)
        if observed is None:
            return super().log_emission_along(params, states, X)
        mu = np.asarray(params["means"], dtype=float)[:, states]  # (C, T, D)
        lam = np.asarray(params["precisions"], dtype=float)[:, states]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = 0.5 * np.log(lam) - 0.5 * LOG_2PI - 0.5 * lam * (X0 - mu) ** 2
        return np.sum(np.where(observed > 0, terms, 0.0), axis=-1)

    def complete_log_likelihood(self, params, stats, prior):
        if stats.Nd is None:
            return super().complete_log_likelihood(params, stats, prior)
        mu = np.asarray(params["means"], dtype=float)
        lam = np.asarray(params["precisions"], dtype=float)
        with np.errstate(divide="ignore"):
            per = stats.Nd * (0.5 * np.log(lam) - 0.5 * LOG_2PI)
        quad = np.sum(lam * self._scatter(stats, mu - prior.means), axis=-1)
        return np.sum(per, axis=(1, 2)) - 0.5 * np.sum(quad, axis=1)

    def precision_cholesky(self, params):
        """Diagonal Cholesky factors sqrt(lambda) of the precisions, (C, K, D, D)."""
        lam = np.asarray(params["precisions"], dtype=float)
        C, K, D = lam.shape
        L = np.zeros((C, K, D, D))
        idx = np.arange(D)
        with np.errstate(invalid="ignore"):
            L[:, :, idx, idx] = np.sqrt(lam)
        return L

    def complete_log_likelihood_gradient(self, params, stats, prior):
        """Gradient of :meth:`complete_log_likelihood` in the blocks (batch shapes):
        ``lambda (S1 - N delta)`` for the means and ``N / (2 lambda) - Sc / 2`` for the
        precisions (``delta = mu - m0``, ``Sc`` the scatter about ``mu``)."""
        mu = np.asarray(params["means"], dtype=float)
        lam = np.asarray(params["precisions"], dtype=float)
        delta = mu - prior.means
        N = stats.dimension_counts()
        return {"means": lam * (stats.S1 - N * delta),
                "precisions": 0.5 * N / lam - 0.5 * self._scatter(stats, delta)}

    @staticmethod
    def emission_blocks(means, precisions):
        """Blocks from means (C, K, D) and per-dimension precisions (C, K, D)."""
        return {"means": np.asarray(means, dtype=float),
                "precisions": np.asarray(precisions, dtype=float)}

    def _density(self, m, beta, nu, scale):
        return NormalGammaBlocks(self, m, _per_dim(beta), 0.5 * _per_dim(nu), 0.5 * scale)

    def log_marginal_likelihood(self, prior, stats):
        N = np.asarray(stats.dimension_counts(), dtype=float)
        post = self.vbm(prior, stats)
        a0, b0 = 0.5 * prior.dof, 0.5 * prior.scale
        a, b = a0 + 0.5 * N, 0.5 * post.scale
        per = (gammaln(a) - gammaln(a0) + a0 * np.log(b0) - a * np.log(b)
               + 0.5 * _per_dim(np.log(prior.beta) - np.log(post.beta))
               - 0.5 * N * LOG_2PI)
        return np.sum(per)

    @staticmethod
    def _ml_precision(prior, stats, N):
        floor = 1e-6 * np.mean(prior.scale) / prior.dof
        S1 = stats.S1
        N = np.maximum(stats.dimension_counts(), 1e-10)
        var = np.maximum(stats.S2 - S1**2 / N, 0.0) / N
        return 1.0 / (var + floor)

    @staticmethod
    def _posterior_point_precision(post, basis):
        nu, S = post.dof, post.scale
        if basis == "softmax":
            return _per_dim(nu) / S
        return _per_dim(np.maximum(nu - 1.0, 1e-3)) / S

    def _point(self, m, prec):
        return GaussianDiagPoint.from_blocks(self.emission_blocks(m[None], prec[None]))

    @staticmethod
    def _density_coordinate_terms(log_dg):
        return []  # the blocks are the precisions themselves

    def kernel_curvature(self, post, n_components):
        K = n_components
        nu, S = np.asarray(post.dof, dtype=float), np.asarray(post.scale, dtype=float)
        lam = (_per_dim(nu) / S).mean(axis=0)
        return {"precisions": 0.5 / K, "means": np.tile(lam / K, K)}

    def sample(self, post, states, rng):
        covars = post.scale / _per_dim(post.dof)
        z = rng.standard_normal((states.shape[0], covars.shape[-1]))
        return post.means[states] + np.sqrt(covars[states]) * z


# ---------------------------------------------------------------------------
# scoring: densities over the parameter blocks
# ---------------------------------------------------------------------------


def _with_diagonal_added(G, diag):
    """``G`` (..., D, D) with ``diag`` (..., D) added to its diagonal (a copy)."""
    G = np.array(G, dtype=float)
    idx = np.arange(G.shape[-1])
    G[..., idx, idx] += diag
    return G


def _check_broaden(broaden):
    if not 0 < broaden <= 1:
        raise ValueError(f"broaden must be in (0, 1], got {broaden}.")


def _student_t_log_pdf(quad, half_logdet_prec, D, dof):
    """ln of a D-variate Student-t with ``dof`` degrees of freedom at squared scaled
    distance ``quad`` from its centre, scale matrix with ln|precision| = 2 half_logdet."""
    v = dof
    return (gammaln(0.5 * (v + D)) - gammaln(0.5 * v) - 0.5 * D * np.log(v * np.pi)
            + half_logdet_prec - 0.5 * (v + D) * np.log1p(quad / v))


class NormalWishartBlocks:
    """Independent Normal-Wishart factors over the blocks ``means`` and the Cholesky
    factor of every state's precision (``prec_chol_diag``, ``prec_chol_offdiag``).

    ``mu_k | Lambda_k ~ N(m_k, (beta_k Lambda_k)^-1)`` (or a multivariate Student-t with
    ``dof`` degrees of freedom and the same scale when ``dof`` is given, a heavier-tailed
    proposal), ``Lambda_k ~ Wishart(W_k = S_k^-1, nu_k)``.  The map L -> Lambda = L L^T
    from the D(D+1)/2 lower entries of L (positive diagonal) onto the positive-definite
    cone has ``|d Lambda / d L| = 2^D prod_i L_ii^(D-i+1)`` (1-based i), so the density in
    the block coordinates is ``ln NW(mu, L L^T) + D ln 2 + sum_i (D-i+1) ln L_ii``.
    """

    def __init__(self, family, m, beta, S, nu, dof=None):
        self.family = family
        self.m = np.asarray(m, dtype=float)
        K, D = self.m.shape
        self.K, self.D = K, D
        self.beta = np.broadcast_to(np.asarray(beta, dtype=float), (K,)).copy()
        self.S = np.broadcast_to(np.asarray(S, dtype=float), (K, D, D)).copy()
        self.nu = np.broadcast_to(np.asarray(nu, dtype=float), (K,)).copy()
        if np.any(~(self.beta > 0)) or np.any(~(self.nu > D - 1)):
            raise ValueError("Normal-Wishart needs beta > 0 and nu > D - 1.")
        self.dof = None if dof is None else float(dof)
        W = np.linalg.inv(self.S)
        self.W = 0.5 * (W + np.swapaxes(W, 1, 2))
        self.jac_power = D - np.arange(D)  # exponents D - i + 1 for 1-based i

    def log_pdf(self, params):
        D = self.D
        mu = np.asarray(params["means"], dtype=float)
        L = self.family.precision_cholesky(params)
        dg = np.diagonal(L, axis1=-2, axis2=-1)
        bad = np.any(~(dg > 0), axis=(1, 2))
        # a factor outside the coordinate domain has density 0; evaluate a valid stand-in
        L = np.where(bad[:, None, None, None], np.eye(D), L)
        log_dg = np.log(np.diagonal(L, axis1=-2, axis2=-1))
        if self.dof is None:
            log_nw = normal_wishart_log_pdf(mu, L, self.m, self.beta, self.W, self.nu,
                                            cholesky=True)
        else:
            u = np.einsum("ckdj,ckd->ckj", L, mu - self.m)  # L^T (mu - m)
            quad = self.beta * np.sum(u * u, axis=-1)
            half_logdet = 0.5 * D * np.log(self.beta) + log_dg.sum(axis=-1)
            log_nw = wishart_log_pdf(L, self.W, self.nu, cholesky=True) + _student_t_log_pdf(
                quad, half_logdet, D, self.dof)
        jac = D * np.log(2.0) + np.sum(self.jac_power * log_dg, axis=-1)
        return np.where(bad, -np.inf, np.sum(log_nw + jac, axis=1))

    def log_pdf_gradient(self, params):
        """Gradient of :meth:`log_pdf` (no ``dof``) in the blocks: ``-beta Lambda (mu - m)``
        for the means and the lower entries of
        ``diag((nu - D + D - i + 1) / L_ii) - (beta e e^T + S) L`` (``e = mu - m``, 1-based
        ``i``) for the Cholesky factor: the normal's ``ln|L|``, the Wishart's
        ``(nu - D - 1) ln|L|`` and the Jacobian's powers."""
        if self.dof is not None:
            raise NotImplementedError("the gradient of the Student-t variant is not provided")
        mu = np.asarray(params["means"], dtype=float)
        L = self.family.precision_cholesky(params)
        e = mu - self.m
        lam = L @ np.swapaxes(L, -1, -2)
        g_mu = -self.beta[:, None] * np.einsum("ckij,ckj->cki", lam, e)
        outer = self.beta[:, None, None] * e[..., :, None] * e[..., None, :]
        g_L = -(outer + self.S) @ L
        power = (self.nu - self.D)[:, None] + self.jac_power  # (K, D)
        dg = np.diagonal(L, axis1=-2, axis2=-1)
        return self.family.emission_blocks(g_mu, _with_diagonal_added(g_L, power / dg))

    def sample(self, rng, size):
        size = int(size)
        if self.dof is None:
            mu, L = normal_wishart_sample(self.m, self.beta, self.W, self.nu, rng, size,
                                          cholesky=True)
        else:
            L = wishart_sample(self.W, self.nu, rng, size, cholesky=True)
            z = rng.standard_normal((size, self.K, self.D))
            z = z / np.sqrt(rng.chisquare(self.dof, size=(size, self.K)) / self.dof)[..., None]
            # mu - m = beta^-1/2 L^-T z has the Student-t law with scale (beta L L^T)^-1
            y = np.linalg.solve(np.swapaxes(L, -1, -2), z[..., None])[..., 0]
            mu = self.m + y / np.sqrt(self.beta)[:, None]
        return self.family.emission_blocks(mu, L)

    def mean(self):
        """m and chol(E[Lambda]) = chol(nu W), each with a batch axis of 1."""
        L = np.linalg.cholesky(self.nu[:, None, None] * self.W)
        return self.family.emission_blocks(self.m[None].copy(), L[None])

    def broadened(self, dof=None, broaden=None):
        """Student-t means with ``dof``; with ``broaden = kappa`` beta, S and nu times kappa
        (mean precision nu W kept, spread wider)."""
        beta, S, nu = self.beta, self.S, self.nu
        if broaden is not None:
            _check_broaden(broaden)
            if np.any(broaden * nu <= self.D - 1):
                raise ValueError("broaden makes the Wishart degrees of freedom too small.")
            beta, S, nu = broaden * beta, broaden * S, broaden * nu
        return NormalWishartBlocks(self.family, self.m, beta, S, nu, dof)

    def unconstrained_sd(self):
        """Approximate standard deviations of the unconstrained coordinates (means,
        ln L_ii, L_ij) for tuning random-walk steps."""
        D = self.D
        mean_sd = np.sqrt(np.diagonal(self.S, axis1=1, axis2=2)
                          / (self.beta * np.maximum(self.nu - D - 1.0, 0.5))[:, None])
        diag_sd = 0.5 * np.sqrt(polygamma(1, 0.5 * (self.nu[:, None] - np.arange(D))))
        parts = [mean_sd.ravel(), diag_sd.ravel()]
        if D > 1:
            w = np.diagonal(self.W, axis1=1, axis2=2)  # (K, D)
            parts.append(np.sqrt(w[:, np.tril_indices(D, -1)[0]]).ravel())
        return np.concatenate(parts)


class NormalGammaBlocks:
    """Independent per-dimension Normal-Gamma factors over the blocks ``means`` and
    ``precisions``: ``mu_kd | lambda_kd ~ N(m_kd, 1/(beta_kd lambda_kd))`` (Student-t with
    ``dof`` when given), ``lambda_kd ~ Gamma(shape a_kd, rate b_kd)``."""

    def __init__(self, family, m, beta, a, b, dof=None):
        self.family = family
        self.m = np.asarray(m, dtype=float)
        shape = self.m.shape
        self.beta = np.broadcast_to(np.asarray(beta, dtype=float), shape).copy()
        self.a = np.broadcast_to(np.asarray(a, dtype=float), shape).copy()
        self.b = np.broadcast_to(np.asarray(b, dtype=float), shape).copy()
        if np.any(~(self.beta > 0)) or np.any(~(self.a > 0)) or np.any(~(self.b > 0)):
            raise ValueError("Normal-Gamma needs beta, a, b > 0.")
        self.dof = None if dof is None else float(dof)

    def log_pdf(self, params):
        mu = np.asarray(params["means"], dtype=float)
        lam = np.asarray(params["precisions"], dtype=float)
        bad = np.any(~(lam > 0), axis=(1, 2))
        lam = np.where(bad[:, None, None], 1.0, lam)  # valid stand-in, density 0 below
        if self.dof is None:
            out = normal_gamma_log_pdf(mu, lam, self.m, self.beta, self.a, self.b)
        else:
            quad = self.beta * lam * (mu - self.m) ** 2
            half_logdet = 0.5 * (np.log(self.beta) + np.log(lam))
            out = np.sum(gamma_log_pdf(lam, self.a, self.b)
                         + _student_t_log_pdf(quad, half_logdet, 1, self.dof), axis=-1)
        return np.where(bad, -np.inf, np.sum(out, axis=1))

    def log_pdf_gradient(self, params):
        """Gradient of :meth:`log_pdf` (no ``dof``): ``-beta lambda (mu - m)`` for the
        means, ``(a - 1/2) / lambda - beta (mu - m)^2 / 2 - b`` for the precisions."""
        if self.dof is not None:
            raise NotImplementedError("the gradient of the Student-t variant is not provided")
        mu = np.asarray(params["means"], dtype=float)
        lam = np.asarray(params["precisions"], dtype=float)
        e = mu - self.m
        return {"means": -self.beta * lam * e,
                "precisions": (self.a - 0.5) / lam - 0.5 * self.beta * e * e - self.b}

    def sample(self, rng, size):
        size = int(size)
        if self.dof is None:
            mu, lam = normal_gamma_sample(self.m, self.beta, self.a, self.b, rng, size)
        else:
            lam = gamma_sample(self.a, self.b, rng, size)
            z = rng.standard_normal(lam.shape)
            z = z / np.sqrt(rng.chisquare(self.dof, size=lam.shape) / self.dof)
            mu = self.m + z / np.sqrt(self.beta * lam)
        return self.family.emission_blocks(mu, lam)

    def mean(self):
        return self.family.emission_blocks(self.m[None].copy(), (self.a / self.b)[None])

    def broadened(self, dof=None, broaden=None):
        beta, a, b = self.beta, self.a, self.b
        if broaden is not None:
            _check_broaden(broaden)
            beta, a, b = broaden * beta, broaden * a, broaden * b
        return NormalGammaBlocks(self.family, self.m, beta, a, b, dof)

    def unconstrained_sd(self):
        mean_sd = np.sqrt(self.b / (self.beta * np.maximum(self.a - 1.0, 0.5)))
        return np.concatenate([mean_sd.ravel(), np.sqrt(polygamma(1, self.a)).ravel()])
