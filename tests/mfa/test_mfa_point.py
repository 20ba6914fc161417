"""VBMixtureFactorAnalysers(method="ml" | "map"): point-estimate EM in the estimator.

Oracles: ln p(X | theta) at the returned point evaluated here with scipy's
multivariate normal (covariance Lambda Lambda^T + Psi per component); the MAP prior with
scipy's Dirichlet, multivariate t and normal densities; the one-component fits against
the closed-form diagonal Gaussian and scikit-learn's FactorAnalysis; EM must never
decrease its objective (checked after every iteration by the loop and here).
"""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import dirichlet, multivariate_normal, multivariate_t, norm
from sklearn.decomposition import FactorAnalysis

from sklearn_vb import VBMixtureFactorAnalysers
from sklearn_vb.scoring import scoring_model_for

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def clusters(seed=0, n=70, p=4):
    rng = np.random.default_rng(seed)
    parts = [rng.normal(size=(n, 1)) @ rng.normal(size=(1, p)) * 1.5
             + rng.normal(scale=0.4, size=(n, p)) + centre
             for centre in (np.zeros(p), np.full(p, 5.0), np.r_[5.0, -5.0, np.zeros(p - 2)])]
    return np.concatenate(parts) * np.arange(1, p + 1)  # unequal feature scales


def mixture_log_likelihood(est, X):
    """sum_i ln sum_s pi_s N(x_i; mu_s, Lambda_s Lambda_s^T + Psi), original units."""
    dens = np.column_stack([
        np.log(w) + multivariate_normal(m, L @ L.T + np.diag(est.noise_variance_)).logpdf(X)
        for w, m, L in zip(est.weights_, est.means_, est.loadings_)])
    return float(np.sum(logsumexp(dens, axis=1)))


def point(method, **kw):
    kw.setdefault("n_factors", 1)
    return VBMixtureFactorAnalysers(3, search=False, method=method, random_state=0, **kw)


def assert_non_decreasing(trace):
    trace = np.asarray(trace)
    assert np.all(np.diff(trace) >= -1e-10 * np.abs(trace[1:])), np.diff(trace).min()


@pytest.mark.parametrize("seed, standardize, n_factors", [(0, True, 2), (1, False, 2),
                                                         (2, True, 1)])
def test_ml_monotone_and_equal_to_independent_likelihood(seed, standardize, n_factors):
    X = clusters(seed)
    est = point("ml", n_factors=n_factors, standardize=standardize, max_iter=300).fit(X)
    assert len(est.objectives_) > 5
    assert_non_decreasing(est.objectives_)
    oracle = mixture_log_likelihood(est, X)
    assert est.log_likelihood_ == pytest.approx(oracle, rel=1e-10, abs=1e-8)
    assert est.lower_bound_ == est.objective_ == pytest.approx(oracle, rel=1e-10, abs=1e-8)
    assert est.score(X) * len(X) == pytest.approx(oracle, rel=1e-10)
    # every column is a parameter of the point fit
    assert est.n_factors_per_component_.tolist() == [n_factors] * 3
    assert not hasattr(est, "loading_covariances_")


def test_map_objective_monotone_and_equal_to_independent_evaluation():
    X = clusters(2)
    est = point("map", n_factors=2, standardize=False, alpha=2.0, a=1.5, b=0.7,
                max_iter=300).fit(X)
    assert_non_decreasing(est.objectives_)
    N, p = X.shape
    S = 3
    # the fixed hyperparameters in fitting units (= data units with standardize=False)
    mu_star, nu_star = X.mean(axis=0), 1.0 / X.var(axis=0)
    t_col = multivariate_t(np.zeros(p), (0.7 / 1.5) * np.eye(p), df=3.0)
    log_prior = (dirichlet(np.full(S, 2.0 / S)).logpdf(est.weights_)
                 + np.sum(np.log(est.weights_))  # softmax-basis Jacobian
                 + sum(t_col.logpdf(L[:, j]) for L in est.loadings_ for j in range(2))
                 + np.sum(norm(mu_star, 1.0 / np.sqrt(nu_star)).logpdf(est.means_)))
    loglik = mixture_log_likelihood(est, X)
    assert est.log_likelihood_ == pytest.approx(loglik, rel=1e-10)
    assert est.objective_ == pytest.approx(loglik + log_prior, rel=1e-10)
    # the prior pulls: the MAP point has a lower likelihood than the ML point from the
    # same start, and the ML point a lower MAP objective
    ml = point("ml", n_factors=2, standardize=False, max_iter=300).fit(X)
    assert ml.log_likelihood_ > est.log_likelihood_ - 1e-6


