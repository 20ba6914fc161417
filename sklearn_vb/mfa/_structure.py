"""Changes of a mixture-of-factor-analysers state's structure: its loading columns
(reorder, drop, decouple, rotate, shift) and its components (deaths, splits).

They act on the :class:`~sklearn_vb.mfa._state.MFAState` of :mod:`sklearn_vb.mfa._vbem`.  The moves that
return a change of F keep their result only when F does not decrease (otherwise the
state is restored exactly) and return 0.0 when nothing changed.
"""

from __future__ import annotations

import numpy as np

from .._core.base import bound_round_off
from ._hyper import loading_half_second_moments
from ._rotate import (optimal_translations, optimise_rotations, rotate_components,
                      translate_components)
from ._state import ComponentMass
from ._vbem import (decoupling_masks, lower_bound, sufficient_statistics, update_factors,
                    update_loadings, update_responsibilities)

__all__ = [
    "birth", "column_norms", "decouple_dead_factors", "divide_responsibilities", "drop_trailing_factors", "impose_decoupling",
    "keep_components", "kill_components", "permute_factors", "prune_dead_factors",
    "rotate_factors", "split_component", "split_displacement", "translate_factors",
]


def _saved_posteriors(st):
    """The arrays of q(Λ̃), q(ν) and q(x|s) that the moves replace, for
    :func:`_restore_posteriors`."""
    return (st.lam_mean, st.lam_cov, st.lam_logdet, st.b_tilde, st.sigma, st.logdet_sigma,
            st.xbar)


def _restore_posteriors(st, saved):
    """Put back the arrays of :func:`_saved_posteriors` (a rejected move)."""
    (st.lam_mean, st.lam_cov, st.lam_logdet, st.b_tilde, st.sigma, st.logdet_sigma,
     st.xbar) = saved


def column_norms(st):
    """``||E Λ^s_{·j}||² / Σ_q ψ_q`` of every loading column, shape (S, K)."""
    K = st.sigma.shape[-1]
    return np.sum(st.lam_mean[:, :, :K] ** 2, axis=1) / np.sum(st.psi)


def permute_factors(st, order):
    """Reorder the loading columns of each component, ``order`` (S, K): column
    ``j`` of component ``s`` becomes ``order[s, j]``.  The prior is exchangeable
    over the columns of a component, so F is unchanged."""
    S, K = order.shape
    full = np.concatenate([order, np.full((S, 1), K)], axis=1)  # bias column stays last
    s_idx = np.arange(S)[:, None]
    st.lam_mean = np.take_along_axis(st.lam_mean, full[:, None, :], axis=2)
    cov = np.take_along_axis(st.lam_cov, full[:, None, :, None], axis=2)
    st.lam_cov = np.take_along_axis(cov, full[:, None, None, :], axis=3)
    st.b_tilde = st.b_tilde[s_idx, order]
    # (one factor covariance per component, or per component and missing pattern)
    o = order[:, None] if st.sigma.ndim == 4 else order
    sig = np.take_along_axis(st.sigma, o[..., :, None], axis=-2)
    st.sigma = np.take_along_axis(sig, o[..., None, :], axis=-1)
    st.xbar = np.take_along_axis(st.xbar, order[None, :, :], axis=2)
    if st.active is not None:
        st.active = np.take_along_axis(st.active, order, axis=1)


def drop_trailing_factors(st, K_new):
    """Keep the first ``K_new`` loading columns of every component: q(Λ̃) and
    q(x|s) become their marginals over those columns, q(ν) loses the others."""
    K = st.sigma.shape[-1]
    keep = np.r_[np.arange(K_new), K]
    st.lam_mean = st.lam_mean[:, :, keep]
    st.lam_cov = st.lam_cov[:, :, keep][:, :, :, keep]
    st.lam_logdet = np.linalg.slogdet(st.lam_cov)[1]
    st.b_tilde = st.b_tilde[:, :K_new].copy()
    st.sigma = st.sigma[..., :K_new, :K_new].copy()
    st.logdet_sigma = np.linalg.slogdet(st.sigma)[1]
    st.xbar = np.ascontiguousarray(st.xbar[:, :, :K_new])
    if st.active is not None:
        st.active = st.active[:, :K_new].copy()


def impose_decoupling(st):
    """Zero the means of the decoupled columns (``st.active`` False) and their
    covariances with every other column, in q(Λ̃) and q(x|s)."""
    K = st.active.shape[1]
    dead1, cross = decoupling_masks(st.active)
    st.lam_mean = np.where(dead1[:, None, :], 0.0, st.lam_mean)
    st.lam_cov = np.where(cross[:, None], 0.0, st.lam_cov)
    cross_x = cross[:, None, :K, :K] if st.sigma.ndim == 4 else cross[:, :K, :K]
    st.sigma = np.where(cross_x, 0.0, st.sigma)
    st.xbar = np.where(~st.active[None], 0.0, st.xbar)


