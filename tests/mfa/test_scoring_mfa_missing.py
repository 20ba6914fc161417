"""The MFA's evidence scores and point fits with entries missing (NaN), marginalised.

Oracles: the Gaussian marginal of each row's observed columns through scipy (in the
user's units, so the Jacobian of the standardisation is checked too); the complete-data
path on complete data sent down the missing-data path; central differences for the
gradients; and the exact evidence of the observed entries by two independent
integrations: enumerating the component assignments of a factor-free mixture (the
centres and the mixing proportions integrate in closed form), and a 2-d grid over the
loading column of one analyser with one factor (the centre in closed form given it).
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from sklearn_vb._core.base import BoundDecreaseWarning
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa import _scoring_missing as sm
from sklearn_vb.mfa._missing import missing_patterns, point_e_step
from sklearn_vb.mfa.scoring_model import MFAPosterior
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._laplace import fd_gradient

LOG_2PI = np.log(2 * np.pi)


def _holes(X, frac, seed, keep_one=True):
    rng = np.random.default_rng(seed)
    X = np.array(X, dtype=float)
    mask = rng.random(X.shape) < frac
    if keep_one:  # every row keeps one observed entry
        mask[np.arange(len(X)), rng.integers(0, X.shape[1], len(X))] = False
    X[mask] = np.nan
    return X


def _fit(X, **kw):
    params = dict(search=False, random_state=0)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBMixtureFactorAnalysers(**params).fit(X)


@pytest.fixture(scope="module")
def two():
    """Two analysers, two factors each, p = 4, n = 40, 20 % of the entries missing."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((20, 4)) * [1.0, 0.3, 0.5, 1.0] + [-4.0, 0.0, 1.0, 2.0],
                   rng.standard_normal((20, 4)) * [0.3, 1.0, 1.0, 0.5] + [4.0, 1.0, -1.0, 0.0]])
    X = _holes(X, 0.2, 2)
    X[5] = np.nan  # a row observing nothing
    est = _fit(X, n_components=2, n_factors=2)
    model = scoring_model_for(est)
    return est, model, X, model.prepare_data(X)


def _direct_loglik(model, params, X):
    """Per-row ln p(x_i,o | theta) in user units through scipy: the marginal of the
    observed columns of the mixture mapped to the original units."""
    w, lam = model.split(params)
    K, sc, sh = model.K, model.scale, model.shift
    out = np.zeros((w.shape[0], len(X)))
    for c in range(w.shape[0]):
        for i, x in enumerate(X):
            o = ~np.isnan(x)
            if not o.any():
                continue
            comps = []
            for s in range(model.S):
                L = lam[c, s, :, :K] * sc[:, None]
                mu = lam[c, s, :, K] * sc + sh
                cov = L @ L.T + np.diag(model.psi * sc**2)
                comps.append(np.log(w[c, s])
                             + stats.multivariate_normal(mu[o], cov[np.ix_(o, o)]).logpdf(x[o]))
            out[c, i] = logsumexp(comps)
    return out


def test_point_e_step_is_the_posterior_of_the_observed_entries():
    rng = np.random.default_rng(0)
    S, p, K = 3, 5, 2
    lam = rng.normal(size=(S, p, K + 1))
    psi = rng.uniform(0.3, 1.5, p)
    w = rng.dirichlet(np.ones(S))
    Y = rng.normal(size=(20, p)) * 2
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[4] = np.nan
    Y0, miss = missing_patterns(Y)
    e = point_e_step(Y0, w, lam, psi, miss)
    ll, R = 0.0, np.zeros((20, S))
    for i, y in enumerate(Y):
        o = ~np.isnan(y)
        L = lam[:, o, :K]
        ell = np.log(w) + np.array([
            stats.multivariate_normal(lam[s, o, K], L[s] @ L[s].T + np.diag(psi[o])).logpdf(y[o])
            if o.any() else 0.0 for s in range(S)])
        ll += logsumexp(ell)
        R[i] = np.exp(ell - logsumexp(ell))
        # the factor posterior of the observed entries
        for s in range(S):
            prec = np.eye(K) + (L[s].T / psi[o]) @ L[s]
            mean = np.linalg.solve(prec, (L[s].T / psi[o]) @ (y[o] - lam[s, o, K]))
            np.testing.assert_allclose(e.xbar[i, s], mean, atol=1e-10)
            np.testing.assert_allclose(e.sigma[s, miss.pattern[i]], np.linalg.inv(prec),
                                       atol=1e-12)
    assert e.loglik == pytest.approx(ll, abs=1e-10)
    np.testing.assert_allclose(e.resp, R, atol=1e-12)


