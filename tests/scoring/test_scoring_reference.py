"""Reference problems with exact evidence, and the identities every ScoringModel must satisfy
(normalised prior agreeing with its sampler, likelihood summing to one, exact E step,
collapsed bound equal to the explicit one)."""

import itertools

import numpy as np
import pytest
from scipy import integrate

from tests.oracles.reference_models import (
    BayesianLinearRegression,
    BetaBernoulli,
    DirichletCategorical,
    DiscreteHMM,
    GaussianMean,
    GaussianMixture1D,
    LatentClassModel,
)

LATENT_CLASS_X = [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]]
MIXTURE_X = [-2.1, -1.7, 1.9, 2.4, 0.3]


def reference_instances():
    """(name, model, prepared data, exact ln p(X)) of the seven reference problems.

    * beta-bernoulli: Beta(1, 1) prior, 7 ones and 3 zeros;
    * dirichlet-categorical: Dirichlet(1, 1, 1) prior, 5 symbols;
    * gaussian-mean: N(0, 1) prior on the mean, unit noise, 2 points;
    * linear-regression: 2 weights, alpha = beta = 1, 3 cases;
    * latent-class: 2 classes, two 3-valued children, 6 cases;
    * discrete-hmm: 2 states, 3 symbols, two sequences of length 4;
    * gaussian-mixture-1d: 2 components, prior variance 4, unit noise, 5 points.
    """
    out = []
    m = BetaBernoulli(1, 1)
    out.append(("beta-bernoulli", m, m.prepare_data([1] * 7 + [0] * 3), -7.185387015580417))
    m = DirichletCategorical([1, 1, 1])
    out.append(("dirichlet-categorical", m, m.prepare_data([0, 0, 0, 2, 2]),
                -5.347107530717469))
    m = GaussianMean(0.0, 1.0, 1.0)
    out.append(("gaussian-mean", m, m.prepare_data([0.5, 1.5]), -2.970516544076734))
    m = BayesianLinearRegression(2, alpha=1.0, beta=1.0)
    X4 = np.column_stack([[[1, 0], [0, 1], [1, 1]], [1, -1, 0.5]])
    out.append(("linear-regression", m, m.prepare_data(X4), -4.359036370453936))
    m = LatentClassModel(2, (3, 3), 1.0)
    out.append(("latent-class", m, m.prepare_data(LATENT_CLASS_X), -13.721206877201771))
    m = DiscreteHMM(2, 3, 1.0)
    out.append(("discrete-hmm", m, m.prepare_data([0, 0, 1, 2, 2, 2, 1, 0], lengths=[4, 4]),
                -9.759777231503435))
    m = GaussianMixture1D(2, 4.0, 1.0)
    out.append(("gaussian-mixture-1d", m, m.prepare_data(MIXTURE_X), -11.106897070914211))
    return out


REFS = reference_instances()
IDS = [r[0] for r in REFS]


@pytest.mark.parametrize("ref", REFS, ids=IDS)
def test_exact_evidence_matches_recorded_values(ref):
    _, model, X, value = ref
    assert model.log_evidence(X) == pytest.approx(value, abs=1e-10)


@pytest.mark.parametrize("ref", REFS, ids=IDS)
def test_prior_normalised_and_consistent_with_sampler(ref):
    _, model, X, _ = ref
    rng = np.random.default_rng(0)
    # importance-sampling estimate of the prior's integral with a broad reference density
    # in the unconstrained basis (a Gaussian of scale 3): must be 1
    D = model.param_space.size
    phi = rng.normal(0, 3.0, size=(20000, D))
    params, logdet = model.param_space.from_unconstrained(phi)
    log_g = -0.5 * np.sum((phi / 3.0) ** 2, axis=1) - D * np.log(3.0 * np.sqrt(2 * np.pi))
    w = np.exp(model.log_prior(params) + logdet - log_g)
    assert w.mean() == pytest.approx(1.0, abs=4 * w.std() / np.sqrt(w.size) + 1e-3)
    # sampler vs density: the mean of phi under the sampler equals the density-weighted mean
    draws = model.param_space.to_unconstrained(model.sample_prior(rng, 20000))
    wn = w / w.sum()
    ess = 1.0 / np.sum(wn**2)
    sd = np.sqrt(wn @ (phi - wn @ phi) ** 2)
    assert np.all(np.abs(draws.mean(0) - wn @ phi) <= 5 * sd / np.sqrt(ess) + 0.02)


@pytest.mark.parametrize("ref", REFS, ids=IDS)
def test_log_likelihood_is_vectorised_and_log_joint(ref):
    _, model, X, _ = ref
    rng = np.random.default_rng(1)
    params = model.sample_prior(rng, 4)
    ll = model.log_likelihood(params, X)
    assert ll.shape == (4,)
    one = [model.log_likelihood({k: v[i:i + 1] for k, v in params.items()}, X)[0] for i in range(4)]
    np.testing.assert_allclose(ll, one, rtol=1e-12)
    np.testing.assert_allclose(model.log_joint(params, X), model.log_prior(params) + ll)


