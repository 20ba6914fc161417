"""The ScoringModel of VBLinearDynamicalSystem: every method group of the interface
(``sklearn_vb/_core/evidence/protocols.py``) and the identities every ScoringModel must satisfy.

Oracles: a dense multivariate-normal density of the stacked outputs (exact likelihood),
the estimator's own Kalman filter and explicit bound (collapsed-bound identity), scipy
densities (q), and, for the evidence, high-accuracy AIS cross-checked against importance
sampling from a proposal that covers both sign aliases of the posterior.
"""

import copy
import warnings

import numpy as np
import pytest
from scipy import stats as st

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._laplace import fd_gradient
from sklearn_vb.lds._vbem import hidden_stats
from sklearn_vb.lds.scoring_model import LDSPosterior, LDSScoringModel


def _simulate(rng, T, A, C, noise_sd, U=None, B=None, D=None):
    k, p = A.shape[0], C.shape[0]
    x = np.zeros(k)
    Y = np.empty((T, p))
    for t in range(T):
        x = A @ x + rng.standard_normal(k) + (B @ U[t] if U is not None else 0.0)
        Y[t] = C @ x + noise_sd * rng.standard_normal(p) + (D @ U[t] if U is not None else 0.0)
    return Y


@pytest.fixture(scope="module")
def with_inputs():
    """k = 2, p = 2, one user input plus intercept, two sequences."""
    rng = np.random.default_rng(3)
    T = 40
    U = rng.standard_normal((T, 1))
    A = np.array([[0.8, 0.1], [-0.2, 0.6]])
    C = np.array([[1.0, 0.3], [-0.4, 0.8]])
    Y = _simulate(rng, T, A, C, 0.4, U, np.array([[0.5], [0.0]]), np.array([[0.3], [-0.2]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=200,
                                      prune_states=False).fit(
            Y, U=U, lengths=[25, 15])
    return est, Y, U, [25, 15]


@pytest.fixture(scope="module")
def tiny():
    """k = 1, p = 2, T = 15, no inputs: the evidence problem."""
    rng = np.random.default_rng(0)
    Y = _simulate(rng, 15, np.array([[0.8]]), np.array([[1.0], [-0.7]]), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBLinearDynamicalSystem(n_states=1, fit_intercept=False, random_state=0,
                                      max_iter=500).fit(Y)
    return est, Y


def _dense_loglik(model, theta, Y, Us, Uo):
    """ln N(vec y_{1:T}; mean, cov) of one sequence, built from the stacked state."""
    A, C, rho = theta["A"], theta["C"], theta["rho"]
    B = theta.get("B", np.zeros((A.shape[0], 0)))
    D = theta.get("D", np.zeros((C.shape[0], 0)))
    T, p = Y.shape
    k = A.shape[0]
    powers = [np.eye(k)]
    for _ in range(T):
        powers.append(A @ powers[-1])
    F = np.vstack([powers[t + 1] for t in range(T)])
    G = np.zeros((T * k, T * k))
    for t in range(T):
        for s in range(t + 1):
            G[t * k:(t + 1) * k, s * k:(s + 1) * k] = powers[t - s]
    b = (Us @ B.T).ravel()
    mean_x = F @ model.mu0 + G @ b
    cov_x = F @ model.Sigma0 @ F.T + G @ G.T
    H = np.kron(np.eye(T), C)
    mean_y = H @ mean_x + (Uo @ D.T).ravel()
    cov_y = H @ cov_x @ H.T + np.kron(np.eye(T), np.diag(1.0 / rho))
    return st.multivariate_normal(mean_y, cov_y).logpdf(Y.ravel()), mean_y, cov_y


# ------------------------------------------------------ G0, core (scoring/protocols.py)


def test_registry_and_structure(with_inputs):
    est, Y, U, lengths = with_inputs
    m = scoring_model_for(est)
    assert isinstance(m, LDSScoringModel)
    assert m.param_space.names == ["A", "B", "C", "D", "rho"]
    assert m.param_space["B"].shape == (2, 2) and m.param_space["D"].shape == (2, 2)
    # k^2 + k ds + p k + p do + p - k(k-1)/2 = 4 + 4 + 4 + 4 + 2 - 1
    assert m.n_parameters() == 17
    assert m.n_aliases() == 8
    X = m.prepare_data(Y, U=U, lengths=lengths)
    assert m.n_cases(X) == 40
    with pytest.raises(ValueError, match="U"):
        m.prepare_data(Y, lengths=lengths)
    ids = np.repeat([7, 3], lengths)
    X2 = m.prepare_data(Y, U=U, sequence_ids=ids)
    np.testing.assert_array_equal(X2.starts, X.starts)
    np.testing.assert_array_equal(X2.Us, X.Us)


def test_jacobian_of_the_unconstrained_basis(with_inputs):
    """ln|det d theta / d phi| of the LDS space against finite differences."""
    est, *_ = with_inputs
    space = LDSScoringModel(est).param_space
    phi = np.random.default_rng(0).standard_normal(space.size)
    _, ld = space.from_unconstrained(phi[None])
    h = 1e-6
    J = np.empty((space.size, space.size))
    for i in range(space.size):
        e = np.zeros(space.size)
        e[i] = h
        hi = space.flatten(space.from_unconstrained((phi + e)[None])[0])[0]
        lo = space.flatten(space.from_unconstrained((phi - e)[None])[0])[0]
        J[:, i] = (hi - lo) / (2 * h)
    assert ld[0] == pytest.approx(np.linalg.slogdet(J)[1], abs=1e-6)


def test_log_likelihood_equals_dense_gaussian(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    # short sequences keep the dense covariance small
    Ys, Us_ = Y[:9], U[:9]
    X = m.prepare_data(Ys, U=Us_, lengths=[5, 4])
    rng = np.random.default_rng(1)
    theta = m.sample_prior(rng, 4)
    q = m.variational_posterior()
    more = q.sample(rng, 4)
    theta = {key: np.concatenate([theta[key], more[key]]) for key in theta}
    theta["A"][:4] *= 0.5  # keep the prior draws away from explosive dynamics
    ll = m.log_likelihood(theta, X)
    per_seq = m.log_likelihood_per_sequence(theta, X)
    per_step = m.log_likelihood_per_case(theta, X)
    assert per_step.shape == (8, 9)
    np.testing.assert_allclose(per_seq.sum(axis=1), ll, rtol=1e-12)
    for c in range(8):
        th = {key: v[c] for key, v in theta.items()}
        for i, (a, b) in enumerate([(0, 5), (5, 9)]):
            dense, *_ = _dense_loglik(m, th, Ys[a:b], X.Us[a:b], X.Uo[a:b])
            assert per_seq[c, i] == pytest.approx(dense, rel=1e-9, abs=1e-9)


def test_log_likelihood_matches_estimator_at_posterior_mean(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    mean = m.variational_posterior().mean()
    ref = est.score_sequences(Y, U=U, lengths=lengths, method="mean")
    np.testing.assert_allclose(m.log_likelihood_per_sequence(mean, X)[0], ref, rtol=1e-10)
    # invalid parameters give -inf, not an exception
    bad = {key: v.copy() for key, v in mean.items()}
    bad["rho"][0, 0] = -1.0
    assert m.log_likelihood(bad, X)[0] == -np.inf


def test_rotation_degeneracy_and_aliases(with_inputs):
    """With an isotropic initial-state prior centred at 0 the likelihood is invariant
    under every orthogonal change of state basis (the k(k-1)/2 removed from d); signed
    permutations are the discrete aliases."""
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    m.mu0 = np.zeros(2)
    m.Sigma0 = 0.7 * np.eye(2)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    theta = m.variational_posterior().sample(np.random.default_rng(0), 3)
    ang = 0.9
    R = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
    ll = m.log_likelihood(theta, X)
    np.testing.assert_allclose(m.log_likelihood(m.change_state_basis(theta, R), X), ll, rtol=1e-10)
    Ps = m.signed_permutations()
    assert len(Ps) == m.n_aliases()
    for P in Ps:
        np.testing.assert_allclose(m.log_likelihood(m.change_state_basis(theta, P), X), ll,
                                   rtol=1e-10)


def test_prior_sampler_and_normalisation(tiny):
    """Moments of sample_prior against the prior's closed forms, and the importance
    sampling estimate of the integral of exp(log_prior) with a broad Student-t reference in
    the unconstrained basis equals 1."""
    est, Y = tiny
    m = LDSScoringModel(est)
    rng = np.random.default_rng(5)
    s = m.sample_prior(rng, 200_000)
    a, b = m.a0, m.b0
    assert np.mean(s["rho"]) == pytest.approx(a / b, rel=0.01)
    assert np.var(s["rho"]) == pytest.approx(a / b**2, rel=0.03)
    assert np.var(s["A"]) == pytest.approx(1.0 / m.prior_ab[0], rel=0.03)
    # C | rho ~ N(0, 1/(rho gamma)): the standardised draws are standard normal
    zc = s["C"][:, :, 0] * np.sqrt(s["rho"] * m.prior_cd[0])
    assert np.var(zc) == pytest.approx(1.0, rel=0.02)
    assert abs(np.mean(zc)) < 0.01
    # normalisation: int p(theta(phi)) |J| dphi with phi ~ a broad Student-t (3 dof)
    space = m.param_space
    phi_c = space.to_unconstrained(m.sample_prior(rng, 4000)).mean(axis=0)
    sd = space.to_unconstrained(m.sample_prior(rng, 4000)).std(axis=0) * 2.0
    M = 200_000
    phi = phi_c + sd * rng.standard_t(3, (M, space.size))
    log_g = np.sum(st.t.logpdf(phi, 3, loc=phi_c, scale=sd), axis=1)
    params, logdet = space.from_unconstrained(phi)
    lw = m.log_prior(params) + logdet - log_g
    w = np.exp(lw)
    est_Z, se = w.mean(), w.std() / np.sqrt(M)
    assert abs(est_Z - 1.0) < max(4 * se, 0.01)
    assert se < 0.05


def test_variational_posterior_density_and_sampler(with_inputs):
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    q = m.variational_posterior()
    assert isinstance(q, LDSPosterior)
    k = 2
    rng = np.random.default_rng(2)
    th = q.sample(rng, 5)
    # density against scipy: Gaussian rows of [A B]; Gamma x Gaussian rows of ([C D], rho)
    M_AB = np.hstack([est.A_mean_, est.B_mean_[:, est.state_inputs_]])
    M_CD = np.hstack([est.C_mean_, est.D_mean_[:, est.output_inputs_]])
    for dof in (None, 3.0):
        qq = q if dof is None else q.heavy_tailed(dof)
        lp = qq.log_pdf(th)
        for c in range(5):
            AB = np.hstack([th["A"][c], th["B"][c]])
            CD = np.hstack([th["C"][c], th["D"][c]])
            ref = 0.0
            for j in range(k):
                if dof is None:
                    ref += st.multivariate_normal(M_AB[j], est.Sigma_AB_).logpdf(AB[j])
                else:
                    ref += st.multivariate_t(M_AB[j], est.Sigma_AB_, df=dof).logpdf(AB[j])
            for s in range(2):
                r = th["rho"][c, s]
                ref += st.gamma(est.rho_shape_, scale=1.0 / est.rho_rate_[s]).logpdf(r)
                if dof is None:
                    ref += st.multivariate_normal(M_CD[s], est.Sigma_CD_ / r).logpdf(CD[s])
                else:
                    ref += st.multivariate_t(M_CD[s], est.Sigma_CD_ / r, df=dof).logpdf(CD[s])
            assert lp[c] == pytest.approx(ref, rel=1e-10)
    # sampler moments: E[rho] = shape/rate, C has the Student-t marginal E[1/rho] Sigma_CD
    big = q.sample(rng, 100_000)
    np.testing.assert_allclose(big["rho"].mean(axis=0), est.rho_shape_ / est.rho_rate_, rtol=0.01)
    np.testing.assert_allclose(big["A"].mean(axis=0), est.A_mean_,
                               atol=4 * np.sqrt(est.Sigma_AB_.diagonal().max() / 1e5))
    inv_rho = est.rho_rate_ / (est.rho_shape_ - 1.0)
    np.testing.assert_allclose(big["C"].var(axis=0), np.outer(inv_rho, est.Sigma_CD_.diagonal()[:k]),
                               rtol=0.03)
    mean = q.mean()
    np.testing.assert_allclose(mean["C"][0], est.C_mean_)
    np.testing.assert_allclose(mean["rho"][0], est.noise_precision_mean_)


# -------------------------------------- G2/G3, E step and complete-data evidence


def test_e_step_identities(with_inputs):
    """loglik equals log_likelihood; the entropy loglik - E ln p(x, y | theta)
    equals the smoother's own entropy of p(x | y, theta)."""
    est, Y, U, lengths = with_inputs
    m = LDSScoringModel(est)
    X = m.prepare_data(Y, U=U, lengths=lengths)
    q = m.variational_posterior()
    for theta in (q.mean(), q.sample(np.random.default_rng(0), 1)):
        e = m.e_step(theta, X)
        assert e.loglik == pytest.approx(float(m.log_likelihood(theta, X)[0]), rel=1e-12)
        assert e.entropy == pytest.approx(e.stats.smoother_entropy, rel=1e-9, abs=1e-9)
        assert e.expected_complete_loglik + e.entropy == pytest.approx(e.loglik, rel=1e-12)


def test_collapsed_bound_identity_against_estimator(with_inputs):
    """Collapsed-bound identity: for the estimator's q(x), one VBM step and the estimator's
    explicit bound give H[q(x)] + log_complete_evidence(stats(q(x))); q_from_stats equals
    the VBM step."""
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
    np.testing.assert_allclose(qq.M_AB, est._q_theta.M_AB, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(qq.M_CD, est._q_theta.M_CD, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(qq.rate, est._q_theta.rho_rate, rtol=1e-9)


def assert_map_point_is_stationary(m, X):
    """EM steps never lower the MAP objective and the EM point is a stationary point
    of the Laplace objective (central differences in the unconstrained basis); returns
    the point."""
    space = m.param_space

    def t(phis):
        params, ld = space.from_unconstrained(np.atleast_2d(phis))
        return m.log_prior(params) + m.log_likelihood(params, X) + ld

    theta = m.variational_posterior().mean()
    objs = []
    for _ in range(30):
        e = m.e_step(theta, X)
        objs.append(m._objective(theta, e.loglik, "map", "softmax"))
        theta = m.point_from_stats(e.stats)
    assert np.all(np.diff(objs) >= -1e-9)
    theta = m.fit_point(X, rng=0, n_init=2, max_iter=5000, tol_per_case=1e-12)
    g = fd_gradient(t, space.to_unconstrained(theta)[0])
    assert np.max(np.abs(g)) < 1e-3
    return theta


def test_fit_point_is_a_stationary_point_of_the_map_objective(tiny):
    """EM with frozen (mu0, Sigma0) converges to a stationary point of
    ln p(theta) + l(theta) + ln|J| in the unconstrained basis (the Laplace objective);
    the objective never decreases along EM."""
    est, Y = tiny
    m = LDSScoringModel(est)
    X = m.prepare_data(Y)
    theta = assert_map_point_is_stationary(m, X)
    ml = m.fit_point(X, kind="ml", rng=0, n_init=1, max_iter=300)
    assert m.log_likelihood(ml, X)[0] >= m.log_likelihood(theta, X)[0] - 1e-6


def test_simulate_matches_dense_moments(tiny):
    est, Y = tiny
    m = LDSScoringModel(est)
    theta = m.variational_posterior().mean()
    rng = np.random.default_rng(4)
    Ysim, states = m.simulate(theta, rng, lengths=[3] * 20000)
    assert Ysim.shape == (60000, 2) and states.shape == (60000, 1)
    V = Ysim.reshape(20000, 6)
    th = {key: v[0] for key, v in theta.items()}
    _, mean_y, cov_y = _dense_loglik(m, th, np.zeros((3, 2)), np.zeros((3, 0)), np.zeros((3, 0)))
    se = np.sqrt(np.diag(cov_y) / 20000)
    assert np.all(np.abs(V.mean(axis=0) - mean_y) < 4.5 * se)
    np.testing.assert_allclose(np.cov(V.T), cov_y, atol=0.05 * np.max(np.abs(cov_y)))


# ------------------------------------------------------------------------------ scores


def test_every_scorer_runs_with_sequences_and_inputs(with_inputs):
    est, Y, U, lengths = with_inputs
    res = {}
    for meth, opts in [("vb", {}), ("bic", {"n_init": 1}), ("bicp", {"n_init": 1}),
                       ("laplace", {"n_init": 1}), ("cs", {"n_init": 1}),
                       ("is", {"n_samples": 500, "n_runs": 2}),
                       ("ais", {"n_temperatures": 50, "n_chains": 4})]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = score(est, Y, method=meth, U=U, lengths=lengths, random_state=0, **opts)
        assert np.isfinite(r.log_evidence), meth
        res[meth] = r
    m = LDSScoringModel(est)
    assert res["bic"].diagnostics["n"] == 40 and res["bic"].diagnostics["d"] == m.n_parameters()
    # CS at the MAP is a lower bound: the exact E step at theta_hat, then VBM
    assert res["cs"].diagnostics["entropy"] + res["cs"].diagnostics["log_complete_evidence"] == \
        pytest.approx(res["cs"].log_evidence, rel=1e-10)
    r = score(est, Y, method="bic", U=U, lengths=lengths, alias_correction=True, n_init=1)
    assert r.log_alias_correction == pytest.approx(np.log(8))


def test_tiny_evidence_vb_cs_below_ais_and_ais_agrees_with_importance_sampling(tiny):
    """k = 1, p = 2, T = 15: high-accuracy AIS (from the prior, 2000 temperatures) agrees
    with importance sampling from a heavy-tailed q mixed over both sign aliases;
    VB and CS lie below that reference; BIC and Laplace are finite.  Importance
    sampling from q alone (``aliases="none"``; the default mixes q over the aliases)
    sees one alias and falls short by up to ln 2."""
    est, Y = tiny
    m = LDSScoringModel(est)
    m.prepare_data(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ais = score(est, Y, method="ais", kernel=m.annealing_kernel(), n_temperatures=2000,
                    n_chains=32, random_state=2)
        is_alias = score(est, Y, method="is", posterior=m.alias_posterior(), n_samples=20000,
                         n_runs=4, random_state=1)
        is_q = score(est, Y, method="is", n_samples=20000, n_runs=4, random_state=1,
                     aliases="none")
        cs = score(est, Y, method="cs", random_state=0)
        bic = score(est, Y, method="bic", random_state=0)
        lap = score(est, Y, method="laplace", random_state=0)
    vb = float(est.lower_bound_)
    se = np.hypot(ais.stderr, is_alias.stderr)
    assert ais.stderr < 0.15 and is_alias.stderr < 0.1
    assert abs(ais.log_evidence - is_alias.log_evidence) < 0.1 + 3 * se
    ref = is_alias.log_evidence
    assert vb <= ref + 3 * is_alias.stderr
    assert cs.log_evidence <= ref + 3 * is_alias.stderr
    assert vb <= ais.log_evidence + 3 * ais.stderr
    gap = is_alias.log_evidence - is_q.log_evidence
    assert 0.2 < gap < np.log(2) + 0.15
    assert np.isfinite(bic.log_evidence) and np.isfinite(lap.log_evidence)
    assert not lap.diagnostics["degenerate"]


def test_vb_from_the_cs_point(tiny):
    """VBScore(init="cs"): VBEM (frozen hyperparameters) started by a VBM step from the
    exact posterior at the MAP; the first bound equals CS and the bounds never decrease
    (Corollary 2.5); here it climbs to the fitted estimator's bound."""
    est, Y = tiny
    r = score(est, Y, method="vb", init="cs", random_state=0)
    b = np.asarray(r.diagnostics["lower_bounds"])
    assert b[0] == pytest.approx(r.diagnostics["cs"], rel=1e-12)
    assert np.all(np.diff(b) >= -1e-9 * abs(b[0]))
    assert r.log_evidence > r.diagnostics["cs"]
    assert r.log_evidence == pytest.approx(est.lower_bound_, abs=1e-3)


def test_bdmc_brackets_on_data_simulated_from_the_prior(tiny):
    """Data simulated from theta* ~ p(theta) with the frozen hyperparameters: theta* is an
    exact posterior draw, so reverse AIS from it is a stochastic upper bound and forward
    AIS a stochastic lower bound; with consistent prior, simulator and likelihood the
    two meet."""
    est, _ = tiny
    m = LDSScoringModel(est)
    g = np.random.default_rng(11)
    theta = m.sample_prior(g, 1)
    Ynew, _ = m.simulate(theta, g, n_cases=15)
    m.prepare_data(Ynew)
    r = score(est, Ynew, method="bdmc", kernel=m.annealing_kernel(), exact_posterior_samples=theta,
              K_grid=(1000,), n_chains=16, random_state=1)
    lower, upper = r.interval
    assert np.isfinite(lower) and np.isfinite(upper)
    assert -0.2 < upper - lower < 0.5
