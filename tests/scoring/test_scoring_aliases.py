"""Proposals and annealing starts that cover every relabelled copy of the posterior,
and the Pareto k-hat check of importance weights."""

import warnings

import numpy as np
import pytest
from scipy.stats import genpareto

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov
from sklearn_vb.scoring import UnreliableEstimateWarning, log_mean_exp, score, scoring_model_for
from sklearn_vb._core.numerics import pareto_khat, pareto_khat_threshold

HMM_X = np.array([0, 0, 1, 2, 2, 2, 1, 0, 1, 1, 0, 2, 2, 1, 0, 0])[:, None]
DAG_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])


def _gaussian_hmm():
    X = np.random.default_rng(0).normal(size=(40, 2)) + np.repeat([[0, 0], [3, 3]], 20, axis=0)
    return VBHiddenMarkov(n_components=3, emission="gaussian", random_state=0).fit(X), X


@pytest.mark.parametrize("kind", ["categorical", "gaussian"])
def test_relabelling_the_states_leaves_prior_and_likelihood_unchanged(kind):
    if kind == "categorical":
        est, X = VBHiddenMarkov(n_components=3, random_state=0).fit(HMM_X), HMM_X
    else:
        est, X = _gaussian_hmm()
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    theta = model.variational_posterior().sample(np.random.default_rng(1), 5)
    perms = model.alias_permutations()
    assert len(perms) == 6 and perms[0] == (0, 1, 2)
    ll, lp = model.log_likelihood(theta, data), model.log_prior(theta)
    for perm in perms[1:]:
        moved = model.permute_states(theta, perm)
        assert not np.allclose(model.variational_posterior().log_pdf(moved),
                               model.variational_posterior().log_pdf(theta))
        np.testing.assert_allclose(model.log_likelihood(moved, data), ll, rtol=1e-10)
        np.testing.assert_allclose(model.log_prior(moved), lp, rtol=1e-10)


def test_alias_mixture_density_is_the_mean_of_the_relabelled_densities():
    est = VBHiddenMarkov(n_components=3, random_state=0).fit(HMM_X)
    model = scoring_model_for(est)
    q = model.variational_posterior()
    g = model.alias_posterior()
    theta = g.sample(np.random.default_rng(2), 7)
    inverse = [np.argsort(p) for p in model.alias_permutations()]
    ref = log_mean_exp_rows(np.stack([q.log_pdf(model.permute_states(theta, p))
                                      for p in inverse]))
    np.testing.assert_allclose(g.log_pdf(theta), ref, rtol=1e-12)
    # the mixture is invariant under every relabelling, as the posterior is
    for perm in model.alias_permutations():
        np.testing.assert_allclose(g.log_pdf(model.permute_states(theta, perm)), ref, rtol=1e-10)
    with pytest.raises(ValueError, match="max_components"):
        model.alias_posterior(max_components=5)


def log_mean_exp_rows(a):
    return np.array([log_mean_exp(col) for col in a.T])


def test_an_asymmetric_prior_keeps_only_the_permutations_it_allows():
    est = VBHiddenMarkov(n_components=3, random_state=0,
                         startprob_prior=np.array([1.0, 1.0, 2.0])).fit(HMM_X)
    model = scoring_model_for(est)
    perms = model.alias_permutations()
    assert sorted(perms) == [(0, 1, 2), (1, 0, 2)]


def test_dag_alias_posterior_maps_leave_the_likelihood_unchanged():
    est = VBDiscreteDAG(n_components=3, cardinalities=3, n_init=2, random_state=0).fit(DAG_X)
    model = scoring_model_for(est)
    data = model.prepare_data(DAG_X)
    g = model.alias_posterior()
    assert len(g.components) == len(model.alias_permutations()) == 6
    theta = model.variational_posterior().sample(np.random.default_rng(0), 4)
    ll = model.log_likelihood(theta, data)
    for comp in g.components:
        np.testing.assert_allclose(model.log_likelihood(comp.forward(theta), data), ll,
                                   rtol=1e-10)
        back = comp.inverse(comp.forward(theta))
        for k in theta:
            np.testing.assert_allclose(back[k], theta[k])


def test_importance_sampling_covers_the_aliases_or_says_it_does_not():
    est = VBHiddenMarkov(n_components=2, random_state=0).fit(HMM_X)
    r = score(est, HMM_X, "is", n_samples=300, n_runs=2, random_state=0)
    assert r.diagnostics["alias_copies"] == 2
    assert not any("relabelled" in m for m in r.diagnostics["unreliable_reasons"])
    with pytest.warns(UnreliableEstimateWarning, match="relabelled copies"):
        r = score(est, HMM_X, "is", n_samples=300, n_runs=2, random_state=0, aliases="none")
    assert r.diagnostics["stderr_reliable"] is False
    assert r.diagnostics["alias_copies"] == 1
    # beyond the cap: q alone, flagged with the cap named
    est3 = VBHiddenMarkov(n_components=3, random_state=0).fit(HMM_X)
    with pytest.warns(UnreliableEstimateWarning, match="max_aliases=2"):
        score(est3, HMM_X, "is", n_samples=300, n_runs=2, random_state=0, max_aliases=2)
    with pytest.raises(ValueError, match="aliases"):
        score(est, HMM_X, "is", n_samples=10, aliases="all")


def test_ais_from_q_starts_at_the_alias_mixture_or_says_it_does_not():
    est = VBHiddenMarkov(n_components=2, random_state=0).fit(HMM_X)
    opts = dict(start="q", n_temperatures=10, n_chains=4, n_runs=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        r = score(est, HMM_X, "ais", **opts)
    assert not any("relabelled" in m for m in r.diagnostics["unreliable_reasons"])
    with pytest.warns(UnreliableEstimateWarning, match="relabelled copies"):
        r = score(est, HMM_X, "ais", aliases="none", **opts)
    assert r.diagnostics["stderr_reliable"] is False


def test_pareto_khat_recovers_the_tail_shape_and_flags_heavy_tails():
    rng = np.random.default_rng(0)
    light = [pareto_khat(np.log(genpareto.rvs(0.2, size=4000, random_state=rng) + 1.0))
             for _ in range(5)]
    heavy = [pareto_khat(np.log(genpareto.rvs(1.0, size=4000, random_state=rng) + 1.0))
             for _ in range(5)]
    assert np.all(np.abs(np.array(light) - 0.2) < 0.15), light
    assert min(heavy) > pareto_khat_threshold(4000), heavy
    assert pareto_khat(rng.normal(size=4000)) < 0.5  # log-normal, sd 1
    assert pareto_khat(np.zeros(100)) == -np.inf  # equal weights: no tail
    assert pareto_khat(np.array([0.0, -1.0, -np.inf])) == np.inf  # too few draws
    assert pareto_khat_threshold(100) == pytest.approx(0.5)
    assert pareto_khat_threshold(10 ** 6) == 0.7
    assert pareto_khat_threshold(10 ** 6, limit=0.5) == 0.5
