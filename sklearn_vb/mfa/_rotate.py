"""Rotation (parameter-expansion) moves of the factor basis of each MFA component.

Within component ``s`` the model of the data is unchanged by a change of basis of the
factors, ``x -> R^{-1} x`` with ``Λ^s -> Λ^s R`` (the centre untouched), except for
the unit prior of ``x`` and the ARD prior of the loading columns.  VBEM moves along
these directions very slowly: the scale and orientation of the factors against those
of the loading columns are fixed only by weak couplings, and F creeps up by hundreds
of small steps long after the responsibilities have settled.  A move transforms
``q(x | s)`` and ``q(Λ̃^s)`` by the ``R`` that maximises F, with ``q(ν^s)`` at its
optimum for the transformed loadings (Luttinen and Ilin 2010, "Transformations in
variational Bayesian factor analysis to speed up learning"; the same moves as
:mod:`sklearn_vb.lds._moves` for the linear dynamical system).

Under the push-forward ``x̄_i -> R^{-1} x̄_i``, ``Σ_s -> R^{-1} Σ_s R^{-T}`` and, for
every row ``q``, ``[λ_q; μ_q] -> T^T [λ_q; μ_q]``, ``Γ_q -> T^T Γ_q T`` with
``T = diag(R, 1)``, the expected log-likelihood is invariant (it depends on ``Λ x``
only through products of independent factors), and F changes only through

* the entropy of q(x | s), weighted by ``N_s``: ``-N_s ln|det R|``;
* the factors' prior: ``-½ tr(R^{-1} W_xx R^{-T})``, ``W_xx = Σ_i r_is E[x xᵀ]``;
* the entropies of the ``p`` rows of q(Λ̃^s): ``+p ln|det R|``;
* the ARD terms with q(ν) optimal (``b̃_j = b* + h_j``): ``-ã Σ_j ln(b* + h_j)``,
  ``h_j = ½ (Rᵀ B R)_jj`` with ``B = Σ_q E[λ_q λ_qᵀ]``.

Hence, up to a constant,
``f(R) = (p − N_s) ln|det R| − ½ tr(R^{-1} W_xx R^{-T}) − ã Σ_j ln(b* + ½ r_jᵀ B r_j)``
with gradient ``(p − N_s) R^{-T} + R^{-T} R^{-1} W_xx R^{-T} − ã B R diag(1/(b* + h))``.
The components are independent; each is maximised by L-BFGS from ``R = I`` (a numba
kernel, :func:`sklearn_vb.mfa.kernels.optimise_rotations`) at a cost of ``O(K^3)``
per evaluation, independent of N.  The estimator keeps a move only when the bound it
recomputes from scratch afterwards is not below the bound before it.

The centre adds a second direction VBEM crawls along: a shift of the factors,
``x -> x − t`` with ``μ^s -> μ^s + Λ^s t`` (``T`` the identity with ``t`` in the
centre column), leaves the model of the data unchanged too, and F changes only through

* the factors' prior: ``-½ Σ_i r_is ||x̄_is − t||²`` (the covariances unchanged);
* the centre's prior: ``-½ Σ_q ν*_q E[(μ_q + λ_qᵀ t − μ*_q)²]`` under q(Λ̃^s).

Both are quadratic in ``t``, so the best shift solves
``(N_s I + Σ_q ν*_q E[λ_q λ_qᵀ]) t = Σ_i r_is x̄_is − Σ_q ν*_q E[λ_q (μ_q − μ*_q)]``
(:func:`optimal_translations`).  The ARD terms do not change (the loading columns
are untouched) and neither do the entropies (``det T = 1``).  When the noise of some
features is tiny the factors' mean drifts away from zero and VBEM brings it back only
slowly, a small gain per hundred iterations, which one move makes at once.
"""

from __future__ import annotations

import numpy as np

from . import kernels as _k

__all__ = ["rotation_objective", "optimise_rotations", "rotate_components",
           "optimal_translations", "translate_components"]


def rotation_objective(R, W_xx, B, n_s, p, a_tilde, b_star):
    """``Σ_s f_s(R_s)`` (module docstring) over a batch of components, ``R`` (S, K, K),
    and its gradient (S, K, K); ``-inf`` when some ``R_s`` is singular."""
    R = np.asarray(R, dtype=float)
    grad = np.zeros_like(R)
    total = 0.0
    for s in range(R.shape[0]):
        value = _k.rotation_value_grad(np.ascontiguousarray(R[s]), np.ascontiguousarray(W_xx[s]),
                                       np.ascontiguousarray(B[s]), float(p - n_s[s]),
                                       float(a_tilde), float(b_star), grad[s])
        if not np.isfinite(value):
            return -np.inf, np.zeros_like(R)
        total += value
    return float(total), grad


