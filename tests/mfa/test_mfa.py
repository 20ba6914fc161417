"""Variational Bayesian mixtures of factor analysers: the mathematics of one VBEM fit."""

import pickle
import warnings

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import kernels as K
from sklearn_vb.mfa import (
    VBMixtureFactorAnalysers,
    fa_free_parameters,
    max_identifiable_factors,
)
from sklearn_vb.mfa._hyper import update_alpha_prior, update_ard_prior, update_mean_prior
from sklearn_vb.mfa._vbem import (bound_terms, log_weights, update_factors, update_loadings,
                                  update_noise, update_responsibilities)


def _problem(seed, n=60, p=4):
    rng = np.random.default_rng(seed)
    k = rng.integers(1, 3)
    A = rng.normal(size=(p, k))
    X1 = rng.normal(size=(n, k)) @ A.T + 0.3 * rng.normal(size=(n, p))
    X2 = rng.normal(size=(n // 2, p)) * 0.7 + rng.normal(size=p) * 4
    return np.vstack([X1, X2])


def _fit(X, **kw):
    params = dict(search=False, random_state=0, max_iter=60, bound_check="steps")
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)


# ---------------------------------------------------------------------------- monotone F
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(
    "optimize",
    [False, True, ["noise", "mean_prior", "ard_rate", "ard_prior", "alpha_prior"]],
    ids=["fixed", "default", "all"],
)
def test_bound_never_decreases_fixed_structure(seed, optimize):
    """bound_check='steps' evaluates F after every coordinate step (including each
    hyperparameter update, Ψ included) and raises if any step lowers it."""
    X = _problem(seed)
    rng = np.random.default_rng(seed)
    m = _fit(
        X,
        n_components=int(rng.integers(1, 4)),
        n_factors=int(rng.integers(0, 4)),
        optimize_hyperparameters=optimize,
        standardize=bool(seed % 2),
        init_params="random" if seed % 3 else "kmeans",
    )
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * np.abs(m.lower_bounds_[1:]))
    total = m.bound_terms_["pi"] + sum(
        np.sum(m.bound_terms_[t]) for t in ("nu", "loading", "assign", "factor", "lik")
    )
    assert np.isclose(total + m.bound_terms_["jacobian"], m.lower_bound_, rtol=0, atol=1e-8)


def test_cross_covariance_term_is_needed():
    """Dropping Σ_q ψ_q^{-1} Γ_{q,xμ} from the factor means (as the released code does)
    gives a lower F than the exact update at the same q(Λ̃)."""
    X = _problem(3)
    m = _fit(X, n_components=2, n_factors=2, standardize=False, max_iter=5)
    st = m._vb_
    data = m._check_fit_data(X)
    # make the loading/centre cross-covariances substantial
    st.lam_cov = st.lam_cov + 0.3 * np.ones_like(st.lam_cov) * np.eye(3)[None, None, 2]
    st.lam_cov = st.lam_cov + np.swapaxes(st.lam_cov, -1, -2)
    st.lam_cov[..., 2, 2] = 1.0
    st.lam_logdet = np.linalg.slogdet(st.lam_cov)[1]
    update_factors(m._vb_, data)
    exact = m._lower_bound(data)
    M = K.expected_loading_quadratic(st.lam_mean, st.lam_cov, st.psi)
    M_drop = M.copy()
    mean = st.lam_mean
    M_drop[:, :2, 2] = np.einsum("sqk,q,sq->sk", mean[:, :, :2], 1 / st.psi, mean[:, :, 2])
    st.xbar = K.factor_means(data.Z, mean, st.psi, st.sigma, M_drop)
    dropped = m._lower_bound(data)
    assert exact > dropped + 1e-3


