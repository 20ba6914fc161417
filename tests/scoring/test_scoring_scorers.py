"""Scorers against exact evidences of the reference problems
(``tests/oracles/reference_models.py``, named as in ``tests/scoring/test_scoring_reference.py``)."""

import joblib
import numpy as np
import pytest

from sklearn_vb.scoring import score
from sklearn_vb.scoring._cs import cs_value
from sklearn_vb.scoring._dimension import effective_dimension
from sklearn_vb._core.evidence.mcmc_moves import ExactTemperedKernel
from sklearn_vb.scoring._ais import run_ais, run_reverse_ais
from sklearn_vb._core.evidence.posteriors import FactorizedPosterior, GaussianQ
from tests.oracles.reference_models import (
    BayesianLinearRegression,
    BetaBernoulli,
    DirichletCategorical,
    DiscreteHMM,
    GaussianMean,
    GaussianMixture1D,
    LatentClassModel,
)
from sklearn_vb.scoring.schedules import (
    beal_schedule,
    check_schedule,
    make_schedule,
    sigmoid_schedule,
)

LATENT_CLASS_X = [[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]]
LATENT_CLASS_EXACT = -13.721206877201771
MIXTURE_X = [-2.1, -1.7, 1.9, 2.4, 0.3]
MIXTURE_EXACT = -11.106897070914211
REGRESSION_X = np.column_stack([[[1, 0], [0, 1], [1, 1]], [1, -1, 0.5]])


def conjugate_instances():
    return [
        (BetaBernoulli(1, 1), [1] * 7 + [0] * 3, -7.185387015580417),
        (DirichletCategorical([1, 1, 1]), [0, 0, 0, 2, 2], -5.347107530717469),
        (GaussianMean(0, 1, 1), [0.5, 1.5], -2.970516544076734),
        (BayesianLinearRegression(2, 1.0, 1.0), REGRESSION_X, -4.359036370453936),
    ]


def tolerance_ok(est, se, exact):
    """Tolerance of the stochastic scorers: within max(0.05, 4 standard errors) of the exact
    value and never more than 0.5 nats off (a large standard error is itself a failure)."""
    err = abs(est - exact)
    return err <= max(0.05, 4 * se) and err <= 0.5


# ---------------------------------------------------------------------------------- VB / CS


@pytest.mark.parametrize("inst", conjugate_instances(),
                         ids=["beta-bernoulli", "dirichlet-categorical", "gaussian-mean",
                              "linear-regression"])
def test_vb_and_is_with_the_exact_posterior(inst):
    model, X, exact = inst
    fit = model.fit_vb(X)
    r = score(fit, X, "vb")
    assert r.log_evidence == pytest.approx(exact, abs=1e-10) and r.bound == "lower"
    # importance sampling with the exact posterior as proposal: zero-variance weights
    r = score(fit, X, "is", proposal="vb", n_samples=500, n_runs=2, random_state=0)
    np.testing.assert_allclose(r.diagnostics["log_weights"], exact, atol=1e-8)
    assert r.diagnostics["kl_theta"] == pytest.approx(0.0, abs=1e-8)
    assert r.n_eff == pytest.approx(1000.0)
    assert r.log_evidence == pytest.approx(exact, abs=1e-8)
    # CS with no latent variables is the exact evidence
    if hasattr(model, "log_complete_evidence"):
        assert score(fit, X, "cs").log_evidence == pytest.approx(exact, abs=1e-8)


def test_cs_formulas_agree_and_stay_below_exact_for_random_theta():
    rng = np.random.default_rng(0)
    for model, X, exact in [
        (LatentClassModel(2, (3, 3)), LATENT_CLASS_X, LATENT_CLASS_EXACT),
        (DiscreteHMM(2, 3), None, -9.759777231503435),
    ]:
        data = (model.prepare_data(X) if X is not None
                else model.prepare_data([0, 0, 1, 2, 2, 2, 1, 0], lengths=[4, 4]))
        values = []
        for _ in range(300):
            theta = model.sample_prior(rng, 1)
            v, e, log_cev = cs_value(model, theta, data)  # asserts both formulas agree
            assert e.entropy + log_cev == pytest.approx(v, abs=1e-9)
            values.append(v)
        assert max(values) <= exact + 1e-9
        theta = model.fit_point(data, rng=rng)
        assert cs_value(model, theta, data)[0] <= exact + 1e-9


