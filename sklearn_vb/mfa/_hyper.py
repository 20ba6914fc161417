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
"""

from __future__ import annotations

import numpy as np

__all__ = ["ard_rate_maximiser", "ard_rate_objective", "loading_half_second_moments",
           "update_ard_rate"]


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
    K = st["b_tilde"].shape[-1]
    sq = st["lam_mean"][:, :, :K] ** 2 + np.diagonal(st["lam_cov"], axis1=-2, axis2=-1)[:, :, :K]
    return 0.5 * sq.sum(axis=1)


def update_ard_rate(st, b_min, kind="exact"):
    """Re-estimate ``b*`` of the state dictionary ``st`` (a* fixed), never below
    ``b_min``.  ``"exact"``: ``b*`` from :func:`ard_rate_maximiser` and then every
    ``q(ν)`` for it (``b̃ = b* + h``), the joint maximiser of F given ``q(Λ̃)``;
    ``"fixed-point"``: ``b* = a* / mean E[ν]``, the maximiser with ``q(ν)`` fixed."""
    if st["b_tilde"].size == 0:
        return
    if kind == "fixed-point":
        e_nu = st["a_tilde"] / st["b_tilde"]
        st["b_star"] = float(max(st["a_star"] / e_nu.mean(), b_min))
        return
    h = loading_half_second_moments(st)
    st["b_star"] = ard_rate_maximiser(h, st["a_star"], st["a_tilde"], b_min, st["b_star"])
    st["b_tilde"] = st["b_star"] + h