def decouple_dead_factors(st, data, threshold):
    """Decouple the loading columns ARD has switched off in a single component (see
    ``compress_factors``); kept only when F does not decrease.  Returns the
    change of F (0.0 when nothing changed).

    A column of component ``s`` whose ``||E Λ^s_{·j}||² / Σ_q ψ_q`` is below
    ``threshold`` becomes decoupled: its loading means and factor means
    are set to zero and its covariances with every other column (in q(Λ̃) and
    q(x|s)) removed.  VBEM keeps such a column decoupled (zero is the fixed
    point the column was converging to), so from then on the loading update
    solves only the coupled columns of each row (``active``)."""
    S, K = st.b_tilde.shape
    if K == 0:
        return 0.0
    active = st.active
    if active is None:
        active = np.ones((S, K), dtype=bool)
    new_active = active & (column_norms(st) >= threshold)
    if np.array_equal(new_active, active):
        return 0.0
    before = lower_bound(st, data)
    saved = _saved_posteriors(st)
    saved_active = st.active
    st.active = new_active
    impose_decoupling(st)
    st.lam_logdet = np.linalg.slogdet(st.lam_cov)[1]
    st.logdet_sigma = np.linalg.slogdet(st.sigma)[1]
    after = lower_bound(st, data)
    if not after >= before:
        _restore_posteriors(st, saved)
        st.active = saved_active
        return 0.0
    return after - before


def prune_dead_factors(st, data, threshold):
    """Remove the loading columns switched off (norm below ``threshold``) in every
    component (see ``prune_factors``); kept only when F does not decrease.  Returns
    the change of F (0.0 when nothing was removed)."""
    K = st.sigma.shape[-1]
    if K == 0:
        return 0.0
    col = column_norms(st)
    n_active = np.sum(col >= threshold, axis=1)
    K_new = int(n_active.max())
    if K_new == K:
        return 0.0
    before = lower_bound(st, data)
    saved = _saved_posteriors(st)
    # active columns first (largest norm first); stable so that an ordered
    # component keeps its order
    permute_factors(st, np.argsort(-col, axis=1, kind="stable"))
    drop_trailing_factors(st, K_new)
    after = lower_bound(st, data)
    if after < before:
        _restore_posteriors(st, saved)
        return 0.0
    return after - before


def rotate_factors(st, data):
    """The rotation move of every component (see ``rotations``); kept only when F
    does not decrease.  Returns the change of F (0.0 when nothing moved)."""
    K = st.sigma.shape[-1]
    if K == 0:
        return 0.0
    Nk, W, C, D = sufficient_statistics(st, data)
    lam = st.lam_mean[:, :, :K]
    B = np.einsum("sqk,sql->skl", lam, lam) + st.lam_cov[:, :, :K, :K].sum(axis=1)
    Rs, gains = optimise_rotations(W[:, :K, :K], B, Nk, data.n_features, st.a_tilde,
                                   st.b_star)
    if not np.any(gains > 0.0):
        return 0.0
    before = lower_bound(st, data)
    saved = _saved_posteriors(st)
    rotate_components(st, Rs)
    st.b_tilde = st.b_star + loading_half_second_moments(st)
    after = lower_bound(st, data)
    if not after >= before:
        _restore_posteriors(st, saved)
        return 0.0
    return after - before


def translate_factors(st, data):
    """The shift move of every component's factors (see ``rotations``); kept only
    when F does not decrease.  Returns the change of F (0.0 when nothing moved)."""
    if st.sigma.shape[-1] == 0:
        return 0.0
    t, gains = optimal_translations(st.resp, st.xbar, st.lam_mean, st.lam_cov,
                                    st.nu_star, st.mu_star, st.active)
    before = lower_bound(st, data)
    if not gains.sum() > bound_round_off(before):
        # a shift worth no more than round-off would make the fit depend on it
        return 0.0
    saved = _saved_posteriors(st)
    translate_components(st, t)
    after = lower_bound(st, data)
    if not after >= before:
        _restore_posteriors(st, saved)
        return 0.0
    return after - before


def keep_components(st, keep):
    """Keep the components of index ``keep`` (in that order)."""
    if st.active is not None:
        st.active = st.active[keep]
    st.resp = st.resp[:, keep]
    st.lam_mean, st.lam_cov = st.lam_mean[keep], st.lam_cov[keep]
    st.lam_logdet, st.alpha_hat = st.lam_logdet[keep], st.alpha_hat[keep]
    st.b_tilde, st.sigma = st.b_tilde[keep], st.sigma[keep]
    st.logdet_sigma, st.ids = st.logdet_sigma[keep], st.ids[keep]
    st.xbar = st.xbar[:, keep]