@pytest.mark.parametrize("model,X,exact", [
    (LatentClassModel(2, (3, 3)), LATENT_CLASS_X, LATENT_CLASS_EXACT),
    (GaussianMixture1D(2, 4.0, 1.0), MIXTURE_X, MIXTURE_EXACT),
], ids=["latent-class", "gaussian-mixture-1d"])
def test_vb_started_from_the_cs_point(model, X, exact):
    fit = model.fit_vb(X, random_state=0)
    cs = score(fit, X, "cs", random_state=1)
    vb = score(fit, X, "vb", init="cs", random_state=1)
    assert cs.bound == "lower" and cs.log_evidence <= exact + 1e-9
    assert vb.diagnostics["first_bound"] == pytest.approx(cs.log_evidence, abs=1e-9)
    b = vb.diagnostics["lower_bounds"]
    assert np.all(np.diff(b) >= -1e-9)
    assert cs.log_evidence - 1e-9 <= vb.log_evidence <= exact + 1e-9
    # alias correction reported separately
    vb_c = score(fit, X, "vb", alias_correction=True)
    assert vb_c.log_alias_correction == pytest.approx(np.log(2))
    assert vb_c.log_evidence == fit.lower_bound_


def test_bic_counts_and_orientation_values_on_latent_class():
    model = LatentClassModel(2, (3, 3))
    fit = model.fit_vb(LATENT_CLASS_X, random_state=0)
    r = score(fit, LATENT_CLASS_X, "bic", estimate="ml", n_init=30, random_state=0)
    d = r.diagnostics
    assert d["d"] == 9 and d["n"] == 6
    assert r.log_evidence == pytest.approx(d["loglik"] - 4.5 * np.log(6), abs=1e-12)
    assert d["loglik"] == pytest.approx(-7.978, abs=2e-3)  # the ML optimum of this problem
    rp = score(fit, LATENT_CLASS_X, "bicp", n_init=5, random_state=0)
    assert rp.log_evidence == pytest.approx(
        rp.diagnostics["loglik"] + rp.diagnostics["log_prior"] - 4.5 * np.log(6), abs=1e-12)


def test_effective_dimension_of_latent_class_model():
    k, p = 3, 4
    model = LatentClassModel(k, (p,))
    rng = np.random.default_rng(0)
    theta = model.sample_prior(rng, 1)
    X = model.prepare_data(np.tile(np.arange(p), 50)[:, None])
    assert effective_dimension(model, X, theta, rng, "incomplete", R=60) == p - 1
    assert effective_dimension(model, X, theta, rng, "complete", R=60) == (k - 1) + k * (p - 1)


def test_cs_dagger_on_latent_class_model():
    # two 3-valued indicators of a binary class: the observed-data model is the set of
    # rank <= 2 3x3 tables (d = 7), the complete-data model is regular (d' = 9)
    rng = np.random.default_rng(0)
    model = LatentClassModel(2, (3, 3))
    X, _ = model.simulate(model.sample_prior(rng, 1), rng, 300)
    cs = score(model, X, "cs", random_state=0)
    cd = score(model, X, "cs_dagger", random_state=0)
    assert (cd.diagnostics["d"], cd.diagnostics["d_complete"]) == (7, 9)
    assert cd.log_evidence == pytest.approx(cs.log_evidence + np.log(300), abs=1e-9)
    assert cd.bound == "approx" and cs.bound == "lower"


# ---------------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("model,X,exact", [
    (GaussianMean(0, 1, 1), [0.5, 1.5], -2.970516544076734),
    (BayesianLinearRegression(2, 1.0, 1.0), REGRESSION_X, -4.359036370453936),
], ids=["gaussian-mean", "linear-regression"])
def test_laplace_exact_on_gaussian_posteriors(model, X, exact):
    r = score(model, X, "laplace")
    assert r.log_evidence == pytest.approx(exact, abs=1e-6)
    assert not r.diagnostics["degenerate"]


def test_laplace_beats_bic_on_beta_bernoulli():
    rng = np.random.default_rng(0)
    model = BetaBernoulli(1, 1)
    mean_err = {}
    for n in (20, 100):
        lap, bic = [], []
        for _ in range(15):
            p = rng.uniform(0.2, 0.8)
            X = (rng.random(n) < p).astype(int)
            exact = model.log_evidence(model.prepare_data(X))
            lap.append(abs(score(model, X, "laplace").log_evidence - exact))
            bic.append(abs(score(model, X, "bic", estimate="ml").log_evidence - exact))
        assert np.mean(lap) <= 0.2 * np.mean(bic)
        mean_err[n] = np.mean(lap)
    assert mean_err[100] < 0.5 * mean_err[20]  # shrinks roughly like 1/n


