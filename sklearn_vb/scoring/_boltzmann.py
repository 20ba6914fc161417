"""Evidence scores of Boltzmann machines with hidden units.

``"hidden_laplace"``: Laplace's method on the marginal likelihood of the visible units,

``ln p(X) ~ l(lambda^) + ln p(lambda^) + (F/2) ln 2 pi - 1/2 ln det(N C - sum_n C_{h | x_n} + P)``

(the observed information is the free feature covariance minus the clamped ones); with
BP the free ``ln Z`` and ``C`` are the Bethe value and the linear response
(Bethe-Laplace).  ``terms="map"`` / ``"bic"`` give the penalised likelihood and BIC at the
same point.

``"hidden_vb"``: a variational lower bound in the spirit of Beal (2003) section 2.5.2,
with ``q(lambda) = N(m, Sigma)`` and ``q(h_n)`` the clamped model at ``m`` (the VBE step).
Boltzmann machines are not conjugate-exponential: the bound needs ``E_q ln Z(lambda)``
from above.  For any vector ``c``,
``ln Z(lambda) = lambda^T c + ln sum_x exp(lambda^T (f(x) - c))`` and Jensen's inequality
on the concave logarithm give

``E_q ln Z(lambda) <= m^T c + ln sum_x exp(m^T (f(x) - c) + 1/2 (f(x) - c)^T Sigma (f(x) - c))``,

so with ``G(m, Sigma, c) = ln sum_x exp(m^T f(x) + 1/2 (f(x) - c)^T Sigma (f(x) - c))``

``ln p(X) >= E_q ln p(lambda) + H[q(lambda)] + sum_n ln Z(m | x_n) - N G(m, Sigma, c)``

holds at every ``(m, Sigma, c)``; it is maximised by L-BFGS (``c`` near the moments makes
the Jensen gap O(1/N)).  The sum over ``x`` enumerates the joint states, so the bound
needs an enumerable model; on larger graphs an upper bound on ``ln Z`` (tree-reweighted
BP) would take its place, which the package does not have.  The remaining gap to the
evidence is the factorisation ``q(lambda) q(h)``: the bound's curvature is the complete-
data ``N C + P`` instead of the visible information.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from .._core.evidence.protocols import require
from ..mrf.inference import LOG_2PI
from ._base import Scorer, prepare_data, resolve_model
from ._result import ScoreResult

__all__ = ["HiddenLaplaceScore", "HiddenVBBoundScore", "visible_vb_bound"]


class HiddenLaplaceScore(Scorer):
    """Laplace (exact) or Bethe-Laplace (BP) evidence of the visible units.

    Options
    -------
    inference : {"model", "exact", "bp"}, default "model"
        The free partition function and covariance: the estimator's own choice,
        enumeration, or BP with linear response.
    terms : {"laplace", "map", "bic"}, default "laplace"
        All terms; ``l + ln p`` at the MAP; or ``l - (F/2) ln N`` at the MAP.
    """

    name = "hidden_laplace"
    options = {"inference": "model", "terms": "laplace"}

    def _score(self, estimator, X, fit_params, opts):
        if opts["terms"] not in ("laplace", "map", "bic"):
            raise ValueError(f"terms must be 'laplace', 'map' or 'bic', got {opts['terms']!r}.")
        model = resolve_model(estimator, self.name)
        require(model, self.name, "visible_laplace")
        data = prepare_data(model, X, fit_params)
        value, diag = model.visible_laplace(data, opts["inference"])
        t = diag["terms"]
        if opts["terms"] == "map":
            value = t["loglik"] + t["log_prior"]
        elif opts["terms"] == "bic":
            value = t["loglik"] - 0.5 * model.n_parameters() * np.log(data.N)
        if diag.get("bp_converged") is False:
            value = np.nan
        return ScoreResult(self.name, float(value), "approx",
                           log_alias_correction=self._log_alias(model, opts), diagnostics=diag)


def visible_vb_bound(vlik, Phi_all, precision, m0, Sigma0, max_iter=2000):
    """Maximise the lower bound of the module docstring over ``(m, Sigma, c)``.

    ``vlik``: the :class:`~sklearn_vb.boltzmann._inference.VisibleLikelihood` (clamped
    part); ``Phi_all``: ``(M, F)`` features of every joint state.  Returns
    ``(bound, m, Sigma, c, evaluate)`` where ``evaluate(z)`` gives the bound and its
    gradient in the packed coordinates (for tests)."""
    P = np.asarray(precision, dtype=float)
    F = P.size
    N = vlik.N
    tril = np.tril_indices(F, -1)
    const = 0.5 * np.sum(np.log(P)) - 0.5 * F * LOG_2PI + 0.5 * F * (LOG_2PI + 1.0)

    def unpack(z):
        m, c, s = z[:F], z[F:2 * F], z[2 * F:3 * F]
        L = np.diag(np.exp(s))
        L[tril] = z[3 * F:]
        return m, c, s, L

    def evaluate(z):
        m, c, s, L = unpack(z)
        Sigma = L @ L.T
        lz, kap, _, _ = vlik.clamped(m)
        D = Phi_all - c
        DS = D @ Sigma
        a = Phi_all @ m + 0.5 * np.sum(DS * D, axis=1)
        G = logsumexp(a)
        w = np.exp(a - G)
        val = (const - 0.5 * np.sum(P * (m**2 + np.diag(Sigma))) + np.sum(s)
               + float(vlik.counts @ lz) - N * G)
        g_m = -P * m + vlik.counts @ kap - N * (w @ Phi_all)
        g_c = N * (w @ DS)
        M_sig = -0.5 * np.diag(P) - 0.5 * N * (D * w[:, None]).T @ D
        g_L = 2.0 * M_sig @ L
        g_s = np.diag(g_L) * np.exp(s) + 1.0
        return float(val), np.concatenate([g_m, g_c, g_s, g_L[tril]])

    L0 = np.linalg.cholesky(0.5 * (Sigma0 + Sigma0.T))
    c0 = np.exp(Phi_all @ m0 - logsumexp(Phi_all @ m0)) @ Phi_all
    z0 = np.concatenate([m0, c0, np.log(np.diag(L0)), L0[tril]])
    with threadpool_limits(1, user_api="blas"):  # as in fit_visible_map
        res = minimize(lambda z: tuple(-v for v in evaluate(z)), z0, jac=True,
                       method="L-BFGS-B",
                       options={"maxiter": int(max_iter), "gtol": 1e-8, "ftol": 1e-14})
    z = res.x if -res.fun >= evaluate(z0)[0] else z0
    val = evaluate(z)[0]
    m, c, _, L = unpack(z)
    return val, m, L @ L.T, c, evaluate


class HiddenVBBoundScore(Scorer):
    """Variational lower bound on ``ln p(X)`` (Gaussian ``q(lambda)``, exact clamped
    ``q(h_n)``, Jensen upper bound on ``E_q ln Z``); needs an enumerable model.

    ``diagnostics``: ``m`` and ``Sigma`` of ``q(lambda)``, ``c``."""

    name = "hidden_vb"
    options = {"max_iter": 2000}

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "visible_likelihood", "map_point")
        data = prepare_data(model, X, fit_params)
        vlik = model.visible_likelihood(data, "exact")
        Phi_all = vlik.engine.Phi
        res = model.map_point(data, "exact")
        m_free = vlik.engine.moments(res.coef)
        Sigma0 = np.linalg.inv(data.N * m_free.cov + np.diag(model.precision))
        val, m, Sigma, c, _ = visible_vb_bound(vlik, Phi_all, model.precision, res.coef, Sigma0,
                                               opts["max_iter"])
        return ScoreResult(self.name, float(val), "lower",
                           log_alias_correction=self._log_alias(model, opts),
                           diagnostics={"m": m, "Sigma": Sigma, "c": c})
