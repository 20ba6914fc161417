"""Evidence scores of VBLinearDynamicalSystem with missing outputs (NaN), marginalised.

Oracles: the dense Gaussian integral over the stacked states of a sequence
(:mod:`tests.oracles.lds_dense`, no Kalman recursion) for the likelihood of the
observed entries; the estimator's own fit (its bound and VBM step with per-output
designs) for the complete-data evidence and q(theta); direct per-entry sums for the
complete-data joint; central differences for the likelihood gradient; and, for the
evidence itself, a three-dimensional Gauss-Legendre quadrature of
``p(theta) p(y_obs | theta)`` on a one-state, one-output system with missing steps.
"""

import copy
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.lds._vbem import hidden_stats
from sklearn_vb.lds.scoring_model import LDSScoringModel
from sklearn_vb.scoring import score
from sklearn_vb.scoring._laplace import fd_gradient
from tests.lds.test_scoring_lds import _simulate, assert_map_point_is_stationary
from tests.oracles.lds_dense import log_normaliser


def _quiet_fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kw)


@pytest.fixture(scope="module")
def with_inputs():
    """k = 2, p = 3, one input plus intercept, two sequences; 15 % of the entries and
    one whole step missing."""
    rng = np.random.default_rng(3)
    T = 50
    U = rng.standard_normal((T, 1))
    A = np.array([[0.8, 0.1], [-0.2, 0.6]])
    C = np.array([[1.0, 0.3], [-0.4, 0.8], [0.5, 0.5]])
    Y = _simulate(rng, T, A, C, 0.4, U, np.array([[0.5], [0.0]]),
                  np.array([[0.3], [-0.2], [0.1]]))
    Y[rng.random(Y.shape) < 0.15] = np.nan
    Y[12] = np.nan
    est = _quiet_fit(VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=200,
                                             prune_states=False), Y, U=U, lengths=[30, 20])
    return est, Y, U, [30, 20]


def _blocks(theta, k):
    A, C = theta["A"], theta["C"]
    B = theta.get("B", np.zeros((k, 0)))
    D = theta.get("D", np.zeros((C.shape[0], 0)))
    return np.hstack([A, B]), np.hstack([C, D]), theta["rho"]


