"""ScoringModel for a fitted :class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`.

Parameters ``theta``:

=================  ===========  =========  ==============================================
block              shape        constraint meaning
=================  ===========  =========  ==============================================
``weights``        (S,)         simplex    mixing proportions ``pi`` (a constant when S = 1)
``loadings_<s>``   (p, K+1)     real       ``[Lambda_s, mu_s]`` of component ``s``: the K
                                           loading columns, then the centre (last column)
=================  ===========  =========  ==============================================

``K`` is the estimator's maximum number of factors (``n_factors_max_``): every column is
a parameter, ARD only shrinks the unused ones.  Every hyperparameter is frozen at its
fitted value, so that every scorer estimates the same ``ln p(X | m, hyperparameters)``:
``Psi``, ``(mu*, nu*)``, ``(a*, b*)`` and ``alpha*``.  The ARD precisions are integrated
out analytically, which turns the prior of each loading column into a ``p``-variate
Student-t (the precision is shared down a column, so the columns, not the rows, are the
t vectors)::

    pi ~ Dir(alpha*/S, ..., alpha*/S)
    Lambda_s[:, j] ~ t_{2a*}(0, (b*/a*) I_p)   i.e.
        ln p = ln G(a* + p/2) - ln G(a*) + a* ln b* - (p/2) ln 2pi - (a* + p/2) ln(b* + |v|^2/2)
    mu_s[q] ~ N(mu*_q, 1/nu*_q)

Units.  The estimator fits in standardised units ``Z = (X - feature_shift_) /
feature_scale_`` and its ``lower_bound_`` includes the Jacobian ``-N sum_q ln
feature_scale_q``, so it bounds ``ln p(X)`` of the data as given.  Here ``theta`` lives in
the same fitting units as the estimator's posterior (``loading_means_``,
``loading_covariances_``), and :meth:`log_likelihood` is the density of the user's ``X``:
``ln p(Z | theta) - N sum_q ln feature_scale_q``.  Every scorer (vb, bic, laplace, cs,
is, ais) therefore refers to ``ln p(X)`` in the original units, and they are directly
comparable with ``lower_bound_`` and ``score_samples``.  The standardisation is the
fitted one (frozen), also for new data.

Likelihood: ``sum_i LSE_s [ln pi_s + ln N(z_i; mu_s, Lambda_s Lambda_s^T + Psi)]``, one
matrix product of the whitened data per parameter set for a whole batch
(:func:`batch_log_likelihood_per_case`, Woodbury and the matrix determinant lemma).

Missing entries (NaN in ``X``, missing at random) are marginalised exactly: the
likelihood of a row is that of its observed entries, the E step gives q(x | s) per
component and missing pattern, the statistics of a loading row count the rows observing
its dimension (``W`` per component and dimension), and the Jacobian counts the observed
entries (:mod:`sklearn_vb.mfa._scoring_missing`).

Point estimates and complete-data evidence (groups G2/G3 of
:mod:`sklearn_vb._core.evidence.protocols`).  :meth:`e_step` is exact: the
responsibilities and the Gaussian factor posteriors at a point ``theta``.
:meth:`fit_point` is a generalised EM for the MAP (or ML): the E step over ``(s, x)``,
then the mixing proportions in closed form and the rows of ``[Lambda_s, mu_s]`` by one
EM step of the Student-t prior written as a Gaussian scale mixture (the ARD precisions
are replaced by their conditional expectation ``(a* + p/2) / (b* + |lambda_j|^2/2)``), which
never lowers ``ln p(theta) + l(theta)``; an L-BFGS polish with the exact gradient (Fisher identity)
finishes the climb.  The complete-data evidence
``ln int p(theta) exp<ln p(s, x, y | theta)> dtheta`` (CS) is exact for ``K <= 1``: the
Dirichlet part and the rows of ``[Lambda_s, mu_s]`` given the ARD precision are closed
form, and the one precision per component is integrated by 1-d quadrature.  For
``K >= 2`` the precisions of a component do not integrate out jointly with the loadings
in closed form; :meth:`log_complete_evidence` then returns the mean-field lower bound
``max_{q(nu) q(Lambda~)}`` (the VBM fixed point of q(Lambda~), q(nu) for the given
statistics), so the CS score is still a lower bound on ``ln p(X)``, only looser;
``complete_evidence_kind`` (``"exact"`` / ``"bound"``) records which.

Counting (G4).  :meth:`n_parameters` is eq. 4.89,
``S - 1 + p + sum_s [p + p k_s - k_s (k_s - 1)/2]`` with ``k_s`` the factors kept by ARD
(``n_factors_per_component_``): the shared ``Psi`` counts, the rotations of each loading
matrix are removed and the pruned columns are not counted.  :meth:`n_aliases` counts the
exact symmetries of prior x likelihood that map the fitted mode to a distinct mode:
the ``S!`` permutations of the components (every component has the same prior and the
same K columns, so labels permute freely, whatever the ARD counts) times, per component,
the ``2^k_s K!/(K - k_s)!`` signed placements of its ``k_s`` active columns among its K
columns (the ARD prior is exchangeable over columns and even in each column).  The
``ln S`` correction assumes well separated modes.  With ``K = 1`` the sign of the column
is a discrete symmetry (two separated modes whenever the column is away from 0).  With
``K >= 2`` the likelihood is invariant under every rotation ``Lambda -> Lambda R`` and
only the prior separates the axis-aligned placements: strongly when ARD has made
``b*`` small (spreading a column over two slots then costs about
``(a* + p/2) ln(|lambda|^2 / 4b*)`` nats), weakly otherwise, in which case ``ln S``
over-corrects.  That is why the default ``n_aliases()``, used by the alias corrections of
the scores, is the conservative count instead, the permutations of analysers
with equal numbers of factors (``prod_k m_k!``, ``m_k`` the number of components with
``k`` factors); ``n_aliases(kind="modes")`` is the full count above.
:meth:`alias_posterior` is the equal-weight mixture of q over all these maps.
"""

from __future__ import annotations

import itertools
from math import factorial, lgamma, log

import numpy as np
from scipy.optimize import minimize
from scipy.special import gammaln, polygamma, xlogy

from .._core.distributions import as_generator as _rng, dirichlet_log_pdf, dirichlet_sample, gamma_kl
from . import kernels as _k
from .._core.kernels.constants import LOG_2PI
from ._estimator import fa_free_parameters
from .._core.evidence.mcmc_moves import (BlockRandomWalkMH, CompositeKernel, DirichletMH,
                          posterior_data_precision)
