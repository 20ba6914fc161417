"""The three models of the bidirectional Monte Carlo study: VB fits, exact likelihoods,
exact evidences and the tempered conditionals used by the samplers."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb.bdmc_models import (
    BayesianBinaryAttributes,
    BayesianClustering,
    BayesianLowRank,
    binary_attributes_log_evidence,
    clustering_log_evidence,
)
from sklearn_vb.scoring import scoring_model_for


def _fit(cls, Y, **kw):
    return cls(random_state=0, n_init=5, bound_check="steps", **kw).fit(Y)


def _grid_log_evidence(model, Y, half_width=6.0, n=801):
    """ln of the integral of p(W) p(Y | W) over W with two free entries (a 2-D grid)."""
    sd = np.sqrt(model.weight_var)
    g = np.linspace(-half_width * sd, half_width * sd, n)
    a, b = np.meshgrid(g, g, indexing="ij")
    W = np.stack([a.ravel(), b.ravel()], axis=1).reshape((-1,) + model.param_space[model.name].shape)
    params = {model.name: W}
    lj = model.log_prior(params) + model.log_likelihood(params, Y)
    return float(logsumexp(lj) + 2 * np.log(g[1] - g[0]))


@pytest.mark.parametrize("cls,kw,K,D", [
    (BayesianClustering, dict(mean_sd=1.5, noise_sd=0.7), 2, 1),
    (BayesianBinaryAttributes, dict(feature_sd=1.2, noise_sd=0.6, attribute_prob=0.4), 2, 1),
    (BayesianLowRank, dict(latent_sd=1.1, component_sd=0.9, noise_sd=0.8), 1, 2),
])
def test_exact_likelihood_integrates_to_the_enumerated_evidence(cls, kw, K, D):
    est = cls(n_components=K, **kw)
    Y, _, _ = est.simulate(4, D, random_state=3)
    est = _fit(cls, Y, n_components=K, **kw)
    model = scoring_model_for(est)
    grid = _grid_log_evidence(model, model.prepare_data(Y))
    if cls is BayesianClustering:
        exact = clustering_log_evidence(Y, K, kw["mean_sd"], kw["noise_sd"])
        assert grid == pytest.approx(exact, abs=1e-6)
    elif cls is BayesianBinaryAttributes:
        exact = binary_attributes_log_evidence(Y, K, kw["feature_sd"], kw["noise_sd"],
                                               kw["attribute_prob"])
        assert grid == pytest.approx(exact, abs=1e-6)
    else:
        exact = grid
    # VB is a lower bound on the exact evidence, and not a vacuous one
    assert est.lower_bound_ <= exact + 1e-9
    assert exact - est.lower_bound_ < 3.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vb_bound_below_enumerated_evidence(seed):
    Y, _, _ = BayesianClustering(3, mean_sd=2.0).simulate(7, 3, random_state=seed)
    est = _fit(BayesianClustering, Y, n_components=3, mean_sd=2.0)
    exact = clustering_log_evidence(Y, 3, 2.0, 1.0)
    assert est.lower_bound_ <= exact
    # with the 3! relabellings the bound approaches the truth on well separated clusters
    assert est.lower_bound_ + np.log(6) > exact - 5.0

    Y, _, _ = BayesianBinaryAttributes(2).simulate(5, 3, random_state=seed)
    est = _fit(BayesianBinaryAttributes, Y, n_components=2)
    exact = binary_attributes_log_evidence(Y, 2)
    assert est.lower_bound_ <= exact


def test_collapsed_oracle_matches_per_case_likelihood_for_one_case():
    # with one case the label/attribute sum of the scoring model and the enumeration of
    # the oracle are the same sum; integrate W by the grid on a 1 x 2 instance
    Y = np.array([[0.3, -1.2]])
    est = _fit(BayesianClustering, np.vstack([Y, Y + 0.1]), n_components=1)
    m = scoring_model_for(est)
    assert _grid_log_evidence(m, Y) == pytest.approx(clustering_log_evidence(Y, 1), abs=1e-6)


@pytest.mark.parametrize("cls,K", [(BayesianClustering, 3), (BayesianBinaryAttributes, 2),
                                   (BayesianLowRank, 2)])
def test_conditional_joint_identity(cls, K):
    """ln p(x|u) - ln p(x'|u) = ln p(x,u) - ln p(x',u) for both tempered conditionals
    (Grosse et al. 2015, Appendix B), with a scalar and a per-case beta."""
    est = cls(n_components=K)
    Y, _, _ = est.simulate(6, 3, random_state=0)
    m = scoring_model_for(_fit(cls, Y, n_components=K))
    rng = np.random.default_rng(1)
    W = m.sample_prior(rng, 2)
    W1 = {m.name: W[m.name][:1]}
    W2 = {m.name: W[m.name][1:]}
    for beta in (0.0, 0.37, 1.0, rng.random(6)):
        b = np.broadcast_to(beta, (6,))

        def log_joint(params, Z):
            return (m.log_prior(params) + m.log_latent_prior(params, Z)
                    + m.log_complete_likelihood_per_case(params, Z, Y) @ b)

        Za = m.sample_latents(W1, Y, rng, beta)
        Zb = m.sample_latents_prior(W1, 6, rng)
        lhs = m.log_latent_conditional(W1, Za, Y, beta) - m.log_latent_conditional(W1, Zb, Y, beta)
        rhs = log_joint(W1, Za) - log_joint(W1, Zb)
        assert lhs == pytest.approx(rhs, abs=1e-9)
        lhs = m.log_param_conditional(W1, Za, Y, beta) - m.log_param_conditional(W2, Za, Y, beta)
        rhs = log_joint(W1, Za) - log_joint(W2, Za)
        assert lhs == pytest.approx(rhs, abs=1e-9)


@pytest.mark.parametrize("cls", [BayesianClustering, BayesianBinaryAttributes, BayesianLowRank])
def test_conditional_samplers_match_their_densities(cls):
    """Normalisation and first two moments of the W-conditional (one free entry by grid)
    and, for discrete latents, draw frequencies against the conditional probabilities."""
    est = cls(n_components=1)
    Y, _, _ = est.simulate(3, 1, random_state=2)
    m = scoring_model_for(_fit(cls, Y, n_components=1))
    rng = np.random.default_rng(0)
    Z = m.sample_latents_prior(m.sample_prior(rng, 1), 3, rng)
    g = np.linspace(-8, 8, 4001)
    lp = m.log_param_conditional({m.name: g[:, None, None]}, np.repeat(Z, g.size, axis=0), Y, 0.6)
    p = np.exp(lp)
    dx = g[1] - g[0]
    assert p.sum() * dx == pytest.approx(1.0, abs=1e-6)
    mean = np.sum(g * p) * dx
    var = np.sum((g - mean) ** 2 * p) * dx
    draws = m.sample_params(np.repeat(Z, 20000, axis=0), Y, rng, 0.6)[m.name].ravel()
    assert draws.mean() == pytest.approx(mean, abs=4 * np.sqrt(var / 20000))
    assert draws.var() == pytest.approx(var, rel=0.05)
    if cls is BayesianLowRank:
        return
    W = m.sample_prior(rng, 1)
    Wc = {m.name: np.repeat(W[m.name], 20000, axis=0)}
    draws = m.sample_latents(Wc, Y, rng, 0.5)
    first = np.asarray(draws).reshape(20000, 3, -1)[:, 0, 0]
    if cls is BayesianClustering:  # one component: the label is always 0
        assert np.all(first == 0)
        return
    # P(z_00 = 0) by the density: flip the entry of one draw and normalise over the two
    Z0 = np.asarray(draws)[:1].copy()
    Z1 = Z0.copy()
    Z0[0, 0, 0], Z1[0, 0, 0] = 0.0, 1.0
    l0 = m.log_latent_conditional(W, Z0, Y, 0.5)[0]
    l1 = m.log_latent_conditional(W, Z1, Y, 0.5)[0]
    p0 = np.exp(l0 - np.logaddexp(l0, l1))
    assert np.mean(first == 0) == pytest.approx(p0, abs=4 * np.sqrt(p0 * (1 - p0) / 20000) + 1e-3)


@pytest.mark.parametrize("cls", [BayesianClustering, BayesianBinaryAttributes, BayesianLowRank])
def test_fit_contract(cls):
    est = cls(n_components=3, random_state=0, n_init=2)
    Y, params, Z = est.simulate(20, 4, random_state=0)
    Y2, params2, _ = est.simulate(20, 4, random_state=0)
    np.testing.assert_array_equal(Y, Y2)
    assert params[est.weight_name].shape == (3, 4)
    Ycopy = Y.copy()
    est.fit(Y)
    np.testing.assert_array_equal(Y, Ycopy)
    assert np.all(np.diff(est.lower_bounds_) >= -1e-9)
    m = scoring_model_for(est)
    mean = {m.name: est._weight_mean()[None]}
    assert m.log_likelihood(mean, m.prepare_data(Y))[0] == pytest.approx(est.score_samples(Y).sum())
    assert m.n_aliases() == 6
    Ys, _ = est.sample(5, random_state=0)
    assert Ys.shape == (5, 4)
    with pytest.raises(ValueError):
        cls(n_components=0).fit(Y)
    with pytest.raises(ValueError):
        est.score_samples(Y[:, :3])
    # q(W) is the Gaussian of the fit
    q = m.variational_posterior()
    assert np.allclose(q.mean()[m.name][0], est._weight_mean())