def optimise_rotations(W_xx, B, n_s, p, a_tilde, b_star, max_iter=30):
    """The maximising change of basis of every component, shape (S, K, K), and the
    predicted gain of F (S,).

    ``W_xx`` (S, K, K), ``B`` (S, K, K), ``n_s`` (S,).  The objective is a sum of
    independent terms, one per component, each maximised by its own L-BFGS run from
    the identity (a compiled loop: the objective costs ``O(K^3)`` and is evaluated
    some forty times per component); a component that gains nothing keeps the
    identity."""
    S, K, _ = W_xx.shape
    Rs = np.broadcast_to(np.eye(K), (S, K, K)).copy()
    gains = np.zeros(S)
    if K == 0 or S == 0:
        return Rs, gains
    _k.optimise_rotations(np.ascontiguousarray(W_xx, dtype=float),
                          np.ascontiguousarray(B, dtype=float),
                          np.asarray(n_s, dtype=float), float(p), float(a_tilde),
                          float(b_star), int(max_iter), Rs, gains)
    return Rs, gains


def rotate_components(st, Rs):
    """Apply the changes of basis ``Rs`` (S, K, K) to q(x | s) and q(Λ̃^s) of the
    state ``st`` (new arrays; q(ν) is left to the caller)."""
    S, p, K1 = st.lam_mean.shape
    K = K1 - 1
    T = np.zeros((S, K1, K1))
    T[:, :K, :K] = Rs
    T[:, K, K] = 1.0
    Rinv = np.linalg.inv(Rs)
    logdet = np.linalg.slogdet(Rs)[1]
    st.lam_mean = st.lam_mean @ T
    cov = np.swapaxes(T, -1, -2)[:, None] @ st.lam_cov @ T[:, None]
    st.lam_cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    st.lam_logdet = st.lam_logdet + 2.0 * logdet[:, None]
    sigma = Rinv @ st.sigma @ np.swapaxes(Rinv, -1, -2)
    st.sigma = 0.5 * (sigma + np.swapaxes(sigma, -1, -2))
    st.logdet_sigma = st.logdet_sigma - 2.0 * logdet
    xbar = np.transpose(st.xbar, (1, 0, 2)) @ np.swapaxes(Rinv, -1, -2)
    st.xbar = np.ascontiguousarray(np.transpose(xbar, (1, 0, 2)))


def optimal_translations(resp, xbar, lam_mean, lam_cov, nu_star, mu_star, active=None):
    """The shift ``t`` (S, K) of every component's factors that maximises F (module
    docstring), zero in the decoupled columns (``active`` False), which the shift
    must leave decoupled, and its gain of F per component (S,), ``½ tᵀ A t`` for the
    quadratic's matrix ``A``."""
    S, p, K1 = lam_mean.shape
    K = K1 - 1
    Nk = resp.sum(axis=0)
    lam, mu = lam_mean[:, :, :K], lam_mean[:, :, K]
    second = lam[:, :, :, None] * lam[:, :, None, :] + lam_cov[:, :, :K, :K]
    A = Nk[:, None, None] * np.eye(K) + np.einsum("q,sqkl->skl", nu_star, second)
    cross = lam * (mu - mu_star)[:, :, None] + lam_cov[:, :, :K, K]
    rhs = np.einsum("ns,nsk->sk", resp, xbar) - np.einsum("q,sqk->sk", nu_star, cross)
    if active is not None:
        # A has no entries between a decoupled column and the others, and the
        # decoupled entries of rhs are zero: t is zero there up to round-off
        rhs = np.where(active, rhs, 0.0)
    t = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    if active is not None:
        t = np.where(active, t, 0.0)
    return t, 0.5 * np.einsum("sk,sk->s", t, rhs)


def translate_components(st, t):
    """Apply the shifts ``t`` (S, K) to q(x | s) and q(Λ̃^s) of the state ``st`` (new arrays; Σ_s, ln|Γ| and q(ν) do not change)."""
    S, p, K1 = st.lam_mean.shape
    K = K1 - 1
    T = np.broadcast_to(np.eye(K1), (S, K1, K1)).copy()
    T[:, :K, K] = t
    st.lam_mean = st.lam_mean @ T
    cov = np.swapaxes(T, -1, -2)[:, None] @ st.lam_cov @ T[:, None]
    st.lam_cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    st.xbar = np.ascontiguousarray(st.xbar - t[None])
