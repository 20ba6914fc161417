"""Hyperparameter updates of the VB linear dynamical system that are exact optima of
the bound with q(theta) (and, for the initial-state prior, q(x)) optimised jointly.

Given q(x), the bound maximised over q(A, B) is, up to terms free of the dynamics
hyperparameters ``lam = (alpha, beta)``, the log evidence of ``k`` Bayesian linear
regressions sharing the prior precisions (unit noise)::

    F_AB(lam) = k/2 sum ln lam - k/2 ln|Lam| + 1/2 tr(R' Lam^-1 R),   Lam = W + diag(lam)

and, maximised over q(C, D, rho), the log evidence of ``p`` Normal-Gamma regressions::

    F_CD(lam, a, b) = p/2 sum ln lam - p/2 ln|Lam|
                      + sum_s [a ln b - ln G(a) + ln G(a + T/2) - (a + T/2) ln(b + g_s/2)],
    g_s = Y_ss - r_s' Lam^-1 r_s.

The thesis updates (Beal 2003, eqs. 5.133-5.138) are the EM fixed-point iterations of
these functions, alternated with q(theta): on a precision whose optimum is infinite
(a switched-off input column) they creep up linearly for thousands of iterations.
Here each precision is set to the exact maximiser of its coordinate (the one-column
analysis of Tipping and Faul 2003, generalised to several regressions sharing the
precision and, for the outputs, to the Gamma-distributed noise), and (a, b) to the
maximiser of F_CD for the precisions; every step can only raise the bound.
"""

from numbers import Integral

import numpy as np
from scipy.optimize import brentq
from scipy.special import digamma, gammaln

__all__ = ["check_schedule", "dynamics_evidence", "output_evidence", "update_dynamics_precisions",
           "update_output_hyperparameters", "noise_gamma_optimum",
           "init_state_evidence", "optimal_init_state"]

_LAM_FLOOR = 1e-12


def check_schedule(sched):
    """``hyperparameter_schedule``: None or three non-negative ints (the iterations
    after which alpha/beta, gamma/delta and the rest are updated); a ValueError
    naming it otherwise."""
    if sched is None:
        return
    if len(sched) != 3 or not all(
            isinstance(s, Integral) and not isinstance(s, bool) and s >= 0 for s in sched):
        raise ValueError("hyperparameter_schedule must be None or three non-negative ints "
                         f"(alpha/beta, gamma/delta, the rest); got {sched!r}.")


def _inv_logdet(M):
    L = np.linalg.cholesky(M)
    L_inv = np.linalg.solve(L, np.eye(M.shape[0]))
    return L_inv.T @ L_inv, 2.0 * float(np.sum(np.log(np.diag(L))))


def dynamics_evidence(W, R, lam):
    """``F_AB(lam)`` above (``W`` the (k+d)-square second moments of the regressors,
    ``R`` the (k+d) x k cross moments with the targets)."""
    k = R.shape[1]
    Sigma, logdet = _inv_logdet(W + np.diag(lam))
    return 0.5 * k * float(np.sum(np.log(lam))) - 0.5 * k * logdet \
        + 0.5 * float(np.sum(R * (Sigma @ R)))


def _noise_terms(a, b, g, T):
    c = a + 0.5 * T
    return float(np.sum(a * np.log(b) - gammaln(a) + gammaln(c) - c * np.log(b + 0.5 * g)))


def output_evidence(W, R, YY, lam, a, b, T):
    """``F_CD(lam, a, b)`` above (``YY`` the per-output sums of squares)."""
    p = R.shape[1]
    Sigma, logdet = _inv_logdet(W + np.diag(lam))
    g = np.maximum(YY - np.einsum("is,is->s", R, Sigma @ R), 1e-300)
    return 0.5 * p * float(np.sum(np.log(lam))) - 0.5 * p * logdet + _noise_terms(a, b, g, T)


def _leave_one_out(Sigma, SR, lam_i, i):
    """``v = [Lam_{-i}^-1]_ii`` and ``u = [Lam_{-i}^-1 R]_i`` for Lam without the prior
    precision of coordinate i (Sherman-Morrison), or None when the data alone do
    not determine coordinate i."""
    d = 1.0 - lam_i * Sigma[i, i]
    if not d > 1e-12:
        return None
    return Sigma[i, i] / d, SR[i] / d


def _rank_one(Sigma, SR, i, change):
    """``Sigma`` and ``Sigma R`` after adding ``change`` to ``Lam[i, i]``."""
    col = Sigma[:, i].copy()
    denom = 1.0 + change * col[i]
    Sigma -= (change / denom) * np.outer(col, col)
    SR -= (change / denom) * np.outer(col, SR[i])


