"""The three latent-factor models with their hyperparameters integrated out (Grosse,
Ghahramani & Adams 2015, Table 1): the hyperparameters' conditionals against the joint
density, and joint AIS against exact evidences (enumeration and quadrature)."""

import numpy as np
import pytest
from scipy import stats

from sklearn_vb.bdmc_models import (
    BayesianBinaryAttributes,
    BayesianClustering,
    BayesianLowRank,
    Hyperprior,
    integrate_hyperparameters,
)
from sklearn_vb.scoring import score
from tests.oracles.bdmc_hyper import binary_hyper_log_evidence, clustering_hyper_log_evidence

HP = Hyperprior(variance_shape=1.5, variance_scale=0.8, concentration=0.7, attribute_a=1.3,
                attribute_b=0.9)


def _model_and_state(cls, beta, seed=0):
    Y, _, _ = cls(2).simulate(6, 3, random_state=seed)
    m = integrate_hyperparameters(cls(2, random_state=0).fit(Y), HP)
    rng = np.random.default_rng(seed)
    params = m.sample_prior(rng, 3)
    Z = m.sample_latents(params, Y, rng, beta)
    return m, Y, params, Z


def _log_target(m, params, Z, Y, beta):
    """ln f_beta = ln p(h) + ln p(W | h) + ln p(Z | h) + sum_i beta_i ln p(y_i | z_i, W, h)."""
    return (m.log_prior(params) + m.log_latent_prior(params, Z)
            + m.log_complete_likelihood_per_case(params, Z, Y) @ beta)


def _with(params, name, value):
    out = dict(params)
    out[name] = value
    return out


@pytest.mark.parametrize("cls", [BayesianClustering, BayesianLowRank, BayesianBinaryAttributes])
def test_hyperparameter_conditionals_match_the_joint(cls):
    # p(h | rest) / p(h' | rest) = f(h, rest) / f(h', rest) for every hyperparameter, at a
    # tempered target with per-case exponents
    beta = np.array([1.0, 0.3, 0.0, 1.0, 0.6, 0.9])
    m, Y, params, Z = _model_and_state(cls, beta)
    conds = m.hyper_conditionals(params, Z, Y, beta)
    rng = np.random.default_rng(1)
    C = len(conds)
    f0 = _log_target(m, params, Z, Y, beta)
    names = ["weight_var", "noise_var"] + [b.name for b in m.param_space.blocks[3:]]
    for name in names:
        other = m.sample_prior(rng, C)[name]
        f1 = _log_target(m, _with(params, name, other), Z, Y, beta)
        for c, q in enumerate(conds):
            x0, x1 = np.asarray(params[name])[c], np.asarray(other)[c]
            if name in ("weight_var", "noise_var", "latent_var"):
                a, b = getattr(q, name)
                dist = stats.invgamma(a, scale=b)
                lc = dist.logpdf(x0[0]) - dist.logpdf(x1[0])
            elif name == "mixing":
                lc = stats.dirichlet.logpdf(x0, q.mixing) - stats.dirichlet.logpdf(x1, q.mixing)
            else:
                a, b = q.attribute
                lc = np.sum(stats.beta.logpdf(x0[:, 0], a, b) - stats.beta.logpdf(x1[:, 0], a, b))
            assert lc == pytest.approx(f0[c] - f1[c], rel=1e-9, abs=1e-8), (name, c)


def test_sample_params_needs_the_current_hyperparameters():
    m, Y, params, Z = _model_and_state(BayesianClustering, 1.0)
    with pytest.raises(TypeError, match="current"):
        m.sample_params(Z, Y, np.random.default_rng(0))
    new = m.sample_params(Z, Y, np.random.default_rng(0), current=params)
    assert set(new) == set(params)
    assert all(np.shape(new[k]) == np.shape(params[k]) for k in params)
    with pytest.raises(TypeError, match="one of"):
        integrate_hyperparameters(object())
    with pytest.raises(ValueError, match="fitted"):
        integrate_hyperparameters(BayesianClustering(2))
    with pytest.raises(ValueError, match="positive"):
        Hyperprior(variance_shape=0.0)


@pytest.mark.parametrize("kind", ["clustering", "binary"])
def test_joint_ais_with_hyperparameters_matches_the_exact_evidence(kind):
    if kind == "clustering":
        Y, _, _ = BayesianClustering(2, mean_sd=1.5).simulate(6, 2, random_state=3)
        exact = clustering_hyper_log_evidence(Y, 2, HP)
        est = BayesianClustering(2, random_state=0).fit(Y)
    else:
        Y, _, _ = BayesianBinaryAttributes(2, noise_sd=0.7).simulate(4, 2, random_state=2)
        exact = binary_hyper_log_evidence(Y, 2, HP)
        est = BayesianBinaryAttributes(2, random_state=0).fit(Y)
    m = integrate_hyperparameters(est, HP)
    r = score(m, Y, "ais", anneal="joint", n_temperatures=500, n_chains=32, random_state=0,
              lower_bound=None)
    assert r.bound == "stochastic_lower"
    assert abs(r.log_evidence - exact) < 0.3 + 3 * r.stderr


def test_concentrated_hyperpriors_give_the_fixed_model_on_the_low_rank_model():
    # IG(a, a) with a large is a point mass at 1 to within 1/sqrt(a): the evidence is
    # that of the model with every variance fixed at 1 (both by joint AIS)
    Y, _, _ = BayesianLowRank(2).simulate(10, 4, random_state=0)
    est = BayesianLowRank(2, random_state=0).fit(Y)
    sharp = integrate_hyperparameters(est, Hyperprior(variance_shape=1e5, variance_scale=1e5))
    a = score(sharp, Y, "ais", anneal="joint", n_temperatures=500, n_chains=32, random_state=0,
              lower_bound=None)
    b = score(est, Y, "ais", anneal="joint", n_temperatures=500, n_chains=32, random_state=1)
    assert abs(a.log_evidence - b.log_evidence) < 0.3 + 3 * np.hypot(a.stderr, b.stderr)

