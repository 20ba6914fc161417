"""VBHiddenMarkov(method="ml" | "map"): point-estimate EM in the estimator.

Oracles: an independent scaled forward recursion written here (numpy / scipy densities)
evaluates ln p(X | theta) at the returned parameters; scipy's Dirichlet density gives the
MAP prior term; EM must never decrease its objective (checked at every iteration, and
after every step with ``bound_check="steps"``); a one-state Poisson ML fit is the sample
mean.
"""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import dirichlet, multivariate_normal

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import scoring_model_for

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LENGTHS = [70, 130]


def forward_log_likelihood(startprob, transmat, log_emission, lengths):
    """ln p(X | theta) by the forward recursion in log space, sequence by sequence."""
    total, at = 0.0, 0
    for T in lengths:
        log_alpha = np.log(startprob) + log_emission[at]
        for t in range(1, T):
            log_alpha = logsumexp(log_alpha[:, None] + np.log(transmat), axis=0) + log_emission[at + t]
        total += logsumexp(log_alpha)
        at += T
    return total


def categorical_data(seed=0):
    rng = np.random.default_rng(seed)
    A = np.array([[0.9, 0.1, 0.0], [0.05, 0.9, 0.05], [0.1, 0.0, 0.9]])
    B = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    s, x = 0, []
    for _ in range(sum(LENGTHS)):
        x.append(rng.choice(4, p=B[s]))
        s = rng.choice(3, p=A[s])
    return np.array(x).reshape(-1, 1)


def gaussian_data(seed=0):
    rng = np.random.default_rng(seed)
    states = np.repeat([0, 1, 2, 1], 50)
    means = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    return means[states] + rng.normal(size=(200, 2)) @ np.array([[1.0, 0.3], [0.0, 0.8]])


def increments_ok(values):
    values = np.asarray(values)
    return np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]) - 1e-7)


@pytest.mark.parametrize("method", ["ml", "map"])
def test_categorical_objective_climbs_and_matches_an_independent_forward_pass(method):
    X = categorical_data()
    est = VBHiddenMarkov(3, method=method, random_state=1, n_init=2, max_iter=400, tol=1e-8,
                         startprob_prior=0.5, transmat_prior=0.5, emissionprob_prior=0.5,
                         bound_check="steps").fit(X, lengths=LENGTHS)
    assert increments_ok(est.objectives_) and len(est.objectives_) > 5
    log_B = np.log(est.emissionprob_).T[X.ravel()]
    ll = forward_log_likelihood(est.startprob_, est.transmat_, log_B, LENGTHS)
    assert est.log_likelihood_ == pytest.approx(ll, abs=1e-8)
    assert est.score(X, lengths=LENGTHS) * X.shape[0] == pytest.approx(ll, abs=1e-8)
    if method == "ml":
        assert est.objective_ == pytest.approx(ll, abs=1e-8)
        assert est.lower_bound_ == est.objective_
    else:
        # softmax-basis MAP: ln p(X|theta) + ln p(theta) + sum of ln theta over all rows
        prior = dirichlet.logpdf(est.startprob_, np.full(3, 0.5)) + sum(
            dirichlet.logpdf(r, np.full(3, 0.5)) for r in est.transmat_) + sum(
            dirichlet.logpdf(r, np.full(4, 0.5)) for r in est.emissionprob_)
        jac = sum(np.log(a).sum() for a in (est.startprob_, est.transmat_, est.emissionprob_))
        assert est.objective_ == pytest.approx(ll + prior + jac, abs=1e-7)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("method", ["ml", "map"])
