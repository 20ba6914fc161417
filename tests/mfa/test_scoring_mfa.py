"""The ScoringModel of VBMixtureFactorAnalysers against exact oracles.

Oracles: scipy densities (mixture of Gaussians, multivariate t, Dirichlet), the closed-form
evidence of a factor-free analyser, and, for one analyser with one factor in two
dimensions, the evidence by quadrature: the centre integrates out in closed form given
the loading column, and the column is integrated on a fine 2-d grid.
"""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._laplace import fd_gradient
from sklearn_vb._core.evidence.mcmc_moves import estimate_prior_precision
from sklearn_vb.mfa.scoring_model import MFAPosterior, MFAScoringModel

LOG_2PI = np.log(2 * np.pi)


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def one():
    """One analyser, one factor, p = 2, n = 15 (data far from unit scale)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 2)) @ np.array([[2.0, 1.0], [0.0, 0.5]]) + [3.0, -1.0]
    est = VBMixtureFactorAnalysers(n_components=1, n_factors=1, search=False,
                                   random_state=0).fit(X)
    model = scoring_model_for(est)
    return est, model, X, model.prepare_data(X)


@pytest.fixture(scope="module")
def two():
    """Two analysers with one factor each, p = 2, n = 20."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((10, 2)) * [1.0, 0.3] + [-4.0, 0.0],
                   rng.standard_normal((10, 2)) * [0.3, 1.0] + [4.0, 1.0]])
    est = VBMixtureFactorAnalysers(n_components=2, n_factors=1, search=False,
                                   random_state=0).fit(X)
    model = scoring_model_for(est)
    return est, model, X, model.prepare_data(X)


def _direct_loglik(model, params, X):
    """Per-case ln p(x_i | theta) in user units through scipy (parameters mapped to the
    original units)."""
    w, lam = model.split(params)
    K = model.K
    sc, sh = model.scale, model.shift
    out = []
    for c in range(w.shape[0]):
        comps = []
        for s in range(model.S):
            L = lam[c, s, :, :K] * sc[:, None]
            mu = lam[c, s, :, K] * sc + sh
            cov = L @ L.T + np.diag(model.psi * sc**2)
            comps.append(np.log(w[c, s]) + stats.multivariate_normal(mu, cov).logpdf(X))
        out.append(logsumexp(np.array(comps), axis=0))
    return np.array(out)


def _exact_one_factor(model, X, R=4.0, G=161):
    """ln p(X) for S = 1, K = 1, p = 2 by quadrature over the loading column (fitting
    units); the centre integrates out in closed form for each column."""
    Z = (X - model.shift) / model.scale
    n, p = Z.shape
    g = np.linspace(-R, R, G)
    h = g[1] - g[0]
    l1, l2 = np.meshgrid(g, g, indexing="ij")
    lam = np.stack([l1.ravel(), l2.ravel()], axis=1)  # (G^2, 2)
    Cm = lam[:, :, None] * lam[:, None, :] + np.diag(model.psi)
    Ci = np.linalg.inv(Cm)
    _, ld = np.linalg.slogdet(Cm)
    V0i = np.diag(model.nu_star)
    Vpi = V0i + n * Ci
    Vp = np.linalg.inv(Vpi)
    mhat = np.einsum("gij,gj->gi", Vp, V0i @ model.mu_star + np.einsum("gij,j->gi", Ci, Z.sum(0)))
    r = Z[None] - mhat[:, None, :]
    lik = -0.5 * (n * (p * LOG_2PI + ld) + np.einsum("gni,gij,gnj->g", r, Ci, r))
    d0 = mhat - model.mu_star
    pri = -0.5 * (p * LOG_2PI - np.sum(np.log(model.nu_star)) + (d0**2) @ model.nu_star)
    post = -0.5 * (p * LOG_2PI - np.linalg.slogdet(Vpi)[1])
    a, b = model.a_star, model.b_star
    t = stats.multivariate_t(np.zeros(2), (b / a) * np.eye(2), df=2 * a).logpdf(lam)
    return float(logsumexp(lik + pri - post + t) + 2 * np.log(h) + n * model.log_jac_case)


# ------------------------------------------------------ G0, core (scoring/protocols.py)
def test_registry_and_data_validation(one):
    est, model, X, data = one
    assert isinstance(model, MFAScoringModel)
    X0 = X.copy()
    d = model.prepare_data(X)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_allclose(d.Z, (X - est.feature_shift_) / est.feature_scale_)
    assert model.n_cases(d) == 15
    with pytest.raises(ValueError, match="X"):
        model.prepare_data(X[:, :1])
    with pytest.raises(ValueError, match="infinity"):
        model.prepare_data(np.full((3, 2), np.inf))
    # rows observing nothing have likelihood 1 (missing entries are marginalised)
    empty = model.prepare_data(np.full((3, 2), np.nan))
    theta = model.variational_posterior().mean()
    np.testing.assert_array_equal(model.log_likelihood_per_case(theta, empty), 0.0)
    with pytest.raises(ValueError, match="fit parameters"):
        model.prepare_data(X, lengths=[15])


