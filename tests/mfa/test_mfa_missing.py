"""Missing entries (NaN) in the MFA's X, marginalised exactly within VB: the updates of a
row use only its observed entries, checked against per-row computations on the observed
columns alone, the exact Gaussian marginal of the observed entries, and the invariances a
row observing nothing must leave."""

import warnings

import numpy as np
import pytest
from scipy.special import digamma, logsumexp
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb._core.base import BoundDecreaseWarning
from sklearn_vb.datasets import make_mixed_dimension_clusters
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa import kernels as K
from sklearn_vb.mfa._estimator import _fit_data
from sklearn_vb.mfa._vbem import (first_updates, initial_state, lower_bound, update_ard,
                                  update_factors, update_loadings, update_noise,
                                  update_responsibilities, update_weights)
from sklearn_vb.scoring import score

from ._mfa_problems import two_cluster_data


def _with_holes(X, frac, seed):
    rng = np.random.default_rng(seed)
    out = X.copy()
    out[rng.random(X.shape) < frac] = np.nan
    return out


def _fit(X, **kw):
    params = dict(search=False, n_components=2, n_factors=3, random_state=0, max_iter=200)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)


def _state(X, iters=5, seed=0):
    """A VB state after a few plain VBEM sweeps on ``X`` (NaN missing), and its data."""
    data = _fit_data(X, True, "auto")
    st = initial_state(data, 2, 3, "kmeans", 1.0, 1.0, 1.0, np.random.RandomState(seed))
    first_updates(st, data)
    for _ in range(iters):
        update_loadings(st, data)
        update_responsibilities(st, data)
        update_weights(st)
        update_ard(st, data)
        update_noise(st, data)
        update_factors(st, data)
    return st, data


def _observed_only(st, y):
    """q(x|s) and the log responsibilities of one row from the complete-data kernels run
    on its observed columns alone (the oracle of the missing-data kernels)."""
    o = ~np.isnan(y)
    lam, cov, psi = st.lam_mean[:, o], st.lam_cov[:, o], st.psi[o]
    M = K.expected_loading_quadratic(lam, cov, psi)
    sigma, logdet = K.factor_posterior(M)
    xbar = K.factor_means(y[o][None], lam, psi, sigma, M)
    elog_pi = digamma(st.alpha_hat) - digamma(st.alpha_hat.sum())
    ell = K.log_weights(y[o][None], xbar, sigma, logdet, lam, M, psi, elog_pi)
    return sigma, xbar[0], ell[0]