def test_likelihood_is_the_marginal_of_the_observed_columns(two):
    est, model, X, data = two
    assert data.missing is not None
    q = model.variational_posterior()
    draws = q.sample(np.random.default_rng(3), 3)
    np.testing.assert_allclose(model.log_likelihood_per_case(draws, data),
                               _direct_loglik(model, draws, X), atol=1e-9)
    assert np.all(model.log_likelihood_per_case(draws, data)[:, 5] == 0.0)
    # the estimator's plug-in score is the same density at the posterior means
    mean = q.mean()
    assert float(model.log_likelihood(mean, data)[0]) == pytest.approx(
        float(np.sum(est.score_samples(X, method="plugin"))), rel=1e-10)


def test_e_step_is_exact_with_missing_entries(two):
    """E ln p(s, x, X_obs | theta) + H[p(s, x | X_obs, theta)] = ln p(X_obs | theta)."""
    est, model, X, data = two
    rng = np.random.default_rng(8)
    q = model.variational_posterior()
    for th in (q.mean(), q.sample(rng, 1)):
        e = model.e_step(th, data)
        assert e.loglik == pytest.approx(float(model.log_likelihood(th, data)[0]), abs=1e-9)
        assert e.expected_complete_loglik + e.entropy == pytest.approx(e.loglik, abs=1e-8)
        assert e.stats.W.ndim == 4 and e.stats.W.shape[:2] == (2, 4)  # per dimension


