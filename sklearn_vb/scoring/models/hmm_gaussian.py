"""ScoringModel for a fitted :class:`~sklearn_vb.hmm.VBHiddenMarkov` with Gaussian emissions.

Parameters ``theta`` (every hyperparameter frozen at the estimator's fitted value, IF-2):

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
``lambda_d ~ Gamma(nu0/2, rate scale_prior_d/2)`` (diag).

Coordinates and Jacobian (T-M5).  The map ``L -> Lambda = L L^T`` from the ``D(D+1)/2``
lower entries of ``L`` (positive diagonal) to the lower entries of ``Lambda`` is a bijection
onto the positive-definite cone with ``|d Lambda / d L| = 2^D prod_{i=1}^D L_ii^(D-i+1)``
(1-based ``i``), so every density of a full precision is taken in the ``L`` coordinates:
``ln p(mu, L) = ln NW(mu, L L^T) + D ln 2 + sum_i (D-i+1) ln L_ii``.  The unconstrained basis
of the ParamSpace then maps ``L_ii = exp(phi)`` (log-Jacobian ``sum ln L_ii``) and leaves the
off-diagonal entries as they are, so ``phi -> theta`` is a bijection onto ``R^d``.  Diagonal
precisions are ordinary positive blocks (densities in ``lambda``).

The likelihood ``ln p(X | theta)`` is the exact forward algorithm over all sequences, for a
whole batch of parameter sets in one numba call; ``n`` (``n_cases``) is the total number of
frames.  ``fit_point`` is EM with the estimator's conjugate M-step arithmetic; ``e_step`` is
the exact forward-backward posterior; ``log_complete_evidence`` the closed-form
Dirichlet x Normal-Wishart/Normal-Gamma integral at (fractional) expected statistics.
"""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
from scipy.special import digamma, gammaln, logsumexp, polygamma

from ..._distributions import _log_multigamma, _rng, dirichlet_log_pdf, dirichlet_sample
from ..._kernels import hmm as _k
from ..._kernels._constants import LOG_2PI
from ..._kernels.forward_backward import (forward_backward_scaled,
                                         gaussian_hmm_log_likelihood_batch)
from ..params import ParamBlock, ParamSpace
from ..posteriors import MixturePosterior
from ..protocols import EStep, ScoringModelMixin
from ._dirichlet import dirichlet_evidence

__all__ = ["GaussianHMMScoringModel", "GaussianHMMPosterior", "scoring_model_from_estimator"]


# ---------------------------------------------------------------------------------------
# layout of the parameter blocks
# ---------------------------------------------------------------------------------------