def test_one_component_closed_forms():
    X = clusters(3)
    N = X.shape[0]
    # no factors: the maximum-likelihood diagonal Gaussian
    est = VBMixtureFactorAnalysers(1, n_factors=0, search=False, method="ml").fit(X)
    var = X.var(axis=0)
    closed = -0.5 * N * np.sum(np.log(2 * np.pi * var) + 1.0)
    assert est.log_likelihood_ == pytest.approx(closed, rel=1e-12)
    np.testing.assert_allclose(est.means_[0], X.mean(axis=0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(est.noise_variance_, var, rtol=1e-10)
    # one factor: the factor-analysis maximum likelihood of scikit-learn
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(150, 1)) @ rng.normal(size=(1, 4))
         + rng.normal(size=(150, 4)) * np.array([0.3, 0.5, 1.0, 0.7]) + np.arange(4))
    est = VBMixtureFactorAnalysers(1, n_factors=1, search=False, method="ml", tol=1e-8,
                                   max_iter=5000).fit(X)
    fa = FactorAnalysis(n_components=1, tol=1e-12, max_iter=20000).fit(X)
    assert est.log_likelihood_ == pytest.approx(fa.score(X) * len(X), abs=1e-5)
    np.testing.assert_allclose(est.noise_variance_, fa.noise_variance_, rtol=1e-2)


def test_point_fit_predict_score_transform_sample_bic():
    X = clusters(4)
    for method in ("ml", "map"):
        est = point(method).fit(X)
        labels = est.predict(X)
        assert labels.shape == (len(X),) and set(labels) <= {0, 1, 2}
        np.testing.assert_array_equal(labels, est.labels_)
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        # three well separated clusters are recovered
        assert len(set(labels)) == 3
        assert np.isfinite(est.score(X))
        np.testing.assert_allclose(est.score_samples(X, method="bound"),
                                   est.score_samples(X), rtol=1e-9)
        assert est.transform(X).shape == (len(X), 1)
        Y, lab = est.sample(5)
        assert Y.shape == (5, X.shape[1])
        assert np.isfinite(est.bic(X))
        with pytest.raises(NotImplementedError, match="method='ml' or 'map'"):
            scoring_model_for(est)


def test_keep_restarts_with_ml():
    X = clusters(5)
    est = point("ml", init_params="random", n_init=3, keep_restarts=True, max_iter=200).fit(X)
    assert len(est.restarts_) == 3
    bounds = [r.lower_bound for r in est.restarts_]
    assert est.lower_bound_ == max(bounds)
    for i, r in enumerate(est.restarts_):
        assert_non_decreasing(r.lower_bounds)
        other = est.restart_estimator(i)
        assert other.log_likelihood_ == pytest.approx(mixture_log_likelihood(other, X),
                                                      rel=1e-10)
        assert other.lower_bound_ == pytest.approx(other.log_likelihood_, rel=1e-12)


def test_refusals_name_the_parameter():
    X = clusters(0)
    with pytest.raises(ValueError, match="search=False"):
        VBMixtureFactorAnalysers(2, method="map").fit(X)
    with pytest.raises(ValueError, match="optimize_hyperparameters"):
        point("map", optimize_hyperparameters=["noise", "ard_rate"]).fit(X)
    with pytest.raises(ValueError, match="method"):
        VBMixtureFactorAnalysers(2, method="em")._validate_params()
    est = point("ml", max_iter=3, warm_start=True).fit(X)
    est.set_params(method="vb")
    with pytest.raises(ValueError, match="warm_start"):
        est.fit(X)


def test_fixed_noise_and_warm_start():
    X = clusters(6)
    est = point("ml", optimize_hyperparameters=False, standardize=False).fit(X)
    np.testing.assert_allclose(est.noise_variance_, X.var(axis=0), rtol=1e-12)
    assert_non_decreasing(est.objectives_)
    warm = point("ml", max_iter=5, warm_start=True).fit(X)
    first = warm.lower_bound_
    warm.set_params(max_iter=50).fit(X)
    assert warm.lower_bound_ >= first - 1e-9
    assert_non_decreasing(warm.objectives_)