def test_likelihood_sums_to_one_over_all_data():
    rng = np.random.default_rng(2)
    # latent-class: every single case
    m = LatentClassModel(2, (3, 2))
    theta = m.sample_prior(rng, 3)
    Y = np.array(list(itertools.product(range(3), range(2))))
    tot = np.exp(m.log_likelihood_per_case(theta, Y)).sum(axis=1)
    np.testing.assert_allclose(tot, 1.0, rtol=1e-12)
    # HMM: all sequences of length 3
    h = DiscreteHMM(2, 3)
    theta = h.sample_prior(rng, 3)
    tot = np.zeros(3)
    for seq in itertools.product(range(3), repeat=3):
        tot += np.exp(h.log_likelihood(theta, h.prepare_data(list(seq))))
    np.testing.assert_allclose(tot, 1.0, rtol=1e-12)


def test_brute_force_evidence_by_quadrature():
    # 1-d integrals of prior x likelihood reproduce the enumeration / closed forms
    m = BetaBernoulli(2.0, 3.0)
    X = m.prepare_data([1, 0, 1, 1, 0, 1])
    f = lambda p: np.exp(m.log_joint({"theta": np.array([[p, 1 - p]])}, X)[0])
    assert np.log(integrate.quad(f, 0, 1)[0]) == pytest.approx(m.log_evidence(X), abs=1e-8)
    g = GaussianMean(0.3, 1.5, 0.7)
    Y = g.prepare_data([0.1, -0.4, 1.2])
    f = lambda mu: np.exp(g.log_joint({"w": np.array([[mu]])}, Y)[0])
    assert np.log(integrate.quad(f, -20, 20)[0]) == pytest.approx(g.log_evidence(Y), abs=1e-8)
    r = GaussianMixture1D(2, 4.0, 1.0)
    Z = r.prepare_data(MIXTURE_X)
    g1 = np.linspace(-12, 12, 601)
    A, B = np.meshgrid(g1, g1)
    lj = r.log_joint({"mu": np.column_stack([A.ravel(), B.ravel()])}, Z)
    h = g1[1] - g1[0]
    val = np.log(np.sum(np.exp(lj)) * h * h)  # trapezoid rule, negligible mass at the edges
    assert val == pytest.approx(-11.106897070914211, abs=1e-6)


LATENT_IDS = ["latent-class", "discrete-hmm", "gaussian-mixture-1d"]


@pytest.mark.parametrize("ref", [r for r in REFS if r[0] in LATENT_IDS], ids=LATENT_IDS)
def test_e_step_identities(ref):
    _, model, X, _ = ref
    rng = np.random.default_rng(3)
    for _ in range(5):
        theta = model.sample_prior(rng, 1)
        e = model.e_step(theta, X)
        assert e.loglik == pytest.approx(model.log_likelihood(theta, X)[0], abs=1e-10)
        assert e.entropy >= -1e-12
        assert e.expected_complete_loglik + e.entropy == pytest.approx(e.loglik, abs=1e-10)


@pytest.mark.parametrize("name", ["latent-class", "gaussian-mixture-1d"])
def test_vb_below_exact_monotone_and_collapsed_bound_identity(name):
    _, model, X, exact = dict((r[0], r) for r in REFS)[name]
    X_raw = LATENT_CLASS_X if name == "latent-class" else MIXTURE_X
    fit = model.fit_vb(X_raw, random_state=0, n_init=5)
    for F, _ in fit.restarts_:
        assert F <= exact + 1e-9
    b = fit.lower_bounds_
    assert np.all(np.diff(b) >= -1e-9 * abs(b[-1]))
    assert fit.lower_bound_ == max(F for F, _ in fit.restarts_)
    # collapsed-bound identity: the recorded bound (collapsed form after a VBM step) equals
    # the explicit F = <ln p(z, y | theta)> + H[q(z)] - KL(q(theta) || p(theta)) for the same pair
    rng = np.random.default_rng(0)
    R = rng.dirichlet(np.ones(model.K), size=model.n_cases(X))
    stats = model._stats(R, X)
    collapsed = model._entropy(R) + model.log_complete_evidence(stats)
    q = model.q_from_stats(stats)
    thetas = q.sample(rng, 40000)
    L = model._log_joint_cases(thetas, X)  # (S, n, K)
    explicit = (np.mean(np.einsum("snk,nk->s", L, R)) + model._entropy(R)
                - np.mean(q.log_pdf(thetas) - model.log_prior(thetas)))
    assert explicit == pytest.approx(collapsed, abs=0.05)