def test_gaussian_objective_climbs_and_matches_scipy_densities(method, covariance_type):
    X = gaussian_data()
    est = VBHiddenMarkov(3, emission="gaussian", covariance_type=covariance_type,
                         method=method, random_state=0, n_init=2, tol=1e-8,
                         bound_check="steps").fit(X)
    assert increments_ok(est.objectives_)
    covs = est.covars_ if covariance_type == "full" else [np.diag(c) for c in est.covars_]
    log_e = np.column_stack([multivariate_normal(m, c).logpdf(X) for m, c in zip(est.means_, covs)])
    ll = forward_log_likelihood(est.startprob_, est.transmat_, log_e, [X.shape[0]])
    assert est.log_likelihood_ == pytest.approx(ll, abs=1e-7)
    assert est.score(X) * X.shape[0] == pytest.approx(ll, abs=1e-7)
    if method == "ml":
        assert est.objective_ == pytest.approx(ll, abs=1e-7)
        # ML needs no prior and is at least as likely as the MAP point
        map_fit = VBHiddenMarkov(3, emission="gaussian", covariance_type=covariance_type,
                                 method="map", random_state=0, n_init=2, tol=1e-8).fit(X)
        assert map_fit.log_likelihood_ <= est.log_likelihood_ + 1.0


def test_one_state_poisson_ml_is_the_sample_mean():
    X = np.random.default_rng(3).poisson([2.0, 7.0], size=(150, 2))
    est = VBHiddenMarkov(1, emission="poisson", method="ml", random_state=0).fit(X)
    np.testing.assert_allclose(est.rates_[0], X.mean(axis=0), rtol=1e-10)
    # ln p(X | rates) of independent Poisson counts
    from scipy.stats import poisson
    assert est.log_likelihood_ == pytest.approx(poisson(X.mean(axis=0)).logpmf(X).sum(), abs=1e-8)


def test_poisson_map_objective_climbs():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.poisson([1.0, 6.0], size=(80, 2)), rng.poisson([6.0, 1.0], size=(80, 2))])
    est = VBHiddenMarkov(2, emission="poisson", method="map", random_state=0, n_init=2,
                         bound_check="steps").fit(X)
    assert increments_ok(est.objectives_)
    assert sorted(np.round(est.rates_[:, 0])) == [1.0, 6.0]


def test_restarts_keep_the_best_objective_and_are_reproducible():
    X = categorical_data(1)
    fits = [VBHiddenMarkov(4, method="ml", random_state=s, max_iter=200).fit(X, lengths=LENGTHS)
            for s in range(3)]
    best = VBHiddenMarkov(4, method="ml", random_state=7, n_init=3, max_iter=200)
    a = best.fit(X, lengths=LENGTHS).lower_bound_
    assert a == best.fit(X, lengths=LENGTHS).lower_bound_
    assert all(np.isfinite(f.lower_bound_) for f in fits)


def test_point_fit_predictions_and_refusals():
    X = categorical_data(2)
    est = VBHiddenMarkov(3, method="map", random_state=0).fit(X, lengths=LENGTHS)
    assert est.predict(X, lengths=LENGTHS).shape == (X.shape[0],)
    proba = est.predict_proba(X, lengths=LENGTHS)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    Xs, states = est.sample(20, random_state=0)
    assert Xs.shape == (20, 1) and states.shape == (20,)
    assert np.isfinite(est.bic(X, lengths=LENGTHS))
    assert not hasattr(est, "startprob_posterior_")
    with pytest.raises(ValueError, match="score_bound"):
        est.score_bound(X, lengths=LENGTHS)
    with pytest.raises(NotImplementedError, match="method='ml' or 'map'"):
        scoring_model_for(est)
    with pytest.raises(ValueError, match="optimize_prior_strengths"):
        VBHiddenMarkov(2, method="ml", optimize_prior_strengths=True).fit(X)
    with pytest.raises(ValueError, match="method"):
        VBHiddenMarkov(2, method="em").fit(X)
    # a refit with method="vb" leaves no point behind
    est.set_params(method="vb").fit(X, lengths=LENGTHS)
    assert hasattr(est, "startprob_posterior_")
    assert scoring_model_for(est) is not None
