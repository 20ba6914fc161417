"""Exact maximisation of the MFA bound over the shared ARD rate ``b*``.

Every loading column ``j`` of component ``s`` has a precision ``ν^s_j ~ Gamma(a*, b*)``
and ``q(ν^s_j) = Gamma(ã, b̃^s_j)`` with ``ã = a* + p/2`` (Beal 2003, eqs. 4.39-4.40,
4.62).  Given ``q(Λ̃)``, write ``h_sj = ½ Σ_q E[(Λ^s_{qj})²]``.  The optimal ``q(ν)``
for a given ``b*`` is ``b̃^s_j = b* + h_sj``, and with it the terms of F that depend
on ``b*`` are ::

    G(b*) = Σ_sj [a* ln b* − ã ln(b* + h_sj)] + const.

The thesis's fixed point ``b* = a* / mean E[ν]`` maximises F over ``b*`` with
``q(ν)`` held fixed; alternating it with the ``q(ν)`` update converges only as fast
as the columns' ``q(ν)`` let go of the old ``b*``, which is very slowly when most
columns are almost switched off.  The maximiser of ``G`` jumps straight to the joint
optimum of ``(b*, q(ν))`` given ``q(Λ̃)``: ``G'(b) = 0`` is
``Σ_sj b / (b + h_sj) = L a*/ã`` (``L`` columns), whose left side rises from 0 to
``L`` and ``a* < ã``, so the root is unique and ``G`` is maximal there.

The other optional hyperparameter updates are here too: the centre prior ``(μ*, ν*)``,
the ARD prior ``(a*, b*)`` jointly, and the Dirichlet strength ``α*``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, polygamma

__all__ = ["HYPER_NAMES", "ard_rate_maximiser", "ard_rate_objective",
           "loading_half_second_moments", "selected_hyperparameters", "solve_log_newton", "update_alpha_prior", "update_ard_prior", "update_ard_rate",
           "update_mean_prior"]

#: the hyperparameters ``optimize_hyperparameters`` may name, in the order of their steps
HYPER_NAMES = ("noise", "mean_prior", "ard_rate", "ard_prior", "alpha_prior")
_HYPER_DEFAULT = ("noise", "ard_rate")


def selected_hyperparameters(optimize):
    """The set of hyperparameter names ``optimize_hyperparameters`` selects (True: Ψ
    and the ARD rate b*)."""
    if optimize is True:
        return set(_HYPER_DEFAULT)
    if optimize is False:
        return set()
    names = set(optimize)
    unknown = names - set(HYPER_NAMES)
    if unknown:
        raise ValueError(
            f"optimize_hyperparameters contains unknown name(s) {sorted(unknown)}; "
            f"allowed: {list(HYPER_NAMES)} or a bool."
        )
    return names


def ard_rate_objective(b_star, half_sq, a_star, a_tilde):
    """``G(b*)`` above (without its constant): the part of F that depends on ``b*``
    once ``q(ν)`` is optimal, for loading second moments ``half_sq`` (``h_sj``)."""
    h = np.asarray(half_sq, dtype=float).ravel()
    return float(h.size * a_star * np.log(b_star) - a_tilde * np.sum(np.log(b_star + h)))


def ard_rate_maximiser(half_sq, a_star, a_tilde, b_min=0.0, b_start=None):
    """The ``b* >= b_min`` maximising ``G`` (see the module docstring).

    ``half_sq`` holds ``h_sj = ½ Σ_q E[(Λ^s_{qj})²]`` for every loading column.  The
    root of ``φ(u) = Σ_sj 1/(1 + h_sj e^{-u}) − L a*/ã`` in ``u = ln b*`` is found by
    Newton steps safeguarded by bisection (``φ`` is increasing); ``G`` is unimodal, so
    the constrained maximiser is the root clipped at ``b_min``.
    """
    h = np.asarray(half_sq, dtype=float).ravel()
    if h.size == 0:
        return None
    target = h.size * a_star / a_tilde
    h = np.maximum(h, 1e-300)
    log_h = np.log(h)

    def phi(u):
        w = 1.0 / (1.0 + np.exp(log_h - u))  # b / (b + h)
        return float(np.sum(w)) - target, float(np.sum(w * (1.0 - w)))

    # bracket: at u = min ln h − c every term is below 1/(1 + e^c); at max ln h + c above
    c = np.log(h.size / min(target, h.size - target)) + 1.0
    lo, hi = float(log_h.min()) - c, float(log_h.max()) + c
    u = float(np.log(b_start)) if b_start is not None and b_start > 0 else 0.5 * (lo + hi)
    u = min(max(u, lo), hi)
    for _ in range(200):
        f, df = phi(u)
        if f > 0.0:
            hi = u
        else:
            lo = u
        step = f / df if df > 0.0 else np.inf
        new = u - step
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if abs(new - u) < 1e-14 * max(1.0, abs(u)) or hi - lo < 1e-14 * max(1.0, abs(u)):
            u = new
            break
        u = new
    return float(max(np.exp(u), b_min))


def loading_half_second_moments(st):
    """``h_sj = ½ Σ_q E[(Λ^s_{qj})²]`` of the state ``st``, shape (S, K)."""
    K = st.b_tilde.shape[-1]
    sq = st.lam_mean[:, :, :K] ** 2 + np.diagonal(st.lam_cov, axis1=-2, axis2=-1)[:, :, :K]
    return 0.5 * sq.sum(axis=1)


def update_ard_rate(st, b_min, kind="exact"):
    """Re-estimate ``b*`` of the state ``st`` (a* fixed), never below
    ``b_min``.  ``"exact"``: ``b*`` from :func:`ard_rate_maximiser` and then every
    ``q(ν)`` for it (``b̃ = b* + h``), the joint maximiser of F given ``q(Λ̃)``;
    ``"fixed-point"``: ``b* = a* / mean E[ν]``, the maximiser with ``q(ν)`` fixed."""
    if st.b_tilde.size == 0:
        return
    if kind == "fixed-point":
        e_nu = st.a_tilde / st.b_tilde
        st.b_star = float(max(st.a_star / e_nu.mean(), b_min))
        return
    h = loading_half_second_moments(st)
    st.b_star = ard_rate_maximiser(h, st.a_star, st.a_tilde, b_min, st.b_star)
    st.b_tilde = st.b_star + h


def solve_log_newton(g, a_dg, x0, max_iter=100):
    """Root of a monotone ``g`` on (0, ∞) by Newton steps in ``log x``;
    ``a_dg(x) = x g'(x)`` is the derivative with respect to ``log x``."""
    log_x = np.log(x0)
    for _ in range(max_iter):
        x = np.exp(log_x)
        step = float(np.clip(g(x) / a_dg(x), -2.0, 2.0))
        log_x -= step
        if abs(step) < 1e-13:
            break
    return float(np.exp(log_x))