from .._core.progress import Progress
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.posteriors import MappedPosterior, MixturePosterior
from .._core.evidence.protocols import EStep, ScoringModelMixin
from .._core.evidence.point_em import PointEMRun, best_point_em
from . import _scoring_missing as _miss
from ._missing import point_e_step as missing_point_e_step
from ._point import (factor_posterior, log_prior_density, point_e_step, point_loadings,
                           point_weights, principal_axes)
from ._state import MFACompleteStats, MFAData

__all__ = ["MFAScoringModel", "MFAPosterior", "aliased_posterior"]

#: L-BFGS iterations of the quasi-Newton finish of a point EM run that stopped at its cap,
#: and of one whose EM met its tolerance
_POLISH_MAXITER = 2000
_POLISH_AFTER_CONVERGED = 50


def _block_names(S):
    return [f"loadings_{s}" for s in range(S)]


def _stack(params, S):
    """(C, S, p, K+1) array of the loading blocks of a batch."""
    return np.stack([np.asarray(params[n], dtype=float) for n in _block_names(S)], axis=1)


def _unstack(lam, weights):
    S = lam.shape[1]
    out = {"weights": np.ascontiguousarray(weights, dtype=float)}
    for s, n in enumerate(_block_names(S)):
        out[n] = np.ascontiguousarray(lam[:, s], dtype=float)
    return out


