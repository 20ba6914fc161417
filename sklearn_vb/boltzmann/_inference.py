"""The visible-unit likelihood of a pairwise binary MRF with hidden units.

Nodes ``0..p-1`` are visible, ``p..p+H-1`` hidden; ``lambda`` are the canonical
parameters of the joint model (:class:`~sklearn_vb.mrf.layout.MRFLayout`).  The
likelihood of the visible rows ``x_n`` is

``l(lambda) = sum_n ln Z(lambda | x_n) - N ln Z(lambda)``,  ``Z(lambda | x) = sum_h exp(lambda^T f(x, h))``

with gradient ``sum_n E_{h | x_n} f - N kappa`` and observed information (minus the
Hessian) ``N C - sum_n C_{h | x_n}``: the free covariance minus the clamped ones (Ackley,
Hinton and Sejnowski 1985; Parise and Welling 2006 leave this case open).

The clamped terms are computed exactly, by enumerating the ``2^H`` hidden states for
every distinct visible pattern; the free ``ln Z``, ``kappa`` and ``C`` come from an
engine of :mod:`sklearn_vb.mrf.inference` - exact enumeration of the ``2^(p+H)`` joint
states, or loopy BP with the Bethe ``ln Z_B`` and the linear-response covariance.

:func:`fit_visible_map` maximises ``l(lambda) + ln p(lambda)`` by L-BFGS from several
starts, then polishes by Newton steps on the observed information when it is positive
definite (the Laplace scores need the point to rounding accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from ..mrf.inference import log_prior

__all__ = ["VisibleLikelihood", "VisibleEval", "fit_visible_map", "hidden_states"]


def hidden_states(n_hidden):
    """``(2^H, H)`` every hidden configuration (C order, first hidden unit most significant)."""
    if n_hidden == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.indices((2,) * n_hidden).reshape(n_hidden, -1).T.astype(np.int64)


@dataclass
class VisibleEval:
    loglik: float
    grad: np.ndarray  # d l / d lambda
    clamped_stats: np.ndarray  # sum_n E_{h | x_n} f (the completed statistics S-bar)
    log_partition: float
    kappa: np.ndarray
    hidden_entropy: float  # sum_n H[p(h | x_n)]
    information: np.ndarray | None = None  # N C - sum_n C_{h | x_n}
    free_cov: np.ndarray | None = None
    clamped_cov: np.ndarray | None = None
    info: dict | None = None


class VisibleLikelihood:
    """``l(lambda)`` and its derivatives for fixed visible data.

    Parameters
    ----------
    layout : MRFLayout of the joint (visible then hidden) binary model
    n_visible : int
    patterns : (U, p) int distinct visible rows
    counts : (U,) float weights of the patterns
    engine : free-model engine (``ExactEngine`` or ``BPEngine`` of the joint layout)
    """

    def __init__(self, layout, n_visible, patterns, counts, engine):
        self.layout = layout
        self.n_visible = int(n_visible)
        self.n_hidden = layout.n_nodes - self.n_visible
        self.patterns = np.asarray(patterns, dtype=np.int64).reshape(-1, self.n_visible)
        self.counts = np.asarray(counts, dtype=float)
        self.N = float(self.counts.sum())
        self.engine = engine
        hs = hidden_states(self.n_hidden)
        U, R = self.patterns.shape[0], hs.shape[0]
        codes = np.concatenate([np.repeat(self.patterns, R, axis=0), np.tile(hs, (U, 1))], axis=1)
        self.Phi = layout.feature_matrix(codes).reshape(U, R, layout.n_features)

    # -- clamped (hidden posterior) part -----------------------------------------------
    def clamped_log_partition(self, coefs):
        """``(C, U)`` ``ln Z(lambda | x_u)`` for a batch of parameter vectors."""
        en = np.einsum("urf,cf->cur", self.Phi, np.atleast_2d(coefs))
        return logsumexp(en, axis=2)

    def hidden_posterior(self, coef):
        """``(U, 2^H)`` ``p(h | x_u, lambda)`` and ``(U,)`` ``ln Z(lambda | x_u)``."""
        en = self.Phi @ np.asarray(coef, dtype=float)
        lz = logsumexp(en, axis=1)
        return np.exp(en - lz[:, None]), lz

    def clamped(self, coef, covariance=False):
        w, lz = self.hidden_posterior(coef)
        kap = np.einsum("ur,urf->uf", w, self.Phi)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.sum(np.where(w > 0, w * np.log(w), 0.0), axis=1)
        cov = None
        if covariance:
            D = self.Phi - kap[:, None, :]
            cov = np.einsum("ur,urf,urg->fg", w * self.counts[:, None], D, D)
        return lz, kap, ent, cov

    # -- the visible likelihood --------------------------------------------------------
    def log_likelihood(self, coefs):
        """``(C,)`` ``l(lambda)`` for a batch (the free ``ln Z`` from the engine)."""
        coefs = np.atleast_2d(np.asarray(coefs, dtype=float))
        return self.clamped_log_partition(coefs) @ self.counts - self.N * self.engine.log_partition(coefs)

    def evaluate(self, coef, hessian=False):
        coef = np.asarray(coef, dtype=float)
        lz, kap, ent, ccov = self.clamped(coef, covariance=hessian)
        m = self.engine.moments(coef, covariance=hessian)
        S_bar = self.counts @ kap
        out = VisibleEval(float(self.counts @ lz - self.N * m.log_partition),
                          S_bar - self.N * m.kappa, S_bar, float(m.log_partition), m.kappa,
                          float(self.counts @ ent), info=m.info)
        if hessian:
            if m.cov is None:
                raise NotImplementedError("the observed information needs a dense free covariance "
                                          "(at most 500 features with BP)")
            out.free_cov, out.clamped_cov = m.cov, ccov
            out.information = self.N * m.cov - ccov
        return out


@dataclass
class VisibleMAPResult:
    coef: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    gradient_norm: float
    objectives: list


def _newton_polish(vlik, precision, coef, max_steps, tol):
    """Damped Newton steps on ``t = l + ln p`` while ``A = N C - sum C_h + P`` is positive
    definite; stops at a decrement below ``tol`` nats.  Returns the point, ``t`` and
    whether the decrement criterion was met."""
    P = precision

    def t_of(c, ev):
        return ev.loglik + float(log_prior(c, P))

    ev = vlik.evaluate(coef, hessian=True)
    t = t_of(coef, ev)
    for _ in range(max_steps):
        g = ev.grad - P * coef
        A = ev.information + np.diag(P)
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return coef, t, False
        step = np.linalg.solve(L.T, np.linalg.solve(L, g))
        dec = 0.5 * float(g @ step)
        if dec < tol:
            cand = coef + step
            evc = vlik.evaluate(cand, hessian=True)
            tc = t_of(cand, evc)
            if tc >= t - 1e-12 * max(1.0, abs(t)):
                coef, t = cand, tc
            return coef, t, True
        s = 1.0
        for _ in range(30):
            cand = coef + s * step
            tc = t_of(cand, vlik.evaluate(cand))
            if tc >= t:
                break
            s *= 0.5
        else:
            return coef, t, False
        coef = cand
        ev = vlik.evaluate(coef, hessian=True)
        t = t_of(coef, ev)
    return coef, t, False


def fit_visible_map(vlik, precision, starts, max_iter=500, tol=1e-10, newton_steps=20,
                    verbose=0):
    """Maximise ``l(lambda) + ln p(lambda)`` from every row of ``starts``; the best end
    point is polished by Newton steps.  ``objectives`` holds the best ``t`` of each start.

    BLAS runs on one thread here: L-BFGS-B's small dense updates are ten times slower
    when a threaded BLAS competes for the cores."""
    with threadpool_limits(1, user_api="blas"):
        return _fit_visible_map(vlik, precision, starts, max_iter, tol, newton_steps, verbose)


def _fit_visible_map(vlik, precision, starts, max_iter, tol, newton_steps, verbose):
    P = np.asarray(precision, dtype=float)

    def neg(c):
        ev = vlik.evaluate(c)
        return -(ev.loglik + float(log_prior(c, P))), -(ev.grad - P * c)

    best, finals, n_iter = None, [], 0
    for k, c0 in enumerate(np.atleast_2d(starts)):
        res = minimize(neg, np.asarray(c0, dtype=float), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(max_iter), "gtol": 1e-9, "ftol": 1e-15})
        finals.append(-float(res.fun))
        n_iter += int(res.nit)
        if verbose:
            print(f"[boltzmann] start {k}: t = {-res.fun:.8g} after {res.nit} L-BFGS steps",
                  flush=True)
        if best is None or -res.fun > -best.fun:
            best = res
    coef, t, converged = _newton_polish(vlik, P, best.x, newton_steps, tol)
    if t < -best.fun - 1e-9 * max(1.0, abs(t)):  # never worse than the L-BFGS end point
        coef, t = best.x, -float(best.fun)
    ev = vlik.evaluate(coef)
    gnorm = float(np.max(np.abs(ev.grad - P * coef), initial=0.0))
    converged = converged or gnorm < 1e-6
    return VisibleMAPResult(coef, float(t), n_iter, bool(converged), gnorm, finals)
