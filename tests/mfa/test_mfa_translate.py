"""Shift moves of the MFA factors (``x -> x - t``, ``μ -> μ + Λ t``;
:func:`sklearn_vb.mfa._rotate.optimal_translations`), made with the rotations."""

import copy

import numpy as np
import pytest

from sklearn_vb.mfa._rotate import optimal_translations, translate_components
from sklearn_vb.mfa import VBMixtureFactorAnalysers, _steps
from sklearn_vb.mfa._structure import impose_decoupling
from sklearn_vb.mfa._vbem import bound_terms

from tests.mfa._mfa_problems import short_fit as _fit
from tests.mfa._mfa_problems import two_cluster_data


def _state(seed):
    X = two_cluster_data(seed)
    m = _fit(X, max_iter=6, rotations=False, prune_factors=False, standardize=bool(seed % 2))
    return m, m._check_fit_data(X)


def _shift(st):
    return optimal_translations(st.resp, st.xbar, st.lam_mean, st.lam_cov,
                                st.nu_star, st.mu_star, st.active)[0]


def _bound_after(m, data, t):
    st = copy.copy(m._vb_)
    saved, m._vb_ = m._vb_, st
    translate_components(st, t)
    try:
        return m._lower_bound(data), bound_terms(m._vb_, data)
    finally:
        m._vb_ = saved


@pytest.mark.parametrize("seed", range(3))
def test_shift_changes_only_the_two_prior_terms_quadratically(seed):
    """F recomputed from scratch along a random shift is an exact quadratic in its
    length (the two prior terms), and the likelihood, ARD and assignment terms do not
    move: the model of the data is unchanged."""
    m, data = _state(seed)
    rng = np.random.default_rng(seed)
    t = rng.normal(size=m._vb_.xbar.shape[1:])
    F = [_bound_after(m, data, a * t)[0] for a in (0.0, 1.0, 2.0, 3.0)]
    second = np.diff(F, 2)
    assert second[0] == pytest.approx(second[1], rel=1e-6, abs=1e-8 * abs(F[0]))
    assert second[0] < 0.0  # concave
    before, after = bound_terms(m._vb_, data), _bound_after(m, data, t)[1]
    for got, want in ((after.lik, before.lik), (after.nu, before.nu),
                      (after.assign, before.assign)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_optimal_shift_is_the_maximiser(seed):
    """The closed-form shift raises F by the predicted gain, no perturbation of it does
    better, and a second shift from the shifted state is zero."""
    m, data = _state(seed)
    st = m._vb_
    t, gains = optimal_translations(st.resp, st.xbar, st.lam_mean, st.lam_cov,
                                    st.nu_star, st.mu_star)
    F0 = m._lower_bound(data)
    F_opt = _bound_after(m, data, t)[0]
    assert np.all(gains >= 0.0) and gains.sum() > 1e-6
    assert F_opt - F0 == pytest.approx(gains.sum(), rel=1e-6)
    rng = np.random.default_rng(100 + seed)
    for scale in (1e-3, 1e-1, 1.0):
        assert _bound_after(m, data, t + scale * rng.normal(size=t.shape))[0] <= F_opt
    translate_components(m._vb_, t)
    assert np.abs(_shift(m._vb_)).max() < 1e-9 * max(1.0, np.abs(t).max())


def test_decoupled_columns_stay_decoupled():
    m, data = _state(0)
    st = m._vb_
    active = np.ones(st.xbar.shape[1:], dtype=bool)
    active[0, -1] = active[1, 0] = False
    st.active = active
    impose_decoupling(st)
    t = _shift(st)
    assert t[0, -1] == 0.0 and t[1, 0] == 0.0
    translate_components(st, t)
    K = active.shape[1]
    dead = ~active
    assert np.all(st.xbar[:, dead] == 0.0)
    assert np.all(st.lam_mean[:, :, :K][np.broadcast_to(dead[:, None, :], st.lam_mean[:, :, :K].shape)] == 0.0)
    assert np.all(st.lam_cov[0, :, K - 1, K] == 0.0) and np.all(st.lam_cov[1, :, 0, K] == 0.0)


def _nearly_collinear(seed=0, n=100):
    """Two clusters plus a feature that is the sum of two others up to a tiny noise:
    its noise variance falls to near zero, and the mean of the factors drifts."""
    X = two_cluster_data(seed, n=n, p=6, k=2)
    rng = np.random.default_rng(seed)
    return np.column_stack([X, X[:, 0] + X[:, 1] + 1e-3 * rng.normal(size=len(X))])


def test_shifts_reach_the_optimum_in_far_fewer_iterations(monkeypatch):
    """With the shift moves a fixed two-component fit comes within 1e-6 (relative) of
    the optimum several times sooner than with rotations alone.

    The iteration at which a fixed-point run crosses a threshold depends on the last
    bits of every BLAS and numba operation, so it differs between CPUs; what is
    asserted is a ratio of crossing points with a wide margin (the two runs cross
    roughly an order of magnitude apart), not where either one crosses."""
    X = _nearly_collinear()
    kw = dict(search=False, n_components=2, n_factors=4, random_state=0, max_iter=3000,
              tol=1e-7)
    shifted = VBMixtureFactorAnalysers(**kw).fit(X)
    assert shifted.converged_
    monkeypatch.setattr(_steps, "translate_factors", lambda st, data: 0.0)
    rotated = VBMixtureFactorAnalysers(**kw).fit(X)
    best = max(shifted.lower_bound_, rotated.lower_bound_)
    target = best - 1e-6 * abs(best)
    assert shifted.lower_bound_ >= target

    def first_crossing(history):
        reached = np.flatnonzero(history >= target)
        return int(reached[0]) if reached.size else len(history) + kw["max_iter"]

    assert 3 * first_crossing(shifted.lower_bounds_) < first_crossing(rotated.lower_bounds_)
