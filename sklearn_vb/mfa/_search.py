"""Partial VBEM updates for the birth moves of :class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`.

After a split only the two children are far from a fixed point; the other components'
posteriors change little until the children have settled (Beal 2003, Sections 4.3.2
and 4.6: "partial updates can be derived that are guaranteed to increase F, simply by
placing constraints on the posterior responsibilities of the fixed analysers").  One
partial iteration updates, in this order,

* q(x | s) for the children (thesis eqs. 4.51-4.55),
* q(Λ̃^s) for the children, from the children's own statistics (eqs. 4.41-4.50),
* q(s) with the constraint ``r_ia + r_ib = m_i``, ``m_i`` the responsibility the
  children hold together: ``r_i· = m_i softmax(ℓ_ia, ℓ_ib)`` is the exact maximiser
  of F over q(s) under that constraint (the other components' responsibilities, and
  so all their terms of F, stay as they are),
* q(π) (all counts: cheap and exact),
* q(ν^s) for the children,
* optionally the shared hyperparameters the estimator re-estimates: the noise Ψ (its
  exact maximiser given every component's q(Λ̃) and statistics, those of the fixed
  components computed once, :func:`noise_residuals`) and the ARD rate b*.  Without
  them a split of a component that holds most of the data cannot pay: the parent's
  Ψ has absorbed the spread the two children now explain.

Each is an exact coordinate maximisation of F over a block of q, so F never decreases,
and the cost of an iteration is about ``2 / S`` of a full one.  So is the bound after
it (:class:`PartialBound`): the other components' terms of F are constant, except
their expected log-likelihood, which depends on Ψ only through ``Σ_q R_q / ψ_q`` with
their residuals ``R`` fixed, and their ARD terms, which depend on ``b*`` and ``q(ν)``
through a few numbers per column.  The functions here act
on the estimator's :class:`~sklearn_vb.mfa._state.MFAState` and replace arrays rather than edit them in place
(the estimator caches statistics by array identity).
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

from .._core.distributions import dirichlet_kl, gamma_kl
from . import kernels as _k
from .._core.kernels.constants import LOG_2PI
from ._hyper import update_ard_rate
from ._point import noise_residual
from ._state import StatsCache, SufficientStats

__all__ = ["children_iteration", "noise_residuals", "PartialBound"]


def _with_columns(full, part, index, axis):
    """A copy of ``full`` whose entries ``index`` along ``axis`` are ``part``."""
    out = full.copy()
    sl = [slice(None)] * full.ndim
    sl[axis] = index
    out[tuple(sl)] = part
    return out


def noise_residuals(st, Z, components):
    """``Σ_s Σ_i r_is E[(y_iq − Λ̃^s_q x̃_i)²]`` over ``components``, shape (p,): the
    part of the Ψ update (``noise_update`` of :mod:`sklearn_vb.mfa._point`) that
    these components contribute."""
    c = np.asarray(components, dtype=int)
    if c.size == 0:
        return np.zeros(Z.shape[1])
    Nk, W, C, D = _component_statistics(st, Z, c)
    lam, cov = st.lam_mean[c], st.lam_cov[c]
    second = cov + lam[:, :, :, None] * lam[:, :, None, :]
    return noise_residual(D, C, W, lam, second)


def _cached_statistics(st, Z):
    """The statistics ``(N_s, W_s, C_s, D_s)`` of every component cached in ``st`` by the
    estimator (``stats_cache``, keyed by the identity of q(s) and q(x|s)), or None when
    they are not those of the stored state."""
    cache = st.stats_cache
    if cache is not None and cache.matches(st.resp, st.xbar, st.sigma, Z):
        return cache.stats
    return None


def _component_statistics(st, Z, c):
    """The statistics of the components ``c``: from the cache when it holds those of
    the stored state, computed otherwise."""
    cached = _cached_statistics(st, Z)
    if cached is not None:
        return SufficientStats(*(x[c] for x in cached))
    return _k.sufficient_statistics(Z, np.ascontiguousarray(st.resp[:, c]),
                                    np.ascontiguousarray(st.xbar[:, c]), st.sigma[c])


class PartialBound:
    """The bound F of the state ``st`` while only the components ``children`` change
    (:func:`children_iteration`), at a cost that does not grow with the others.

    Built from the state before the partial iterations; :meth:`__call__` then returns
    F of the current state (``log_jacobian`` included), equal to the complete bound
    up to round-off as long as the other components' q(Λ̃), q(x|s) and q(s) stay as
    they were.  Their terms of F are split into what the partial updates leave alone
    (entropies, the factors' terms, the centres' prior terms) and what moves with the
    shared quantities: the likelihood ``-½ N_o (p ln 2π + Σ_q ln ψ_q) - ½ Σ_q R_q / ψ_q``
    (``R`` their summed noise residuals, :func:`noise_residuals`), the ARD terms
    ``½ Σ_j (p E[ln ν_j] - E[ν_j] Σ_q E[Λ_qj²])`` and ``-KL(q(ν) || p(ν))``, and
    ``N_s E[ln π_s]``.
    """

    def __init__(self, st, Z, children, log_jacobian=0.0):
        S = st.resp.shape[1]
        self.children = np.asarray(children, dtype=int)
        self.others = np.setdiff1d(np.arange(S), self.children)
        self.Z = Z
        self.log_jacobian = float(log_jacobian)
        o = self.others
        p = Z.shape[1]
        K = st.sigma.shape[-1]
        self.residuals = noise_residuals(st, Z, o)
        if o.size == 0:
            self.n_others = 0.0
            self.fixed = 0.0
            self.lam_sq = np.zeros((0, K))
            self.n_o = np.zeros(0)
            return
        Nk, W, C, D = _component_statistics(st, Z, o)
        self.n_o = Nk
        self.n_others = float(Nk.sum())
        terms = _k.bound_terms(
            Z, np.ascontiguousarray(st.resp[:, o]), np.ascontiguousarray(st.xbar[:, o]),
            st.sigma[o], st.logdet_sigma[o], st.lam_mean[o], st.lam_cov[o],
            st.lam_logdet[o], st.alpha_hat[o], st.a_tilde, st.b_tilde[o], st.psi,
            st.mu_star, st.nu_star, stats=(Nk, W, C, D),
            expected_log_pi=np.zeros(o.size))
        lam_sq = st.lam_mean[o][:, :, :K] ** 2 + np.diagonal(
            st.lam_cov[o], axis1=-2, axis2=-1)[:, :, :K]
        self.lam_sq = lam_sq.sum(axis=1)  # (S_o, K)
        ard = self._ard_part(st, o, p)
        # what stays: the loading terms without their ARD part, the entropy of q(s)
        # (``assign`` was computed with E[ln π] = 0) and the factors' terms
        self.fixed = float(np.sum(terms.loading) - ard + np.sum(terms.assign)
                           + np.sum(terms.factor))

    def _ard_part(self, st, o, p):
        """``½ Σ_sj (p E[ln ν_sj] - E[ν_sj] Σ_q E[Λ_qj²])`` over the components ``o``."""
        b = st.b_tilde[o]
        if b.size == 0:
            return 0.0
        e_nu = st.a_tilde / b
        elog_nu = digamma(st.a_tilde) - np.log(b)
        return float(0.5 * np.sum(p * elog_nu - e_nu * self.lam_sq))

    def __call__(self, st):
        c, o = self.children, self.others
        Z = self.Z
        p = Z.shape[1]
        S, K = st.b_tilde.shape
        alpha_hat = st.alpha_hat
        elog_pi = digamma(alpha_hat) - digamma(alpha_hat.sum())
        stats = _component_statistics(st, Z, c)
        terms = _k.bound_terms(
            Z, np.ascontiguousarray(st.resp[:, c]), np.ascontiguousarray(st.xbar[:, c]),
            st.sigma[c], st.logdet_sigma[c], st.lam_mean[c], st.lam_cov[c],
            st.lam_logdet[c], alpha_hat[c], st.a_tilde, st.b_tilde[c], st.psi,
            st.mu_star, st.nu_star, stats=stats, expected_log_pi=elog_pi[c])
        psi = st.psi
        lik_o = (-0.5 * self.n_others * (p * LOG_2PI + np.sum(np.log(psi)))
                 - 0.5 * float(self.residuals @ (1.0 / psi)))
        others = self.fixed + self._ard_part(st, o, p) + float(self.n_o @ elog_pi[o]) + lik_o
        f_pi = -float(dirichlet_kl(alpha_hat, np.full(S, st.alpha_star / S)))
        f_nu = (-float(np.sum(gamma_kl(st.a_tilde, st.b_tilde, st.a_star,
                                       st.b_star))) if K else 0.0)
        children = sum(float(np.sum(v)) for v in (terms.loading, terms.assign, terms.factor,
                                                   terms.lik))
        return f_pi + f_nu + children + others + self.log_jacobian


def _splice_statistics(st, Z, c, old_stats, stats_c):
    """Cache the statistics of the updated state: those of the components ``c`` are
    ``stats_c``, the others' are unchanged from ``old_stats`` (nothing is cached when
    ``old_stats`` is None)."""
    if old_stats is None:
        st.stats_cache = None
        return
    stats = SufficientStats(*(_with_columns(full, part, c, 0)
                              for full, part in zip(old_stats, stats_c)))
    st.stats_cache = StatsCache(st.resp, st.xbar, st.sigma, Z, stats)


def children_iteration(st, Z, children, fixed_residuals=None, psi_floor=None,
                       ard_rate_min=None, ard_rate_update="fixed-point"):
    """One partial VBEM iteration over the components ``children`` (indices) of the
    state ``st``; the other components' posteriors are held fixed.  With
    ``fixed_residuals`` (:func:`noise_residuals` of the other components) Ψ is
    re-estimated (floored at ``psi_floor``); with ``ard_rate_min`` not None, b*
    (:func:`~sklearn_vb.mfa._hyper.update_ard_rate`)."""
    c = np.asarray(children)
    K = st.sigma.shape[-1]
    psi = st.psi
    old_stats = _cached_statistics(st, Z)
    # q(x | s) of the children
    M = _k.expected_loading_quadratic(st.lam_mean[c], st.lam_cov[c], psi)
    sigma, logdet = _k.factor_posterior(M)
    xbar = _k.factor_means(Z, st.lam_mean[c], psi, sigma, M)
    st.sigma = _with_columns(st.sigma, sigma, c, 0)
    st.logdet_sigma = _with_columns(st.logdet_sigma, logdet, c, 0)
    st.xbar = _with_columns(st.xbar, xbar, c, 1)
    # q(Λ̃) of the children from their own statistics
    resp_c = np.ascontiguousarray(st.resp[:, c])
    Nk, W, C, D = _k.sufficient_statistics(Z, resp_c, xbar, sigma)
    e_nu = st.a_tilde / st.b_tilde[c]
    mean, cov, lam_logdet = _k.loading_posterior(W, C, psi, e_nu, st.nu_star, st.mu_star)
    st.lam_mean = _with_columns(st.lam_mean, mean, c, 0)
    st.lam_cov = _with_columns(st.lam_cov, cov, c, 0)
    st.lam_logdet = _with_columns(st.lam_logdet, lam_logdet, c, 0)
    # q(s) with the children's total responsibility held fixed
    M = _k.expected_loading_quadratic(mean, cov, psi)
    alpha_hat = st.alpha_hat
    elog_pi = digamma(alpha_hat[c]) - digamma(alpha_hat.sum())
    ell = _k.log_weights(Z, xbar, sigma, logdet, mean, M, psi, elog_pi)
    ell -= ell.max(axis=1, keepdims=True)
    r = np.exp(ell)
    r *= (resp_c.sum(axis=1) / r.sum(axis=1))[:, None]
    st.resp = _with_columns(st.resp, r, c, 1)
    # q(π), then q(ν) of the children
    S = st.resp.shape[1]
    st.alpha_hat = st.alpha_star / S + st.resp.sum(axis=0)
    sq = mean[:, :, :K] ** 2 + np.diagonal(cov, axis1=-2, axis2=-1)[:, :, :K]
    st.b_tilde = _with_columns(st.b_tilde, st.b_star + 0.5 * sq.sum(axis=1), c, 0)
    # the children's statistics under their new q(s); the others' are unchanged
    stats_c = _k.sufficient_statistics(Z, np.ascontiguousarray(r), xbar, sigma)
    _splice_statistics(st, Z, c, old_stats, stats_c)
    if fixed_residuals is not None:
        Nk, W, C, D = stats_c
        resid = fixed_residuals + noise_residual(D, C, W, mean, cov + mean[:, :, :, None]
                                                 * mean[:, :, None, :])
        st.psi = np.maximum(resid / Z.shape[0], psi_floor)
    if ard_rate_min is not None:
        update_ard_rate(st, ard_rate_min, ard_rate_update)