class _Layout:
    """Names, shapes and conversions between parameter blocks and (mu, L) arrays."""

    def __init__(self, K, D, covariance_type):
        self.K, self.D, self.cov = int(K), int(D), covariance_type
        self.full = covariance_type == "full"
        self.tril = np.tril_indices(self.D, -1)
        blocks = []
        if self.K > 1:
            blocks += [ParamBlock("startprob", (self.K,), "simplex"),
                       ParamBlock("transmat", (self.K, self.K), "simplex")]
        blocks.append(ParamBlock("means", (self.K, self.D), "real"))
        if self.full:
            blocks.append(ParamBlock("prec_chol_diag", (self.K, self.D), "positive"))
            if self.D > 1:
                blocks.append(ParamBlock("prec_chol_offdiag",
                                         (self.K, self.D * (self.D - 1) // 2), "real"))
        else:
            blocks.append(ParamBlock("precisions", (self.K, self.D), "positive"))
        self.space = ParamSpace(blocks)

    def chol(self, params):
        """Lower Cholesky factors of the precisions, (C, K, D, D)."""
        K, D = self.K, self.D
        if self.full:
            dg = np.asarray(params["prec_chol_diag"], dtype=float)
            C = dg.shape[0]
            L = np.zeros((C, K, D, D))
            idx = np.arange(D)
            L[:, :, idx, idx] = dg
            if D > 1:
                L[:, :, self.tril[0], self.tril[1]] = params["prec_chol_offdiag"]
            return L
        lam = np.asarray(params["precisions"], dtype=float)
        C = lam.shape[0]
        L = np.zeros((C, K, D, D))
        idx = np.arange(D)
        with np.errstate(invalid="ignore"):
            L[:, :, idx, idx] = np.sqrt(lam)
        return L

    def emission_blocks(self, mu, prec):
        """Blocks from means (C, K, D) and ``L`` (full, (C, K, D, D)) or ``lambda`` (diag)."""
        out = {"means": np.asarray(mu, dtype=float)}
        if self.full:
            out["prec_chol_diag"] = np.diagonal(prec, axis1=-2, axis2=-1).copy()
            if self.D > 1:
                out["prec_chol_offdiag"] = prec[..., self.tril[0], self.tril[1]].copy()
        else:
            out["precisions"] = np.asarray(prec, dtype=float)
        return out

    def log_pi_A(self, params, C):
        if self.K == 1:
            return np.zeros((C, 1)), np.zeros((C, 1, 1))
        with np.errstate(divide="ignore"):
            return (np.log(np.asarray(params["startprob"], dtype=float)),
                    np.log(np.asarray(params["transmat"], dtype=float)))


# ---------------------------------------------------------------------------------------
# per-state emission factors (used for the prior and for q)
# ---------------------------------------------------------------------------------------


class _NormalWishartCholesky:
    """Independent Normal-Wishart factors over ``(mu_k, L_k)``, ``Lambda_k = L_k L_k^T``.

    ``mu | Lambda ~ N(m, (beta Lambda)^-1)`` (or a multivariate Student-t with ``dof``
    degrees of freedom and the same scale when ``dof`` is given), ``Lambda ~ Wishart(S^-1,
    nu)``.  Densities in the ``(mu, L)`` coordinates include the Jacobian of the Cholesky
    map, ``D ln 2 + sum_i (D - i + 1) ln L_ii``.
    """

    def __init__(self, m, beta, S, nu, dof=None):
        self.m = np.asarray(m, dtype=float)
        K, D = self.m.shape
        self.K, self.D = K, D
        self.beta = np.broadcast_to(np.asarray(beta, dtype=float), (K,)).copy()
        self.S = np.broadcast_to(np.asarray(S, dtype=float), (K, D, D)).copy()
        self.nu = np.broadcast_to(np.asarray(nu, dtype=float), (K,)).copy()
        if np.any(~(self.beta > 0)) or np.any(~(self.nu > D - 1)):
            raise ValueError("Normal-Wishart needs beta > 0 and nu > D - 1.")
        self.dof = None if dof is None else float(dof)
        LS = np.linalg.cholesky(self.S)
        logdet_S = 2.0 * np.sum(np.log(np.diagonal(LS, axis1=1, axis2=2)), axis=1)
        self.W = np.linalg.inv(self.S)
        self.W = 0.5 * (self.W + np.swapaxes(self.W, 1, 2))
        self.LW = np.linalg.cholesky(self.W)
        # ln of the Wishart normaliser, W^-1 = S: (nu/2) ln|S| - (nu D/2) ln 2 - ln Gamma_D(nu/2)
        self.log_norm = 0.5 * self.nu * logdet_S - 0.5 * self.nu * D * np.log(2.0) \
            - _log_multigamma(0.5 * self.nu, D)
        self.jac_power = D - np.arange(D)  # exponents D - i + 1 for 1-based i

    def log_pdf(self, mu, L):
        D = self.D
        mu = np.asarray(mu, dtype=float)
        L = np.asarray(L, dtype=float)
        dg = np.diagonal(L, axis1=-2, axis2=-1)
        bad = np.any(~(dg > 0), axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            log_dg = np.log(dg)
        logdet = 2.0 * log_dg.sum(axis=-1)  # ln|Lambda|, (C, K)
        Lam = L @ np.swapaxes(L, -1, -2)
        tr = np.einsum("kij,ckji->ck", self.S, Lam)
        log_w = self.log_norm + 0.5 * (self.nu - D - 1.0) * logdet - 0.5 * tr
        r = mu - self.m
        u = np.einsum("ckdj,ckd->ckj", L, r)  # L^T r
        quad = np.sum(u * u, axis=-1)  # r^T Lambda r
        if self.dof is None:
            log_g = 0.5 * (D * np.log(self.beta) + logdet - D * LOG_2PI - self.beta * quad)
        else:
            v = self.dof
            log_g = (gammaln(0.5 * (v + D)) - gammaln(0.5 * v) - 0.5 * D * np.log(v * np.pi)
                     + 0.5 * (D * np.log(self.beta) + logdet)
                     - 0.5 * (v + D) * np.log1p(self.beta * quad / v))
        jac = D * np.log(2.0) + np.sum(self.jac_power * log_dg, axis=-1)
        out = np.sum(log_w + log_g + jac, axis=1)
        return np.where(bad, -np.inf, out)

    def sample(self, rng, size):
        """Bartlett: ``L = chol(W) A`` with ``A`` lower, ``A_ii^2 ~ chi2(nu - i + 1)``, is
        exactly the Cholesky factor of a Wishart draw."""
        K, D = self.K, self.D
        A = np.tril(rng.standard_normal((size, K, D, D)), k=-1)
        df = np.broadcast_to(self.nu[:, None] - np.arange(D), (size, K, D))
        idx = np.arange(D)
        A[:, :, idx, idx] = np.sqrt(rng.chisquare(df))
        L = self.LW[None] @ A
        z = rng.standard_normal((size, K, D))
        if self.dof is not None:
            z = z / np.sqrt(rng.chisquare(self.dof, size=(size, K)) / self.dof)[..., None]
        # mu - m = (beta)^-1/2 L^-T z has covariance (beta L L^T)^-1
        y = np.linalg.solve(np.swapaxes(L, -1, -2), z[..., None])[..., 0]
        mu = self.m + y / np.sqrt(self.beta)[:, None]
        return mu, L

    def mean_point(self):
        """(m, chol(E[Lambda]) = chol(nu W)), each with a batch axis of 1."""
        return self.m[None].copy(), np.linalg.cholesky(self.nu[:, None, None] * self.W)[None]

    def broadened(self, dof, broaden):
        beta, S, nu = self.beta, self.S, self.nu
        if broaden is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            if np.any(broaden * nu <= self.D - 1):
                raise ValueError("broaden makes the Wishart degrees of freedom too small.")
            # concentration times broaden, mean precision nu W kept
            beta, S, nu = broaden * beta, broaden * S, broaden * nu
        return _NormalWishartCholesky(self.m, beta, S, nu, dof)

    def unconstrained_sd(self, layout):
        D = self.D
        mean_sd = np.sqrt(np.diagonal(self.S, axis1=1, axis2=2)
                          / (self.beta * np.maximum(self.nu - D - 1.0, 0.5))[:, None])
        diag_sd = 0.5 * np.sqrt(polygamma(1, 0.5 * (self.nu[:, None] - np.arange(D))))
        parts = [mean_sd.ravel(), diag_sd.ravel()]
        if D > 1:
            w = np.diagonal(self.W, axis1=1, axis2=2)  # (K, D)
            parts.append(np.sqrt(w[:, layout.tril[0]]).ravel())
        return np.concatenate(parts)


class _NormalGamma:
    """Independent per-dimension Normal-Gamma factors over ``(mu_kd, lambda_kd)``:
    ``mu | lambda ~ N(m, 1/(beta lambda))`` (Student-t with ``dof`` when given),
    ``lambda ~ Gamma(shape a, rate b)``."""

    def __init__(self, m, beta, a, b, dof=None):
        self.m = np.asarray(m, dtype=float)
        shape = self.m.shape
        self.beta = np.broadcast_to(np.asarray(beta, dtype=float), shape).copy()
        self.a = np.broadcast_to(np.asarray(a, dtype=float), shape).copy()
        self.b = np.broadcast_to(np.asarray(b, dtype=float), shape).copy()
        if np.any(~(self.beta > 0)) or np.any(~(self.a > 0)) or np.any(~(self.b > 0)):
            raise ValueError("Normal-Gamma needs beta, a, b > 0.")
        self.dof = None if dof is None else float(dof)

    def log_pdf(self, mu, lam):
        mu = np.asarray(mu, dtype=float)
        lam = np.asarray(lam, dtype=float)
        bad = np.any(~(lam > 0), axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            log_lam = np.log(lam)
            lg = self.a * np.log(self.b) - gammaln(self.a) + (self.a - 1.0) * log_lam - self.b * lam
            p = self.beta * lam * (mu - self.m) ** 2
            if self.dof is None:
                ln = 0.5 * (np.log(self.beta) + log_lam - LOG_2PI - p)
            else:
                v = self.dof
                ln = (gammaln(0.5 * (v + 1)) - gammaln(0.5 * v) - 0.5 * np.log(v * np.pi)
                      + 0.5 * (np.log(self.beta) + log_lam) - 0.5 * (v + 1) * np.log1p(p / v))
        out = np.sum(lg + ln, axis=(1, 2))
        return np.where(bad, -np.inf, out)

    def sample(self, rng, size):
        shape = (size,) + self.m.shape
        lam = np.maximum(rng.standard_gamma(self.a, size=shape) / self.b, np.finfo(float).tiny)
        z = rng.standard_normal(shape)
        if self.dof is not None:
            z = z / np.sqrt(rng.chisquare(self.dof, size=shape) / self.dof)
        return self.m + z / np.sqrt(self.beta * lam), lam

    def mean_point(self):
        return self.m[None].copy(), (self.a / self.b)[None]

    def broadened(self, dof, broaden):
        beta, a, b = self.beta, self.a, self.b
        if broaden is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            beta, a, b = broaden * beta, broaden * a, broaden * b
        return _NormalGamma(self.m, beta, a, b, dof)

    def unconstrained_sd(self, layout):
        mean_sd = np.sqrt(self.b / (self.beta * np.maximum(self.a - 1.0, 0.5)))
        return np.concatenate([mean_sd.ravel(), np.sqrt(polygamma(1, self.a)).ravel()])


# ---------------------------------------------------------------------------------------
# q(theta) (and the prior) over the whole parameter space
# ---------------------------------------------------------------------------------------


class GaussianHMMPosterior:
    """Dirichlet rows x per-state Normal-Wishart (Cholesky coordinates) or Normal-Gamma.

    ``log_pdf`` is normalised in the coordinates of the model's ``log_prior`` (simplex rows:
    Lebesgue measure on the first K-1 entries; full precisions: the Cholesky entries).
    The Normal-Wishart factor couples the ``means`` block with the precision blocks, so
    there is no per-block ``blocks`` list; ``factors`` names the three factors.
    """

    def __init__(self, layout, startprob, transmat, emission):
        self.layout = layout
        self.startprob = None if startprob is None else np.asarray(startprob, dtype=float)
        self.transmat = None if transmat is None else np.asarray(transmat, dtype=float)
        self.emission = emission
        self.factors = (["startprob", "transmat"] if layout.K > 1 else []) + ["emission"]

    def sample(self, rng, size):
        size = int(size)
        out = {}
        if self.startprob is not None:
            out["startprob"] = dirichlet_sample(self.startprob, rng, size=size)
            out["transmat"] = dirichlet_sample(self.transmat, rng, size=size)
        mu, prec = self.emission.sample(rng, size)
        out.update(self.layout.emission_blocks(mu, prec))
        return out

    def emission_arrays(self, params):
        mu = np.asarray(params["means"], dtype=float)
        if self.layout.full:
            return mu, self.layout.chol(params)
        return mu, np.asarray(params["precisions"], dtype=float)

    def log_pdf(self, params):
        mu, prec = self.emission_arrays(params)
        out = self.emission.log_pdf(mu, prec)
        if self.startprob is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out + dirichlet_log_pdf(params["startprob"], self.startprob) + np.sum(
                    dirichlet_log_pdf(params["transmat"], self.transmat), axis=-1)
        return np.asarray(out, dtype=float)

    def mean(self):
        """Posterior-mean plug-in: E[startprob], E[transmat], E[mu] and the Cholesky factor
        (or diagonal) of E[Lambda] -- the estimator's ``startprob_``, ``transmat_``,
        ``means_`` and ``covars_^-1``."""
        out = {}
        if self.startprob is not None:
            out["startprob"] = (self.startprob / self.startprob.sum())[None]
            out["transmat"] = (self.transmat / self.transmat.sum(axis=1, keepdims=True))[None]
        mu, prec = self.emission.mean_point()
        out.update(self.layout.emission_blocks(mu, prec))
        return out

    def heavy_tailed(self, dof=3.0, broaden=None):
        """``mu | Lambda`` becomes a Student-t with ``dof`` (same location and scale); with
        ``broaden = kappa`` every Dirichlet concentration and the precision factor's
        concentrations (beta, nu or a) are multiplied by kappa with their means kept."""
        sp, tm = self.startprob, self.transmat
        if broaden is not None and sp is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            sp, tm = sp * broaden, tm * broaden
        return GaussianHMMPosterior(self.layout, sp, tm, self.emission.broadened(dof, broaden))

    def gaussian_unconstrained(self):
        return None

    def unconstrained_sd(self, space):
        """Approximate standard deviations of the unconstrained coordinates (VMCMC steps)."""
        parts = []
        if self.startprob is not None:
            for a in (self.startprob, self.transmat):
                t = polygamma(1, a)
                parts.append(np.sqrt(t[..., :-1] + t[..., -1:]).ravel())
        parts.append(self.emission.unconstrained_sd(self.layout))
        return np.concatenate(parts)

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


# ---------------------------------------------------------------------------------------
# the scoring model
# ---------------------------------------------------------------------------------------


class GaussianHMMScoringModel(ScoringModelMixin):
    """The scoring view of a fitted Gaussian-emission VBHiddenMarkov (IF-4 .. IF-8).

    Parameters
    ----------
    estimator : VBHiddenMarkov
        Fitted with ``emission="gaussian"``; its prior hyperparameters
        (``startprob_prior_``, ``transmat_prior_``, ``means_prior_``, ``beta_prior_``,
        ``dof_prior_``, ``scale_prior_``) are frozen here.

    Data: ``prepare_data(X, lengths=None, sequence_ids=None)`` validates ``X`` as the
    estimator does; ``n_cases`` is the total number of frames.  Expected statistics
    (``e_step(...).stats``) are a dict ``start`` (K,), ``trans`` (K, K), ``N`` (K,),
    ``S1`` (K, D) and ``S2`` ((K, D, D) or (K, D)) with the frames centred at the prior
    mean ``m0``, exactly as the estimator's.
    """

    def __init__(self, estimator):
        if getattr(estimator, "emission", None) != "gaussian":
            raise ValueError("GaussianHMMScoringModel needs a VBHiddenMarkov with "
                             "emission='gaussian'.")
        if not hasattr(estimator, "means_posterior_"):
            raise ValueError("the estimator must be fitted.")
        self.estimator = estimator
        K = int(estimator.n_components)
        D = int(estimator.n_features_in_)
        self.n_components = self.K = K
        self.D = D
        self.covariance_type = estimator.covariance_type
        self.layout = _Layout(K, D, self.covariance_type)
        self.param_space = self.layout.space
        self.startprob_prior = np.array(estimator.startprob_prior_, dtype=float).reshape(K)
        self.transmat_prior = np.array(estimator.transmat_prior_, dtype=float).reshape(K, K)
        self.m0 = np.array(estimator.means_prior_, dtype=float).reshape(D)
        self.beta0 = float(estimator.beta_prior_)
        self.nu0 = float(estimator.dof_prior_)
        self.scale0 = np.array(estimator.scale_prior_, dtype=float)
        self._seq_fraction = 1.0
        self._prior = self._posterior_from_hyper(
            self.startprob_prior, self.transmat_prior, np.broadcast_to(self.m0, (K, D)),
            np.full(K, self.beta0), np.full(K, self.nu0),
            np.broadcast_to(self.scale0, (K,) + self.scale0.shape))

    # -- data ------------------------------------------------------------------------
    def prepare_data(self, X, lengths=None, sequence_ids=None):
        d = self.estimator.check_data(X, lengths=lengths, sequence_ids=sequence_ids)
        Xv = np.ascontiguousarray(d.X, dtype=float)
        starts = np.asarray(d.starts, dtype=np.int64)
        self._seq_fraction = starts.size / Xv.shape[0]
        return {"X": Xv, "starts": starts, "ends": np.asarray(d.ends, dtype=np.int64),
                "index": np.arange(Xv.shape[0], dtype=np.int64)}

    def n_cases(self, X):
        return int(X["X"].shape[0])

    # -- counting ----------------------------------------------------------------------
    def n_parameters(self):
        K, D = self.K, self.D
        per_state = D + (D * (D + 1) // 2 if self.layout.full else D)
        return (K - 1) + K * (K - 1) + K * per_state

    def n_aliases(self):
        return factorial(self.K)

    # -- priors and posteriors -----------------------------------------------------------
    def _posterior_from_hyper(self, w_pi, w_A, m, beta, nu, S):
        if self.layout.full:
            em = _NormalWishartCholesky(m, beta, S, nu)
        else:
            em = _NormalGamma(m, np.asarray(beta)[:, None], 0.5 * np.asarray(nu)[:, None],
                              0.5 * np.asarray(S))
        if self.K == 1:
            w_pi = w_A = None
        return GaussianHMMPosterior(self.layout, w_pi, w_A, em)

    @property
    def prior(self):
        """The prior as a :class:`GaussianHMMPosterior` (same coordinates as q)."""
        return self._prior

    def log_prior(self, params):
        return self._prior.log_pdf(params)

    def sample_prior(self, rng, size):
        return self._prior.sample(_rng(rng), int(size))

    def _conjugate(self, stats):
        """The conjugate posterior hyperparameters of ``stats`` (the estimator's VBM)."""
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        beta = self.beta0 + N
        m = self.m0 + S1 / beta[:, None]
        nu = self.nu0 + N
        if self.layout.full:
            S = self.scale0 + S2 - S1[:, :, None] * S1[:, None, :] / beta[:, None, None]
            S = 0.5 * (S + np.swapaxes(S, 1, 2))
        else:
            S = self.scale0 + np.maximum(S2 - S1 * S1 / beta[:, None], 0.0)
        return (self.startprob_prior + stats["start"], self.transmat_prior + stats["trans"],
                m, beta, nu, S)

    def posterior_from_stats(self, stats):
        """q(theta) = VBM(stats): the conjugate posterior given expected statistics."""
        return self._posterior_from_hyper(*self._conjugate(stats))

    def variational_posterior(self, X=None):
        """q(theta) of the fitted estimator (its ``*_posterior_`` attributes)."""
        est = self.estimator
        return self._posterior_from_hyper(
            np.asarray(est.startprob_posterior_, dtype=float),
            np.asarray(est.transmat_posterior_, dtype=float),
            np.asarray(est.means_posterior_, dtype=float),
            np.asarray(est.beta_posterior_, dtype=float),
            np.asarray(est.dof_posterior_, dtype=float),
            np.asarray(est.scale_posterior_, dtype=float))

    def kernel_curvature(self):
        """Per-case curvature scales of the unconstrained coordinates at the fitted
        posterior, for the random-walk and Dirichlet kernels (steps ~ 1/sqrt(n beta h))."""
        K, D = self.K, self.D
        est = self.estimator
        nu, S = np.asarray(est.dof_posterior_, dtype=float), np.asarray(est.scale_posterior_)
        out = {}
        if K > 1:
            out["startprob"] = self._seq_fraction
            out["transmat"] = 1.0 / K
        if self.layout.full:
            prec = nu[:, None, None] * np.linalg.inv(S)
            cov = S / nu[:, None, None]
            lam = np.diagonal(prec, axis1=1, axis2=2).mean(axis=0)  # (D,)
            out["prec_chol_diag"] = 2.0 / K
            if D > 1:
                sig = np.diagonal(cov, axis1=1, axis2=2).mean(axis=0)
                out["prec_chol_offdiag"] = np.tile(sig[self.layout.tril[0]] / K, K)
        else:
            lam = (nu[:, None] / S).mean(axis=0)
            out["precisions"] = 0.5 / K
        out["means"] = np.tile(lam / K, K)
        return out

    # -- likelihood ----------------------------------------------------------------------
    def annealing_kernel(self, X=None, scale=1.0):
        """The kernel ``kernel="auto"`` uses (G6 hook), tuned once from the prior and the
        fitted q, never from the chains: Dirichlet MH on the rows of ``startprob`` and
        ``transmat`` with strengths from the rows' tempered concentrations
        ``A_prior + beta (A_q - A_prior)`` (proposal spread 2.38/sqrt(K-1) times the
        row's spread), then a random walk on the emission blocks with one step per
        coordinate, ``scale 2.38/sqrt(dim) / sqrt(pi_i + beta h_i)``: ``pi_i`` the prior
        precision (robust estimate from prior draws, so data far from unit scale are
        handled), ``h_i = 1/var_q - pi_i``.  The tuning reflects the training data; on
        other data it is still a valid (if less well tuned) kernel."""
        from ..mcmc_moves import (BlockRandomWalkMH, CompositeKernel, DirichletMH,
                               estimate_prior_precision, posterior_data_precision)

        q = self.variational_posterior()
        ks = []
        if self.K > 1:
            conc = {}
            for b, prior, post in (("startprob", self.startprob_prior, q.startprob),
                                   ("transmat", self.transmat_prior, q.transmat)):
                a0 = prior.sum(axis=-1)
                conc[b] = (a0, np.maximum(post.sum(axis=-1) - a0, 0.0))
            ks.append(DirichletMH(self, ["startprob", "transmat"], concentration=conc))
        other = [b.name for b in self.param_space.blocks if b.constraint != "simplex"]
        pi = estimate_prior_precision(self, other)
        h = posterior_data_precision(self, q, pi, other)
        ks.append(BlockRandomWalkMH(self, other, scale=scale, prior_precision=pi,
                                    data_precision=h))
        return ks[0] if len(ks) == 1 else CompositeKernel(ks)

    def _likelihood_arrays(self, params):
        mu = np.ascontiguousarray(params["means"], dtype=float)
        C = mu.shape[0]
        log_pi, log_A = self.layout.log_pi_A(params, C)
        return (np.ascontiguousarray(log_pi), np.ascontiguousarray(log_A), mu,
                np.ascontiguousarray(self.layout.chol(params)))

    def _forward(self, params, X):
        lp, la, mu, L = self._likelihood_arrays(params)
        with np.errstate(invalid="ignore"):
            return gaussian_hmm_log_likelihood_batch(lp, la, mu, L, X["X"], X["starts"], X["ends"])

    def log_likelihood_per_sequence(self, params, X):
        """(C, n_sequences) exact ln p(sequence | theta_c)."""
        return self._forward(params, X)[0]

    def log_likelihood(self, params, X):
        """(C,) exact ln p(X | theta_c) by the forward algorithm (one numba call)."""
        return self._forward(params, X)[0].sum(axis=1)

    def log_likelihood_per_case(self, params, X):
        """(C, T) ln p(x_t | x_<t of its sequence, theta_c); rows sum to the likelihood."""
        return self._forward(params, X)[1]

    # -- Algorithm 6.2, complete kind (CS-dagger) ----------------------------------------
    def random_completion(self, X, rng):
        """A uniformly random state for every frame, (T,)."""
        return rng.integers(0, self.K, size=self.n_cases(X))

    def log_complete_joint_per_case(self, params, Z, X):
        """(C, T) ``ln p(s_t | s_{t-1}) + ln N(x_t | mu_{s_t}, Lambda_{s_t}^-1)`` along the
        completion ``Z`` (the initial distribution at the first frame of a sequence)."""
        mu = np.asarray(params["means"], dtype=float)
        C = mu.shape[0]
        L = self.layout.chol(params)[:, Z]  # (C, T, D, D)
        r = X["X"][None] - mu[:, Z]
        u = np.einsum("ctdj,ctd->ctj", L, r)
        with np.errstate(divide="ignore"):
            out = (np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
                   - 0.5 * self.D * LOG_2PI - 0.5 * np.sum(u * u, axis=-1))
        if self.K > 1:
            lp, la = self.layout.log_pi_A(params, C)
            first = np.zeros(Z.size, dtype=bool)
            first[X["starts"]] = True
            prev = np.concatenate([[0], Z[:-1]])
            out = out + np.where(first, lp[:, Z], la[:, prev, Z])
        return out

    # -- E step, complete-data quantities ----------------------------------------------
    def _emission_stats(self, R, X):
        Xc = X["X"] - self.m0
        stats = {"N": R.sum(axis=0), "S1": R.T @ Xc}
        if self.layout.full:
            stats["S2"] = np.einsum("tk,ti,tj->kij", R, Xc, Xc)
        else:
            stats["S2"] = R.T @ (Xc * Xc)
        return stats

    def stats_from_responsibilities(self, R, X):
        """Statistics of a labelling ``R`` (T, K) (transition counts as outer products of
        consecutive rows: exact for hard labels)."""
        R = np.asarray(R, dtype=float)
        inner = np.ones(R.shape[0], dtype=bool)
        inner[X["starts"]] = False
        idx = np.flatnonzero(inner)
        stats = {"start": R[X["starts"]].sum(axis=0), "trans": R[idx - 1].T @ R[idx]}
        stats.update(self._emission_stats(R, X))
        return stats

    def _scatter(self, stats, mu):
        """sum_t gamma_tk (x_t - mu_k)(x_t - mu_k)^T for a batch mu (C, K, D)."""
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        delta = mu - self.m0
        if self.layout.full:
            return (S2 - S1[:, :, None] * delta[..., None, :] - delta[..., :, None] * S1[:, None, :]
                    + N[:, None, None] * delta[..., :, None] * delta[..., None, :])
        return S2 - 2.0 * S1 * delta + N[:, None] * delta**2

    def complete_loglik(self, params, stats):
        """(C,) ``E_{q(z)} ln p(z, X | theta_c)`` for expected statistics ``stats``."""
        mu = np.asarray(params["means"], dtype=float)
        C = mu.shape[0]
        out = np.zeros(C)
        if self.K > 1:
            lp, la = self.layout.log_pi_A(params, C)
            out += np.sum(np.where(stats["start"] > 0, stats["start"] * lp, 0.0), axis=1)
            out += np.sum(np.where(stats["trans"] > 0, stats["trans"] * la, 0.0), axis=(1, 2))
        L = self.layout.chol(params)
        with np.errstate(divide="ignore"):
            half_logdet = np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
        scat = self._scatter(stats, mu)
        if self.layout.full:
            Lam = L @ np.swapaxes(L, -1, -2)
            quad = np.einsum("ckij,ckji->ck", Lam, scat)
        else:
            quad = np.sum(np.asarray(params["precisions"], dtype=float) * scat, axis=-1)
        out += np.sum(stats["N"] * (half_logdet - 0.5 * self.D * LOG_2PI) - 0.5 * quad, axis=1)
        return out

    def _fb(self, log_pi, log_A, mu, Lq, const, X):
        emis, shift = _k.gaussian_full_log_emissions(X["X"], mu, np.ascontiguousarray(Lq), const)
        log_norm, _, start, trans, gamma = forward_backward_scaled(
            np.ascontiguousarray(log_pi), np.ascontiguousarray(log_A), emis, shift, X["index"],
            X["starts"], X["ends"], True)
        stats = {"start": start, "trans": trans}
        stats.update(self._emission_stats(gamma, X))
        return float(log_norm.sum()), stats

    def e_step(self, params_single, X):
        """Exact posterior over state paths at normalised ``params_single`` (batch of 1)."""
        lp, la, mu, L = self._likelihood_arrays(params_single)
        const = np.sum(np.log(np.diagonal(L[0], axis1=-2, axis2=-1)), axis=-1) \
            - 0.5 * self.D * LOG_2PI
        ll, stats = self._fb(lp[0], la[0], mu[0], L[0], const, X)
        ecl = float(self.complete_loglik(params_single, stats)[0])
        return EStep(ll, stats, ecl, ll - ecl)

    def log_complete_evidence(self, stats):
        """ln of the integral of prior x exp(E ln p(z, X | theta)) at the statistics (closed
        form: Dirichlet integrals x Normal-Wishart / Normal-Gamma evidences)."""
        val = 0.0
        if self.K > 1:
            val += float(dirichlet_evidence(self.startprob_prior, stats["start"]))
            val += float(dirichlet_evidence(self.transmat_prior, stats["trans"]))
        N = np.asarray(stats["N"], dtype=float)
        _, _, _, beta, nu, S = self._conjugate(stats)
        D = self.D
        if self.layout.full:
            logdet_S0 = np.linalg.slogdet(self.scale0)[1]
            logdet_S = np.linalg.slogdet(S)[1]
            per = (-0.5 * N * D * np.log(np.pi) + _log_multigamma(0.5 * nu, D)
                   - _log_multigamma(0.5 * self.nu0, D) + 0.5 * self.nu0 * logdet_S0
                   - 0.5 * nu * logdet_S + 0.5 * D * (np.log(self.beta0) - np.log(beta)))
            return float(val + np.sum(per))
        a0, b0 = 0.5 * self.nu0, 0.5 * self.scale0
        a, b = a0 + 0.5 * N[:, None], 0.5 * S
        per = (gammaln(a) - gammaln(a0) + a0 * np.log(b0) - a * np.log(b)
               + 0.5 * (np.log(self.beta0) - np.log(beta))[:, None] - 0.5 * N[:, None] * LOG_2PI)
        return float(val + np.sum(per))

    def log_evidence(self, X):
        """Exact ln p(X) by enumerating the K^T state paths (tiny problems only): the
        parameters integrate out in closed form given a path."""
        T = self.n_cases(X)
        if self.K**T > 2**16:
            raise ValueError("too many state paths to enumerate.")
        eye = np.eye(self.K)
        vals = [self.log_complete_evidence(self.stats_from_responsibilities(eye[np.array(z)], X))
                for z in itertools.product(range(self.K), repeat=T)]
        return float(logsumexp(vals))

    # -- point estimates ---------------------------------------------------------------
    def point_from_stats(self, stats, kind="map", basis="softmax"):
        """M step.  ``kind="ml"``: normalised counts, weighted mean and inverse scatter.
        ``"map"``, ``basis="softmax"`` (default): the posterior mean of the conjugate
        posterior, ``(u + N)`` rows, ``mu = m``, ``Lambda = nu W`` -- the estimator's
        VBM arithmetic followed by its plug-in, i.e. the mode of ``p(theta|...)`` times
        ``prod theta_rows x |Lambda|^(1/2)`` per state.  ``basis="natural"``: the joint
        mode in (rows, mu, Lambda): ``(u + N - 1)`` rows, ``Lambda = (nu - D) W``
        (``(nu - 1)/S`` per dimension for diagonal precisions)."""
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        if basis not in ("softmax", "natural"):
            raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
        tiny = 1e-300
        K, D = self.K, self.D
        w_pi, w_A, m, beta, nu, S = self._conjugate(stats)
        out = {}
        if kind == "ml":
            rows = (stats["start"] + tiny, stats["trans"] + tiny)
            N = np.maximum(stats["N"], 1e-10)
            m = self.m0 + stats["S1"] / N[:, None]
            floor = 1e-6 * np.mean(np.diag(np.atleast_2d(self.scale0)) if self.layout.full
                                   else self.scale0) / self.nu0
            if self.layout.full:
                scat = stats["S2"] - stats["S1"][:, :, None] * stats["S1"][:, None, :] / N[:, None, None]
                cov = scat / N[:, None, None] + floor * np.eye(D)
                prec = np.linalg.inv(0.5 * (cov + np.swapaxes(cov, 1, 2)))
            else:
                var = np.maximum(stats["S2"] - stats["S1"] ** 2 / N[:, None], 0.0) / N[:, None]
                prec = 1.0 / (var + floor)
        elif basis == "softmax":
            rows = (w_pi, w_A)
            if self.layout.full:
                prec = nu[:, None, None] * np.linalg.inv(S)
            else:
                prec = nu[:, None] / S
        else:
            rows = (np.maximum(w_pi - 1.0, tiny), np.maximum(w_A - 1.0, tiny))
            if self.layout.full:
                prec = np.maximum(nu - D, 1e-3)[:, None, None] * np.linalg.inv(S)
            else:
                prec = np.maximum(nu - 1.0, 1e-3)[:, None] / S
        if K > 1:
            out["startprob"] = (rows[0] / rows[0].sum())[None]
            out["transmat"] = (rows[1] / rows[1].sum(axis=1, keepdims=True))[None]
        if self.layout.full:
            prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
            out.update(self.layout.emission_blocks(m[None], np.linalg.cholesky(prec)[None]))
        else:
            out.update(self.layout.emission_blocks(m[None], prec[None]))
        return out

    def _point_objective_prior(self, theta, basis):
        """The log prior term of the EM objective in the basis of ``point_from_stats``:
        prior density in (rows, mu, Lambda) coordinates (the Cholesky Jacobian removed),
        plus ``sum ln theta_rows + 1/2 sum_k ln|Lambda_k|`` for the softmax basis."""
        lp = float(self.log_prior(theta)[0])
        L = self.layout.chol(theta)[0]
        log_dg = np.log(np.diagonal(L, axis1=-2, axis2=-1))  # (K, D)
        if self.layout.full:
            lp -= float(np.sum(self.D * np.log(2.0) + log_dg @ (self.D - np.arange(self.D))))
        if basis == "softmax":
            lp += float(np.sum(log_dg))
            if self.K > 1:
                lp += float(np.sum(np.log(theta["startprob"])) + np.sum(np.log(theta["transmat"])))
        return lp

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=1000,
                  tol_per_case=1e-8):
        """EM for the MAP (``basis`` as in :meth:`point_from_stats`) or ML point; each restart
        starts from a hard assignment of the frames to the nearest of K random frames; the
        restart with the best objective is kept."""
        rng = _rng(rng)
        T = self.n_cases(X)
        K = self.K
        eye = np.eye(K)
        best = None
        for _ in range(int(n_init)):
            centres = X["X"][rng.choice(T, K, replace=T < K)]
            d2 = ((X["X"][:, None, :] - centres[None]) ** 2).sum(-1)
            theta = self.point_from_stats(
                self.stats_from_responsibilities(eye[np.argmin(d2, axis=1)], X), kind, basis)
            prev = -np.inf
            for _ in range(int(max_iter)):
                e = self.e_step(theta, X)
                obj = e.loglik + (0.0 if kind == "ml" else self._point_objective_prior(theta, basis))
                if not np.isfinite(obj) or abs(obj - prev) < tol_per_case * T:
                    break
                prev = obj
                theta = self.point_from_stats(e.stats, kind, basis)
            if best is None or obj > best[0]:
                best = (obj, theta)
        return best[1]

    # -- VB from a given q(z) (VBScore(init="cs")) ---------------------------------------
    def _vb_expected(self, stats):
        """Expected log parameters of q(theta) = VBM(stats) for the VBE step."""
        w_pi, w_A, m, beta, nu, S = self._conjugate(stats)
        D = self.D
        if self.K > 1:
            Lpi = digamma(w_pi) - digamma(w_pi.sum())
            LA = digamma(w_A) - digamma(w_A.sum(axis=1, keepdims=True))
        else:
            Lpi, LA = np.zeros(1), np.zeros((1, 1))
        if self.layout.full:
            W = np.linalg.inv(S)
            W = 0.5 * (W + np.swapaxes(W, 1, 2))
            e_logdet = (np.sum(digamma(0.5 * (nu[:, None] - np.arange(D))), axis=1)
                        + D * np.log(2.0) + np.linalg.slogdet(W)[1])
            Lq = np.linalg.cholesky(nu[:, None, None] * W)
        else:
            a, b = 0.5 * nu[:, None], 0.5 * S
            e_logdet = np.sum(digamma(a) - np.log(b), axis=1)
            Lq = np.zeros((self.K, D, D))
            Lq[:, np.arange(D), np.arange(D)] = np.sqrt(a / b)
        const = 0.5 * e_logdet - 0.5 * D * LOG_2PI - 0.5 * D / beta
        return Lpi, LA, m, Lq, const

    def vb_refine(self, X, estep, max_iter=1000, tol=1e-10):
        """VBEM from ``q(z)`` = the exact posterior of ``estep``, starting with a VBM step.

        Records ``F(q(z), VBM(q(z))) = H[q(z)] + log_complete_evidence(stats)`` (the collapsed
        bound, T-M4) after every VBM step, so the first value is the CS score and the
        sequence never decreases (Corollary 2.5).
        """
        stats, H = estep.stats, float(estep.entropy)
        bounds = []
        for _ in range(int(max_iter)):
            bounds.append(H + self.log_complete_evidence(stats))
            if len(bounds) > 1 and abs(bounds[-1] - bounds[-2]) < tol:
                break
            Lpi, LA, m, Lq, const = self._vb_expected(stats)
            log_z, stats = self._fb(Lpi, LA, m, Lq, const, X)
            # H[q(z)] = ln Z~ - E_q(z) ln p~(z, X) with the VBE potentials
            scat = self._scatter(stats, m[None])[0]
            Lam = Lq @ np.swapaxes(Lq, 1, 2)
            if self.layout.full:
                quad = np.einsum("kij,kji->k", Lam, scat)
            else:
                quad = np.sum(np.diagonal(Lam, axis1=1, axis2=2) * scat, axis=1)
            e_pot = float(np.sum(stats["start"] * Lpi) + np.sum(stats["trans"] * LA)
                          + np.sum(stats["N"] * const - 0.5 * quad))
            H = log_z - e_pot
        return bounds

    # -- simulation --------------------------------------------------------------------
    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        """Draw ``(X (T, D), states (T,))`` from ``theta`` (one sequence of ``n_cases``
        frames, or one per entry of ``lengths``)."""
        rng = _rng(rng)
        lengths = np.array([int(n_cases)] if lengths is None else [int(t) for t in lengths],
                           dtype=np.int64)
        if np.any(lengths < 1):
            raise ValueError("lengths (or n_cases) must be positive.")
        ends = np.cumsum(lengths)
        starts = ends - lengths
        T = int(ends[-1])
        if self.K > 1:
            pi = np.asarray(params_single["startprob"], dtype=float)[0]
            A = np.asarray(params_single["transmat"], dtype=float)[0]
        else:
            pi, A = np.ones(1), np.ones((1, 1))
        states = _k.sample_states(pi, A, rng.random(T), starts, ends)
        mu = np.asarray(params_single["means"], dtype=float)[0]
        L = self.layout.chol(params_single)[0]
        z = rng.standard_normal((T, self.D))
        # x = mu + L^-T z has covariance (L L^T)^-1
        noise = np.linalg.solve(np.swapaxes(L, 1, 2)[states], z[..., None])[..., 0]
        return mu[states] + noise, states


def scoring_model_from_estimator(estimator):
    return GaussianHMMScoringModel(estimator)
