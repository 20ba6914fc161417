"""Honest error bars of the Monte Carlo evidence estimators: the standard error is a
between-run spread, unreliable results are flagged and warned about, and at their default
budgets AIS and IS lie within their error bars of the exact evidence of the enumerable
reference problems."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.scoring import log_mean_exp, score, scoring_model_for
from sklearn_vb._core.numerics import between_run_stderr, split_runs
from sklearn_vb.scoring._reliability import reliability_reasons, runs_disagree
from sklearn_vb.scoring import UnreliableEstimateWarning
from tests.oracles.reference_models import (
    BayesianLinearRegression,
    BetaBernoulli,
    DirichletCategorical,
    DiscreteHMM,
    GaussianMean,
    GaussianMixture1D,
    LatentClassModel,
)


def tolerance_ok(est, se, exact):
    """Within max(0.05, 4 standard errors) of the exact value, never more than 0.5 off."""
    err = abs(est - exact)
    return err <= max(0.05, 4 * se) and err <= 0.5


# ------------------------------------------------------------------------ the checks


def test_runs_disagree_is_a_chi_square_test():
    # three runs 0.1 apart with error bars 0.1: consistent
    assert not runs_disagree([0.0, 0.1, -0.1], [0.1, 0.1, 0.1])
    # the same spread with error bars 100 times smaller: they disagree
    assert runs_disagree([0.0, 0.1, -0.1], [1e-3, 1e-3, 1e-3])
    # a run without an error bar cannot vouch for a different value
    assert runs_disagree([0.0, 0.1], [0.1, 0.0])
    assert not runs_disagree([0.3, 0.3], [0.0, 0.0])
    assert not runs_disagree([1.0], [0.0])


def test_reliability_reasons_name_each_failure():
    assert reliability_reasons(50.0, 10.0, [0.0, 0.05], [0.1, 0.1], -1.0, 0.1, -2.0) == []
    r = reliability_reasons(1.5, 10.0)
    assert len(r) == 1 and "effective sample size 1.5" in r[0]
    r = reliability_reasons(50.0, 10.0, [0.0], [0.1])
    assert len(r) == 1 and "single run" in r[0]
    r = reliability_reasons(50.0, 10.0, estimate=-10.0, stderr=1.0, lower_bound=-7.0)
    assert len(r) == 1 and "below the lower bound" in r[0]
    # within two standard errors of the bound: not flagged
    assert reliability_reasons(50.0, 10.0, estimate=-8.9, stderr=1.0, lower_bound=-7.0) == []


# ------------------------------------------------------ planted failures, through score()


def test_ais_warns_when_the_effective_sample_size_is_tiny():
    model = BetaBernoulli(1, 1)
    X = [1] * 60 + [0] * 10  # from the prior, two temperatures cannot reach the posterior
    with pytest.warns(UnreliableEstimateWarning, match="effective sample size") as rec:
        r = score(model, X, "ais", n_temperatures=2, n_chains=16, start="prior",
                  random_state=0)
    assert "n_temperatures" in str(rec[0].message)  # says what to increase
    assert r.diagnostics["ess"] < 4
    assert r.diagnostics["reliable"] is False and r.diagnostics["stderr_reliable"] is False


def test_ais_and_is_warn_below_a_known_lower_bound():
    model = BetaBernoulli(1, 1)
    X = [1] * 7 + [0] * 3
    exact = model.log_evidence(model.prepare_data(X))
    for method, kw in (("ais", dict(n_temperatures=200)), ("is", {})):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnreliableEstimateWarning)
            ok = score(model, X, method, random_state=0, lower_bound=exact - 1.0, **kw)
        assert ok.diagnostics["reliable"]
        # a planted "lower bound" 5 nats above the truth: the estimate falls below it
        with pytest.warns(UnreliableEstimateWarning, match="below the lower bound"):
            bad = score(model, X, method, random_state=0, lower_bound=exact + 5.0, **kw)
        assert not bad.diagnostics["reliable"]
        assert bad.log_evidence == ok.log_evidence


def test_is_warning_and_stderr_reliable_agree():
    """A proposal far from the posterior: the warning fires and the diagnostics say the
    same; a good proposal gives neither."""
    model = BetaBernoulli(1, 1)
    X = [1] * 3000 + [0] * 1000
    with pytest.warns(UnreliableEstimateWarning) as rec:
        bad = score(model, X, "is", proposal="prior", n_samples=50, n_runs=4, random_state=0)
    assert len(rec) == 1
    assert bad.diagnostics["stderr_reliable"] is False
    assert bad.diagnostics["unreliable_reasons"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        good = score(model, X, "is", random_state=0)
    assert good.diagnostics["stderr_reliable"] is True
    assert good.diagnostics["unreliable_reasons"] == []


# ------------------------------------------------------------ the stderr is a spread


def test_is_stderr_is_the_between_run_spread():
    model = BetaBernoulli(1, 1)
    X = [1] * 7 + [0] * 3
    r = score(model, X, "is", n_samples=300, n_runs=6, random_state=3)
    a = r.diagnostics["log_weights"]
    runs = np.split(a, 6)
    per_run = [log_mean_exp(x) for x in runs]
    np.testing.assert_allclose(r.diagnostics["per_run_estimates"], per_run)
    spread = np.std(per_run, ddof=1) / np.sqrt(6)
    assert r.diagnostics["stderr_between_runs"] == pytest.approx(spread)
    assert r.stderr == pytest.approx(max(spread, r.diagnostics["stderr_delta"]))


def test_ais_stderr_is_the_between_run_spread():
    model = LatentClassModel(2, (3, 3), 1.0)
    X = [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]]
    r = score(model, X, "ais", n_temperatures=100, n_chains=12, n_runs=3, random_state=1)
    lw = r.diagnostics["log_weights"]
    per_run = [log_mean_exp(x) for x in np.split(lw, 3)]
    np.testing.assert_allclose(r.diagnostics["run_estimates"], per_run)
    runs_se = np.std(per_run, ddof=1) / np.sqrt(3)
    chains_se = np.std(lw, ddof=1) / np.sqrt(12)
    assert r.diagnostics["stderr_between_runs"] == pytest.approx(runs_se)
    assert r.stderr == pytest.approx(max(runs_se, chains_se))
    assert r.log_evidence == pytest.approx(log_mean_exp(lw))


def test_split_runs_and_between_run_stderr():
    parts = split_runs(np.arange(10.0), 3)
    assert [p.size for p in parts] == [4, 3, 3]
    assert between_run_stderr([1.0, 3.0]) == pytest.approx(np.sqrt(2.0) / np.sqrt(2.0))
    assert between_run_stderr([1.0]) is None
    with pytest.raises(ValueError, match="n_runs"):
        split_runs(np.zeros(3), 0)


# ----------------------------------------------- default budgets on exact references


REFERENCES = [
    ("beta-bernoulli", BetaBernoulli(1, 1), [1] * 7 + [0] * 3, {}),
    ("dirichlet-categorical", DirichletCategorical([1, 1, 1]), [0, 0, 0, 2, 2], {}),
    ("gaussian-mean", GaussianMean(0.0, 1.0, 1.0), [0.5, 1.5], {}),
    ("linear-regression", BayesianLinearRegression(2, alpha=1.0, beta=1.0),
     np.column_stack([[[1, 0], [0, 1], [1, 1]], [1, -1, 0.5]]), {}),
    ("latent-class", LatentClassModel(2, (3, 3), 1.0),
     [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]], {}),
    ("discrete-hmm", DiscreteHMM(2, 3, 1.0), [0, 0, 1, 2, 2, 2, 1, 0], {"lengths": [4, 4]}),
    ("gaussian-mixture-1d", GaussianMixture1D(2, 4.0, 1.0), [-2.1, -1.7, 1.9, 2.4, 0.3], {}),
]


@pytest.mark.parametrize("name, model, X, fit", REFERENCES, ids=[r[0] for r in REFERENCES])
def test_ais_at_default_budget_matches_exact_evidence(name, model, X, fit):
    exact = model.log_evidence(model.prepare_data(X, **fit))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        r = score(model, X, "ais", random_state=0, **fit)
    assert tolerance_ok(r.log_evidence, r.stderr, exact), (r.log_evidence - exact, r.stderr)
    assert r.diagnostics["reliable"]
    assert r.diagnostics["n_temperatures"] >= 1000


@pytest.mark.parametrize("name, model, X, fit", REFERENCES[:4], ids=[r[0] for r in REFERENCES[:4]])
def test_is_at_default_budget_matches_exact_evidence(name, model, X, fit):
    exact = model.log_evidence(model.prepare_data(X, **fit))
    r = score(model, X, "is", random_state=0, **fit)
    assert tolerance_ok(r.log_evidence, r.stderr, exact), (r.log_evidence - exact, r.stderr)
    assert r.diagnostics["reliable"]


def test_scores_are_deterministic_with_a_fixed_random_state():
    model = LatentClassModel(2, (3, 3), 1.0)
    X = [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]]
    a = score(model, X, "ais", n_chains=4, pilot_temperatures=32, random_state=5)
    b = score(model, X, "ais", n_chains=4, pilot_temperatures=32, random_state=5)
    assert a.log_evidence == b.log_evidence and a.stderr == b.stderr
    assert a.diagnostics["pilot"] == b.diagnostics["pilot"]
    c = score(model, X, "ais", n_chains=4, pilot_temperatures=32, random_state=6)
    assert c.log_evidence != a.log_evidence
    m = BetaBernoulli(1, 1)
    i1 = score(m, [1, 0, 1], "is", random_state=2)
    i2 = score(m, [1, 0, 1], "is", random_state=2)
    assert i1.log_evidence == i2.log_evidence and i1.stderr == i2.stderr


# -------------------------------------------------- compiled DAG AIS started from q


DAG_X = np.array([[0, 1], [1, 1], [2, 0], [0, 0], [1, 0], [2, 1], [0, 1], [1, 1]])


@pytest.fixture(scope="module")
def small_dag():
    est = VBDiscreteDAG(n_components=2, cardinalities=[3, 2], random_state=0).fit(DAG_X)
    model = scoring_model_for(est)
    return est, model, model.prepare_data(DAG_X)


def test_compiled_ais_from_q_with_one_temperature_is_importance_sampling(small_dag):
    """betas = (0, 1): one move that leaves s invariant, then the weight of the state,
    exactly ln p(theta) + ln p(X | theta) - ln s(theta) with normalised densities."""
    est, model, data = small_dag
    q = model.variational_posterior()
    alpha = model.flat_concentrations(q)
    r = model.run_ais_compiled(data, np.array([0.0, 1.0]), np.random.SeedSequence(4).spawn(5),
                               start_alpha=alpha)
    theta = r["final_params"]
    expected = model.log_prior(theta) + model.log_likelihood(theta, data) - q.log_pdf(theta)
    np.testing.assert_allclose(r["log_weights"], expected, rtol=0, atol=1e-9)
    # with the prior as the start density the path is the prior path
    prior = model._flat_prior()
    r0 = model.run_ais_compiled(data, np.array([0.0, 1.0]), np.random.SeedSequence(4).spawn(5),
                                start_alpha=prior)
    np.testing.assert_allclose(r0["log_weights"],
                               model.log_likelihood(r0["final_params"], data), atol=1e-9)


def test_compiled_ais_from_q_matches_exact_dag_evidence(small_dag):
    est, model, data = small_dag
    exact = model.log_evidence(data)
    r = score(est, DAG_X, "ais", random_state=0)
    assert r.diagnostics["n_temperatures"] >= 1000
    assert tolerance_ok(r.log_evidence, r.stderr, exact), (r.log_evidence - exact, r.stderr)
    assert r.log_evidence >= est.lower_bound_ - 2 * r.stderr