def update_dynamics_precisions(W, R, lam, free, cap, sweeps=1):
    """Coordinate-wise exact maximisation of ``F_AB`` over the entries of ``lam``
    flagged in ``free``, each within ``[1e-12, cap]``.

    For coordinate i, with ``v`` and ``u_j`` the leave-one-out variance and means,
    ``F_AB`` is ``k/2 ln z - z U / (2 v)`` plus a constant in
    ``z = lam v / (1 + lam v)`` (``U = sum_j u_j^2``), maximised at ``z = k v / U``:
    ``lam = k / (U - k v)`` when ``U > k v``, else infinity (the cap).
    """
    lam = np.array(lam, dtype=float)
    k = R.shape[1]
    Sigma, _ = _inv_logdet(W + np.diag(lam))
    SR = Sigma @ R
    for _ in range(sweeps):
        for i in np.flatnonzero(free):
            loo = _leave_one_out(Sigma, SR, lam[i], i)
            if loo is None:
                continue
            v, u = loo
            U = float(u @ u)
            new = k / (U - k * v) if U > k * v else cap
            new = float(np.clip(new, _LAM_FLOOR, cap))
            _rank_one(Sigma, SR, i, new - lam[i])
            lam[i] = new
    return lam


def _output_coordinate(v, u, g0, a, b, T, p, cap):
    """The maximiser over ``lam`` of ``F_CD`` along one coordinate.

    In ``z = lam v / (1 + lam v)`` in (0, 1) the coordinate's terms are
    ``p/2 ln z - c sum_s ln(beta_s + z w_s)`` (``c = a + T/2``,
    ``beta_s = b + g0_s / 2``, ``w_s = u_s^2 / (2 v)``), unimodal: the stationarity
    condition ``h(z) = z sum_s w_s / (beta_s + z w_s) = p / (2 c)`` has an increasing,
    concave left side, solved by Newton steps from the left.
    """
    c = a + 0.5 * T
    beta = b + 0.5 * g0
    w = u * u / (2.0 * v)
    target = 0.5 * p / c
    z_cap = cap * v / (1.0 + cap * v)

    def h(z):
        return z * (w / (beta + z * w)).sum()

    if h(z_cap) <= target:
        return cap
    z = 0.0
    for _ in range(60):
        denom = beta + z * w
        step = (target - z * (w / denom).sum()) / (w * beta / (denom * denom)).sum()
        z_new = min(z + step, z_cap)
        if z_new - z <= 1e-14 * z_new:
            z = z_new
            break
        z = z_new
    lam = z / (v * (1.0 - z))
    return float(np.clip(lam, _LAM_FLOOR, cap))


def _noise_rate_optimum(a, half, T):
    """The maximiser in b of the noise terms for a fixed shape ``a``: the root of
    ``sum_s b / (b + g_s/2) = p a / (a + T/2)``, whose left side increases and is
    concave in b, so Newton steps from the left end ``a min(g) / T`` of the bracket
    ``[a min(g) / T, a max(g) / T]`` rise monotonically to it."""
    target = half.size * a / (a + 0.5 * T)
    b = a * 2.0 * half.min() / T
    hi = a * 2.0 * half.max() / T
    for _ in range(100):
        denom = b + half
        f = (b / denom).sum() - target
        if f >= 0.0:
            break
        step = -f / (half / (denom * denom)).sum()
        b_new = min(b + step, hi)
        if b_new <= b * (1.0 + 1e-15):
            break
        b = b_new
    return b


def noise_gamma_optimum(g, T, a, b, shape_cap):
    """The maximiser of ``sum_s [a ln b - ln G(a) + ln G(a + T/2) - (a + T/2)
    ln(b + g_s/2)]`` over the Gamma prior (a, b) of the noise precisions, i.e. the
    joint optimum of (a, b) and q(rho), for ``a`` in ``[1e-3, shape_cap]``.

    The rate is profiled out exactly; the profile's derivative in ``ln a`` (by the
    envelope theorem ``a`` times the partial derivative in a) is solved by Brent's
    method, or the optimum is at an end of the interval (``shape_cap`` when the
    noise levels are tied).  The current (a, b) is returned if it is not improved.
    """
    p = g.size
    half = 0.5 * np.maximum(g, 1e-300)

    def value(aa, bb):
        c = aa + 0.5 * T
        return float(np.sum(aa * np.log(bb) - gammaln(aa) + gammaln(c)
                            - c * np.log(bb + half)))

    def slope(log_a):
        aa = np.exp(log_a)
        bb = _noise_rate_optimum(aa, half, T)
        c = aa + 0.5 * T
        return aa * (p * np.log(bb) - p * digamma(aa) + p * digamma(c)
                     - float(np.sum(np.log(bb + half))))

    lo, hi = np.log(1e-3), np.log(shape_cap)
    if slope(hi) >= 0.0:
        a_new = shape_cap
    elif slope(lo) <= 0.0:
        a_new = 1e-3
    else:
        a_new = float(np.exp(brentq(slope, lo, hi, xtol=1e-13, rtol=1e-15)))
    b_new = _noise_rate_optimum(a_new, half, T)
    if value(a_new, b_new) >= value(a, b):
        return a_new, b_new
    return a, b