def update_mean_prior(st, data):
    """``μ*`` and ``ν*`` of the state ``st``: the mean and precision of the centres
    under q(Λ̃) (``ν*`` at most ``1e8`` times the data precision); unchanged with one
    component."""
    S = st.resp.shape[1]
    if S < 2:
        return
    K = st.sigma.shape[-1]
    centres = st.lam_mean[:, :, K]
    mu_star = centres.mean(axis=0)
    spread = ((centres - mu_star) ** 2 + st.lam_cov[:, :, K, K]).mean(axis=0)
    st.mu_star = mu_star
    st.nu_star = np.minimum(1.0 / spread, 1e8 / data.var)


def update_ard_prior(st, b_min):
    """Joint maximisation of F over (a*, b*) subject to b* >= b_min.

    F is jointly concave in (a*, b*) (the Hessian determinant is
    L²(aψ'(a) − 1)/b² > 0), so when the unconstrained optimum b* = a*/mean Eν
    falls below the floor the constrained optimum lies on b* = floor, where a*
    solves ψ(a*) = ln b* + mean E ln ν.
    """
    if st.b_tilde.size == 0:
        return
    e_nu = st.a_tilde / st.b_tilde
    elog_nu = digamma(st.a_tilde) - np.log(st.b_tilde)
    c_bar, d_bar = elog_nu.mean(), e_nu.mean()
    target = c_bar - np.log(d_bar)  # < 0 by Jensen
    a = solve_log_newton(
        lambda a: digamma(a) - np.log(a) - target,
        lambda a: a * polygamma(1, a) - 1.0,
        st.a_star,
    )
    b = a / d_bar
    if b < b_min:
        b = b_min
        a = solve_log_newton(
            lambda a: digamma(a) - np.log(b) - c_bar,
            lambda a: a * polygamma(1, a),
            a,
        )
    st.a_star = float(a)
    st.b_star = float(b)


def update_alpha_prior(st):
    """``α*`` of the state ``st`` (eqs. 4.64-4.67); unchanged with one component."""
    S = st.alpha_hat.shape[0]
    if S < 2:
        return
    ah = st.alpha_hat
    c = np.mean(digamma(ah.sum()) - digamma(ah))
    # g(α) = ψ(α) − ψ(α/S) − c is decreasing (g' = ψ'(α) − ψ'(α/S)/S < 0), from +∞
    # at 0 to ln S − c < 0: a unique root (eqs. 4.64-4.67)
    st.alpha_star = solve_log_newton(
        lambda a: digamma(a) - digamma(a / S) - c,
        lambda a: a * (polygamma(1, a) - polygamma(1, a / S) / S),
        st.alpha_star,
    )
