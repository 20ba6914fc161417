"""Annealing kernels tuned from the prior and the fitted q: prior precisions
of the random walk, the models' ``annealing_kernel`` hooks used by ``kernel="auto"``,
Dirichlet strengths from tempered row concentrations, and reverse AIS / BDMC through the
compiled DAG kernel.

Oracles: closed-form prior precisions, importance sampling from a heavy-tailed q mixed
over every alias of the posterior (an independent unbiased estimator), exact tempered
posterior draws of a conjugate model, and enumerated evidence of a tiny DAG.
"""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._ais import run_reverse_ais_compiled
from sklearn_vb._core.evidence.mcmc_moves import (
    BlockRandomWalkMH,
    CompositeKernel,
    DirichletMH,
    Target,
    as_rngs,
    estimate_prior_precision,
    make_kernel,
)
from sklearn_vb.hmm.scoring_model import GaussianHMMScoringModel
from sklearn_vb.lds.scoring_model import LDSScoringModel
from tests.oracles.reference_models import DirichletCategorical, GaussianMean
from sklearn_vb.scoring.schedules import make_schedule


def _close(a, b, se, slack=0.15):
    return abs(a - b) <= slack + 3.0 * se


# ------------------------------------------------------------------- prior precisions


def test_prior_precision_estimate_matches_closed_forms():
    """The robust estimate from prior draws recovers 1/variance of a Gaussian prior and
    the closed-form per-coordinate precisions of the LDS (ARD scales 1 to 1e4 apart)."""
    m = GaussianMean(m0=100.0, s0=20.0, sigma=10.0)
    pi = estimate_prior_precision(m)["w"]
    np.testing.assert_allclose(pi, 1 / 400.0, rtol=0.15)
    est, X = _lds_ard_case()
    lds = LDSScoringModel(est)
    closed = lds.kernel_prior_precision()
    assert set(closed) == set(lds.param_space.names)
    # the closed form is what the kernel uses; the estimate (same model without the
    # hook) agrees with it per coordinate within sampling error
    bare = type("Bare", (), {"param_space": lds.param_space, "sample_prior": lds.sample_prior})()
    est_pi = estimate_prior_precision(bare)
    for b in closed:
        np.testing.assert_allclose(est_pi[b], closed[b], rtol=0.3)
    assert closed["A"].max() / closed["A"].min() > 1e3
    k = BlockRandomWalkMH(lds)
    np.testing.assert_array_equal(k.prior_precision["A"], closed["A"])
    # explicit values and their validation
    k1 = BlockRandomWalkMH(m, prior_precision=1.0)
    assert k1.step_size("w", 0.0, 10) == pytest.approx(2.38)
    np.testing.assert_allclose(BlockRandomWalkMH(m).step_size("w", 0.0, 10), 2.38 * 20.0,
                               rtol=0.1)
    with pytest.raises(ValueError, match="prior_precision"):
        BlockRandomWalkMH(m, prior_precision="bogus")
    with pytest.raises(ValueError, match="prior_precision"):
        BlockRandomWalkMH(m, prior_precision={"w": np.ones(3)})


def test_tuned_kernels_leave_the_tempered_posterior_invariant():
    """Started from exact draws of f_beta (conjugate models), a sweep of the prior-tuned
    random walk and of the concentration-tuned Dirichlet kernel keeps the draws exact:
    means and variances match those of fresh exact draws."""
    rng = np.random.default_rng(0)
    gm = GaussianMean(m0=0.0, s0=30.0, sigma=10.0)
    Xg = gm.prepare_data(100.0 + 10.0 * rng.standard_normal(40))
    dc = DirichletCategorical(np.full(4, 0.7))
    Xd = dc.prepare_data(rng.choice(4, size=60, p=[0.5, 0.3, 0.15, 0.05]))
    cases = [
        (gm, Xg, BlockRandomWalkMH(gm), "w"),
        (dc, Xd, DirichletMH(dc, concentration={"theta": (np.array([2.8]), np.array([60.0]))}),
         "theta"),
    ]
    C = 2000
    for model, X, kern, b in cases:
        for beta in (0.05, 0.6):
            start = model.sample_tempered_posterior(X, beta, np.random.default_rng(1), C)
            target = Target(model, X)
            state = target.state(start)
            rngs = as_rngs(2, C)
            for _ in range(3):
                state, acc = kern.transition(state, target, beta, rngs)
            assert 0.1 < acc < 0.95
            ref = model.sample_tempered_posterior(X, beta, np.random.default_rng(3), C)[b]
            got = state.params[b]
            se = np.sqrt(ref.var(axis=0) * 2 / C)
            assert np.all(np.abs(got.mean(axis=0) - ref.mean(axis=0)) < 4.5 * se)
            np.testing.assert_allclose(got.std(axis=0), ref.std(axis=0), rtol=0.12)