def update_output_hyperparameters(W, R, YY, lam, a, b, T, free, update_noise, cap,
                                  shape_cap, sweeps=1):
    """Coordinate-wise exact maximisation of ``F_CD`` over the precisions flagged in
    ``free`` (each within ``[1e-12, cap]``, ``sweeps`` sweeps) and then, with
    ``update_noise``, over (a, b); returns ``(lam, a, b)``."""
    lam = np.array(lam, dtype=float)
    p = R.shape[1]
    Sigma, _ = _inv_logdet(W + np.diag(lam))
    SR = Sigma @ R
    g = np.maximum(YY - np.einsum("is,is->s", R, SR), 1e-300)
    for _ in range(sweeps):
        for i in np.flatnonzero(free):
            loo = _leave_one_out(Sigma, SR, lam[i], i)
            if loo is None:
                continue
            v, u = loo
            g0 = np.maximum(g - lam[i] * u * u / (1.0 + lam[i] * v), 0.0)
            new = _output_coordinate(v, u, g0, a, b, T, p, cap)
            _rank_one(Sigma, SR, i, new - lam[i])
            lam[i] = new
            g = np.maximum(g0 + new * u * u / (1.0 + new * v), 1e-300)
    if update_noise:
        a, b = noise_gamma_optimum(g, T, a, b, shape_cap)
    return lam, a, b


# ---------------------------------------------------------------- initial state
def _sym(M):
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def _messages(omega0, ups0, mu0, Sigma0):
    """The likelihood messages ``exp(-x'P_i x / 2 + h_i'x)`` into every x_{i,0}
    implied by q(x_{i,0}) = N(omega0_i, ups0_i) under the prior N(mu0, Sigma0)."""
    S_inv, _ = _inv_logdet(Sigma0)
    U_inv = np.linalg.inv(ups0)
    P = _sym(U_inv - S_inv)
    h = np.einsum("ijk,ik->ij", U_inv, omega0) - S_inv @ mu0
    return P, h


def init_state_evidence(P, h, mu0, Sigma0):
    """``sum_i ln int N(x; mu0, Sigma0) exp(-x'P_i x / 2 + h_i'x) dx`` (the part of
    ``sum_i ln Z_i`` that depends on the initial-state prior, given q(theta)), or
    -inf where a posterior precision is not positive definite."""
    S_inv, logdet_S = _inv_logdet(Sigma0)
    post_inv = _sym(S_inv + P)
    sign, logdet_post_inv = np.linalg.slogdet(post_inv)
    if np.any(sign <= 0):
        return -np.inf
    m = S_inv @ mu0 + h
    quad = np.einsum("ij,ij->i", m, np.linalg.solve(post_inv, m[..., None])[..., 0])
    n = P.shape[0]
    return float(-0.5 * n * (logdet_S + mu0 @ S_inv @ mu0)
                 - 0.5 * np.sum(logdet_post_inv) + 0.5 * np.sum(quad))


def _constrain(full, form, floor):
    k = full.shape[0]
    if form == "diag":
        return np.diag(np.maximum(np.diag(full), floor))
    if form == "spherical":
        return np.eye(k) * max(np.trace(full) / k, floor)
    w, V = np.linalg.eigh(_sym(full))
    return _sym((V * np.maximum(w, floor)) @ V.T)


def optimal_init_state(omega0, ups0, mu0, Sigma0, form, floor, n_inner=20):
    """The initial-state prior maximising ``init_state_evidence`` for the messages of
    the q(x_0) computed under ``(mu0, Sigma0)``, and its gain over ``(mu0, Sigma0)``.

    With one sequence the maximiser is the point ``mu0 = P^-1 h`` with ``Sigma0`` at
    its floor (a type-II ML degeneracy: the plain update shrinks Sigma0 only like
    1/n); with several, ``n_inner`` EM steps on the messages alone (no smoother run),
    of which the best point is kept.
    """
    P, h = _messages(omega0, ups0, mu0, Sigma0)
    before = init_state_evidence(P, h, mu0, Sigma0)
    if not np.isfinite(before):
        return mu0, Sigma0, 0.0
    k = mu0.size
    candidates = []
    if P.shape[0] == 1:
        try:
            np.linalg.cholesky(P[0])
            candidates.append((np.linalg.solve(P[0], h[0]),
                               _constrain(np.zeros((k, k)), form, floor)))
        except np.linalg.LinAlgError:
            pass
    else:
        m, S = mu0.copy(), Sigma0.copy()
        for _ in range(n_inner):
            S_inv, _ = _inv_logdet(S)
            covs = np.linalg.inv(_sym(S_inv + P))
            means = np.einsum("ijk,ik->ij", covs, S_inv @ m + h)
            m = means.mean(axis=0)
            dev = means - m
            S = _constrain(covs.mean(axis=0) + dev.T @ dev / means.shape[0], form, floor)
        candidates.append((m, S))
    best = (mu0, Sigma0, before)
    for cand_mu, cand_S in candidates:
        value = init_state_evidence(P, h, cand_mu, cand_S)
        if value > best[2]:
            best = (cand_mu, cand_S, value)
    return best[0], best[1], best[2] - before