# ---------------------------------------------------------------------------------- IS


def _gauss_kl(m1, s1, m2, s2):
    return np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5


def test_is_kl_estimate_matches_analytic():
    model = GaussianMean(0, 1, 1)
    X = [0.5, 1.5, -0.2, 0.9]
    post = model.posterior(model.prepare_data(X))["w"]
    m, s = post.mean_[0], np.sqrt(post.cov[0, 0])
    for c in (0.9, 1.3):
        g = FactorizedPosterior([GaussianQ("w", [m + 0.1 * s], [[(c * s) ** 2]])])
        r = score(model, X, "is", proposal="vb", posterior=g, n_samples=2000, n_runs=5,
                  random_state=1)
        kl = _gauss_kl(m + 0.1 * s, c * s, m, s)
        se = np.std(r.diagnostics["log_weights"]) / np.sqrt(10000)
        assert abs(r.diagnostics["kl_theta"] - kl) <= 0.01 + 3 * se
        assert tolerance_ok(r.log_evidence, r.stderr, model.log_evidence(model.prepare_data(X)))


def test_is_heavy_tailed_proposal_reduces_spread():
    model = GaussianMean(0, 1, 1)
    X = [0.5, 1.5, -0.2, 0.9]
    post = model.posterior(model.prepare_data(X))["w"]
    g = FactorizedPosterior([GaussianQ("w", post.mean_, 0.36 * post.cov)])  # c = 0.6
    spread = {}
    for prop in ("vb", "vb_t"):
        ests = [score(model, X, "is", proposal=prop, posterior=g, n_samples=500, n_runs=1,
                      random_state=s).log_evidence for s in range(30)]
        spread[prop] = np.std(ests)
    assert spread["vb_t"] * 3 <= spread["vb"]


def test_is_mixture_and_defensive_proposals_on_gaussian_mixture():
    model = GaussianMixture1D(2, 4.0, 1.0)
    fit = model.fit_vb(MIXTURE_X, random_state=0, n_init=6)
    for prop in ("vb_mixture", "defensive"):
        r = score(fit, MIXTURE_X, "is", proposal=prop, n_samples=4000, n_runs=3, random_state=0)
        assert tolerance_ok(r.log_evidence, r.stderr, MIXTURE_EXACT), (prop, r.log_evidence)
    assert r.diagnostics["vb_gap"] > 0


# ---------------------------------------------------------------------------------- AIS


def test_ais_schedules():
    for name in ("linear", "sigmoid", "beal", "geometric"):
        b = make_schedule(name, 50)
        assert b[0] == 0 and b[-1] == 1 and np.all(np.diff(b) > 0) and b.size == 51
    assert beal_schedule(2, 0.2)[1] == pytest.approx(1 / 7)
    np.testing.assert_allclose(beal_schedule(10, 1e8), np.linspace(0, 1, 11), atol=1e-7)
    K, d = 9, 4.0
    t = np.arange(1, K + 2)
    raw = 1 / (1 + np.exp(-d * (2 * t / (K + 1) - 1)))
    np.testing.assert_allclose(sigmoid_schedule(K, d), (raw - raw[0]) / (raw[-1] - raw[0]))
    with pytest.raises(ValueError, match="increasing"):
        check_schedule([0, 0.5, 0.5, 1])
    with pytest.raises(ValueError, match="start at 0"):
        check_schedule([0.1, 1])


def test_ais_with_exact_tempered_kernel():
    model = GaussianMean(0, 1, 1)
    X = model.prepare_data([0.5, 1.5, 0.3])
    exact = model.log_evidence(X)
    kern = ExactTemperedKernel(model)
    # K = 1: likelihood weighting, log-weight = l(theta_0) for theta_0 ~ prior
    r = run_ais(model, X, np.array([0.0, 1.0]), kern, 50, random_state=0)
    th = r["final_params"]
    np.testing.assert_allclose(r["log_weights"], model.log_likelihood(th, X))
    # K large with exact kernels: per-chain log-weights concentrate on ln Z
    r = run_ais(model, X, make_schedule("linear", 300), kern, 50, random_state=0)
    assert np.var(r["log_weights"]) < 1e-2
    assert abs(np.mean(r["log_weights"]) - exact) < 0.05