def test_log_likelihood_matches_scipy_mixture(two):
    est, model, X, data = two
    rng = np.random.default_rng(3)
    q = model.variational_posterior()
    for params in (model.sample_prior(rng, 4), q.sample(rng, 3), q.heavy_tailed(3).sample(rng, 3)):
        direct = _direct_loglik(model, params, X)
        np.testing.assert_allclose(model.log_likelihood_per_case(params, data), direct,
                                   rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(model.log_likelihood(params, data), direct.sum(1),
                                   rtol=1e-10, atol=1e-8)


def test_log_likelihood_at_posterior_mean_is_plugin_score(one, two):
    for est, model, X, data in (one, two):
        m = model.variational_posterior().mean()
        np.testing.assert_allclose(model.log_likelihood_per_case(m, data)[0],
                                   est.score_samples(X, method="plugin"), rtol=1e-10, atol=1e-10)
        # VB and the other scores refer to the same data scale: the Jacobian of the
        # standardisation is in lower_bound_ and in the likelihood
        assert np.isclose(est.bound_terms_["jacobian"], model.n_cases(data) * model.log_jac_case)
        assert not np.isclose(model.log_jac_case, 0.0)


def test_simulate_matches_the_mixture_moments(two):
    est, model, X, data = two
    th = model.variational_posterior().mean()
    Y, (labels, x) = model.simulate(th, np.random.default_rng(13), n_cases=40000)
    assert Y.shape == (40000, 2) and x.shape == (40000, model.K)
    w, lam = model.split(th)
    K, sc, sh = model.K, model.scale, model.shift
    mus = lam[0, :, :, K] * sc + sh
    covs = [(lam[0, s, :, :K] * sc[:, None]) @ (lam[0, s, :, :K] * sc[:, None]).T
            + np.diag(model.psi * sc**2) for s in range(2)]
    mean = w[0] @ mus
    cov = sum(w[0, s] * (covs[s] + np.outer(mus[s], mus[s])) for s in range(2)) - np.outer(mean, mean)
    assert np.all(np.abs(Y.mean(0) - mean) < 4 * np.sqrt(np.diag(cov) / 40000))
    np.testing.assert_allclose(np.cov(Y.T), cov, rtol=0.03)
    assert abs(np.mean(labels == 0) - w[0, 0]) < 4 * np.sqrt(0.25 / 40000)
    with pytest.raises(ValueError):
        model.simulate(th, 0)


def test_log_prior_against_scipy(two):
    est, model, X, data = two
    rng = np.random.default_rng(4)
    params = model.sample_prior(rng, 5)
    w, lam = model.split(params)
    a, b = est.ard_prior_
    K = model.K
    ref = stats.dirichlet(np.full(2, est.alpha_prior_ / 2)).logpdf(w.T)
    t = stats.multivariate_t(np.zeros(2), (b / a) * np.eye(2), df=2 * a)
    for s in range(2):
        for j in range(K):
            ref = ref + t.logpdf(lam[:, s, :, j])
        ref = ref + stats.norm(model.mu_star, 1 / np.sqrt(model.nu_star)).logpdf(
            lam[:, s, :, K]).sum(1)
    np.testing.assert_allclose(model.log_prior(params), ref, rtol=1e-11)
    # frozen hyperparameters are the fitted ones, in fitting units
    np.testing.assert_allclose(model.psi * est.feature_scale_**2, est.noise_variance_)


def test_prior_sampler_matches_log_prior(two):
    """The loading columns are p-variate t's with 2a* dof and scale b*/a*, so
    |v|^2 a* / (p b*) ~ F(p, 2a*); centres N(mu*, 1/nu*); weights Dirichlet."""
    est, model, X, data = two
    rng = np.random.default_rng(5)
    M = 4000
    params = model.sample_prior(rng, M)
    w, lam = model.split(params)
    a, b = model.a_star, model.b_star
    f = np.sum(lam[:, 0, :, 0] ** 2, axis=1) * a / (2 * b)
    assert stats.kstest(f, stats.f(2, 2 * a).cdf).pvalue > 1e-3
    c = lam[:, 1, :, model.K]
    z = (c - model.mu_star) * np.sqrt(model.nu_star)
    assert stats.kstest(z[:, 0], "norm").pvalue > 1e-3
    a0 = est.alpha_prior_ / 2  # Dir(a0, a0): mean 1/2, variance 1 / (4 (2 a0 + 1))
    assert abs(np.mean(w[:, 0]) - 0.5) < 4 * np.sqrt(1 / (4 * (2 * a0 + 1)) / M)
    assert np.var(w[:, 0]) == pytest.approx(1 / (4 * (2 * a0 + 1)), rel=0.1)


def test_prior_is_normalised(one):
    """Importance-sampling estimate of int p(theta) dtheta with a broader
    reference (bivariate Cauchy columns, centres with twice the prior sd): p/g is
    bounded, so the estimate is 1 within Monte Carlo error."""
    est, model, X, data = one
    rng = np.random.default_rng(12)
    M = 20000
    scale = 3.0 * np.sqrt(model.b_star / model.a_star)
    cauchy = stats.multivariate_t(np.zeros(2), scale**2 * np.eye(2), df=1)
    sd = 2.0 / np.sqrt(model.nu_star)
    col = cauchy.rvs(size=M, random_state=rng)
    cen = model.mu_star + sd * rng.standard_normal((M, 2))
    params = {"weights": np.ones((M, 1)), "loadings_0": np.stack([col, cen], axis=2)}
    log_g = cauchy.logpdf(col) + stats.norm(model.mu_star, sd).logpdf(cen).sum(1)
    r = np.exp(model.log_prior(params) - log_g)
    assert abs(r.mean() - 1.0) < 4 * r.std() / np.sqrt(M)
    assert r.std() / np.sqrt(M) < 0.02


def test_variational_posterior(two):
    est, model, X, data = two
    q = model.variational_posterior()
    m = q.mean()
    np.testing.assert_allclose(m["weights"][0], est.weights_)
    np.testing.assert_allclose(model.split(m)[1][0], est.loading_means_)
    rng = np.random.default_rng(6)
    th = q.sample(rng, 4)
    w, lam = model.split(th)
    for qq, dof in ((q, None), (q.heavy_tailed(3.0), 3.0)):
        th = qq.sample(rng, 4)
        w, lam = model.split(th)
        ref = stats.dirichlet(est.dirichlet_concentration_).logpdf(w.T)
        for s in range(2):
            for r in range(2):
                mu, cov = est.loading_means_[s, r], est.loading_covariances_[s, r]
                dist = (stats.multivariate_normal(mu, cov) if dof is None
                        else stats.multivariate_t(mu, cov, df=dof))
                ref = ref + dist.logpdf(lam[:, s, r])
        np.testing.assert_allclose(qq.log_pdf(th), ref, rtol=1e-10)
    big = q.sample(np.random.default_rng(7), 20000)
    _, lam = model.split(big)
    se = np.sqrt(est.loading_covariances_[0, 1, 0, 0] / 20000)
    assert abs(lam[:, 0, 1, 0].mean() - est.loading_means_[0, 1, 0]) < 4 * se
    assert np.isclose(lam[:, 0, 1, 0].var(), est.loading_covariances_[0, 1, 0, 0], rtol=0.05)
    bq = q.heavy_tailed(3.0, broaden=0.5)
    np.testing.assert_allclose(bq.alpha, 0.5 * est.dirichlet_concentration_)


# -------------------------------------- G2/G3, E step and complete-data evidence
def test_e_step_is_exact(two):
    """E ln p(s, x, X | theta) + H[p(s, x | X, theta)] = ln p(X | theta) holds only
    for the exact posterior (entropy computed independently)."""
    est, model, X, data = two
    rng = np.random.default_rng(8)
    q = model.variational_posterior()
    for th in (q.mean(), q.sample(rng, 1), q.heavy_tailed(2.0).sample(rng, 1)):
        e = model.e_step(th, data)
        assert e.loglik == pytest.approx(float(model.log_likelihood(th, data)[0]), abs=1e-9)
        assert e.expected_complete_loglik + e.entropy == pytest.approx(e.loglik, abs=1e-8)
        np.testing.assert_allclose(e.stats.resp.sum(1), 1.0)
        assert e.stats.Nk.sum() == pytest.approx(20)


def test_complete_evidence_exact_without_factors():
    """K = 0, S = 1: no latents and no ARD, so CS is the exact evidence."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((12, 3)) * [1.0, 5.0, 0.2] + [1.0, 2.0, 3.0]
    est = VBMixtureFactorAnalysers(n_components=1, n_factors=0, search=False).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    Z = data.Z
    exact = sum(stats.multivariate_normal(
        np.full(12, model.mu_star[q]),
        model.psi[q] * np.eye(12) + np.ones((12, 12)) / model.nu_star[q]).logpdf(Z[:, q])
        for q in range(3)) + 12 * model.log_jac_case
    th = model.variational_posterior().mean()
    e = model.e_step(th, data)
    assert e.entropy == pytest.approx(0.0, abs=1e-12)
    assert model.log_complete_evidence(e.stats) == pytest.approx(exact, abs=1e-9)
    # VB: q(mu) has the exact posterior's form; F stops within tol of it (and may
    # reach it up to round-off)
    assert exact - 1e-3 <= est.lower_bound_ <= exact + 1e-12 * abs(exact)
    r = score(est, X, method="cs", random_state=0)
    assert r.log_evidence == pytest.approx(exact, abs=1e-8)


def test_complete_evidence_one_factor_against_quadrature(one):
    """K = 1: the complete-data evidence with the Student-t column prior, against a
    2-d grid over the column (centres integrated in closed form given the column);
    the mean-field value used for K >= 2 is a lower bound on it."""
    est, model, X, data = one
    th = model.fit_point(data, rng=0)
    st = model.e_step(th, data).stats
    W, C, psi = st.W[0], st.C[0], model.psi
    g = np.linspace(-4, 4, 161)
    l1, l2 = np.meshgrid(g, g, indexing="ij")
    lam = np.stack([l1.ravel(), l2.ravel()], axis=1)
    tot = stats.multivariate_t(np.zeros(2), model.b_star / model.a_star * np.eye(2),
                               df=2 * model.a_star).logpdf(lam)
    for q in range(2):
        A, b = W / psi[q], C[q] / psi[q]
        P = A[1, 1] + model.nu_star[q]
        h = b[1] - A[0, 1] * lam[:, q] + model.nu_star[q] * model.mu_star[q]
        tot = tot + (0.5 * np.log(model.nu_star[q]) - 0.5 * model.nu_star[q] * model.mu_star[q]**2
                     + b[0] * lam[:, q] - 0.5 * A[0, 0] * lam[:, q]**2
                     - 0.5 * np.log(P) + h**2 / (2 * P))
    ref = logsumexp(tot) + 2 * np.log(g[1] - g[0]) + model._x_and_noise_terms(st)
    assert model.complete_evidence_kind == "exact"
    assert model.log_complete_evidence(st) == pytest.approx(ref, abs=1e-6)
    bound = model._loading_bound(st) + model._x_and_noise_terms(st)
    assert bound <= model.log_complete_evidence(st) + 1e-9


def test_fit_point_is_a_map(one, two):
    for est, model, X, data in (one, two):
        th = model.fit_point(data, rng=0)
        q = model.variational_posterior()
        obj = lambda t: model._objective(t, float(model.log_likelihood(t, data)[0]), "map",
                                         "softmax")
        assert obj(th) >= obj(q.mean()) - 1e-9
        space = model.param_space
        phi = space.to_unconstrained(th)[0]

        def f(P):
            params, ld = space.from_unconstrained(np.atleast_2d(P))
            return model.log_prior(params) + model.log_likelihood(params, data) + ld
        g = fd_gradient(f, phi)
        assert np.max(np.abs(g)) < 1e-3
        ml = model.fit_point(data, kind="ml", rng=0)
        assert (model.log_likelihood(ml, data)[0]
                >= model.log_likelihood(th, data)[0] - 1e-9)


def test_objective_gradient_matches_finite_differences(two):
    """The Fisher-identity gradient (E-step statistics) against central differences."""
    est, model, X, data = two
    space = model.param_space
    th = model.variational_posterior().heavy_tailed(3.0).sample(np.random.default_rng(11), 1)
    phi = space.to_unconstrained(th)[0]
    for kind, basis in (("map", "softmax"), ("map", "natural"), ("ml", "softmax")):
        f = lambda P: np.array([model.objective_and_gradient(p_, data, kind, basis)[0]  # noqa
                                for p_ in np.atleast_2d(P)])
        v, g = model.objective_and_gradient(phi, data, kind, basis)
        np.testing.assert_allclose(g, fd_gradient(f, phi), rtol=1e-5, atol=1e-5)
    # the MAP objective in phi is the Laplace scorer's t(phi)
    params, ld = space.from_unconstrained(phi[None])
    t = model.log_prior(params) + model.log_likelihood(params, data) + ld
    assert model.objective_and_gradient(phi, data)[0] == pytest.approx(float(t[0]), abs=1e-9)


# ------------------------------------------------------- G4, parameter counts and aliases
def test_counts_and_aliases(one, two):
    est, model, X, data = two
    assert model.n_parameters() == 11  # 1 + 2 + 2 * (2 + 2 - 0), eq. 4.89
    assert model.n_parameters() == est._n_parameters()
    assert one[1].n_parameters() == 6
    assert one[1].n_aliases(kind="modes") == 2
    assert one[1].n_aliases() == 1
    maps = model.alias_maps()
    assert model.n_aliases(kind="modes") == len(maps) == 8  # 2! x (2 signs)^2
    assert model.n_aliases() == 2  # two analysers with one factor
    with pytest.raises(ValueError, match="kind"):
        model.n_aliases(kind="bad")
    th = model.variational_posterior().sample(np.random.default_rng(10), 3)
    base = model.log_joint(th, data)
    seen = set()
    for a in maps:
        t2 = model.apply_alias(th, a)
        np.testing.assert_allclose(model.log_joint(t2, data), base, rtol=1e-12)
        back = model.apply_alias(t2, a, inverse=True)
        np.testing.assert_allclose(model.split(back)[1], model.split(th)[1])
        seen.add(np.round(model.split(t2)[1][0], 8).tobytes())
    assert len(seen) == 8
    q = model.variational_posterior()
    ref = logsumexp([q.log_pdf(model.apply_alias(th, a, inverse=True)) for a in maps],
                    axis=0) - np.log(8)
    np.testing.assert_allclose(model.alias_posterior().log_pdf(th), ref, rtol=1e-12)
    assert np.all(ref >= q.log_pdf(th) - np.log(8) - 1e-12)


def test_kernel_prior_precision(two):
    est, model, X, data = two
    pi = model.kernel_prior_precision()
    robust = estimate_prior_precision(type("M", (), {
        "param_space": model.param_space, "sample_prior": model.sample_prior})(),
        n_samples=4000)
    K = model.K
    cen = np.asarray(pi["loadings_0"]).reshape(2, K + 1)[:, K]
    cen_r = robust["loadings_0"].reshape(2, K + 1)[:, K]
    np.testing.assert_allclose(cen, cen_r, rtol=0.15)
    load = np.asarray(pi["loadings_0"]).reshape(2, K + 1)[:, 0]
    load_r = robust["loadings_0"].reshape(2, K + 1)[:, 0]
    # t with 2 dof: IQR / 1.349 is 1.21 times its scale
    np.testing.assert_allclose(load / load_r, 1.21**2, rtol=0.2)


# ------------------------------------------------------------------------------ scores
def test_scores_on_a_tiny_problem_against_quadrature(one):
    est, model, X, data = one
    exact = _exact_one_factor(model, X)
    assert exact == pytest.approx(_exact_one_factor(model, X, R=5.0, G=201), abs=1e-6)
    res = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for m in ("vb", "bic", "bicp", "laplace", "cs", "is"):
            res[m] = score(est, X, method=m, random_state=0)
        res["ais"] = score(est, X, method="ais", random_state=0, n_temperatures=2000,
                           n_chains=32)
        # IS from q over both aliases (sign of the column), heavy tails, broadened 10x
        q = model.variational_posterior()
        g = model.alias_posterior(MFAPosterior(q.alpha, q.means, 10 * q.covs, dof=3))
        res["is_alias"] = score(est, X, method="is", random_state=0, posterior=g,
                                proposal="vb", n_samples=20000, n_runs=2)
    for r in res.values():
        assert np.isfinite(r.log_evidence)
    tol = lambda r: min(max(0.05, 4 * r.stderr), 0.5)  # noqa: E731
    assert abs(res["ais"].log_evidence - exact) <= tol(res["ais"])
    assert abs(res["is_alias"].log_evidence - exact) <= tol(res["is_alias"])
    assert res["vb"].log_evidence <= exact
    assert res["vb"].log_evidence == est.lower_bound_
    assert res["cs"].log_evidence <= exact
    assert res["is"].log_evidence <= exact + 3 * res["is"].stderr


def test_all_scores_run_with_two_components(two):
    est, model, X, data = two
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vals = {m: score(est, X, method=m, random_state=0).log_evidence
                for m in ("vb", "bic", "bicp", "laplace", "cs")}
        vals["is"] = score(est, X, method="is", random_state=0, n_samples=2000,
                           n_runs=2).log_evidence
        vals["ais"] = score(est, X, method="ais", random_state=0, n_temperatures=300,
                            n_chains=8).log_evidence
    assert all(np.isfinite(v) for v in vals.values())
    assert vals["cs"] <= vals["is"] + 1.0 and vals["vb"] <= vals["is"] + 1.0
