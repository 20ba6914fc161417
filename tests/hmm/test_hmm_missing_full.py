"""Missing entries (NaN) with full-covariance Gaussian emissions.

The missing entries of a partially observed frame are latent variables of the
mean-field posterior, q(s) q(x_miss | s) q(theta); a frame with nothing observed has
likelihood 1.  Every claim is checked against the independent references of
:mod:`tests.oracles.gaussian_missing`: Gaussian marginals by scipy over enumerated state
paths, the VBE normaliser with the missing entry integrated by quadrature, and the exact
log evidence with the Normal-Wishart parameters integrated by Student-t predictives.
"""

import numpy as np
import pytest
from scipy.special import digamma

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.hmm._vbem import vbe
from tests.oracles.gaussian_missing import (
    enumerate_paths,
    exact_log_evidence,
    observed_marginal_table,
    vbe_log_weight,
)

# frames 0, 1, 3 complete, frame 2 with its second entry missing, frame 4 with nothing
X_TINY = np.array([[0.2, -0.3], [0.9, 0.4], [2.6, np.nan], [3.1, 2.2], [np.nan, np.nan]])
PRIOR = dict(means_prior=[1.5, 1.0], beta_prior=0.5, dof_prior=4.0,
             scale_prior=[[4.0, 1.5], [1.5, 3.0]], startprob_prior=2.0, transmat_prior=2.0)


def _tiny_fit(**kw):
    params = dict(n_components=2, emission="gaussian", covariance_type="full",
                  random_state=0, tol=1e-12, max_iter=500, **PRIOR)
    params.update(kw)
    return VBHiddenMarkov(**params).fit(X_TINY)


def _correlated_data(seed=0, T=90):
    rng = np.random.default_rng(seed)
    mix = np.array([[1.0, 0.8, 0.0], [0.0, 1.0, 0.6], [0.0, 0.0, 1.0]])
    X = rng.normal(size=(T, 3)) @ mix
    X[T // 3: 2 * T // 3] += np.array([4.0, -3.0, 2.0])
    X[[2, 5, 40, T - 5], [0, 1, 1, 2]] = np.nan
    X[[9, 50], :2] = np.nan
    X[7] = np.nan
    return X


def _expected_log_transitions(model):
    Lpi = digamma(model.startprob_posterior_) - digamma(model.startprob_posterior_.sum())
    LA = (digamma(model.transmat_posterior_)
          - digamma(model.transmat_posterior_.sum(axis=1, keepdims=True)))
    return Lpi, LA


def test_score_at_the_posterior_mean_is_the_gaussian_marginal_of_the_observed_entries():
    model = _tiny_fit()
    x = np.array([[0.3, np.nan], [np.nan, np.nan], [2.9, 1.8], [np.nan, 0.7], [1.0, 1.1]])
    table = observed_marginal_table(x, model.means_, model.covars_)
    expected = enumerate_paths(table, np.log(model.startprob_), np.log(model.transmat_))
    assert model.score_samples(x, per="sequence")[0] == pytest.approx(expected, abs=1e-10)
    # a frame with nothing observed multiplies the likelihood by one
    frames = model.score_samples(np.vstack([x, [[np.nan, np.nan]] * 2]))
    np.testing.assert_allclose(frames[-2:], 0.0, atol=1e-12)


def test_vbe_normaliser_integrates_the_missing_entry_of_the_mean_field():
    # with q(theta) fixed, the VBE over paths and missing entries gives
    # ln sum_paths exp(E ln pi + E ln A) prod_t int exp(E ln N(x_t | mu, Lambda)) dx_miss
    model = _tiny_fit()
    post = model._hyper("posterior")
    data = model._sequence_data(X_TINY, None, None, reset=False)
    log_z = float(vbe(model._family, post, data)[0][0].sum())
    W = np.linalg.inv(model.scale_posterior_)
    table = np.array([[vbe_log_weight(x, model.means_posterior_[k], model.beta_posterior_[k],
                                      W[k], model.dof_posterior_[k]) for k in range(2)]
                      for x in X_TINY])
    expected = enumerate_paths(table, *_expected_log_transitions(model))
    assert log_z == pytest.approx(expected, abs=1e-9)
    # and the bound of the fit is that normaliser minus the KL of q(theta)
    assert model.score_bound(X_TINY) == pytest.approx(log_z, abs=1e-12)


def test_bound_is_below_the_exact_evidence_of_the_observed_entries():
    model = _tiny_fit(n_init=3)
    exact = exact_log_evidence(
        X_TINY, 2, model.startprob_prior_, model.transmat_prior_, model.means_prior_,
        model.beta_prior_, model.scale_prior_, model.dof_prior_)
    assert model.lower_bound_ <= exact + 1e-9
    # and not far below it: VB's gap on five frames (about 1.5 nats on four complete
    # ones of this kind), not a frame or an observed entry lost
    assert model.lower_bound_ > exact - 2.5


def test_bound_never_decreases_with_missing_entries():
    X = _correlated_data()
    for seed in (0, 1):
        model = VBHiddenMarkov(n_components=3, emission="gaussian", covariance_type="full",
                               random_state=seed, tol=1e-9, max_iter=200).fit(X)
        bounds = np.asarray(model.lower_bounds_)
        assert bounds.size > 3
        assert np.all(np.diff(bounds) >= -1e-8 * np.abs(bounds[1:]))


def test_missing_statistics_are_the_moments_of_the_conditional_gaussian():
    # S1 and S2 of a partially observed frame hold E[x] and E[x x^T] of the missing
    # entry's posterior given the observed one; checked by quadrature-free moments of
    # the conditional Gaussian of a 2-D state with precision P
    from sklearn_vb.emissions import GaussianFullEmissions, GaussianPrior

    family = GaussianFullEmissions()
    prior = GaussianPrior(means=np.zeros(2), beta=1.0, dof=3.0, scale=np.eye(2))
    mu = np.array([[1.0, -1.0]])
    cov = np.array([[[2.0, 0.6], [0.6, 1.0]]])
    L = np.linalg.cholesky(np.linalg.inv(cov))
    params = (np.zeros(1), L, mu)
    X = np.array([[3.0, np.nan], [np.nan, np.nan]])
    stats = family.stats(np.ones((2, 1)), X, prior, params)
    cond_mean = mu[0, 1] + cov[0, 1, 0] / cov[0, 0, 0] * (3.0 - mu[0, 0])
    cond_var = cov[0, 1, 1] - cov[0, 1, 0] ** 2 / cov[0, 0, 0]
    np.testing.assert_allclose(stats.N, [1.0])  # the empty frame carries nothing
    np.testing.assert_allclose(stats.S1[0], [3.0, cond_mean], rtol=1e-12)
    np.testing.assert_allclose(stats.S2[0], [[9.0, 3.0 * cond_mean],
                                             [3.0 * cond_mean, cond_mean**2 + cond_var]],
                               rtol=1e-12)


def test_predict_proba_at_a_missing_last_frame_is_the_transition_propagated_posterior():
    model = _tiny_fit()
    x = np.array([[0.1, 0.0], [2.8, np.nan], [np.nan, np.nan]])
    proba = model.predict_proba(x)
    _, LA = _expected_log_transitions(model)
    A = np.exp(LA)
    A /= A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba[-1], proba[-2] @ A, rtol=1e-10)