def batch_log_likelihood_per_case(weights, lam, psi, Z, chunk=None):
    """(C, N) ``ln p(z_i | theta_c) = LSE_s [ln pi_s + ln N(z_i; mu_s, Lambda_s Lambda_s^T
    + Psi)]`` for a batch of parameter sets (fitting units).

    In the whitened coordinates ``u = Psi^-1/2 z`` (loadings ``A_s = Psi^-1/2 Lambda_s``,
    centres ``m_s = Psi^-1/2 mu_s``) the matrix inversion and determinant lemmas with
    ``I + A_s^T A_s = L_s L_s^T`` give ``ln|Lambda Lambda^T + Psi| = sum ln psi + 2 sum ln
    diag L_s`` and the quadratic form ``|u - m_s|^2 - |L_s^-1 A_s^T (u - m_s)|^2``.  Every
    data-sized product is one matrix product of ``U`` (N, p) with the ``(p, S (K+1))``
    stack of ``A_s L_s^-T`` and ``m_s`` per parameter set, so the O(N p S K) work runs in
    BLAS; parameter sets are taken ``chunk`` at a time (memory ``O(chunk N S K)``).
    Non-finite parameters give ``nan`` (callers map it to ``-inf``).
    """
    weights = np.asarray(weights, dtype=float)
    lam = np.asarray(lam, dtype=float)
    C, S, p, K1 = lam.shape
    K = K1 - 1
    N = Z.shape[0]
    if chunk is None:  # about 64 MB of projections per chunk
        chunk = max(1, int(8 * 2**20 // max(1, N * S * K1)))
    root = 1.0 / np.sqrt(psi)
    U = Z * root
    uu = np.einsum("nq,nq->n", U, U)
    const = -0.5 * (p * LOG_2PI + float(np.sum(np.log(psi))))
    out = np.empty((C, N))
    finite = np.all(np.isfinite(lam.reshape(C, -1)), axis=1) & np.all(np.isfinite(weights), 1)
    for c0 in range(0, C, chunk):
        c1 = min(C, c0 + chunk)
        ok = finite[c0:c1]
        lam_c = np.where(ok[:, None, None, None], lam[c0:c1], 0.0)
        A = lam_c[..., :K] * root[:, None]  # (c, S, p, K)
        m = lam_c[..., K] * root  # (c, S, p)
        At = np.swapaxes(A, -1, -2)
        L = np.linalg.cholesky(np.eye(K) + At @ A)  # (c, S, K, K)
        logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
        V = np.linalg.solve(L, At)  # L^-1 A^T, (c, S, K, p)
        stack = np.concatenate([V, m[:, :, None, :]], axis=2)  # (c, S, K+1, p)
        stack = stack.reshape(c1 - c0, S * K1, p)
        P = (U @ np.swapaxes(stack, -1, -2)).reshape(c1 - c0, N, S, K1)
        a = P[..., :K] - np.einsum("cskq,csq->csk", V, m)[:, None]
        quad = (uu[None, :, None] - 2.0 * P[..., K] + np.sum(m * m, axis=-1)[:, None, :]
                - np.einsum("cnsk,cnsk->cns", a, a))
        with np.errstate(divide="ignore"):
            lw = np.log(weights[c0:c1])
        ell = lw[:, None, :] + const - 0.5 * logdet[:, None, :] - 0.5 * quad  # (c, N, S)
        top = np.max(ell, axis=2, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        val = safe[..., 0] + np.log(np.sum(np.exp(ell - safe), axis=2))
        val[~ok] = np.nan
        out[c0:c1] = val
    return out


def _row_logpdf(quad, d, logdet, dof):
    if dof is None:
        return -0.5 * quad - 0.5 * d * LOG_2PI - 0.5 * logdet
    return (gammaln(0.5 * (dof + d)) - gammaln(0.5 * dof) - 0.5 * d * np.log(dof * np.pi)
            - 0.5 * logdet - 0.5 * (dof + d) * np.log1p(quad / dof))


# =========================================================================================
# q(theta)
# =========================================================================================


class MFAPosterior:
    """``q(pi) prod_s prod_q q(row q of [Lambda_s, mu_s])``: a Dirichlet times independent
    Gaussian rows, in the coordinates of ``log_prior``.

    With ``dof`` every row is a multivariate Student-t with the same location, the
    Gaussian covariance as scale matrix and one scale variate per row (the thesis's
    heavy-tailed proposals, Table 4.3); ``broaden`` multiplies the Dirichlet
    concentrations (mean kept).
    """

    family = "mfa_dirichlet_gaussian_rows"

    def __init__(self, alpha, means, covs, dof=None, broaden=None):
        self.alpha = np.asarray(alpha, dtype=float).reshape(-1)
        if broaden is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            self.alpha = self.alpha * broaden
        if np.any(~(self.alpha > 0)):
            raise ValueError("the Dirichlet concentrations of q must be positive.")
        self.broaden = broaden
        self.means = np.asarray(means, dtype=float)
        self.covs = np.asarray(covs, dtype=float)
        self.covs = 0.5 * (self.covs + np.swapaxes(self.covs, -1, -2))
        S, p, K1 = self.means.shape
        if self.covs.shape != (S, p, K1, K1) or self.alpha.shape != (S,):
            raise ValueError("alpha, means and covs of q have inconsistent shapes.")
        if dof is not None and not dof > 0:
            raise ValueError(f"dof must be positive, got {dof}.")
        self.dof = None if dof is None else float(dof)
        try:
            self.chol = np.linalg.cholesky(self.covs)
        except np.linalg.LinAlgError as exc:
            raise ValueError("the row covariances of q must be positive definite.") from exc
        self.chol_inv = np.linalg.inv(self.chol)
        self.logdet = 2.0 * np.sum(np.log(np.diagonal(self.chol, axis1=-2, axis2=-1)), axis=-1)

    @property
    def S(self):
        return self.means.shape[0]

    def sample(self, rng, size):
        rng = _rng(rng)
        size = int(size)
        S, p, K1 = self.means.shape
        w = (dirichlet_sample(self.alpha, rng, size=size) if S > 1 else np.ones((size, 1)))
        z = rng.standard_normal((size, S, p, K1))
        if self.dof is not None:
            g = rng.chisquare(self.dof, size=(size, S, p)) / self.dof
            z = z / np.sqrt(g)[..., None]
        lam = self.means[None] + np.einsum("sqkl,csql->csqk", self.chol, z)
        return _unstack(lam, w)

    def log_pdf(self, params):
        S = self.S
        lam = _stack(params, S)
        K1 = lam.shape[-1]
        u = np.einsum("sqkl,csql->csqk", self.chol_inv, lam - self.means[None])
        out = _row_logpdf(np.sum(u * u, axis=-1), K1, self.logdet[None], self.dof)
        out = out.reshape(out.shape[0], -1).sum(axis=1)
        if S > 1:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out + dirichlet_log_pdf(np.asarray(params["weights"], dtype=float),
                                              self.alpha)
        return np.asarray(out, dtype=float)

    def mean(self):
        return _unstack(self.means[None], (self.alpha / self.alpha.sum())[None])

    def heavy_tailed(self, dof=3.0, broaden=None):
        return MFAPosterior(self.alpha / (self.broaden or 1.0), self.means, self.covs, dof=dof,
                            broaden=broaden)

    def gaussian_unconstrained(self):
        return None

    def unconstrained_sd(self, space):
        """Standard deviations of the unconstrained coordinates (Dirichlet: of the
        log-ratios; rows: the marginal sd, times ``sqrt(dof/(dof-2))`` for a t)."""
        out = []
        if self.S > 1:
            t = polygamma(1, self.alpha)
            out.append(np.sqrt(t[:-1] + t[-1]))
        sd = np.sqrt(np.diagonal(self.covs, axis1=-2, axis2=-1))  # (S, p, K1)
        if self.dof is not None:
            sd = sd * (np.sqrt(self.dof / (self.dof - 2.0)) if self.dof > 2 else 3.0)
        out.extend(sd[s].ravel() for s in range(self.S))
        return np.concatenate(out)

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


def aliased_posterior(q, alias, model):
    """The image of ``q`` under an alias map (a component permutation and a signed
    column permutation per component; volume preserving)."""
    return MappedPosterior(q, lambda params: model.apply_alias(params, alias),
                           lambda params: model.apply_alias(params, alias, inverse=True))


# =========================================================================================
# the scoring model
# =========================================================================================


class MFAScoringModel(ScoringModelMixin):
    """The scoring view of a fitted VBMixtureFactorAnalysers (frozen hyperparameters).

    Data: :meth:`prepare_data` returns an :class:`~sklearn_vb.mfa._state.MFAData` with
    ``Z`` (the data in fitting units) and ``log_jac`` (``-sum_q ln feature_scale_q``, per
    case).  Expected statistics (``e_step(...).stats``) are an
    :class:`~sklearn_vb.mfa._state.MFACompleteStats` with ``Nk`` (S,), ``W`` (S, K+1,
    K+1), ``C`` (S, p, K+1), ``D`` (S, p) (the estimator's), ``n`` and ``resp``.
    """

    @property
    def complete_evidence_kind(self):
        """``"exact"`` when :meth:`log_complete_evidence` is exact (K <= 1), ``"bound"``
        otherwise (mean-field over the ARD precisions and the loadings)."""
        return "exact" if self.K <= 1 else "bound"

    def __init__(self, estimator):
        if not hasattr(estimator, "loading_means_"):
            raise ValueError("the estimator must be fitted.")
        est = estimator
        self.estimator = est
        self.S = S = int(est.n_components_)
        self.n_components = S
        self.p = p = int(est.n_features_in_)
        self.K = K = int(est.n_factors_max_)
        self.shift = np.asarray(est.feature_shift_, dtype=float).copy()
        self.scale = np.asarray(est.feature_scale_, dtype=float).copy()
        self.log_jac_case = -float(np.sum(np.log(self.scale)))
        # frozen hyperparameters, fitting units
        self.psi = np.ascontiguousarray(np.asarray(est.noise_variance_, float) / self.scale**2)
        mu_star, nu_star = est.mean_prior_
        self.mu_star = (np.asarray(mu_star, float) - self.shift) / self.scale
        self.nu_star = np.asarray(nu_star, float) * self.scale**2
        self.a_star, self.b_star = (float(v) for v in est.ard_prior_)
        self.alpha_star = float(est.alpha_prior_)
        self.active = np.asarray(est.active_factors_, dtype=bool).reshape(S, K)
        self.n_factors = np.asarray(est.n_factors_per_component_, dtype=int).reshape(S)
        self.weights_prior = np.full(S, self.alpha_star / S)  # Dirichlet counts of p(pi)
        # the scorers' view: block name -> Dirichlet concentrations of its prior
        self.prior_alpha = {"weights": self.weights_prior}
        self.param_space = ParamSpace(
            [ParamBlock("weights", (S,), "simplex")]
            + [ParamBlock(n, (p, K + 1), "real") for n in _block_names(S)])
        self._q = None
        self._n_last = 1

    # ------------------------------------------------------------------------ data
    def prepare_data(self, X, **fit_params):
        """Validate ``X`` (n, p) as the estimator does and standardise it with the fitted
        shift and scale."""
        if fit_params:
            raise ValueError(f"{type(self).__name__} accepts no fit parameters, got "
                             f"{sorted(fit_params)}.")
        if isinstance(X, MFAData):
            return X
        Z = np.ascontiguousarray(self.estimator.check_data(X))
        self._n_last = Z.shape[0]
        if np.isnan(Z).any():  # missing entries: the observed ones are scored
            return _miss.missing_data(Z, np.log(self.scale))
        return MFAData(Z, self.log_jac_case)

    def n_cases(self, X):
        return int(X.Z.shape[0])

    # ------------------------------------------------------------------------ helpers
    def split(self, params):
        """``(weights (C, S), Lambda~ (C, S, p, K+1))`` of a batch."""
        S = self.S
        w = np.asarray(params["weights"], dtype=float).reshape(-1, S)
        return w, _stack(params, S)

    def join(self, weights, lam):
        return _unstack(np.asarray(lam, dtype=float), np.asarray(weights, dtype=float))

    # ------------------------------------------------------------------------ G0
    def log_prior(self, params):
        w, lam = self.split(params)
        return log_prior_density(w, lam, self.a_star, self.b_star, self.mu_star, self.nu_star,
                                 self.weights_prior)

    def sample_prior(self, rng, size):
        rng = _rng(rng)
        size = int(size)
        S, p, K = self.S, self.p, self.K
        w = (dirichlet_sample(self.weights_prior, rng, size=size) if S > 1
             else np.ones((size, 1)))
        lam = np.empty((size, S, p, K + 1))
        if K:
            nu = np.maximum(rng.standard_gamma(self.a_star, size=(size, S, 1, K)) / self.b_star,
                            1e-300)
            lam[..., :K] = rng.standard_normal((size, S, p, K)) / np.sqrt(nu)
        lam[..., K] = self.mu_star + rng.standard_normal((size, S, p)) / np.sqrt(self.nu_star)
        return self.join(w, lam)

    def log_likelihood_per_case(self, params, X):
        """``ln p(x_i | theta)`` of every row in the user's units, shape (C, n)."""
        w, lam = self.split(params)
        if X.missing is not None:
            return _miss.log_likelihood_per_case(w, lam, self.psi, X,
                                                 batch_log_likelihood_per_case)
        Z = X.Z
        return batch_log_likelihood_per_case(w, lam, self.psi, Z) + X.log_jac

    def random_completion(self, X, rng):
        """A random completion of the hidden variables of every row: a uniformly random
        component ``s_i`` and factors ``x_i ~ N(0, I)`` (their prior) on the factors of
        ``s_i`` that ARD kept active, 0 on the others (so that the loading columns the
        fitted model switched off do not count in the complete-data dimension), as
        ``(labels (n,), factors (n, K))``."""
        n = self.n_cases(X)
        labels = rng.integers(0, self.S, size=n)
        factors = rng.standard_normal((n, self.K)) * self.active[labels]
        return labels, factors

    def log_complete_joint_per_case(self, params, Z, X):
        """(C, n) ``ln p(s_i, x_i, y_i | theta)`` (user units) at the completion
        ``Z = (labels, factors)``: ``ln pi_s + ln N(x_i; 0, I) + ln N(y_i; Lambda_s x_i +
        mu_s, Psi)``."""
        labels, factors = Z
        w, lam = self.split(params)
        if X.missing is not None:
            return _miss.complete_joint_per_case(w, lam, self.psi, labels, factors, X)
        Y = X.Z
        K, p = self.K, self.p
        with np.errstate(divide="ignore"):
            out = np.log(w[:, labels])
        out = out - 0.5 * (K * LOG_2PI + np.sum(factors**2, axis=1))[None]
        const = -0.5 * (p * LOG_2PI + np.sum(np.log(self.psi)))
        for s in range(self.S):  # components, not cases: the cases of s are one array op
            rows = np.flatnonzero(labels == s)
            mean = (np.einsum("cqk,nk->cnq", lam[:, s, :, :K], factors[rows])
                    + lam[:, s, None, :, K])
            resid = Y[rows][None] - mean
            out[:, rows] += const - 0.5 * np.einsum("cnq,q->cn", resid**2, 1.0 / self.psi)
        return out + X.log_jac

    def per_case_gradient_gram(self, params_single, X, completion=None):
        """``J J^T`` (n, n): inner products of the per-case gradients in the unconstrained
        basis, ``J[i] = d/d phi ln p(y_i | theta)``, or of ``ln p(s_i, x_i, y_i | theta)``
        at ``completion = (labels, factors)`` (:meth:`random_completion`).

        Exact, from the E step (the Fisher identity): with ``x~ = [x, 1]``, the gradient of
        row ``i`` in ``[Lambda_s, mu_s]`` is ``r_is (e_is xbar~_is^T - B_s)``, ``e_is =
        Psi^-1 (y_i - Lambda~_s xbar~_is)`` and ``B_s = [Psi^-1 Lambda_s Sigma_s, 0]``
        (the posterior covariance of the factors), so that ``<J_s[i], J_s[j]> =
        r_is r_js [(e_is . e_js)(xbar~_is . xbar~_js) - c_is - c_js + |B_s|^2]`` with
        ``c_is = e_is^T B_s xbar~_is``; in the log-ratio coordinates of the weights it is
        ``r_ik - pi_k``.  At a completion ``r_is`` is the indicator of ``s_i``, ``xbar~``
        the completed factors and ``B_s = 0``.  O(S n^2 (p + K)) time, O(n^2) memory: the
        effective dimension of Beal (2003), Algorithm 6.2, without the ``2 max(R, D)``
        perturbed likelihoods (:func:`~sklearn_vb.scoring._dimension.effective_dimension`).
        """
        Z = X.Z
        n = Z.shape[0]
        w, lam = self.split(params_single)
        w, lam = w[0], lam[0]
        S, K = self.S, self.K
        if X.missing is not None:
            e = None if completion is not None else self._e_step_arrays(w, lam, X)
            return _miss.gradient_gram(w, lam, self.psi, X, e, completion)
        e = point_e_step(Z, w, lam, self.psi) if completion is None else None
        resp, xbar, sigma = _miss.gradient_posterior(e, completion, n, S, K)
        G = _miss.weights_gram(resp, w)
        for s in range(S):  # components, not cases: each is a few (n, n) array operations
            rows = np.flatnonzero(resp[:, s] > 0)
            if rows.size == 0:
                continue
            r = resp[rows, s]
            xt = np.ones((rows.size, K + 1))
            xt[:, :K] = xbar[rows, s]
            res = (Z[rows] - xt @ lam[s].T) / self.psi
            inner = (res @ res.T) * (xt @ xt.T)
            if sigma is not None and K:
                B = (lam[s, :, :K] / self.psi[:, None]) @ sigma[s]  # (p, K)
                c = np.einsum("nq,qk,nk->n", res, B, xt[:, :K])
                inner += float(np.sum(B * B)) - c[:, None] - c[None, :]
            inner *= r[:, None] * r[None, :]
            if rows.size == n:
                G += inner
            else:
                G[np.ix_(rows, rows)] += inner
        return G

    def log_likelihood(self, params, X):
        """Exact ``ln p(X | theta)`` (user units), shape (C,)."""
        out = self.log_likelihood_per_case(params, X).sum(axis=1)
        return np.where(np.isnan(out), -np.inf, out)

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        """Draw ``n_cases`` rows from one ``theta``; returns ``(X, (labels, factors))``
        with ``X`` in the user's units."""
        rng = _rng(rng)
        if n_cases is None:
            if lengths is None:
                raise ValueError("simulate needs n_cases.")
            n_cases = int(np.sum(lengths))
        n = int(n_cases)
        if n < 1:
            raise ValueError(f"n_cases must be positive, got {n_cases}.")
        w, lam = self.split(params_single)
        w, lam = w[0], lam[0]
        K = self.K
        labels = rng.choice(self.S, size=n, p=w / w.sum())
        x = rng.standard_normal((n, K))
        Z = (np.einsum("nqk,nk->nq", lam[labels, :, :K], x) + lam[labels, :, K]
             + rng.standard_normal((n, self.p)) * np.sqrt(self.psi))
        return Z * self.scale + self.shift, (labels, x)

    # ------------------------------------------------------------------------ G4
    def n_parameters(self):
        """Eq. 4.89 with the ARD-kept factor counts ``k_s`` (module docstring)."""
        return int(fa_free_parameters(self.n_factors, self.p))

    def _column_placements(self, s):
        """Signed placements of the active columns of component ``s``: list of (K, K)
        signed permutation matrices ``P`` (``Lambda -> Lambda P``)."""
        K = self.K
        act = list(np.flatnonzero(self.active[s]))
        rest = [j for j in range(K) if j not in act]
        out = []
        for slots in itertools.permutations(range(K), len(act)):
            free = [j for j in range(K) if j not in slots]
            for signs in itertools.product((1.0, -1.0), repeat=len(act)):
                P = np.zeros((K, K))
                for j, t, sg in zip(act, slots, signs):
                    P[j, t] = sg
                for j, t in zip(rest, free):
                    P[j, t] = 1.0
                out.append(P)
        return out

    def n_aliases(self, kind="components"):
        """``kind="components"`` (default, the count used for alias corrections):
        ``prod_k m_k!``, the permutations of analysers with equal numbers of factors;
        ``kind="modes"``: ``S! prod_s 2^k_s K!/(K - k_s)!``, every symmetry-related mode
        (module docstring), which over-corrects a score when ``K >= 2`` and ARD leaves
        the column placements weakly separated; it sizes :meth:`alias_maps`."""
        if kind == "components":
            out = 1
            for k in np.unique(self.n_factors):
                out *= factorial(int(np.sum(self.n_factors == k)))
            return int(out)
        if kind != "modes":
            raise ValueError(f"kind must be 'modes' or 'components', got {kind!r}.")
        K = self.K
        out = factorial(self.S)
        for k in self.n_factors:
            out *= (2 ** int(k)) * factorial(K) // factorial(K - int(k))
        return int(out)

    def log_n_aliases(self, kind="components"):
        """The logarithm of :meth:`n_aliases`, from log-factorials (no overflow)."""
        if kind == "components":
            return float(sum(lgamma(int(np.sum(self.n_factors == k)) + 1)
                             for k in np.unique(self.n_factors)))
        if kind != "modes":
            raise ValueError(f"kind must be 'modes' or 'components', got {kind!r}.")
        K = self.K
        out = lgamma(self.S + 1)
        for k in self.n_factors:
            out += int(k) * log(2.0) + lgamma(K + 1) - lgamma(K - int(k) + 1)
        return float(out)

    def alias_maps(self, max_maps=None):
        """Every alias map as ``(perm, [P_s])``: new component ``s`` is old ``perm[s]``
        with columns ``Lambda P_s``."""
        n = self.n_aliases(kind="modes")
        if max_maps is not None and n > max_maps:
            raise ValueError(f"{n} aliases exceed max_maps={max_maps}.")
        per = [self._column_placements(s) for s in range(self.S)]
        out = []
        for perm in itertools.permutations(range(self.S)):
            for Ps in itertools.product(*per):
                # the column map belongs to the old component
                out.append((np.array(perm), [Ps[perm[s]] for s in range(self.S)]))
        return out

    def apply_alias(self, params, alias, inverse=False):
        perm, Ps = alias
        w, lam = self.split(params)
        K = self.K
        lam = lam.copy()
        if not inverse:
            lam = lam[:, perm]
            w = w[:, perm]
            for s, P in enumerate(Ps):
                lam[:, s, :, :K] = lam[:, s, :, :K] @ P
        else:
            for s, P in enumerate(Ps):
                lam[:, s, :, :K] = lam[:, s, :, :K] @ P.T
            inv = np.argsort(perm)
            lam = lam[:, inv]
            w = w[:, inv]
        return self.join(w, lam)

    def alias_posterior(self, q=None, max_components=400):
        """Equal-weight mixture of ``q`` (default: the fitted q) over every alias map: a
        proposal covering every aliased mode of the posterior (the restart mixture of
        Beal 2003's importance sampler, Chapter 4)."""
        q = self.variational_posterior() if q is None else q
        return MixturePosterior([aliased_posterior(q, a, self)
                                 for a in self.alias_maps(max_components)])

    # ------------------------------------------------------------------------ G5
    def variational_posterior(self, X=None):
        """q(pi) q(Lambda~) of the fitted estimator (fitting units, :class:`MFAPosterior`)."""
        if self._q is None:
            est = self.estimator
            self._q = MFAPosterior(est.dirichlet_concentration_, est.loading_means_,
                                   est.loading_covariances_)
        return self._q

    # ------------------------------------------------------------------------ G6
    def kernel_prior_precision(self):
        """Prior precision of each unconstrained coordinate: ``1/(2 trigamma(alpha*/S))``
        for the log-ratios of ``pi``; ``a*/b*`` (the inverse scale of the Student-t) for
        the loadings; ``nu*_q`` for the centres."""
        S, p, K = self.S, self.p, self.K
        out = {}
        if S > 1:
            out["weights"] = 1.0 / (2.0 * polygamma(1, self.alpha_star / S))
        row = np.concatenate([np.full(K, self.a_star / self.b_star), [0.0]])
        pr = np.tile(row, (p, 1))
        pr[:, K] = self.nu_star
        for n in _block_names(S):
            out[n] = pr.ravel().copy()
        return out

    def _precisions(self):
        q = self.variational_posterior()
        pi = {b: np.broadcast_to(np.asarray(v, dtype=float),
                                 (self.param_space[b].dim,)).copy()
              for b, v in self.kernel_prior_precision().items()}
        return pi, posterior_data_precision(self, q, pi, list(pi))

    def kernel_curvature(self):
        """Per-case curvature of each block (median data precision under q over n)."""
        pi, h = self._precisions()
        n = max(1, int(self._n_last))
        return {b: float(np.median(v)) / n for b, v in h.items()}

    def annealing_kernel(self, X=None, scale=1.0):
        """The kernel of ``kernel="auto"`` (G6 hook), tuned once from the prior and the
        fitted q: Dirichlet MH on ``pi`` with strengths from the tempered concentrations
        ``alpha* + beta (sum alpha^ - alpha*)``, then a random walk on each component's
        ``[Lambda_s, mu_s]`` with one step per coordinate, ``2.38/sqrt(dim) /
        sqrt(pi_i + beta h_i)``, ``pi_i`` from :meth:`kernel_prior_precision` and
        ``h_i = 1/var_q - pi_i``.  Its adjoint sweeps in reverse order."""
        pi, h = self._precisions()
        ks = []
        if self.S > 1:
            q = self.variational_posterior()
            conc = {"weights": (np.array([self.alpha_star]),
                                np.array([max(q.alpha.sum() - self.alpha_star, 0.0)]))}
            ks.append(DirichletMH(self, ["weights"], concentration=conc))
            pi.pop("weights")
            h.pop("weights")
        blocks = _block_names(self.S)
        ks.append(BlockRandomWalkMH(self, blocks, scale=scale, prior_precision=pi,
                                    data_precision=h))
        return ks[0] if len(ks) == 1 else CompositeKernel(ks)

    # ------------------------------------------------------------------------ G2 / G3
    def factor_posterior(self, params_single):
        """Exact ``Sigma_s = (I + Lambda^T Psi^-1 Lambda)^-1`` and ``ln|Sigma_s|``."""
        _, lam = self.split(params_single)
        return factor_posterior(lam[0], self.psi)

    def _point_loglik_and_stats(self, params_single, X):
        """``ln p(X | theta)`` (user units) and the E step's statistics, without the
        expected complete log-likelihood and entropy that only CS needs (the EM and
        the gradient run this)."""
        w, lam = self.split(params_single)
        e = self._e_step_arrays(w[0], lam[0], X)
        loglik = e.loglik + self._jacobian(X)
        return (-np.inf if np.isnan(loglik) else loglik), e

    def _e_step_arrays(self, w, lam, X):
        """The exact E step at the point ``(w, lam)`` (a PointEStep), from the observed
        entries when ``X`` has missing ones."""
        if X.missing is not None:
            return missing_point_e_step(X.Z, w, lam, self.psi, X.missing)
        return point_e_step(X.Z, w, lam, self.psi)

    @staticmethod
    def _jacobian(X):
        """The Jacobian of the standardisation of the whole data set."""
        if X.missing is not None:
            return float(np.sum(X.row_log_jac))
        return X.Z.shape[0] * float(X.log_jac)

    def e_step(self, params_single, X):
        """Exact posterior over ``(s_i, x_i)`` at a normalised ``theta``: loglik,
        expected statistics, ``E ln p(s, x, X | theta)`` and the entropy (computed
        directly: ``sum_i H[r_i] + sum_s N_s (K/2 ln 2 pi e + 1/2 ln|Sigma_s|)``).  The user
        units' Jacobian is part of both ``loglik`` and the complete log-likelihood."""
        Z = X.Z
        w, lam = self.split(params_single)
        K = self.K
        if X.missing is not None:
            e = missing_point_e_step(Z, w[0], lam[0], self.psi, X.missing)
            stats = _miss.complete_data_statistics(e, X)
            loglik = e.loglik + self._jacobian(X)
            loglik = -np.inf if np.isnan(loglik) else loglik
            return EStep(loglik, stats, float(self.expected_complete_loglik(params_single, stats)),
                         _miss.entropy(e))
        e = point_e_step(Z, w[0], lam[0], self.psi)
        resp, Nk, logdet_sigma = e.resp, e.stats.Nk, e.logdet_sigma
        stats = MFACompleteStats(Nk=Nk, W=e.stats.W, C=e.stats.C, D=e.stats.D,
                                 n=int(Z.shape[0]), log_jac=float(X.log_jac), resp=resp)
        # the E step's own log-sum-exp over the components is ln p(Z | theta)
        loglik = e.loglik + Z.shape[0] * float(X.log_jac)
        if np.isnan(loglik):
            loglik = -np.inf
        ecl = float(self.expected_complete_loglik(params_single, stats))
        entropy = float(-np.sum(xlogy(resp, resp))
                        + np.sum(Nk * 0.5 * (K * (1.0 + LOG_2PI) + logdet_sigma)))
        return EStep(loglik, stats, ecl, entropy)

    def _x_and_noise_terms(self, stats):
        """Parts of ``E ln p(s, x, y | theta)`` that do not depend on theta (the factor
        prior, the normalisers of the noise, ``y^T Psi^-1 y``, the Jacobian)."""
        K, p = self.K, self.p
        if stats.Nd is not None:
            return _miss.x_and_noise_terms(stats, self.psi, K)
        Nk, W, D = stats.Nk, stats.W, stats.D
        e_x = -0.5 * np.sum(Nk * K * LOG_2PI + np.trace(W[:, :K, :K], axis1=1, axis2=2))
        e_y = (-0.5 * np.sum(Nk) * (p * LOG_2PI + np.sum(np.log(self.psi)))
               - 0.5 * np.sum(D @ (1.0 / self.psi)))
        return float(e_x + e_y + stats.n * stats.log_jac)

    def cs_roundoff_scale(self, stats):
        """Size of the largest terms that cancel in the CS formulas: ``1/2 sum_n
        y_n^T Psi^-1 y_n`` (responsibility-weighted).  The expected complete
        log-likelihood and the complete-data evidence are built from these uncentred
        sums of squares; for rows far from every component they cancel to a small
        residual, losing about ``eps`` times this size in absolute accuracy."""
        return 0.5 * float(np.sum(stats.D @ (1.0 / self.psi)))

    def expected_complete_loglik(self, params_single, stats):
        """``E ln p(s, x, X | theta)`` under the posterior that produced ``stats``."""
        w, lam = self.split(params_single)
        w, lam1 = w[0], lam[0]
        Nk, W, C = stats.Nk, stats.W, stats.C
        ipsi = 1.0 / self.psi
        # (W per component, or per component and dimension with entries missing)
        w_quad = (np.einsum("sqk,skl,sql,q->", lam1, W, lam1, ipsi) if W.ndim == 3
                  else np.einsum("sqk,sqkl,sql,q->", lam1, W, lam1, ipsi))
        quad = -2.0 * np.einsum("sqk,sqk,q->", lam1, C, ipsi) + w_quad
        with np.errstate(divide="ignore", invalid="ignore"):
            e_s = float(np.sum(xlogy(Nk, w)))
        return e_s - 0.5 * float(quad) + self._x_and_noise_terms(stats)

    def _loading_bound(self, stats, max_iter=500, tol=1e-11):
        """Mean-field lower bound on ``ln int p(Lambda~) exp<theta-dependent part of the
        expected complete log-likelihood> dLambda~`` with the ARD precisions restored:
        alternate q(Lambda~) and q(nu) (each an exact coordinate ascent) to convergence."""
        K, p, S = self.K, self.p, self.S
        W, C = stats.W, stats.C
        ipsi = 1.0 / self.psi
        a_t = self.a_star + 0.5 * p
        e_nu = np.full((S, K), self.a_star / self.b_star)
        prev = -np.inf
        for _ in range(int(max_iter)):
            mean, cov, logdet = _k.loading_posterior(W, C, self.psi, e_nu, self.nu_star,
                                                     self.mu_star)
            sq = mean[:, :, :K] ** 2 + np.diagonal(cov, axis1=-2, axis2=-1)[:, :, :K]
            b_t = self.b_star + 0.5 * sq.sum(axis=1)  # (S, K)
            e_nu = a_t / b_t
            elog_nu = polygamma(0, a_t) - np.log(b_t)
            f_nu = -np.sum(gamma_kl(a_t, b_t, self.a_star, self.b_star)) if K else 0.0
            centre_sq = (mean[:, :, K] - self.mu_star) ** 2 + cov[:, :, K, K]
            f_load = 0.5 * np.sum(
                np.sum(logdet, axis=1) + p * (K + 1) + p * np.sum(elog_nu, axis=1)
                + np.sum(np.log(self.nu_star)) - np.einsum("sk,sqk->s", e_nu, sq)
                - centre_sq @ self.nu_star)
            second = cov + mean[..., :, None] * mean[..., None, :]
            w_quad = (np.einsum("sqkl,slk,q->", second, W, ipsi) if W.ndim == 3
                      else np.einsum("sqkl,sqlk,q->", second, W, ipsi))
            e_quad = -2.0 * np.einsum("sqk,sqk,q->", mean, C, ipsi) + w_quad
            val = float(f_nu + f_load - 0.5 * e_quad)
            if K == 0 or abs(val - prev) < tol * (1.0 + abs(val)):
                break
            prev = val
        return val

    def _loading_evidence_one_factor(self, stats, n_grid=4001, lo=-40.0, hi=40.0):
        """K = 1: ``ln int p(Lambda~) exp<...> dLambda~`` with the Student-t column prior
        written as ``int Ga(nu; a*, b*) N(lambda; 0, I/nu) dnu``.  Given ``nu`` each row of
        ``[lambda, mu]`` is a Gaussian integral in closed form; the one ARD precision per
        component is integrated numerically in ``u = ln nu`` (trapezoid rule on
        ``[lo, hi]`` through log-sum-exp, error far below 1e-8 nats for integrands this
        smooth)."""
        S = self.S
        W, C = stats.W, stats.C  # (S, 2, 2), (S, p, 2)
        u = np.linspace(lo, hi, int(n_grid))
        du = u[1] - u[0]
        nu = np.exp(u)
        a, b = self.a_star, self.b_star
        log_gam = a * np.log(b) - gammaln(a) + a * u - b * nu  # density in u
        total = 0.0
        for s in range(S):
            # (one W per component, or per component and dimension with entries missing)
            A = (W[s][None, :, :] if W.ndim == 3 else W[s]) / self.psi[:, None, None]
            h0 = C[s] / self.psi[:, None]  # (p, 2)
            # prior precision diag(nu, nu*_q), mean (0, mu*_q)
            P00 = nu[:, None] + A[None, :, 0, 0]  # (G, p)
            P01 = np.broadcast_to(A[None, :, 0, 1], P00.shape)
            P11 = np.broadcast_to((self.nu_star + A[:, 1, 1])[None], P00.shape)
            h1 = h0[:, 1] + self.nu_star * self.mu_star
            hv0 = np.broadcast_to(h0[None, :, 0], P00.shape)
            det = P00 * P11 - P01**2
            quad = (P11 * hv0**2 - 2 * P01 * hv0 * h1 + P00 * h1**2) / det
            log_rows = (0.5 * (u[:, None] + np.log(self.nu_star)[None] - np.log(det) + quad)
                        - 0.5 * self.nu_star * self.mu_star**2)
            f = log_gam + np.sum(log_rows, axis=1)
            w = np.full(f.shape, du)
            w[0] = w[-1] = 0.5 * du
            m = np.max(f)
            total += m + np.log(np.sum(w * np.exp(f - m)))
        # E[-1/2 lambda~^T A lambda~ + h^T lambda~] above; the constants of the rows'
        # Gaussian normalisers cancel
        return float(total)

    def log_complete_evidence(self, stats):
        """``ln int p(theta) exp<ln p(s, x, X | theta)> dtheta`` at expected statistics:
        exact Dirichlet integral for ``pi``; for ``(Lambda~, nu)`` exact when K <= 1
        (closed form for K = 0, one-dimensional quadrature over each ARD precision for
        K = 1) and the mean-field lower bound for K >= 2 (``complete_evidence_kind``)."""
        Nk = stats.Nk
        a0 = self.weights_prior
        e_pi = 0.0
        if self.S > 1:
            e_pi = float(np.sum(gammaln(a0 + Nk)) - gammaln(np.sum(a0 + Nk))
                         - np.sum(gammaln(a0)) + gammaln(np.sum(a0)))
        lam = (self._loading_evidence_one_factor(stats) if self.K == 1
               else self._loading_bound(stats))
        return e_pi + lam + self._x_and_noise_terms(stats)

    def point_from_stats(self, stats, params_old, kind="map", basis="softmax", rotate=True):
        """M step (generalised for the Student-t prior; module docstring).  For the MAP
        with ``rotate=True`` the loading columns of each component then move onto the
        principal axes of ``Lambda_s^T Lambda_s`` (:func:`~sklearn_vb.mfa._point.principal_axes`:
        the likelihood is unchanged and the prior maximised over rotations), so that the
        objective rises at least as much as by the plain step."""
        Nk, W, C = stats.Nk, stats.W, stats.C
        a0 = self.weights_prior
        w = point_weights(Nk, kind, a0, basis)
        lam_old = None if kind == "ml" else self.split(params_old)[1][0]
        mean = point_loadings(W, C, self.psi, kind, lam_old, self.a_star, self.b_star,
                              self.nu_star, self.mu_star)
        if kind == "map" and rotate:
            # the likelihood is invariant under rotations of each loading matrix and the
            # prior is maximised over them in closed form: EM alone crawls along that ridge
            mean = principal_axes(mean)
        return self.join(w[None], mean[None])

    def _objective(self, theta, loglik, kind, basis):
        if kind == "ml":
            return loglik
        obj = loglik + float(self.log_prior(theta)[0])
        if basis == "softmax" and self.S > 1:
            obj += float(np.sum(np.log(theta["weights"])))
        return obj

    def _weight_counts(self, Nk, kind, basis):
        """Exponents ``c_s`` of the objective's ``sum_s c_s ln pi_s``."""
        if kind == "ml":
            return Nk
        a0 = self.weights_prior
        return Nk + a0 if basis == "softmax" else Nk + a0 - 1.0

    def objective_and_gradient(self, phi, X, kind="map", basis="softmax"):
        """The point-estimation objective at the unconstrained ``phi`` (D,) and its exact
        gradient in ``phi`` (Fisher identity: the E step's statistics give the gradient
        of the log-likelihood).  ``kind="map"``, ``basis="softmax"``: ``ln p(theta) +
        l(theta) + ln|d theta / d phi|``, the Laplace scorer's objective; ``"natural"``
        leaves the Jacobian out; ``kind="ml"``: ``l(theta)``."""
        space = self.param_space
        theta, logdet = space.from_unconstrained(np.atleast_2d(phi))
        loglik, e = self._point_loglik_and_stats(theta, X)
        obj = self._objective(theta, loglik, kind, basis)
        if kind == "map" and basis == "softmax":
            obj = loglik + float(self.log_prior(theta)[0] + logdet[0])
        w, lam = self.split(theta)
        w, lam1 = w[0], lam[0]
        K, p = self.K, self.p
        W, C, Nk = e.stats.W, e.stats.C, e.stats.Nk
        WL = (np.einsum("sql,skl->sqk", lam1, W) if W.ndim == 3
              else np.einsum("sql,sqkl->sqk", lam1, W))
        g_lam = (C - WL) / self.psi[None, :, None]
        if kind == "map":
            if K:
                sq = np.sum(lam1[..., :K] ** 2, axis=1)  # (S, K)
                g_lam[..., :K] -= ((self.a_star + 0.5 * p) / (self.b_star + 0.5 * sq))[:, None, :] \
                    * lam1[..., :K]
            g_lam[..., K] -= self.nu_star * (lam1[..., K] - self.mu_star)
        grads = {}
        if self.S > 1:
            c = self._weight_counts(Nk, kind, basis)
            grads["weights"] = c[:-1] - w[:-1] * np.sum(c)
        for s, b in enumerate(_block_names(self.S)):
            grads[b] = g_lam[s].ravel()
        g = np.concatenate([grads[b.name] for b in space.blocks if b.dim > 0])
        return float(obj), g

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=500,
                  tol_per_case=1e-10, polish=True, verbose=0):
        """Generalised EM for the MAP (``kind="map"``; the weights' mode in the
        unconstrained basis with ``basis="softmax"``, counts ``alpha*/S + N_s``, or in
        ``pi`` itself with ``"natural"``) or the ML point (``kind="ml"``; Psi stays frozen,
        so the likelihood is bounded).  Starts: the mean of the fitted q, then draws from
        it; the best objective is kept.  Every MAP M step ends by rotating each loading
        matrix onto its principal axes (:meth:`point_from_stats`): the likelihood is
        invariant under those rotations and the ARD prior is maximised over them in
        closed form, a ridge along which EM alone crawls.  Each start runs EM (SQUAREM
        accelerated) until the objective changes by less than ``tol_per_case * n`` or
        for ``max_iter`` iterations, then (``polish=True``) L-BFGS with the exact
        gradient of :meth:`objective_and_gradient` in the unconstrained basis finishes
        the climb (at most 50 iterations after an EM that met its tolerance, 2000 after
        one that stopped at its cap; kept only if it improves the objective);
        ``verbose`` prints a progress line after runs once the estimate has taken more
        than a few seconds.  A run counts as converged when the EM met its tolerance or
        the quasi-Newton finish met its own test; otherwise the scorers raise a
        ``ConvergenceWarning`` and score the last iterate (for CS, still a lower bound:
        Beal 2003, Theorem 2.3, holds at any point).

        Cost: one E step (the exact factor posteriors and responsibilities, matrix
        products over all components) per EM iteration or gradient."""
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        if basis not in ("softmax", "natural"):
            raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
        rng = _rng(rng)
        q = self.variational_posterior()
        n = max(1, self.n_cases(X))

        def start(i):
            return q.mean() if i == 0 else q.sample(rng, 1)

        def evaluate(theta):
            loglik, e = self._point_loglik_and_stats(theta, X)
            return self._objective(theta, loglik, kind, basis), e.stats

        def finish(run):
            if not polish:
                return run
            # after an EM that met its tolerance the quasi-Newton finish only tidies up
            # (at the digits' MAP a full one costs as much as the EM and gains nothing)
            theta, obj, done = self._polish(run.theta, run.objective, X, kind, basis,
                                            maxiter=_POLISH_AFTER_CONVERGED if run.converged
                                            else _POLISH_MAXITER)
            # converged: the EM met its tolerance or the quasi-Newton climb met its own
            return PointEMRun(theta, obj, run.n_iter, bool(run.converged or done))

        reporter = Progress(verbose, f"{kind} point of {type(self).__name__}", 1)

        def progress(done, total, text):
            reporter.total = total
            reporter(done, text)

        run = best_point_em(start, evaluate,
                            lambda stats, theta: self.point_from_stats(stats, theta, kind, basis),
                            n_init=n_init, max_iter=max_iter, tol=tol_per_case * n,
                            owner=type(self).__name__, polish=finish, space=self.param_space,
                            progress=progress)
        self.last_point_run_ = run
        return run.theta

    def _polish(self, theta, obj, X, kind, basis, maxiter=None):
        if self.S > 1 and np.any(self._weight_counts(
                self._point_loglik_and_stats(theta, X)[1].stats.Nk, kind, basis) <= 0):
            return theta, obj, False  # the weights' optimum is on the boundary: EM only
        space = self.param_space
        phi0 = space.to_unconstrained(theta)[0]

        def fun(phi):
            with np.errstate(all="ignore"):
                v, g = self.objective_and_gradient(phi, X, kind, basis)
            if not np.isfinite(v):
                return np.inf, np.zeros_like(phi)
            return -v, -g

        # the objective in phi differs from ``obj`` by the Jacobian term; compare in phi
        f0 = fun(phi0)[0]
        res = minimize(fun, phi0, jac=True, method="L-BFGS-B",
                       options={"maxiter": _POLISH_MAXITER if maxiter is None else int(maxiter),
                                "gtol": 1e-9, "ftol": 1e-15})
        if not np.isfinite(res.fun) or res.fun > f0:
            return theta, obj, False
        th = space.from_unconstrained(res.x[None])[0]
        return (th, self._objective(th, float(self.log_likelihood(th, X)[0]), kind, basis),
                bool(res.success))

