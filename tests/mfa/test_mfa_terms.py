"""Each named term of the MFA lower bound against a Monte Carlo estimate of its
defining expectation under q."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb._core.distributions import dirichlet_log_pdf, gamma_log_pdf
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.mfa._vbem import bound_terms

N_MC = 40000


@pytest.fixture(scope="module")
def state():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(5, 3)) @ rng.normal(size=(3, 3)), rng.normal(size=(4, 3)) + 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = VBMixtureFactorAnalysers(
            2, n_factors=2, search=False, max_iter=4, random_state=0, standardize=False,
            optimize_hyperparameters=True, prune_factors=False,
        ).fit(X)
    data = m._check_fit_data(X)
    # use a state that is not a fixed point of anything: stale q(x|s) on purpose
    st = m._vb_
    st.xbar = st.xbar + 0.3 * rng.normal(size=st.xbar.shape)
    st.resp = rng.dirichlet(np.ones(2), size=X.shape[0])
    return m, data, bound_terms(m._vb_, data), np.random.default_rng(1)


def _check(mc_values, exact):
    mean = np.mean(mc_values)
    se = np.std(mc_values) / np.sqrt(len(mc_values))
    assert abs(mean - exact) < 5 * se + 1e-9, (mean, exact, se)


def test_term_pi(state):
    m, data, t, rng = state
    st = m._vb_
    S = st.alpha_hat.shape[0]
    pi = rng.dirichlet(st.alpha_hat, size=N_MC)
    vals = dirichlet_log_pdf(pi, np.full(S, st.alpha_star / S)) - dirichlet_log_pdf(
        pi, st.alpha_hat
    )
    _check(vals, t.pi)


def test_term_nu(state):
    m, data, t, rng = state
    st = m._vb_
    for s in range(2):
        nu = rng.gamma(st.a_tilde, 1.0 / st.b_tilde[s], size=(N_MC, 2))
        vals = np.sum(
            gamma_log_pdf(nu, st.a_star, st.b_star)
            - gamma_log_pdf(nu, st.a_tilde, st.b_tilde[s]),
            axis=1,
        )
        _check(vals, t.nu[s])


def test_term_loading(state):
    m, data, t, rng = state
    st = m._vb_
    p, K = 3, 2
    for s in range(2):
        nu = rng.gamma(st.a_tilde, 1.0 / st.b_tilde[s], size=(N_MC, K))
        vals = np.zeros(N_MC)
        for q in range(p):
            mean, cov = st.lam_mean[s, q], st.lam_cov[s, q]
            lam = rng.multivariate_normal(mean, cov, size=N_MC)
            prior_var = np.column_stack([1.0 / nu, np.full(N_MC, 1.0 / st.nu_star[q])])
            prior_mean = np.array([0.0, 0.0, st.mu_star[q]])
            vals += np.sum(
                -0.5 * np.log(2 * np.pi * prior_var) - 0.5 * (lam - prior_mean) ** 2 / prior_var,
                axis=1,
            )
            vals -= multivariate_normal(mean, cov).logpdf(lam)
        _check(vals, t.loading[s])


def test_term_assign(state):
    m, data, t, rng = state
    st = m._vb_
    pi = rng.dirichlet(st.alpha_hat, size=N_MC)
    r = st.resp
    for s in range(2):
        vals = np.log(pi[:, s]) * r[:, s].sum() - np.sum(r[:, s] * np.log(r[:, s]))
        _check(vals, t.assign[s])


def test_term_factor(state):
    m, data, t, rng = state
    st = m._vb_
    r = st.resp
    for s in range(2):
        sig = st.sigma[s]
        vals = np.zeros(N_MC)
        for i in range(data.n_samples):
            x = rng.multivariate_normal(st.xbar[i, s], sig, size=N_MC)
            vals += r[i, s] * (
                multivariate_normal(np.zeros(2), np.eye(2)).logpdf(x)
                - multivariate_normal(st.xbar[i, s], sig).logpdf(x)
            )
        _check(vals, t.factor[s])


def test_term_likelihood(state):
    m, data, t, rng = state
    st = m._vb_
    r, Y, psi = st.resp, data.Z, st.psi
    for s in range(2):
        lam = np.stack(
            [rng.multivariate_normal(st.lam_mean[s, q], st.lam_cov[s, q], size=N_MC)
             for q in range(3)],
            axis=1,
        )  # (N_MC, p, K+1)
        vals = np.zeros(N_MC)
        for i in range(data.n_samples):
            x = rng.multivariate_normal(st.xbar[i, s], st.sigma[s], size=N_MC)
            xt = np.column_stack([x, np.ones(N_MC)])
            pred = np.einsum("mqk,mk->mq", lam, xt)
            ll = np.sum(-0.5 * np.log(2 * np.pi * psi) - 0.5 * (Y[i] - pred) ** 2 / psi, axis=1)
            vals += r[i, s] * ll
        _check(vals, t.lik[s])