def test_likelihood_is_the_dense_likelihood_of_the_observed_entries(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    q = m.variational_posterior()
    assert q.Sigma_CD.shape == (3, 4, 4)  # one covariance per row of [C D]
    draws = q.sample(np.random.default_rng(1), 3)
    per_seq = m.log_likelihood_per_sequence(draws, X)
    for c in range(3):
        theta = {name: value[c] for name, value in draws.items()}
        M_AB, M_CD, rho = _blocks(theta, 2)
        for i, (lo, hi) in enumerate(zip(X.starts, X.ends)):
            exact = log_normaliser(Y[lo:hi], X.Us[lo:hi], X.Uo[lo:hi], M_AB,
                                   np.zeros((M_AB.shape[1],) * 2), M_CD,
                                   np.zeros((M_CD.shape[1],) * 2), rho, np.log(rho),
                                   m.mu0, m.Sigma0)
            assert per_seq[c, i] == pytest.approx(exact, abs=1e-9)
    terms = m.log_likelihood_per_case(draws, X)
    np.testing.assert_array_equal(terms[:, 12], 0.0)  # nothing observed at step 12
    # at the posterior means, the estimator's own score of the same data
    mean = q.mean()
    assert float(m.log_likelihood(mean, X)[0]) == pytest.approx(
        float(np.sum(est.score_samples(Y, U=U, lengths=lengths))), rel=1e-10)


def test_e_step_identities_with_missing_outputs(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    q = m.variational_posterior()
    for theta in (q.mean(), q.sample(np.random.default_rng(0), 1)):
        e = m.e_step(theta, X)
        assert e.stats.rows is not None
        assert e.loglik == pytest.approx(float(m.log_likelihood(theta, X)[0]), rel=1e-12)
        assert e.entropy == pytest.approx(e.stats.smoother_entropy, rel=1e-9, abs=1e-9)


def test_complete_data_evidence_and_vbm_are_the_estimators(with_inputs):
    """For the estimator's q(x): H[q(x)] + log_complete_evidence(stats) is the
    estimator's bound after its VBM step (per-output designs), and q_from_stats is
    that VBM step."""
    est0, Y, U, lengths = with_inputs
    est = copy.deepcopy(est0)
    m = LDSScoringModel(est0)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    data = est._check_fit_data(Y, U=U, lengths=lengths)
    qx = est._q_x
    est._stats = hidden_stats(data, qx)
    est._vbm(data, est._stats)
    F = est._lower_bound(data)
    stats = m.stats_from_moments(X, qx.omega, qx.ups, qx.cross, qx.omega0, qx.ups0)
    collapsed = float(np.sum(qx.entropy)) + m.log_complete_evidence(stats)
    assert collapsed == pytest.approx(F, rel=1e-10)
    qq = m.q_from_stats(stats)
    np.testing.assert_allclose(qq.M_CD, est._q_theta.M_CD, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(qq.Sigma_CD, est._q_theta.Sigma_CD, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(qq.shape, est._q_theta.rho_shape, rtol=1e-12)
    np.testing.assert_allclose(qq.rate, est._q_theta.rho_rate, rtol=1e-8)


def test_q_density_and_sampler_with_one_covariance_per_row(with_inputs):
    est, Y, U, lengths = with_inputs
    q = LDSScoringModel(est).variational_posterior()
    draws = q.sample(np.random.default_rng(2), 40000)
    # row s of [C D] given rho_s has covariance Sigma_CD[s] / rho_s
    CD = np.concatenate([draws["C"], draws["D"]], axis=2)
    for s in range(3):
        z = (CD[:, s] - q.M_CD[s]) * np.sqrt(draws["rho"][:, s])[:, None]
        np.testing.assert_allclose(np.cov(z.T), q.Sigma_CD[s], atol=0.03 * np.max(np.abs(q.Sigma_CD[s])))
    np.testing.assert_allclose(draws["rho"].mean(axis=0), q.shape / q.rate, rtol=0.02)
    # the density is normalised on the rows of one output: its ratio to the product of
    # the scipy densities is 1
    from scipy import stats as st
    one = {name: value[:5] for name, value in draws.items()}
    lp = q.log_pdf(one)
    ref = np.zeros(5)
    for c in range(5):
        AB = np.hstack([one["A"][c], one["B"][c]])
        ref[c] += sum(st.multivariate_normal(q.M_AB[j], q.Sigma_AB).logpdf(AB[j]) for j in range(2))
        for s in range(3):
            r = one["rho"][c, s]
            ref[c] += st.gamma(q.shape[s], scale=1.0 / q.rate[s]).logpdf(r)
            row = np.concatenate([one["C"][c, s], one["D"][c, s]])
            ref[c] += st.multivariate_normal(q.M_CD[s], q.Sigma_CD[s] / r).logpdf(row)
    np.testing.assert_allclose(lp, ref, rtol=1e-9)


def test_likelihood_gradient_matches_central_differences(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    space = m.param_space
    theta = m.variational_posterior().sample(np.random.default_rng(5), 1)
    value, grads = m.log_joint_gradient(theta, X)
    assert value == pytest.approx(float(m.log_prior(theta)[0] + m.log_likelihood(theta, X)[0]),
                                  rel=1e-12)
    flat = space.flatten(theta)[0]

    def f(points):
        params = space.unflatten(points)
        return m.log_prior(params) + m.log_likelihood(params, X)

    g_fd = fd_gradient(f, flat, rel_step=1e-6)
    g = space.flatten({name: value[None] for name, value in grads.items()})[0]
    np.testing.assert_allclose(g, g_fd, rtol=1e-4, atol=1e-4 * np.max(np.abs(g_fd)))


def test_point_fits_with_missing_outputs(with_inputs):
    """The estimator's ML fit is EM on the likelihood of the observed entries (never
    decreasing; its log_likelihood_ is the dense likelihood at its point); the scoring
    model's MAP point is a stationary point of the Laplace objective."""
    _, Y, U, lengths = with_inputs
    ml = _quiet_fit(VBLinearDynamicalSystem(n_states=2, method="ml", random_state=0,
                                            max_iter=300), Y, U=U, lengths=lengths)
    assert np.all(np.diff(ml.lower_bounds_) >= -1e-8 * np.abs(ml.lower_bounds_[1:]))
    data = ml._check_new_data(Y, U=U, lengths=lengths)
    M_AB = np.hstack([ml.A_mean_, ml.B_mean_[:, ml.state_inputs_]])
    M_CD = np.hstack([ml.C_mean_, ml.D_mean_[:, ml.output_inputs_]])
    rho = ml.noise_precision_mean_
    exact = sum(log_normaliser(Y[lo:hi], data.Us[lo:hi], data.Uo[lo:hi], M_AB,
                               np.zeros((M_AB.shape[1],) * 2), M_CD,
                               np.zeros((M_CD.shape[1],) * 2), rho, np.log(rho),
                               ml.init_state_mean_, ml.init_state_cov_)
                for lo, hi in zip(data.starts, data.ends))
    assert ml.log_likelihood_ == pytest.approx(exact, abs=1e-8)
    # the ML point beats the VB posterior means on its own objective
    map_ = _quiet_fit(VBLinearDynamicalSystem(n_states=2, method="map", random_state=0,
                                              max_iter=300), Y, U=U, lengths=lengths)
    assert np.all(np.diff(map_.lower_bounds_) >= -1e-8 * np.abs(map_.lower_bounds_[1:]))
    assert ml.log_likelihood_ >= map_.log_likelihood_ - 1e-6


def test_map_point_of_the_scoring_model_is_stationary():
    rng = np.random.default_rng(0)
    Y = _simulate(rng, 20, np.array([[0.8]]), np.array([[1.0], [-0.7]]), 0.5)
    Y[[2, 5, 5, 11], [0, 0, 1, 1]] = np.nan
    est = _quiet_fit(VBLinearDynamicalSystem(n_states=1, fit_intercept=False,
                                             random_state=0, max_iter=500), Y)
    m = LDSScoringModel(est)
    assert_map_point_is_stationary(m, m.prepare_data(Y))


def test_complete_data_joint_counts_the_observed_entries_only(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    rng = np.random.default_rng(4)
    Z = m.random_completion(X, rng)
    theta = m.variational_posterior().sample(rng, 2)
    out = m.log_complete_joint_per_case(theta, Z, X)
    for c in range(2):
        th = {name: value[c] for name, value in theta.items()}
        M_AB, M_CD, rho = _blocks(th, 2)
        prev = np.empty_like(Z.x)
        prev[1:] = Z.x[:-1]
        prev[X.starts] = Z.x0
        ref = np.zeros(len(Y))
        for t in range(len(Y)):
            z = np.concatenate([prev[t], X.Us[t]])
            ref[t] = norm.logpdf(Z.x[t], M_AB @ z, 1.0).sum()
            w = np.concatenate([Z.x[t], X.Uo[t]])
            for s in range(Y.shape[1]):
                if not np.isnan(Y[t, s]):
                    ref[t] += norm.logpdf(Y[t, s], M_CD[s] @ w, 1.0 / np.sqrt(rho[s]))
        for i, t in enumerate(X.starts):
            d = Z.x0[i] - m.mu0
            ref[t] += (-0.5 * (2 * np.log(2 * np.pi) + np.linalg.slogdet(m.Sigma0)[1])
                       - 0.5 * d @ np.linalg.solve(m.Sigma0, d))
        np.testing.assert_allclose(out[c], ref, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------------ evidence


def _quadrature_evidence(m, X, n=30, width=10.0):
    """ln int p(A, C, rho) p(y_obs | A, C, rho) of a one-state, one-output model with
    ``mu0 = 0`` by Gauss-Legendre in (A, C, ln rho): the state sign flip maps C to -C
    and leaves everything else unchanged, so C > 0 is integrated and doubled.  The box
    is centred on q(theta), ``width`` standard deviations of q each way (1.5 times that
    in C, whose posterior q underestimates most)."""
    q = m.variational_posterior()
    sa, ma = np.sqrt(q.Sigma_AB[0, 0]), q.M_AB[0, 0]
    shape = float(np.ravel(q.shape)[0])
    rho_m = shape / float(q.rate[0])
    sc, mc = np.sqrt(q.Sigma_CD[0, 0, 0] / rho_m), abs(q.M_CD[0, 0])
    su, mu = np.sqrt(1.0 / shape), np.log(rho_m)
    nodes, weights = np.polynomial.legendre.leggauss(n)

    def rule(lo, hi):
        return 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo), 0.5 * (hi - lo) * weights

    a, wa = rule(ma - width * sa, ma + width * sa)
    c, wc = rule(max(mc - 1.5 * width * sc, 0.0), mc + 1.5 * width * sc)
    u, wu = rule(mu - width * su, mu + width * su)
    AA, CC, UU = np.meshgrid(a, c, u, indexing="ij")
    params = {"A": AA.reshape(-1, 1, 1), "C": CC.reshape(-1, 1, 1),
              "rho": np.exp(UU).reshape(-1, 1)}
    log_f = (m.log_prior(params) + m.log_likelihood(params, X) + UU.ravel()).reshape(AA.shape)
    log_w = np.log(wa)[:, None, None] + np.log(wc)[None, :, None] + np.log(wu)[None, None, :]
    # the far faces of the box (not C = 0, where the mirror image continues) carry
    # nothing
    top = log_f.max()
    assert max(log_f[0].max(), log_f[-1].max(), log_f[:, -1].max(), log_f[:, :, 0].max(),
               log_f[:, :, -1].max()) < top - 7.0
    return float(np.log(2.0) + logsumexp(log_f + log_w))


@pytest.mark.slow
def test_evidence_scores_against_quadrature_with_missing_steps():
    rng = np.random.default_rng(0)
    Y = _simulate(rng, 30, np.array([[0.8]]), np.array([[1.0]]), 0.5)
    Y[[3, 8, 9]] = np.nan
    est = _quiet_fit(VBLinearDynamicalSystem(n_states=1, fit_intercept=False,
                                             init_state_cov="fixed", random_state=0,
                                             max_iter=500), Y)
    assert np.all(est.init_state_mean_ == 0.0)
    m = LDSScoringModel(est)
    X = m.prepare_data(Y)
    exact = _quadrature_evidence(m, X)
    assert exact == pytest.approx(_quadrature_evidence(m, X, n=36, width=11.0), abs=0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cs = score(est, Y, "cs", random_state=0)
        ais = score(est, Y, "ais", n_temperatures=500, n_chains=16, random_state=0)
        is_ = score(est, Y, "is", n_samples=5000, n_runs=2, random_state=0)
        lap = score(est, Y, "laplace", random_state=0)
    assert est.lower_bound_ <= exact
    assert cs.log_evidence <= exact
    assert abs(ais.log_evidence - exact) < 0.05 + 3 * ais.stderr
    assert abs(is_.log_evidence - exact) < 0.05 + 3 * is_.stderr
    assert abs(lap.log_evidence - exact) < 2.0


@pytest.mark.slow
def test_partially_missing_steps_ais_agrees_with_importance_sampling():
    """k = 1, p = 2 with single entries and a whole step missing: AIS from the prior
    agrees with importance sampling from q mixed over the sign aliases; VB and CS lie
    below; VB started at the CS point climbs from CS."""
    rng = np.random.default_rng(0)
    Y = _simulate(rng, 15, np.array([[0.8]]), np.array([[1.0], [-0.7]]), 0.5)
    Y[[1, 4, 9], [0, 1, 0]] = np.nan
    Y[6] = np.nan
    est = _quiet_fit(VBLinearDynamicalSystem(n_states=1, fit_intercept=False,
                                             random_state=0, max_iter=500), Y)
    m = LDSScoringModel(est)
    m.prepare_data(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ais = score(est, Y, "ais", kernel=m.annealing_kernel(), n_temperatures=1000,
                    n_chains=16, random_state=2)
        is_alias = score(est, Y, "is", posterior=m.alias_posterior(), n_samples=10000,
                         n_runs=2, random_state=1)
        cs = score(est, Y, "cs", random_state=0)
        vb_cs = score(est, Y, "vb", init="cs", random_state=0)
    se = np.hypot(ais.stderr, is_alias.stderr)
    assert abs(ais.log_evidence - is_alias.log_evidence) < 0.1 + 3 * se
    ref = is_alias.log_evidence + 3 * is_alias.stderr
    assert est.lower_bound_ <= ref and cs.log_evidence <= ref
    b = np.asarray(vb_cs.diagnostics["lower_bounds"])
    assert b[0] == pytest.approx(cs.log_evidence, rel=1e-10)
    assert np.all(np.diff(b) >= -1e-9 * abs(b[0]))


SCORES = ["vb", "map", "bic", "bic_map", "bicp", "laplace", "cs", "cs_dagger", "is", "ais",
          "vmcmc", "smc", "nested_sampling"]


@pytest.fixture(scope="module")
def small_missing():
    """k = 1, p = 2, T = 12 with missing entries; fitted with them and without."""
    rng = np.random.default_rng(1)
    Y = _simulate(rng, 12, np.array([[0.8]]), np.array([[1.0], [-0.7]]), 0.5)
    Y[[1, 4, 7], [0, 1, 0]] = np.nan
    Y[9] = np.nan
    fitted = _quiet_fit(VBLinearDynamicalSystem(n_states=1, random_state=0, max_iter=100), Y)
    complete = _quiet_fit(VBLinearDynamicalSystem(n_states=1, random_state=0, max_iter=100),
                          np.where(np.isnan(Y), 0.0, Y))
    return fitted, complete, Y


@pytest.mark.parametrize("method", SCORES)
def test_every_evidence_score_accepts_missing_outputs(method, small_missing):
    fitted, complete, Y = small_missing
    options = {"is": dict(n_samples=100), "ais": dict(n_temperatures=20, n_chains=2),
               "vmcmc": dict(n_samples=50), "smc": dict(n_particles=20),
               "nested_sampling": dict(n_live=10)}.get(method, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = score(fitted, Y, method, random_state=0, **options)
        assert np.isfinite(r.log_evidence)
        if method in ("bic", "cs", "ais"):
            # a model fitted on complete outputs scores data with missing ones too
            assert np.isfinite(score(complete, Y, method, random_state=0,
                                     **options).log_evidence)


def test_bdmc_brackets_data_with_missing_entries_simulated_from_the_prior():
    """theta* ~ p(theta) simulates the data, then entries are deleted at random: theta*
    is an exact posterior draw given the observed entries (missing at random), so
    reverse AIS from it bounds the evidence from above and forward AIS from below; with
    consistent prior, simulator and masked likelihood the two meet."""
    rng = np.random.default_rng(0)
    Y = _simulate(rng, 15, np.array([[0.8]]), np.array([[1.0], [-0.7]]), 0.5)
    Y[[1, 4], [0, 1]] = np.nan
    est = _quiet_fit(VBLinearDynamicalSystem(n_states=1, fit_intercept=False,
                                             random_state=0, max_iter=500), Y)
    m = LDSScoringModel(est)
    g = np.random.default_rng(11)
    theta = m.sample_prior(g, 1)
    Ynew, _ = m.simulate(theta, g, n_cases=15)
    Ynew[g.random(Ynew.shape) < 0.2] = np.nan
    m.prepare_data(Ynew)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = score(est, Ynew, method="bdmc", kernel=m.annealing_kernel(),
                  exact_posterior_samples=theta, K_grid=(1000,), n_chains=16,
                  random_state=1)
    lower, upper = r.interval
    assert np.isfinite(lower) and np.isfinite(upper)
    assert -0.2 < upper - lower < 0.5