def test_one_vbe_step_equals_the_per_row_computation_on_the_observed_columns():
    X = _with_holes(two_cluster_data(0, n=40, p=6), 0.3, 1)
    X[5, :5] = np.nan  # one observed entry
    st, data = _state(X)
    update_factors(st, data)
    update_responsibilities(st, data)
    Z = data.Z.copy()
    Z[data.missing.mask == 0] = np.nan
    for n in range(Z.shape[0]):
        sigma, xbar, ell = _observed_only(st, Z[n])
        g = data.missing.pattern[n]
        np.testing.assert_allclose(st.sigma[:, g], sigma, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(st.xbar[n], xbar, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(st.resp[n], np.exp(ell - logsumexp(ell)), rtol=1e-10,
                                   atol=1e-12)


def test_with_point_loadings_the_row_bound_is_the_exact_marginal_of_the_observed_entries():
    """With q(Λ̃) a point, q(x|s) is the exact posterior and the row's term of F given s
    is ln N(y_o | μ_o, Λ_o Λ_oᵀ + Ψ_o); q(s) is then the exact posterior with E[ln π]."""
    X = _with_holes(two_cluster_data(2, n=30, p=5), 0.35, 3)
    st, data = _state(X)
    st.lam_cov = np.zeros_like(st.lam_cov)
    update_factors(st, data)
    from sklearn_vb.mfa._vbem import log_weights
    Z = data.Z.copy()
    Z[data.missing.mask == 0] = np.nan
    ell = log_weights(st, Z)
    elog_pi = digamma(st.alpha_hat) - digamma(st.alpha_hat.sum())
    k = st.lam_mean.shape[-1] - 1
    for n in range(Z.shape[0]):
        o = ~np.isnan(Z[n])
        for s in range(2):
            L = st.lam_mean[s, o, :k]
            exact = multivariate_normal(st.lam_mean[s, o, k],
                                        L @ L.T + np.diag(st.psi[o])).logpdf(Z[n, o])
            assert ell[n, s] - elog_pi[s] == pytest.approx(exact, rel=1e-10, abs=1e-10)
            # and q(x|s) is the exact posterior of the factors
            prec = np.eye(k) + L.T @ (L / st.psi[o, None])
            mean = np.linalg.solve(prec, L.T @ ((Z[n, o] - st.lam_mean[s, o, k]) / st.psi[o]))
            np.testing.assert_allclose(st.xbar[n, s], mean, rtol=1e-10, atol=1e-12)


def test_every_update_raises_the_bound_with_missing_entries():
    X = _with_holes(two_cluster_data(4, n=50, p=6), 0.25, 5)
    st, data = _state(X, iters=1)
    updates = (update_loadings, update_responsibilities, lambda s, d: update_weights(s),
               update_ard, update_noise, update_factors)
    F = lower_bound(st, data)
    for _ in range(15):
        for update in updates:
            update(st, data)
            F_new = lower_bound(st, data)
            assert F_new >= F - 1e-9 * abs(F)
            F = F_new


def test_the_fit_is_monotone_and_scores_rows_with_missing_entries():
    X = _with_holes(two_cluster_data(6, n=60, p=6), 0.2, 7)
    est = _fit(X)
    bounds = np.asarray(est.lower_bounds_)
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert np.isfinite(est.lower_bound_)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert est.transform(X).shape == (X.shape[0], est.n_factors_max_)
    assert np.all(np.isfinite(est.transform(X, components="all")))
    # "plugin": the mixture density of each row's observed entries at the fitted means
    dens = est.score_samples(X)
    for n in range(0, X.shape[0], 7):
        o = ~np.isnan(X[n])
        comp = [np.log(w) + multivariate_normal(
            mu[o], (L @ L.T + np.diag(est.noise_variance_))[np.ix_(o, o)]).logpdf(X[n, o])
            for w, mu, L in zip(est.weights_, est.means_, est.loadings_)]
        assert dens[n] == pytest.approx(logsumexp(comp), rel=1e-10)
    assert np.all(np.isfinite(est.score_samples(X, method="bound")))


def test_a_row_observing_nothing_changes_nothing():
    """Its likelihood is 1 for every parameter: with s_i marginalised too, its term of F
    is exactly 0, so q(θ) and the bound are those of the fit without it."""
    X = _with_holes(two_cluster_data(8, n=40, p=5), 0.2, 9)
    with_row = np.insert(X, 7, np.nan, axis=0)
    a, b = _fit(X), _fit(with_row)
    assert b.lower_bound_ == pytest.approx(a.lower_bound_, rel=1e-12)
    for name in ("loading_means_", "loading_covariances_", "noise_variance_", "weights_",
                 "means_", "ard_rate_"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-8, atol=1e-12)
    assert b.labels_.shape == (with_row.shape[0],)
    np.testing.assert_array_equal(np.delete(b.labels_, 7), a.labels_)
    assert b.score_samples(with_row[7:8])[0] == pytest.approx(0.0, abs=1e-12)  # ln 1


def test_complete_data_through_the_missing_data_path_gives_the_complete_fit():
    """A row observing nothing sends complete data down the missing-data updates (one
    pattern, every dimension observed): the fit must equal the complete-data fit (without
    the rotation moves, which are not made with entries missing)."""
    X = two_cluster_data(10, n=40, p=5)
    a = _fit(X, rotations=False)
    b = _fit(np.vstack([X, np.full((1, 5), np.nan)]), rotations=False)
    np.testing.assert_allclose(b.lower_bounds_, a.lower_bounds_, rtol=1e-10)
    assert b.lower_bound_ == pytest.approx(a.lower_bound_, rel=1e-10)
    np.testing.assert_allclose(b.loading_means_, a.loading_means_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.noise_variance_, a.noise_variance_, rtol=1e-8)


def test_the_vb_score_is_the_bound_and_the_other_scores_take_nan():
    # (their oracles are in test_scoring_mfa_missing.py)
    X = _with_holes(two_cluster_data(12, n=30, p=4), 0.2, 13)
    est = _fit(X, max_iter=30)
    assert score(est, X, "vb").log_evidence == est.lower_bound_
    for method in ("bic", "laplace", "cs"):
        assert np.isfinite(score(est, X, method, random_state=0).log_evidence)


def test_online_learning_refuses_nan():
    X = _with_holes(two_cluster_data(14, n=20, p=4), 0.1, 15)
    with pytest.raises(ValueError, match="online"):
        _fit(X, learning_method="online")


def test_partial_fit_and_an_unobserved_feature_refuse_nan():
    X = two_cluster_data(16, n=20, p=4)
    est = _fit(X, max_iter=5)
    holes = _with_holes(X, 0.2, 17)
    with pytest.raises(ValueError, match="partial_fit"):
        est.partial_fit(holes)
    X[:, 2] = np.nan
    with pytest.raises(ValueError, match=r"feature\(s\) \[2\]"):
        _fit(X)


def test_dead_columns_are_pruned_and_decoupled_with_missing_entries():
    """The structure moves on the loading columns act on q(x|s) per component and
    pattern: a fit from ``p - 1`` columns prunes to the data's two, monotonically."""
    X = _with_holes(two_cluster_data(3, n=100, p=8, k=2), 0.25, 1)
    est = _fit(X, n_factors=None, max_iter=300)
    bounds = np.asarray(est.lower_bounds_)
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert est.n_factors_max_ < 7
    assert est._vb_.sigma.shape[-1] == est.n_factors_max_
    assert np.all(np.isfinite(est.transform(X)))


@pytest.mark.slow
def test_the_search_finds_the_components_of_the_complete_data_with_entries_missing():
    """Births and deaths on q(x|s) per component and pattern: with 15 % and 30 % of the
    entries missing the search ends with the three clusters it finds on the complete
    data, each epoch's bound never decreasing."""
    X, _ = make_mixed_dimension_clusters(n_samples_per_cluster=60, dims=(1, 2, 3),
                                         n_features=6, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundDecreaseWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        complete = VBMixtureFactorAnalysers(random_state=0).fit(X)
        assert complete.n_components_ == 3
        for frac, seed in ((0.15, 2), (0.3, 3)):
            holes = _with_holes(X, frac, seed)
            est = VBMixtureFactorAnalysers(random_state=0).fit(holes)
            assert est.n_components_ == complete.n_components_, frac
            assert est.n_partial_iter_ == 0  # the children settle in full VBEM updates
            # the clusters are recovered: every component's rows are mostly one cluster
            labels = est.predict(holes)
            truth = np.repeat(np.arange(3), 60)
            purity = sum(np.bincount(truth[labels == s]).max() for s in np.unique(labels))
            assert purity >= 0.9 * len(truth), frac