def kill_components(st, data, death_threshold, shrinking_death_threshold):
    """Delete components with responsibility mass below ``death_threshold``, or
    below ``shrinking_death_threshold`` and smaller than at the previous q(s)
    update, then recompute q(s) over the survivors (thesis Section 4.3.1).  The search
    records the iteration as a ``"death"`` event and restarts its trace there
    (F is monotone only between structure changes).  Returns whether a component
    died."""
    Nk = st.resp.sum(axis=0)
    dead = Nk < death_threshold
    if shrinking_death_threshold > 0:
        # masses at the previous q(s) update, by stable id (a new child has none)
        prev = st.prev_mass
        if prev is not None:
            last = dict(zip(prev.ids.tolist(), prev.mass.tolist()))
            before = np.array([last.get(i, np.inf) for i in st.ids.tolist()])
            dead |= (Nk < shrinking_death_threshold) & (Nk < before)
        st.prev_mass = ComponentMass(st.ids.copy(), Nk)
    if not np.any(dead):
        return False
    if np.all(dead):
        dead[np.argmax(Nk)] = False
    keep_components(st, np.flatnonzero(~dead))
    update_responsibilities(st, data)
    return True


def split_displacement(st, parent, rng, principal):
    """The displacement ``d`` of a split of component index ``parent`` and whether it
    is the parent's strongest loading column (the direction of its largest variance),
    which it is when ``principal`` asks for it and the parent has a nonzero column;
    otherwise a draw from ``N(0, ΛΛᵀ + Ψ)`` of the parent (eq. 4.73) with ``rng``."""
    K = st.sigma.shape[-1]
    lam_x = st.lam_mean[parent, :, :K]
    norms = np.sum(lam_x**2, axis=0)
    if principal and K and norms.max() > 0:
        return lam_x[:, int(np.argmax(norms))].copy(), True
    p = st.psi.shape[0]
    d = lam_x @ rng.standard_normal(K) + np.sqrt(st.psi) * rng.standard_normal(p)
    return d, False


def divide_responsibilities(Z, centre, r_par, d, spatial, hardness, mask=None):
    """The responsibilities ``(r_a, r_b)`` of the two children of a parent centred at
    ``centre`` holding ``r_par`` (N,): by the side of the hyperplane through ``centre``
    normal to ``d`` (``hardness`` 1: all to one side), or half each (``spatial``)."""
    if spatial:
        # both children are copies of the parent; the E step that follows replaces
        # these responsibilities
        return 0.5 * r_par, 0.5 * r_par
    dev = Z - centre if mask is None else (Z - centre) * mask
    rho = (dev @ d >= 0).astype(float)
    h = hardness
    return (r_par * (h * rho + (1 - h) * (1 - rho)),
            r_par * ((1 - h) * rho + h * (1 - rho)))


def split_component(st, Z, parent, d, spatial, hardness, mask=None):
    """Split component index ``parent`` into two children, at ``parent`` and at the new
    last index, with centres ``μ ± d`` and half the parent's Dirichlet count each.
    The responsibility split (eqs. 4.73-4.76) shares the parent's responsibilities by
    the side of the hyperplane through ``μ`` normal to ``d`` (``hardness`` 1: all to
    one side); the spatial split (``spatial``) gives each child half of them, for a
    VBE step to replace.  With entries missing (``mask`` (N, p), 1.0 observed) a row's
    side is that of its observed entries."""
    K = st.sigma.shape[-1]
    centre = st.lam_mean[parent, :, K]
    r_a, r_b = divide_responsibilities(Z, centre, st.resp[:, parent], d, spatial, hardness,
                                       mask)
    S = st.resp.shape[1]
    order = np.r_[np.arange(S), parent]
    if st.active is not None:
        st.active = st.active[order]
    st.lam_mean, st.lam_cov = st.lam_mean[order].copy(), st.lam_cov[order].copy()
    st.lam_logdet, st.alpha_hat = st.lam_logdet[order].copy(), st.alpha_hat[order].copy()
    st.b_tilde, st.sigma = st.b_tilde[order].copy(), st.sigma[order].copy()
    st.logdet_sigma, st.ids = st.logdet_sigma[order].copy(), st.ids[order].copy()
    st.xbar = st.xbar[:, order].copy()
    resp = np.concatenate([st.resp, r_b[:, None]], axis=1)
    resp[:, parent] = r_a
    st.resp = resp
    st.alpha_hat[parent] *= 0.5
    st.alpha_hat[S] *= 0.5
    st.ids[parent] = st.next_id
    st.ids[S] = st.next_id + 1
    st.next_id += 2
    st.lam_mean[parent, :, K] = centre + d
    st.lam_mean[S, :, K] = centre - d


def birth(st, data, parent, rng, principal, spatial, hardness, partial_updates_follow):
    """Split component index ``parent`` into two children, at ``parent`` and at the new
    last index (:func:`split_displacement`, then :func:`split_component`), and the first
    updates of the children; returns whether the split went along the parent's
    strongest loading column.

    After the spatial split (``spatial``) a VBE step (eqs. 4.51-4.55, then q(s) of
    every point) lets the children take the points near their new centres.  After the
    responsibility split, two updates of q(x|s) and q(Λ̃) follow, unless partial
    updates of the children do (``partial_updates_follow``)."""
    d, principal = split_displacement(st, parent, rng, principal)
    split_component(st, data.Z, parent, d, spatial, hardness,
                    None if data.missing is None else data.missing.mask)
    if spatial:
        update_factors(st, data)
        update_responsibilities(st, data)
    elif not partial_updates_follow:
        for _ in range(2):
            update_factors(st, data)
            update_loadings(st, data)
    return principal