@pytest.mark.parametrize("case", ["beta-bernoulli", "linear-regression"])
def test_ais_accuracy_on_conjugate_models(case):
    rng = np.random.default_rng(11)
    if case == "beta-bernoulli":
        model = BetaBernoulli(1, 1)
        X = (rng.random(100) < rng.uniform()).astype(int)
    else:
        model = BayesianLinearRegression(3)
        X, _ = model.simulate(model.sample_prior(rng, 1), rng, 50)
    fit = model.fit_vb(X)
    exact = fit.lower_bound_
    r = score(fit, X, "ais", n_temperatures=1000, n_chains=64, n_steps=3, kernel="rw",
              random_state=3)
    assert r.bound == "stochastic_lower"
    assert tolerance_ok(r.log_evidence, r.stderr, exact), (r.log_evidence - exact, r.stderr)
    assert not r.diagnostics["vb_violation"]
    acc = r.diagnostics["acceptance_by_quarter"]
    assert all(0.15 < a < 0.9 for a in acc)


def test_ais_on_latent_models():
    rng = np.random.default_rng(5)
    model = LatentClassModel(2, (3, 3))
    X, _ = model.simulate(model.sample_prior(rng, 1), rng, 8)
    exact = model.log_evidence(model.prepare_data(X))
    r = score(model, X, "ais", n_temperatures=1000, n_chains=16, random_state=0)
    assert tolerance_ok(r.log_evidence, r.stderr, exact), (r.log_evidence - exact, r.stderr)
    # the 1-d Gaussian mixture with random-walk kernels
    model = GaussianMixture1D(2, 4.0, 1.0)
    r = score(model, MIXTURE_X, "ais", n_temperatures=1000, n_chains=16, n_steps=2,
              random_state=0)
    assert tolerance_ok(r.log_evidence, r.stderr, MIXTURE_EXACT), \
        (r.log_evidence - MIXTURE_EXACT, r.stderr)


def test_ais_results_do_not_depend_on_n_jobs_and_are_reproducible():
    model = BetaBernoulli(1, 1)
    X = [1, 0, 1, 1, 1, 0, 1, 1]
    kw = dict(n_temperatures=30, n_chains=6, random_state=7)
    a = score(model, X, "ais", **kw)
    with joblib.parallel_config(backend="threading"):
        b = score(model, X, "ais", n_jobs=2, **kw)
    c = score(model, X, "ais", **kw)
    np.testing.assert_allclose(a.diagnostics["log_weights"], b.diagnostics["log_weights"],
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.diagnostics["log_weights"], c.diagnostics["log_weights"])


def test_ais_verbose_progress(capsys):
    model = BetaBernoulli(1, 1)
    # verbose=1 stays silent for a run of a fraction of a second ...
    score(model, [1, 0, 1], "ais", n_temperatures=20, n_chains=2, verbose=1, random_state=0)
    assert capsys.readouterr().out == ""
    # ... verbose=2 prints every tenth of the schedule
    score(model, [1, 0, 1], "ais", n_temperatures=20, n_chains=2, verbose=2, random_state=0)
    out = capsys.readouterr().out
    assert out.count("[ais]") == 10 and "20/20 (100%)" in out


# ---------------------------------------------------------------------------------- bounds


def test_stochastic_bounds_per_chain():
    """Every chain's log-weight is itself an estimate: forward ones may exceed ln Z by b
    with probability < e^-b, reverse ones may fall below by b with probability < e^-b."""
    rng = np.random.default_rng(2)
    model = BetaBernoulli(1, 1)
    X = model.prepare_data((rng.random(60) < 0.3).astype(int))
    exact = model.log_evidence(X)
    from sklearn_vb._core.evidence.mcmc_moves import make_kernel

    kern = make_kernel("rw", model)
    betas = make_schedule("sigmoid", 20)
    R = 400
    lw = run_ais(model, X, betas, kern, R, random_state=0)["log_weights"]
    ex = model.sample_tempered_posterior(X, 1.0, rng, R)
    lu = run_reverse_ais(model, X, betas, kern, ex, R, random_state=1)["log_u"]
    up = -lu
    for b in (1.0, 2.0):
        tol = np.exp(-b) + 3 * np.sqrt(np.exp(-b) * (1 - np.exp(-b)) / R)
        assert np.mean(lw > exact + b) <= tol
        assert np.mean(up < exact - b) <= tol
    assert np.mean(lw) <= exact + 3 * np.std(lw) / np.sqrt(R)
    assert np.mean(up) >= exact - 3 * np.std(up) / np.sqrt(R)
    # the poor schedule is visibly loose in both directions
    assert np.mean(lw) < exact < np.mean(up)


