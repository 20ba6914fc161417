"""The compiled AIS path of PairwiseMRF: the same chains as the Python transition, the
evidence of tiny MRFs by quadrature, and the cases that keep the Python path."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from sklearn_vb import BoltzmannMachine, PairwiseMRF
from sklearn_vb._core.evidence.posteriors import FactorizedPosterior, StudentTQ
from sklearn_vb.datasets import make_boltzmann_machine, sample_mrf
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._ais import run_ais
from sklearn_vb.scoring.schedules import make_schedule

LOOPY = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 3)]


def _loopy(n, d=0.8):
    coef = make_boltzmann_machine(LOOPY, 5, d, random_state=4)
    X = sample_mrf(coef, LOOPY, 5, n, random_state=5)
    est = PairwiseMRF(LOOPY, prior_variance=1.0).fit(X)
    model = scoring_model_for(est)
    return est, X, model, model.prepare_data(X)


def _both_paths(model, data, start, K=300, C=6, seed=3):
    q = model.variational_posterior(data) if start == "q" else None
    betas = make_schedule("sigmoid", K, 4.0, 0.2, 1e-4)
    kernel = model.annealing_kernel(data)
    fast = run_ais(model, data, betas, kernel, C, 1, seed, None, start, q)
    kernel.compiled = False
    slow = run_ais(model, data, betas, kernel, C, 1, seed, None, start, q)
    return fast, slow


@pytest.mark.parametrize("n, start", [(40, "q"), (5000, "q"), (300, "prior")])
def test_compiled_path_runs_the_python_chains(n, start):
    _, _, model, data = _loopy(n)
    fast, slow = _both_paths(model, data, start)
    # the same moves accepted at every temperature and the same final points; the
    # log-weights differ only by the summation order of the dot products
    np.testing.assert_array_equal(fast["acceptance"], slow["acceptance"])
    np.testing.assert_allclose(fast["final_params"]["coef"], slow["final_params"]["coef"],
                               rtol=0, atol=1e-12)
    scale = max(1.0, float(np.max(np.abs(slow["log_weights"]))))
    np.testing.assert_allclose(fast["log_weights"], slow["log_weights"], rtol=0,
                               atol=1e-13 * scale * 100)
    np.testing.assert_allclose(fast["log_ratios"], slow["log_ratios"], rtol=0,
                               atol=1e-13 * scale * 100)
    assert fast["log_ratios"].shape == slow["log_ratios"].shape
    assert 0.05 < np.mean(fast["acceptance"]) < 0.95


def test_score_is_the_same_through_either_path():
    est, X, model, data = _loopy(200)
    opts = dict(n_temperatures=400, n_chains=8, n_runs=8, start="q", random_state=11)
    fast = score(est, X, "ais", **opts)
    kernel = model.annealing_kernel(data)
    kernel.compiled = False
    slow = score(est, X, "ais", kernel=kernel, **opts)
    assert fast.log_evidence == pytest.approx(slow.log_evidence, rel=1e-12, abs=1e-10)
    assert fast.stderr == pytest.approx(slow.stderr, rel=1e-6)
    assert fast.diagnostics["acceptance_by_quarter"] == slow.diagnostics["acceptance_by_quarter"]


def _one_node_exact(n1, n):
    """ln p(X) of one binary node (weight t, prior N(0, 1)) with n1 ones in n rows."""
    c = n1 * 0.5 - n * np.log(2.0)  # a shift that keeps the integrand near 1

    def f(t):
        return stats.norm.pdf(t) * np.exp(n1 * t - n * np.logaddexp(0, t) - c)
    return float(np.log(integrate.quad(f, -12, 12, epsabs=1e-14, epsrel=1e-13,
                                       points=[np.log(n1 / (n - n1))])[0]) + c)


def _grid_exact(model, data, half_width=7.0, m=401):
    """ln p(X) of a two-parameter MRF by a Riemann sum on an m x m grid."""
    g = np.linspace(-half_width, half_width, m)
    grid = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    lj = model.log_prior({"coef": grid}) + model.log_likelihood({"coef": grid}, data)
    return float(logsumexp(lj) + 2 * np.log(g[1] - g[0]))


@pytest.mark.parametrize("start", ["q", "prior"])
def test_ais_against_quadrature_one_parameter(start):
    X = np.array([[1]] * 61 + [[0]] * 139)
    est = PairwiseMRF().fit(X)
    exact = _one_node_exact(61, 200)
    r = score(est, X, "ais", n_temperatures=1000, n_chains=64, n_runs=8, start=start,
              random_state=0)
    assert abs(r.log_evidence - exact) < 4 * r.stderr + 0.01
    assert r.stderr < 0.1


@pytest.mark.parametrize("start", ["q", "prior"])
def test_ais_against_quadrature_two_parameters(start):
    # two nodes without an edge: two node weights
    rng = np.random.default_rng(7)
    X = np.column_stack([rng.random(150) < 0.25, rng.random(150) < 0.6]).astype(int)
    est = PairwiseMRF(None).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    assert model.n_parameters() == 2
    exact = _grid_exact(model, data)
    r = score(est, X, "ais", n_temperatures=1000, n_chains=64, n_runs=8, start=start,
              random_state=1)
    assert abs(r.log_evidence - exact) < 4 * r.stderr + 0.01
    assert r.stderr < 0.1


def test_ais_against_enumerated_quadrature_on_a_coupled_pair():
    # one edge between two nodes (three weights, correlated in the posterior): the
    # evidence by a Riemann sum on a 3-d grid
    X = np.array([[1, 1]] * 30 + [[0, 0]] * 25 + [[1, 0]] * 5 + [[0, 1]] * 10)
    est = PairwiseMRF([(0, 1)], prior_variance=1.0).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    g = np.linspace(-6.0, 6.0, 61)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    lj = model.log_prior({"coef": grid}) + model.log_likelihood({"coef": grid}, data)
    exact = float(logsumexp(lj) + 3 * np.log(g[1] - g[0]))
    r = score(est, X, "ais", n_temperatures=1000, n_chains=32, n_runs=8, start="q",
              random_state=2)
    assert abs(r.log_evidence - exact) < 4 * r.stderr + 0.02


def test_python_path_where_the_compiled_one_does_not_apply():
    # a chain too long to enumerate under max_exact_states: BP on a forest, exact but
    # not enumerated, so the compiled kernel steps aside
    chain = [(i, i + 1) for i in range(9)]
    rng = np.random.default_rng(0)
    X = (rng.random((60, 10)) < 0.5).astype(int)
    est = PairwiseMRF(chain, max_exact_states=16).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    kernel = model.annealing_kernel(data)
    betas = make_schedule("sigmoid", 20, 4.0, 0.2, 1e-4)
    seeds = np.random.SeedSequence(0).spawn(2)
    assert model.compiled_ais_terms(data) is None
    assert kernel.run_forward_compiled(data, betas, seeds, "prior") is None
    r = run_ais(model, data, betas, kernel, 2, random_state=0)
    assert np.all(np.isfinite(r["log_weights"]))

    _, _, model, data = _loopy(50)
    kernel = model.annealing_kernel(data)
    q = model.variational_posterior(data)
    t = q.blocks[0]
    heavy = FactorizedPosterior([StudentTQ("coef", t.mean_, t.cov, 3.0)])
    assert kernel.run_forward_compiled(data, betas, seeds, "q", heavy) is None
    assert kernel.run_forward_compiled(data, betas, seeds, "q", q) is not None
    kernel.compiled = False
    assert kernel.run_forward_compiled(data, betas, seeds, "q", q) is None


def test_python_path_for_several_steps_and_other_models():
    _, _, model, data = _loopy(50)
    kernel = model.annealing_kernel(data)

    def refuse(*args, **kwargs):
        raise AssertionError("the compiled run takes one move per temperature")
    kernel.run_forward_compiled = refuse
    betas = make_schedule("sigmoid", 20, 4.0, 0.2, 1e-4)
    assert np.all(np.isfinite(run_ais(model, data, betas, kernel, 2, n_steps=2,
                                      random_state=0)["log_weights"]))
    # a Boltzmann machine (hidden units summed out) shares the kernel, not the
    # enumerated likelihood
    rng = np.random.default_rng(1)
    X = (rng.random((30, 2)) < 0.4).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bm = BoltzmannMachine(1, random_state=0).fit(X)
    bmodel = scoring_model_for(bm)
    bdata = bmodel.prepare_data(X)
    bkernel = bmodel.annealing_kernel(bdata)
    assert bkernel.run_forward_compiled(bdata, betas, np.random.SeedSequence(0).spawn(2),
                                        "prior") is None