def test_nothing_missing_takes_the_complete_data_path():
    # the same fit with and without the missing-entry machinery when nothing is missing
    from sklearn_vb.emissions import GaussianFullEmissions, GaussianPrior

    family = GaussianFullEmissions()
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    prior = GaussianPrior(means=X.mean(axis=0), beta=1.0, dof=4.0, scale=4.0 * np.eye(3))
    resp = rng.dirichlet(np.ones(2), size=30)
    post = family.vbm(prior, family.stats(resp, X, prior))
    LE = family.expected_log_params(post)
    a = family.stats(resp, X, prior, LE)
    b = family.stats(resp, X, prior)
    for name in ("N", "S1", "S2"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # an entry made missing changes its own frame's table row and no other
    Xm = X.copy()
    Xm[3, 1] = np.nan
    table = family.log_table(LE, Xm)
    np.testing.assert_array_equal(np.delete(table, 3, axis=0),
                                  np.delete(family.log_table(LE, X), 3, axis=0))


def test_ml_fit_with_missing_entries_is_em_and_never_decreases_the_likelihood():
    # point EM with the missing entries latent: ln p(X_obs | theta) never decreases
    X = _correlated_data(seed=2)
    model = VBHiddenMarkov(n_components=2, emission="gaussian", covariance_type="full",
                           method="ml", random_state=0, tol=1e-9, max_iter=200).fit(X)
    bounds = np.asarray(model.lower_bounds_)
    assert bounds.size > 3
    assert np.all(np.diff(bounds) >= -1e-8 * np.abs(bounds[1:]))
    assert model.log_likelihood_ == pytest.approx(model.score(X) * X.shape[0], rel=1e-10)


def test_exact_enumeration_refuses_missing_entries():
    from sklearn_vb.scoring import scoring_model_for

    model = _tiny_fit()
    sm = scoring_model_for(model)
    with pytest.raises(ValueError, match="missing entries"):
        sm.log_evidence(sm.prepare_data(X_TINY))


def test_cheeseman_stutz_with_missing_entries_is_below_the_exact_evidence():
    # CS at the ML point with (s, x_miss) as the hidden data is a VB bound (Beal 2003,
    # section 2.6.2), so it cannot exceed the exact evidence; counting the missing
    # entry's statistics wrongly would break the bound or the closeness
    from sklearn_vb.scoring import score

    model = _tiny_fit()
    exact = exact_log_evidence(
        X_TINY, 2, model.startprob_prior_, model.transmat_prior_, model.means_prior_,
        model.beta_prior_, model.scale_prior_, model.dof_prior_)
    value = score(model, X_TINY, "cs", random_state=0).log_evidence
    assert exact - 3.0 < value <= exact + 1e-9
