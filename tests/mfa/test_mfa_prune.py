"""Removal of the loading columns that ARD has switched off (``prune_factors``)."""

import copy
import warnings

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb._core.distributions import gamma_kl
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._structure import permute_factors, prune_dead_factors


def _low_rank_problem(seed, n=150, p=8, k=1):
    """Two clusters, each on a ``k``-dimensional subspace plus noise."""
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(2):
        A = rng.normal(size=(p, k)) * 2.0
        parts.append(rng.normal(size=(n, k)) @ A.T + 0.3 * rng.normal(size=(n, p)) + 6 * c)
    return np.vstack(parts)


def _fit(X, **kw):
    params = dict(search=False, n_components=2, random_state=0, max_iter=40)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "optimize", [False, True, ["noise", "mean_prior", "ard_prior"]], ids=["fixed", "default", "ard"]
)
def test_bound_never_decreases_while_columns_are_removed(seed, optimize):
    """bound_check='steps' evaluates F after every step, the removal included; the
    fits start with 6 columns on data of intrinsic dimension 1 and end with fewer."""
    X = _low_rank_problem(seed)
    m = _fit(X, n_factors=6, optimize_hyperparameters=optimize, bound_check="steps",
             init_params="random" if seed % 2 else "kmeans", standardize=bool(seed % 3))
    assert m.n_factors_max_ < 6
    assert m.loadings_.shape == (2, X.shape[1], m.n_factors_max_)
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * np.abs(m.lower_bounds_[1:]))
    kept = _fit(X, n_factors=6, optimize_hyperparameters=optimize, prune_factors=False,
                init_params="random" if seed % 2 else "kmeans", standardize=bool(seed % 3))
    assert kept.n_factors_max_ == 6


def _state_after(X, n_iter=15, **kw):
    m = _fit(X, n_factors=3, max_iter=n_iter, prune_factors=False, **kw)
    return m, m._check_fit_data(X)


def test_reordering_columns_leaves_the_bound_unchanged():
    X = _low_rank_problem(1)
    m, data = _state_after(X)
    before = m._lower_bound(data)
    rng = np.random.default_rng(0)
    S, K = m._vb_.b_tilde.shape
    permute_factors(m._vb_, np.array([rng.permutation(K) for _ in range(S)]))
    assert m._lower_bound(data) == pytest.approx(before, rel=1e-13, abs=1e-9)


def _make_last_column_dead(m, data, gamma, sigma_jj):
    """Zero mean and no correlations for the last loading column of every component
    (row variances ``gamma`` (S, p)) and its factor (variance ``sigma_jj`` (S,))."""
    st = m._vb_
    K = st.sigma.shape[-1]
    j = K - 1
    st.lam_mean = st.lam_mean.copy()
    st.lam_mean[:, :, j] = 0.0
    cov = st.lam_cov.copy()
    cov[:, :, j, :] = 0.0
    cov[:, :, :, j] = 0.0
    cov[:, :, j, j] = gamma
    st.lam_cov = cov
    st.lam_logdet = np.linalg.slogdet(cov)[1]
    sig = st.sigma.copy()
    sig[:, j, :] = 0.0
    sig[:, :, j] = 0.0
    sig[:, j, j] = sigma_jj
    st.sigma = sig
    st.logdet_sigma = np.linalg.slogdet(sig)[1]
    xbar = st.xbar.copy()
    xbar[:, :, j] = 0.0
    st.xbar = xbar


@pytest.mark.parametrize("seed", range(3))
def test_removing_a_dead_column_changes_the_bound_by_its_closed_form_contribution(seed):
    """A column with zero mean and no correlations contributes, per component s,

        -KL(q(ν_j) || p(ν_j)) + ½ Σ_q [ln γ_q + 1 + E ln ν_j - E ν_j γ_q]
        + ½ N_s [ln σ_jj + 1 - σ_jj] - ½ N_s σ_jj Σ_q γ_q / ψ_q

    to F (every part <= 0); removing it must raise F by exactly minus that sum."""
    X = _low_rank_problem(seed)
    m, data = _state_after(X, optimize_hyperparameters=["noise", "ard_prior"])
    st = m._vb_
    rng = np.random.default_rng(seed)
    S, K = st.b_tilde.shape
    p = X.shape[1]
    gamma = rng.uniform(0.01, 0.5, size=(S, p))
    sigma_jj = rng.uniform(0.3, 1.0, size=S)
    _make_last_column_dead(m, data, gamma, sigma_jj)
    m.set_params(prune_threshold=1e-300)  # only the exactly zero column counts as off
    before = m._lower_bound(data)

    a, b = st.a_tilde, st.b_tilde[:, K - 1]
    e_nu, elog_nu = a / b, digamma(a) - np.log(b)
    Nk = st.resp.sum(axis=0)
    contribution = (
        -gamma_kl(a, b, st.a_star, st.b_star)
        + 0.5 * np.sum(np.log(gamma) + 1.0 + elog_nu[:, None] - e_nu[:, None] * gamma, axis=1)
        + 0.5 * Nk * (np.log(sigma_jj) + 1.0 - sigma_jj)
        - 0.5 * Nk * sigma_jj * (gamma @ (1.0 / st.psi))
    )
    gain = prune_dead_factors(m._vb_, data, m.prune_threshold)
    after = m._lower_bound(data)
    assert st.sigma.shape[-1] == K - 1
    assert gain > 0
    assert gain == pytest.approx(after - before, rel=1e-10, abs=1e-8)
    assert gain == pytest.approx(-np.sum(contribution), rel=1e-9, abs=1e-8)


def test_a_removal_that_would_lower_the_bound_is_undone():
    """With an absurd threshold every column counts as switched off; removing the
    columns in use would lower F, so the state is left exactly as it was."""
    X = _low_rank_problem(0)
    m, data = _state_after(X)
    m.set_params(prune_threshold=1e9)
    saved = copy.deepcopy(m._vb_)
    before = m._lower_bound(data)
    assert prune_dead_factors(m._vb_, data, m.prune_threshold) == 0.0
    assert m._lower_bound(data) == before
    st = m._vb_
    for now, then in ((st.lam_mean, saved.lam_mean), (st.lam_cov, saved.lam_cov),
                      (st.b_tilde, saved.b_tilde), (st.sigma, saved.sigma),
                      (st.xbar, saved.xbar)):
        assert np.array_equal(now, then)


def test_pruned_fit_finds_the_same_model():
    """Removing switched-off columns changes the cost of an iteration, not the answer:
    the same components, the same active factors and a bound at least as high."""
    X = _low_rank_problem(3, p=10, k=2)
    pruned = _fit(X, n_factors=6, max_iter=500, tol=1e-6)
    full = _fit(X, n_factors=6, max_iter=500, tol=1e-6, prune_factors=False)
    assert pruned.n_factors_max_ < 6
    assert list(pruned.n_factors_per_component_) == list(full.n_factors_per_component_)
    assert np.array_equal(pruned.predict(X), full.predict(X))
    assert pruned.lower_bound_ >= full.lower_bound_ - 1e-6 * abs(full.lower_bound_)