# ---------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("optimize", [False, True])
def test_one_component_zero_factors_is_bayesian_diagonal_gaussian(optimize):
    """S=1, k=0: q(μ) is the exact posterior, so F equals the closed-form evidence
    Σ_q ln N(Y[:,q] | μ*_q 1, ψ_q I + 11ᵀ/ν*_q) (at the fitted ψ)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(25, 3)) * [1.0, 2.0, 0.5] + [1.0, -2.0, 3.0]
    m = _fit(X, n_components=1, n_factors=0, standardize=False,
             optimize_hyperparameters=optimize, max_iter=50, tol=1e-12)
    mu_star, nu_star = m.mean_prior_
    psi = m.noise_variance_
    N = X.shape[0]
    direct = 0.0
    for q in range(3):
        cov = psi[q] * np.eye(N) + np.ones((N, N)) / nu_star[q]
        d = X[:, q] - mu_star[q]
        sign, logdet = np.linalg.slogdet(cov)
        direct += -0.5 * (N * np.log(2 * np.pi) + logdet + d @ np.linalg.solve(cov, d))
    assert m.lower_bound_ == pytest.approx(direct, abs=1e-9)
    if not optimize:
        assert np.allclose(psi, X.var(axis=0))


def test_collapsed_identity_after_responsibilities():
    """Right after q(x|s) and q(s): Σ_s (F_assign + F_x + F_lik) = Σ_i logsumexp_s ℓ_is,
    and with Γ → 0, ℓ_is − E ln π_s is the exact FA log density."""
    X = _problem(5)
    m = _fit(X, n_components=3, n_factors=2, max_iter=3)
    data = m._check_fit_data(X)
    update_factors(m._vb_, data)
    update_responsibilities(m._vb_, data)
    t = bound_terms(m._vb_, data)
    data_part = sum(np.sum(v) for v in (t.assign, t.factor, t.lik))
    ell = log_weights(m._vb_, data.Z)
    from scipy.special import logsumexp

    assert data_part == pytest.approx(np.sum(logsumexp(ell, axis=1)), rel=1e-12)
    st = m._vb_
    st.lam_cov = np.zeros_like(st.lam_cov)
    update_factors(m._vb_, data)
    ell = log_weights(m._vb_, data.Z)
    elog = digamma(st.alpha_hat) - digamma(st.alpha_hat.sum())
    dens = K.fa_log_density(data.Z, st.lam_mean[:, :, 2], st.lam_mean[:, :, :2], st.psi)
    assert np.allclose(ell - elog, dens, atol=1e-9)


def test_hyperparameter_fixed_points():
    X = _problem(2)
    m = _fit(X, n_components=3, n_factors=2, max_iter=15)
    data = m._check_fit_data(X)
    st = m._vb_
    update_ard_prior(m._vb_, m.ard_rate_min)
    e_nu = st.a_tilde / st.b_tilde
    c_bar = np.mean(digamma(st.a_tilde) - np.log(st.b_tilde))
    a, b = st.a_star, st.b_star
    assert digamma(a) - np.log(a) == pytest.approx(c_bar - np.log(e_nu.mean()), abs=1e-8)
    assert b == pytest.approx(a / e_nu.mean(), rel=1e-10)
    update_alpha_prior(m._vb_)
    S = 3
    al = st.alpha_star
    c = np.mean(digamma(st.alpha_hat.sum()) - digamma(st.alpha_hat))
    assert digamma(al) - digamma(al / S) == pytest.approx(c, abs=1e-8)
    # Ψ, μ*, ν*: F is stationary (finite differences) after their updates
    for update, field in ((update_noise, lambda s: s.psi), (update_mean_prior, lambda s: s.mu_star),
                          (update_mean_prior, lambda s: s.nu_star)):
        update(m._vb_, data)
        base = m._lower_bound(data)
        values = field(st)
        for q in range(X.shape[1]):
            h = 1e-5 * max(abs(values[q]), 1e-3)
            values[q] += h
            up = m._lower_bound(data)
            values[q] -= 2 * h
            down = m._lower_bound(data)
            values[q] += h
            # a maximum: both one-sided moves lower F (to second order in h)
            assert up <= base + 1e-8 and down <= base + 1e-8


# ---------------------------------------------------------------------------- API
def test_basic_outputs_and_shapes():
    X = _problem(0)
    m = _fit(X, n_components=2, n_factors=2)
    P = m.predict_proba(X)
    assert P.shape == (X.shape[0], 2) and np.allclose(P.sum(1), 1)
    assert np.array_equal(m.predict(X), P.argmax(1))
    assert m.transform(X).shape == (X.shape[0], 2)
    assert m.transform(X, components="all").shape == (X.shape[0], 2, 2)
    assert m.loadings_.shape == (2, 4, 2) and m.means_.shape == (2, 4)
    assert m.loading_covariances_.shape == (2, 4, 3, 3)
    Xs, labels = m.sample(50)
    assert Xs.shape == (50, 4) and labels.shape == (50,)
    assert np.isfinite(m.score(X))
    assert m.score_samples(X, method="bound").shape == (X.shape[0],)
    assert m.bic(X) > m.aic(X) - 1e9
    assert np.isfinite(m.bic(X))
    assert m.n_factors_per_component_.shape == (2,)


def test_bound_score_is_below_plugin_train_identity():
    """Σ_i score_samples(bound) − F = KL_π + Σ_s (KL_ν + KL_Λ) right after q(s)."""
    X = _problem(4)
    m = _fit(X, n_components=2, n_factors=2, optimize_hyperparameters=False,
             standardize=False, max_iter=40)
    data = m._check_fit_data(X)
    update_factors(m._vb_, data)
    update_responsibilities(m._vb_, data)
    F = m._lower_bound(data)
    t = bound_terms(m._vb_, data)
    kl = -(t.pi + np.sum(t.nu) + np.sum(t.loading))
    assert np.sum(m.score_samples(X, method="bound")) - F == pytest.approx(kl, rel=1e-9)


def test_standardize_jacobian():
    """F in original units = F in standardised units − N Σ ln σ: fitting c·X shifts F
    by −N p ln c."""
    X = _problem(1)
    # plain VBEM: a smooth map of the state, so round-off stays round-off (an
    # extrapolation accepted in one fit and not in the other would not)
    kw = dict(n_components=2, n_factors=1, bound_check="raise", acceleration=None)
    m1 = _fit(X, **kw)
    m2 = _fit(3.0 * X + 7.0, **kw)
    N, p = X.shape
    assert m2.lower_bound_ == pytest.approx(m1.lower_bound_ - N * p * np.log(3.0), abs=1e-6)
    assert m2.score(3.0 * X + 7.0) == pytest.approx(m1.score(X) - p * np.log(3.0), abs=1e-8)


def test_degrees_of_freedom_helpers():
    assert fa_free_parameters([1, 2], 3) == 18
    assert max_identifiable_factors(10) == 6
    assert max_identifiable_factors(64) == 54


def test_pickle_reproducibility_and_input_unchanged():
    X = _problem(2)
    X0 = X.copy()
    m = _fit(X, n_components=2, n_factors=2)
    assert np.array_equal(X, X0)
    m2 = pickle.loads(pickle.dumps(m))
    assert np.array_equal(m.predict_proba(X), m2.predict_proba(X))
    m3 = _fit(X, n_components=2, n_factors=2)
    assert m3.lower_bound_ == m.lower_bound_


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(n_components=0), "n_components"),
        (dict(n_factors=-1), "n_factors"),
        (dict(alpha=0.0), "alpha"),
        (dict(optimize_hyperparameters=["noise", "bogus"]), "optimize_hyperparameters"),
        (dict(n_components=500), "n_components"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        VBMixtureFactorAnalysers(**params).fit(_problem(0))


def test_bad_input():
    m = VBMixtureFactorAnalysers()
    X = _problem(0)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        m.fit(X)
    m = _fit(_problem(0), n_components=1, n_factors=1)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros((3, 2)))


def test_component_without_data_reverts_to_its_prior():
    """A component with r_·s ≡ 0 gets q(Λ̃^s_q) = its conditional prior after one q(Λ̃)
    update: centre N(μ*_q, 1/ν*_q), loadings N(0, 1/E ν), no correlations."""
    X = _problem(0)
    m = _fit(X, n_components=2, n_factors=2, max_iter=5)
    data = m._check_fit_data(X)
    st = m._vb_
    st.resp = np.column_stack([np.ones(X.shape[0]), np.zeros(X.shape[0])])
    update_loadings(m._vb_, data)
    e_nu = st.a_tilde / st.b_tilde[1]
    for q in range(X.shape[1]):
        expected = np.diag(np.r_[1.0 / e_nu, 1.0 / st.nu_star[q]])
        assert np.allclose(st.lam_cov[1, q], expected, rtol=1e-10, atol=1e-14)
        assert np.allclose(st.lam_mean[1, q], np.r_[0.0, 0.0, st.mu_star[q]], atol=1e-12)
    t = bound_terms(m._vb_, data)
    # the loading KL of that component is then only the E_q(ν) part (zero mean gap)
    assert t.loading[1] <= 1e-9


def test_quantisation_floor():
    from sklearn_vb.mfa._estimator import _quantisation_variance

    rng = np.random.default_rng(0)
    Q = np.c_[rng.integers(0, 5, 50) * 2.0, rng.integers(0, 17, 50), np.zeros(50)]
    assert np.allclose(_quantisation_variance(Q), [4 / 12, 1 / 12, 1.5**2 / 12])
    # continuous data: the floor is negligible, the default behaves as psi_min=1e-5
    assert np.all(_quantisation_variance(rng.normal(size=(200, 3))) < 1e-6)


def test_default_noise_floor_on_digits():
    """Pixels that are almost always zero must not drive Ψ to a tiny floor."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:400]
    Xtr, Xte = X[:250], X[250:]
    kw = dict(n_factors=4, random_state=0, max_tries=1, tol=1.0, polish_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = VBMixtureFactorAnalysers(**kw).fit(Xtr)
        tiny = VBMixtureFactorAnalysers(psi_min=1e-5, **kw).fit(Xtr)
    assert default.score(Xte) > -300.0
    assert tiny.score(Xte) < -1e4
    # the floor is the rounding noise of integer pixels, 1/12 in the data's units
    assert np.all(default.noise_variance_ >= 1.0 / 12.0 * (1 - 1e-9))


def test_kernel_results_do_not_share_their_reused_work_arrays():
    """The statistics, factor means and log-weights are new arrays: the work arrays the
    kernels reuse between calls of the same shapes never leak into a result."""
    from sklearn_vb.mfa import kernels as kern

    rng = np.random.default_rng(0)
    N, S, K, p = 40, 3, 2, 5

    def inputs():
        Y = rng.normal(size=(N, p))
        resp = rng.dirichlet(np.ones(S), size=N)
        xbar = rng.normal(size=(N, S, K))
        sigma = np.stack([np.eye(K) * rng.uniform(0.5, 1.5) for _ in range(S)])
        lam = rng.normal(size=(S, p, K + 1))
        cov = np.broadcast_to(np.eye(K + 1) * 0.1, (S, p, K + 1, K + 1)).copy()
        psi = rng.uniform(0.5, 2.0, size=p)
        return Y, resp, xbar, sigma, lam, cov, psi

    def run(Y, resp, xbar, sigma, lam, cov, psi):
        M = kern.expected_loading_quadratic(lam, cov, psi)
        stats = kern.sufficient_statistics(Y, resp, xbar, sigma)
        means = kern.factor_means(Y, lam, psi, sigma, M)
        logw = kern.log_weights(Y, xbar, sigma, np.zeros(S), lam, M, psi, np.zeros(S))
        return [*stats, means, logw]

    first_inputs = inputs()
    first = run(*first_inputs)
    kept = [a.copy() for a in first]
    run(*inputs())  # the same shapes, other values
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)
    # and a second call on the first inputs gives the first results again
    for a, b in zip(run(*first_inputs), kept):
        np.testing.assert_array_equal(a, b)
    # the statistics against their definitions
    Y, resp, xbar, sigma = first_inputs[:4]
    xe = np.concatenate([xbar, np.ones((N, S, 1))], axis=2)
    W = np.einsum("ns,nsk,nsl->skl", resp, xe, xe)
    W[:, :K, :K] += resp.sum(0)[:, None, None] * sigma
    np.testing.assert_allclose(kept[1], W, rtol=1e-12)
    np.testing.assert_allclose(kept[2], np.einsum("ns,nq,nsk->sqk", resp, Y, xe), rtol=1e-12)
    np.testing.assert_allclose(kept[3], resp.T @ Y**2, rtol=1e-12)