def test_bdmc_bracketing_and_convergence():
    gaps = {30: [], 1000: []}
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        model = BayesianLinearRegression(3)
        w = model.sample_prior(rng, 1)
        X, _ = model.simulate(w, rng, 50)
        exact = model.log_evidence(model.prepare_data(X))
        r = score(model, X, "bdmc", K_grid=(30, 1000), gap_tol=0.0, n_chains=16, n_steps=2,
                  kernel="rw", exact_posterior_samples=w, random_state=seed)
        assert r.bound == "interval"
        for h in r.diagnostics["history"]:
            # short schedules: only the stochastic-bound guarantee (P(overshoot > b) < e^-b,
            # b = 3); long ones: within 0.5 nats
            b = 3.0 if h["K"] < 1000 else 0.5
            assert h["lower"] <= exact + b and h["upper"] >= exact - b
            gaps[h["K"]].append(h["gap"])
        lo, hi = r.interval
        assert abs(lo - exact) < 0.5 and abs(hi - exact) < 0.5
    assert np.mean(gaps[1000]) <= 0.25 * np.mean(gaps[30])
    assert np.mean(gaps[1000]) < 0.5


def test_bdmc_on_hmm_simulated_from_prior():
    rng = np.random.default_rng(4)
    model = DiscreteHMM(2, 3)
    theta = model.sample_prior(rng, 1)
    X, _ = model.simulate(theta, rng, lengths=[6, 6])
    data = model.prepare_data(X, lengths=[6, 6])
    exact = model.log_evidence(data)
    r = score(model, X, "bdmc", lengths=[6, 6], K_grid=(1000,), n_chains=16,
              exact_posterior_samples=theta, random_state=0)
    lo, hi = r.interval
    assert abs(lo - exact) < 0.5 and abs(hi - exact) < 0.5 and abs(hi - lo) < 1.0
    # upper - F bounds the VB gap from above (here F of a CS-started VB run)
    cs = score(model, X, "cs", lengths=[6, 6], random_state=0)
    assert hi - cs.log_evidence >= (exact - cs.log_evidence) - 0.5


def test_rais_needs_exact_samples_for_latent_models():
    model = LatentClassModel(2, (3, 3))
    with pytest.raises(ValueError, match="exact_posterior_samples"):
        score(model, LATENT_CLASS_X, "rais", n_temperatures=10, n_chains=2)


def test_ais_start_from_exact_q_gives_exact_weights():
    # with q = p(theta | X), ln f_b = ln p(theta, X) - (1 - b) ln Z, so every chain's
    # log-weight is exactly ln Z whatever the kernel does
    model = BayesianLinearRegression(2, 1.0, 1.0)
    fit = model.fit_vb(REGRESSION_X)
    r = score(fit, REGRESSION_X, "ais", start="q", n_temperatures=50, n_chains=8,
              random_state=0)
    np.testing.assert_allclose(r.diagnostics["log_weights"], -4.359036370453936, atol=1e-9)


def test_capability_checks_name_the_missing_method():
    class Minimal:
        from sklearn_vb.scoring import ParamBlock, ParamSpace

        param_space = ParamSpace([ParamBlock("w", (1,))])

        def log_likelihood(self, params, X):
            return np.zeros(len(params["w"]))

    with pytest.raises(NotImplementedError, match="laplace needs log_prior"):
        score(Minimal(), np.zeros(3), "laplace")
    with pytest.raises(NotImplementedError, match="cs needs e_step"):
        score(Minimal(), np.zeros(3), "cs")
    with pytest.raises(NotImplementedError, match="ais needs log_prior"):
        score(Minimal(), np.zeros(3), "ais")
    with pytest.raises(ValueError, match="schedule"):
        score(GaussianMean(), [0.1], "ais", schedule="cosine")
