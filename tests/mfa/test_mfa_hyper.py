"""The exact maximiser of the MFA bound over the ARD rate b* (``ard_rate_update``)."""

import copy

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sklearn_vb.mfa._hyper import (ard_rate_maximiser, ard_rate_objective,
                                   loading_half_second_moments, update_ard_rate)

from tests.mfa._mfa_problems import short_fit as _fit
from tests.mfa._mfa_problems import two_cluster_data as _problem


@pytest.mark.parametrize("seed", range(5))
def test_maximiser_equals_brute_force(seed):
    """Against a bounded 1-D search of G in ln b*, for second moments spread over
    twelve orders of magnitude (columns from fully active to switched off)."""
    rng = np.random.default_rng(seed)
    h = np.exp(rng.uniform(-14, 6, size=(3, 5)))
    a_star, a_tilde = rng.uniform(0.3, 3.0), None
    a_tilde = a_star + 0.5 * rng.integers(2, 40)
    b = ard_rate_maximiser(h, a_star, a_tilde)
    res = minimize_scalar(lambda u: -ard_rate_objective(np.exp(u), h, a_star, a_tilde),
                          bounds=(-40, 20), method="bounded", options={"xatol": 1e-12})
    assert np.log(b) == pytest.approx(res.x, abs=1e-5)
    assert ard_rate_objective(b, h, a_star, a_tilde) >= -res.fun - 1e-9
    # the stationarity condition holds to round-off
    assert np.sum(b / (b + h)) == pytest.approx(h.size * a_star / a_tilde, rel=1e-12)


def test_maximiser_respects_the_floor():
    h = np.array([1e-8, 2e-8, 1e-6, 3.0])
    free = ard_rate_maximiser(h, 1.0, 5.0)
    assert ard_rate_maximiser(h, 1.0, 5.0, b_min=10 * free) == 10 * free
    assert ard_rate_maximiser(h, 1.0, 5.0, b_min=0.1 * free) == free


def _bound_given_b(m, data, b):
    """F with b* = b and q(ν) optimal for it, q(Λ̃) and the rest unchanged."""
    st = m._vb_
    h = loading_half_second_moments(st)
    st.b_star, st.b_tilde = b, b + h
    return m._lower_bound(data)


@pytest.mark.parametrize("seed", range(3))
def test_update_is_the_maximiser_of_the_full_bound(seed):
    """The full bound F (all six terms) after the update is its maximum over b*
    with q(ν) re-optimised, found by brute force, and not below F before."""
    X = _problem(seed)
    m = _fit(X, max_iter=8, ard_rate_update="fixed-point", prune_factors=False)
    data = m._check_fit_data(X)
    saved = copy.copy(m._vb_)
    before = m._lower_bound(data)
    update_ard_rate(m._vb_, 0.0, "exact")
    after = m._lower_bound(data)
    b_exact = m._vb_.b_star
    assert after >= before - 1e-9 * abs(before)
    res = minimize_scalar(lambda u: -_bound_given_b(m, data, np.exp(u)),
                          bounds=(np.log(b_exact) - 8, np.log(b_exact) + 8),
                          method="bounded", options={"xatol": 1e-10})
    assert np.log(b_exact) == pytest.approx(res.x, abs=1e-4)
    assert after >= -res.fun - 1e-8 * abs(after)
    m._vb_ = saved


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("search", [False, True])
def test_bound_never_decreases_at_any_step(seed, search):
    """bound_check='steps' evaluates F after every step (the new b* update, the
    partial birth iterations and the extrapolations included) and raises on a drop."""
    X = _problem(seed)
    m = _fit(X, bound_check="steps", search=search, n_components=1 if search else 2,
             max_iter=60, standardize=bool(seed % 2))
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * np.abs(m.lower_bounds_[1:]))


def test_bad_option_is_refused():
    with pytest.raises(ValueError, match="ard_rate_update"):
        _fit(_problem(0), ard_rate_update="newton")