def test_complete_data_down_the_missing_data_path_gives_the_complete_answers(two):
    """Every quantity of the scoring model on complete rows, computed through the
    missing-data functions (one pattern, everything observed), equals the
    complete-data one."""
    est, model, _, _ = two
    rng = np.random.default_rng(4)
    Xc = rng.standard_normal((30, 4)) * 2
    full = model.prepare_data(Xc)
    via = sm.missing_data(full.Z, np.log(model.scale))
    assert via.missing is not None and full.missing is None
    q = model.variational_posterior()
    th = q.sample(rng, 1)
    np.testing.assert_allclose(model.log_likelihood_per_case(th, via),
                               model.log_likelihood_per_case(th, full), rtol=1e-12)
    a, b = model.e_step(th, full), model.e_step(th, via)
    assert b.loglik == pytest.approx(a.loglik, rel=1e-12)
    assert b.expected_complete_loglik == pytest.approx(a.expected_complete_loglik, rel=1e-11)
    assert b.entropy == pytest.approx(a.entropy, rel=1e-10, abs=1e-10)
    assert model.log_complete_evidence(b.stats) == pytest.approx(
        model.log_complete_evidence(a.stats), rel=1e-9)
    for kind in ("map", "ml"):
        pa = model.point_from_stats(a.stats, th, kind)
        pb = model.point_from_stats(b.stats, th, kind)
        for name in pa:
            np.testing.assert_allclose(pb[name], pa[name], rtol=1e-8, atol=1e-10)
    phi = model.param_space.to_unconstrained(th)[0]
    np.testing.assert_allclose(model.objective_and_gradient(phi, via)[1],
                               model.objective_and_gradient(phi, full)[1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.per_case_gradient_gram(th, via),
                               model.per_case_gradient_gram(th, full), rtol=1e-9, atol=1e-9)
    Z = model.random_completion(full, np.random.default_rng(5))
    np.testing.assert_allclose(model.log_complete_joint_per_case(th, Z, via),
                               model.log_complete_joint_per_case(th, Z, full), rtol=1e-12)
    np.testing.assert_allclose(model.per_case_gradient_gram(th, via, completion=Z),
                               model.per_case_gradient_gram(th, full, completion=Z),
                               rtol=1e-9, atol=1e-9)


def test_gradients_match_central_differences(two):
    est, model, X, data = two
    space = model.param_space
    th = model.variational_posterior().sample(np.random.default_rng(6), 1)
    phi = space.to_unconstrained(th)[0]
    value, g = model.objective_and_gradient(phi, data)

    def f(phis):
        params, ld = space.from_unconstrained(np.atleast_2d(phis))
        return model.log_prior(params) + model.log_likelihood(params, data) + ld

    assert value == pytest.approx(float(f(phi[None])[0]), rel=1e-10)
    np.testing.assert_allclose(g, fd_gradient(f, phi), rtol=1e-4, atol=1e-4)
    # the per-case gradients behind the effective dimension: J J^T against central
    # differences of every row's log-likelihood
    h = 1e-6
    J = np.empty((len(X), phi.size))
    for j in range(phi.size):
        up, dn = phi.copy(), phi.copy()
        up[j] += h
        dn[j] -= h
        J[:, j] = (model.log_likelihood_per_case(space.from_unconstrained(up[None])[0], data)[0]
                   - model.log_likelihood_per_case(space.from_unconstrained(dn[None])[0], data)[0]
                   ) / (2 * h)
    G = model.per_case_gradient_gram(th, data)
    np.testing.assert_allclose(G, J @ J.T, rtol=1e-5, atol=1e-5 * np.max(np.abs(G)))


def test_point_fits_with_missing_entries(two):
    """method='ml'/'map' run EM on the likelihood of the observed entries: the
    objective never decreases, the ML log-likelihood is the scipy marginal at its
    point, and the rows observing nothing get the heaviest component."""
    _, _, X, _ = two
    for method in ("ml", "map"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", BoundDecreaseWarning)
            warnings.simplefilter("ignore", UserWarning)
            est = _fit(X, n_components=2, n_factors=1, method=method)
        assert np.all(np.diff(est.lower_bounds_) >= -1e-9 * np.abs(est.lower_bounds_[1:]))
        if method == "ml":
            comps = []
            for s in range(2):
                cov = est.loadings_[s] @ est.loadings_[s].T + np.diag(est.noise_variance_)
                comps.append([np.log(est.weights_[s]) + stats.multivariate_normal(
                    est.means_[s][~np.isnan(x)], cov[np.ix_(~np.isnan(x), ~np.isnan(x))]
                ).logpdf(x[~np.isnan(x)]) if (~np.isnan(x)).any() else np.log(est.weights_[s])
                    for x in X])
            ll = np.sum(logsumexp(np.array(comps), axis=0))
            assert est.log_likelihood_ == pytest.approx(ll, abs=1e-8)
        assert est.labels_[5] == np.argmax(est.weights_)
        assert np.all(np.isfinite(est.predict_proba(X)))


# ------------------------------------------------------------------------------ evidence


def _exact_factor_free_mixture(model, X):
    """ln p(X_obs) of a mixture of factor-free analysers (S components, Psi frozen) by
    enumerating the component of every row: given the assignment, the mixing
    proportions integrate against their Dirichlet prior and each centre coordinate
    against its Gaussian prior, over the observed entries of its rows."""
    Z = (X - model.shift) / model.scale
    n, p = Z.shape
    S = model.S
    a0 = model.weights_prior
    total = []
    for labels in itertools.product(range(S), repeat=n):
        labels = np.array(labels)
        counts = np.bincount(labels, minlength=S)
        v = (gammaln(a0.sum()) - gammaln(a0.sum() + n)
             + np.sum(gammaln(a0 + counts) - gammaln(a0)))
        for s in range(S):
            for q in range(p):
                z = Z[labels == s, q]
                z = z[~np.isnan(z)]
                if z.size:
                    cov = model.psi[q] * np.eye(z.size) + 1.0 / model.nu_star[q]
                    v += stats.multivariate_normal(np.full(z.size, model.mu_star[q]),
                                                   cov).logpdf(z)
        total.append(v)
    jac = -np.sum(~np.isnan(X) * np.log(model.scale))
    return float(logsumexp(total) + jac)


@pytest.mark.slow
def test_scores_of_a_factor_free_mixture_against_enumeration():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-2.0, 1.0, (5, 2)), rng.normal(2.0, 1.0, (5, 2))])
    X[[0, 3, 6, 8], [1, 0, 1, 0]] = np.nan
    est = _fit(X, n_components=2, n_factors=0)
    model = scoring_model_for(est)
    exact = _exact_factor_free_mixture(model, X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = {m: score(est, X, method=m, random_state=0) for m in ("vb", "cs", "laplace", "bic")}
        res["ais"] = score(est, X, method="ais", random_state=0, n_temperatures=1000,
                           n_chains=16)
        q = model.variational_posterior()
        g = model.alias_posterior(MFAPosterior(q.alpha, q.means, 4 * q.covs, dof=3))
        res["is"] = score(est, X, method="is", random_state=0, posterior=g, proposal="vb",
                          n_samples=20000, n_runs=2)
    assert res["vb"].log_evidence <= exact
    assert res["cs"].log_evidence <= exact
    for m in ("ais", "is"):
        assert abs(res[m].log_evidence - exact) <= min(max(0.05, 4 * res[m].stderr), 0.5), m
    assert abs(res["laplace"].log_evidence - exact) < 3.0


def _exact_one_factor_missing(model, X, R=4.0, G=161):
    """ln p(X_obs) for S = 1, K = 1, p = 2 by quadrature over the loading column; the
    centre integrates out in closed form given the column, each row through the
    Gaussian of its observed entries."""
    Z = (X - model.shift) / model.scale
    g = np.linspace(-R, R, G)
    h = g[1] - g[0]
    l1, l2 = np.meshgrid(g, g, indexing="ij")
    lam = np.stack([l1.ravel(), l2.ravel()], axis=1)  # (G^2, 2)
    V0i = np.diag(model.nu_star)
    prec = np.broadcast_to(V0i, (lam.shape[0], 2, 2)).copy()
    lin = np.broadcast_to(V0i @ model.mu_star, (lam.shape[0], 2)).copy()
    const = (-0.5 * model.mu_star @ V0i @ model.mu_star
             + 0.5 * np.sum(np.log(model.nu_star)) - LOG_2PI) * np.ones(lam.shape[0])
    for z in Z:
        o = np.flatnonzero(~np.isnan(z))
        if o.size == 0:
            continue
        Co = lam[:, o, None] * lam[:, None, o] + np.diag(model.psi[o])
        Ci = np.linalg.inv(Co)
        H = np.eye(2)[o]  # selects the observed coordinates of the centre
        prec += np.einsum("ai,gab,bj->gij", H, Ci, H)
        lin += np.einsum("ai,gab,b->gi", H, Ci, z[o])
        const += -0.5 * (o.size * LOG_2PI + np.linalg.slogdet(Co)[1]
                         + np.einsum("a,gab,b->g", z[o], Ci, z[o]))
    mu_int = (const + LOG_2PI - 0.5 * np.linalg.slogdet(prec)[1]
              + 0.5 * np.einsum("gi,gi->g", lin, np.linalg.solve(prec, lin[..., None])[..., 0]))
    a, b = model.a_star, model.b_star
    t = stats.multivariate_t(np.zeros(2), (b / a) * np.eye(2), df=2 * a).logpdf(lam)
    jac = -np.sum(~np.isnan(X) * np.log(model.scale))
    return float(logsumexp(mu_int + t) + 2 * np.log(h) + jac)


@pytest.mark.slow
def test_scores_of_one_analyser_with_one_factor_against_quadrature():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 2)) @ np.array([[2.0, 1.0], [0.0, 0.5]]) + [3.0, -1.0]
    X[[1, 4, 9, 12], [0, 1, 1, 0]] = np.nan
    est = _fit(X, n_components=1, n_factors=1)
    model = scoring_model_for(est)
    exact = _exact_one_factor_missing(model, X)
    assert exact == pytest.approx(_exact_one_factor_missing(model, X, R=5.0, G=201), abs=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = {m: score(est, X, method=m, random_state=0)
               for m in ("vb", "bic", "laplace", "cs", "cs_dagger")}
        res["ais"] = score(est, X, method="ais", random_state=0, n_temperatures=2000,
                           n_chains=32)
        q = model.variational_posterior()
        g = model.alias_posterior(MFAPosterior(q.alpha, q.means, 10 * q.covs, dof=3))
        res["is_alias"] = score(est, X, method="is", random_state=0, posterior=g,
                                proposal="vb", n_samples=20000, n_runs=2)
    tol = lambda r: min(max(0.05, 4 * r.stderr), 0.5)  # noqa: E731
    assert abs(res["ais"].log_evidence - exact) <= tol(res["ais"])
    assert abs(res["is_alias"].log_evidence - exact) <= tol(res["is_alias"])
    assert res["vb"].log_evidence <= exact
    assert res["cs"].log_evidence <= exact
    assert abs(res["laplace"].log_evidence - exact) < 2.0


SCORES = ["vb", "map", "bic", "bic_map", "bicp", "laplace", "cs", "cs_dagger", "is", "ais",
          "vmcmc", "smc", "nested_sampling"]


@pytest.fixture(scope="module")
def small():
    """Two analysers with one factor, p = 2, n = 16, entries missing."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(-3.0, 1.0, (8, 2)), rng.normal(3.0, 1.0, (8, 2))])
    X[[1, 4, 9, 13], [0, 1, 1, 0]] = np.nan
    return _fit(X, n_components=2, n_factors=1), X


@pytest.mark.parametrize("method", SCORES)
def test_every_evidence_score_accepts_missing_entries(method, small):
    est, X = small
    options = {"is": dict(n_samples=200), "ais": dict(n_temperatures=20, n_chains=2),
               "vmcmc": dict(n_samples=50), "smc": dict(n_particles=20),
               "nested_sampling": dict(n_live=10)}.get(method, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(score(est, X, method, random_state=0, **options).log_evidence)