def test_dirichlet_concentration_validation():
    dc = DirichletCategorical(np.ones(3))
    with pytest.raises(ValueError, match="concentration"):
        DirichletMH(dc, concentration={"theta": (np.array([-1.0]), np.array([3.0]))})
    k = DirichletMH(dc, concentration={"theta": (np.array([3.0]), np.array([30.0]))})
    # (A + 1) d / 2.38^2 - 1 at A = 3 + 0.5 * 30
    assert k.strength("theta", 0.5, 30, ()) == pytest.approx(19 * 2 / 2.38**2 - 1)


# ------------------------------------------------------------ LDS with extinct columns


def _lds_ard_case():
    params = make_lds_params(1, 3, random_state=0)
    X, _ = make_lds(params, [40], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBLinearDynamicalSystem(n_states=3, fit_intercept=False, random_state=0,
                                      max_iter=500, prune_states=False).fit(X)
    return est, X


def test_lds_ard_default_kernel_reaches_the_evidence():
    """k = 3 fitted to data of one state: ARD makes two columns extinct (prior precisions
    ~1e4).  The default kernel (the adapter's annealing_kernel) at 300 temperatures
    agrees with importance sampling from a heavy-tailed q mixed over all 48 aliases; so
    does the generic block kernel now that its prior precisions come from the prior.
    With the former fixed prior precision 1 the chains freeze and AIS falls ~180 nats
    short."""
    est, X = _lds_ard_case()
    m = LDSScoringModel(est)
    m.prepare_data(X)
    assert np.sum(est.alpha_ > 1e3) == 2
    assert isinstance(make_kernel("auto", m), BlockRandomWalkMH)
    kw = dict(n_temperatures=300, n_chains=16, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = score(est, X, "is", posterior=m.alias_posterior(m.variational_posterior().heavy_tailed(3.0)),
                    n_samples=2500, n_runs=4, random_state=1)
        auto = score(est, X, "ais", **kw)
        blocks = score(est, X, "ais", kernel="blocks", **kw)
        old = score(est, X, "ais", kernel=BlockRandomWalkMH(m, prior_precision=1.0), **kw)
    # the alias-mixture weights are heavy-tailed (runs of this size spread by ~0.5 nats),
    # so agreement is asked within 1 nat
    assert ref.stderr < 0.5
    for r in (auto, blocks):
        assert _close(r.log_evidence, ref.log_evidence, np.hypot(r.stderr, ref.stderr), 1.0), (
            r.log_evidence, r.stderr, ref.log_evidence)
        assert min(r.diagnostics["acceptance_by_quarter"]) > 0.15
    assert old.log_evidence < ref.log_evidence - 100
    assert max(old.diagnostics["acceptance_by_quarter"]) < 0.01


# --------------------------------------------------- Gaussian HMM far from unit scale


def _hmm_far_case():
    rng = np.random.default_rng(0)
    T = 300
    z = np.zeros(T, int)
    for t in range(1, T):
        z[t] = z[t - 1] if rng.random() < 0.9 else 1 - z[t - 1]
    X = np.array([90.0, 110.0])[z][:, None] + 10.0 * rng.standard_normal((T, 1))
    lengths = [100, 100, 100]
    est = VBHiddenMarkov(2, emission="gaussian", covariance_type="diag", n_init=1,
                         random_state=0).fit(X, lengths=lengths)
    return est, X, lengths


def test_gaussian_hmm_far_from_unit_scale():
    """Means near 100, sd 10, 300 frames.  The default kernel (the adapter's
    annealing_kernel: random-walk steps from the prior's scale and q, Dirichlet strengths
    from the rows' tempered concentrations) at 1000 temperatures agrees with importance
    sampling (from q's mixture over the two label aliases), and its chains' log-weights
    are tight.  The former kernel (prior precision fixed at 1, Dirichlet strength
    5 + 2 n beta) spreads them over ~10 nats and its mean log-weight (a stochastic lower
    bound; ln Z minus it estimates the KL of the annealed chains) is several nats lower."""
    est, X, L = _hmm_far_case()
    m = GaussianHMMScoringModel(est)
    data = m.prepare_data(X, lengths=L)
    kw = dict(lengths=L, n_temperatures=1000, n_chains=16, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the default proposal is q's mixture over both state labellings: it estimates
        # Z itself, no alias correction
        ref = score(est, X, "is", lengths=L, n_samples=10000, n_runs=4, random_state=1)
        auto = score(est, X, "ais", **kw)
        old_kernel = CompositeKernel([DirichletMH(m, ["startprob", "transmat"]),
                                      BlockRandomWalkMH(m, ["means", "precisions"],
                                                        prior_precision=1.0)])
        old = score(est, X, "ais", kernel=old_kernel, **{**kw, "n_chains": 8})
    z = ref.log_evidence
    assert isinstance(make_kernel("auto", m, X=data), CompositeKernel)
    assert ref.stderr < 0.25
    assert _close(auto.log_evidence, z, np.hypot(auto.stderr, ref.stderr), 0.2), (
        auto.log_evidence, auto.stderr, z)
    lw_new, lw_old = auto.diagnostics["log_weights"], old.diagnostics["log_weights"]
    assert np.std(lw_new) < 2.0 and np.std(lw_old) > 3 * np.std(lw_new)
    gap_new, gap_old = z - np.mean(lw_new), z - np.mean(lw_old)
    assert gap_new < 1.0 and gap_old > 3.0 + gap_new


# ------------------------------------------------ reverse AIS with the compiled kernel


def _simulated_dag(n=10, seed=4):
    """Data simulated from theta* ~ prior of the latent-class DAG (one hidden node with 2
    states, two observed nodes with 3): theta* is an exact posterior draw."""
    X0 = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
    m0 = scoring_model_for(VBDiscreteDAG(n_components=2, cardinalities=3, n_init=1,
                                         random_state=0).fit(X0))
    rng = np.random.default_rng(seed)
    theta = m0.sample_prior(rng, 1)
    h = rng.choice(2, size=n, p=theta["cpt[latent]"][0, 0])
    X = np.column_stack([[rng.choice(3, p=theta[f"cpt[x{j}]"][0, s]) for s in h]
                         for j in range(2)])
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3, random_state=0).fit(X)
    m = scoring_model_for(est)
    for b in m.param_space.names:  # same frozen prior as the one theta* came from
        np.testing.assert_array_equal(m.prior_alpha[b], m0.prior_alpha[b])
    return est, m, X, theta


def test_compiled_reverse_ais_and_bdmc_bracket_the_enumerated_evidence():
    """The compiled joint Dirichlet move is a single Metropolis–Hastings step, hence its
    own adjoint: reverse AIS through it from theta* is a stochastic upper bound that
    agrees with the enumerated evidence, as does the Python reverse chain; BDMC with
    kernel='auto' (compiled both ways) brackets it and closes the gap."""
    est, m, X, theta = _simulated_dag()
    exact = m.log_evidence(m.prepare_data(X))
    kw = dict(exact_posterior_samples=theta, n_chains=16, random_state=0)
    rais = score(est, X, "rais", n_temperatures=1000, **kw)
    py = score(est, X, "rais", kernel="dirichlet", n_temperatures=300, **kw)
    for r in (rais, py):
        assert _close(r.log_evidence, exact, r.stderr, 0.05), (r.log_evidence, r.stderr, exact)
    assert rais.bound == "stochastic_upper"
    assert len(rais.diagnostics["acceptance_by_quarter"]) == 4
    # a short schedule is visibly an upper bound
    short = score(est, X, "rais", n_temperatures=5, start="prior", **kw)
    assert short.log_evidence > exact + 0.3
    # reproducible across thread groupings
    data = m.prepare_data(X)
    betas = make_schedule("sigmoid", 50)
    a = run_reverse_ais_compiled(m, data, betas, theta, 4, random_state=1)
    b = run_reverse_ais_compiled(m, data, betas, theta, 4, random_state=1, n_jobs=2)
    np.testing.assert_array_equal(a["log_u"], b["log_u"])
    assert a["acceptance"].shape == (49,) and a["log_increments"].shape == (50, 1)
    np.testing.assert_allclose(a["log_increments"].sum(), a["log_u"].mean(), rtol=1e-10)
    r = score(est, X, "bdmc", K_grid=(30, 1000), start="prior", **kw)
    lo, hi = r.interval
    assert r.diagnostics["history"][0]["gap"] > r.diagnostics["history"][-1]["gap"]
    assert abs(hi - lo) < 0.5 and lo - 0.3 < exact < hi + 0.3
    # from q alone 30 temperatures already close the gap, on the evidence of the one of
    # the two relabelled posterior modes that q covers: ln Z - ln 2
    r = score(est, X, "bdmc", K_grid=(30, 1000), aliases="none", **kw)
    lo, hi = r.interval
    assert len(r.diagnostics["history"]) == 1
    assert lo - 0.3 < exact - np.log(2) < hi + 0.3
    # from q's mixture over both labellings (the default) on ln Z itself
    r = score(est, X, "bdmc", K_grid=(30, 1000), **kw)
    lo, hi = r.interval
    assert lo - 0.3 < exact < hi + 0.3
