"""The compiled conditionals of the three latent-factor models against their NumPy
formulation (batched linear algebra over chains and cases): same discrete draws from the
same uniforms, the same continuous draws from the same normals, the same densities."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb.bdmc_models import BayesianBinaryAttributes, BayesianClustering, BayesianLowRank
from sklearn_vb.scoring import scoring_model_for

LOG_2PI = np.log(2 * np.pi)


# --------------------------------------------------------------- the NumPy formulation
def np_clustering_logits(means, Y, log_w, nv, beta):
    D = Y.shape[1]
    sq = (np.sum(Y * Y, axis=1)[None, :, None] - 2.0 * Y[None] @ means.transpose(0, 2, 1)
          + np.sum(means * means, axis=2)[:, None, :])
    ll = -0.5 * np.maximum(sq, 0.0) / nv - 0.5 * D * (LOG_2PI + np.log(nv))
    return log_w + beta[None, :, None] * ll


def np_binary_logits(A, Y, log_p, log_1mp, nv, beta):
    K, D = A.shape[1:]
    cfg = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
    means = cfg[None] @ A
    sq = (np.sum(Y * Y, axis=1)[None, :, None] - 2.0 * Y[None] @ means.transpose(0, 2, 1)
          + np.sum(means * means, axis=2)[:, None, :])
    ll = -0.5 * np.maximum(sq, 0.0) / nv - 0.5 * D * (LOG_2PI + np.log(nv))
    return (cfg @ log_p + (1.0 - cfg) @ log_1mp)[None, None, :] + beta[None, :, None] * ll


def np_draw(logits, u):
    p = np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))
    idx = np.array([np.searchsorted(np.cumsum(row), uu * row.sum(), side="right")
                    for row, uu in zip(p.reshape(-1, p.shape[-1]), u.ravel())])
    return idx.reshape(u.shape)


def np_low_rank_loglik(V, Y, lv, nv):
    C, K, D = V.shape
    cov = lv * V.transpose(0, 2, 1) @ V + nv * np.eye(D)
    _, logdet = np.linalg.slogdet(cov)
    sol = np.linalg.solve(cov, np.broadcast_to(Y.T, (C, D, Y.shape[0])))
    quad = np.einsum("dn,cdn->cn", Y.T, sol)
    return -0.5 * quad - 0.5 * logdet[:, None] - 0.5 * D * LOG_2PI


def np_latent_posterior(V, Y, beta, lv, nv):
    K = V.shape[1]
    VVt = V @ V.transpose(0, 2, 1)
    P = np.eye(K) / lv + beta[None, :, None, None] * VVt[:, None] / nv
    rhs = beta[None, :, None] * (Y[None] @ V.transpose(0, 2, 1)) / nv
    return np.linalg.solve(P, rhs[..., None])[..., 0], np.linalg.cholesky(P)


def np_weights_posterior(Z, Y, beta, wv, nv):
    Zb = Z * beta[None, :, None]
    K = Z.shape[2]
    P = np.eye(K) / wv + Zb.transpose(0, 2, 1) @ Z / nv
    return np.linalg.solve(P, Zb.transpose(0, 2, 1) @ Y / nv), np.linalg.cholesky(P)


def np_gauss_logpdf(x, mean, L):
    """ln N(x; mean, (L L^T)^{-1}) of the columns of x (..., K, D), summed."""
    r = np.swapaxes(L, -1, -2) @ (x - mean)
    K, D = x.shape[-2:]
    logdet = 2 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * np.sum(r * r, axis=(-2, -1)) + 0.5 * D * logdet - 0.5 * K * D * LOG_2PI


# --------------------------------------------------------------- instances
def _model(cls, K, n=7, D=4, seed=0, **kw):
    est = cls(K, random_state=0, n_init=1, **kw)
    Y, _, _ = est.simulate(n, D, random_state=seed)
    return scoring_model_for(est.fit(Y)), Y


BETAS = [1.0, 0.37, np.array([1.0, 0.0, 0.5, 1.0, 0.0, 0.2, 1.0])]


@pytest.mark.parametrize("beta", BETAS, ids=["one", "scalar", "per-case"])
def test_clustering_conditionals_match_numpy(beta):
    m, Y = _model(BayesianClustering, 3, noise_sd=0.8, mean_sd=1.5)
    rng = np.random.default_rng(1)
    means = {m.name: rng.standard_normal((5, 3, 4))}
    b = np.broadcast_to(beta, (7,)).astype(float)
    lg = np_clustering_logits(means[m.name], Y, m.log_weights, m.noise_var, b)
    np.testing.assert_allclose(m.log_likelihood_per_case(means, Y),
                               logsumexp(np_clustering_logits(means[m.name], Y, m.log_weights,
                                                              m.noise_var, np.ones(7)), axis=2),
                               rtol=1e-12)
    z = m.sample_latents(means, Y, np.random.default_rng(2), beta)
    np.testing.assert_array_equal(z, np_draw(lg, np.random.default_rng(2).random((5, 7))))
    lcond = np.take_along_axis(lg - logsumexp(lg, axis=2, keepdims=True), z[..., None], 2)
    np.testing.assert_allclose(m.log_latent_conditional(means, z, Y, beta),
                               lcond[..., 0].sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("beta", BETAS, ids=["one", "scalar", "per-case"])
def test_binary_conditionals_match_numpy(beta):
    m, Y = _model(BayesianBinaryAttributes, 4, attribute_prob=0.3, noise_sd=0.6)
    rng = np.random.default_rng(1)
    A = {m.name: rng.standard_normal((5, 4, 4))}
    b = np.broadcast_to(beta, (7,)).astype(float)
    lg = np_binary_logits(A[m.name], Y, m.log_p, m.log_1mp, m.noise_var, b)
    np.testing.assert_allclose(
        m.log_likelihood_per_case(A, Y),
        logsumexp(np_binary_logits(A[m.name], Y, m.log_p, m.log_1mp, m.noise_var, np.ones(7)),
                  axis=2), rtol=1e-12)
    Z = m.sample_latents(A, Y, np.random.default_rng(2), beta)
    idx = np_draw(lg, np.random.default_rng(2).random((5, 7)))
    np.testing.assert_array_equal(Z @ 2 ** np.arange(4), idx)
    lcond = np.take_along_axis(lg - logsumexp(lg, axis=2, keepdims=True), idx[..., None], 2)
    np.testing.assert_allclose(m.log_latent_conditional(A, Z, Y, beta),
                               lcond[..., 0].sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("beta", BETAS, ids=["one", "scalar", "per-case"])
def test_low_rank_conditionals_match_numpy(beta):
    m, Y = _model(BayesianLowRank, 2, latent_sd=1.3, noise_sd=0.7)
    rng = np.random.default_rng(1)
    V = {m.name: rng.standard_normal((5, 2, 4))}
    b = np.broadcast_to(beta, (7,)).astype(float)
    np.testing.assert_allclose(m.log_likelihood_per_case(V, Y),
                               np_low_rank_loglik(V[m.name], Y, m.latent_var, m.noise_var),
                               rtol=1e-11)
    U = m.sample_latents(V, Y, np.random.default_rng(2), beta)
    mean, L = np_latent_posterior(V[m.name], Y, b, m.latent_var, m.noise_var)
    eps = np.random.default_rng(2).standard_normal((5, 7, 2))
    expected = mean + np.linalg.solve(np.swapaxes(L, -1, -2), eps[..., None])[..., 0]
    np.testing.assert_allclose(U, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.log_latent_conditional(V, U, Y, beta),
                               np_gauss_logpdf(U[..., None], mean[..., None], L).sum(axis=1),
                               rtol=1e-11)


@pytest.mark.parametrize("cls,K,kw", [
    (BayesianClustering, 3, dict(mean_sd=1.5)),
    (BayesianBinaryAttributes, 4, dict(feature_sd=0.8)),
    (BayesianLowRank, 2, dict(component_sd=1.2)),
])
@pytest.mark.parametrize("beta", BETAS, ids=["one", "scalar", "per-case"])
def test_weight_conditionals_and_complete_likelihood_match_numpy(cls, K, kw, beta):
    m, Y = _model(cls, K, noise_sd=0.7, **kw)
    rng = np.random.default_rng(3)
    W = {m.name: rng.standard_normal((5, K, 4))}
    Z = m.sample_latents_prior(W, 7, rng)
    b = np.broadcast_to(beta, (7,)).astype(float)
    design = m._design_batch(Z)
    draw = m.sample_params(Z, Y, np.random.default_rng(4), beta)[m.name]
    mean, L = np_weights_posterior(design, Y, b, m.weight_var, m.noise_var)
    eps = np.random.default_rng(4).standard_normal((5, K, 4))
    np.testing.assert_allclose(draw, mean + np.linalg.solve(L.transpose(0, 2, 1), eps),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.log_param_conditional({m.name: draw}, Z, Y, beta),
                               np_gauss_logpdf(draw, mean, L), rtol=1e-11)
    r = Y[None] - design @ W[m.name]
    np.testing.assert_allclose(m.log_complete_likelihood_per_case(W, Z, Y),
                               -0.5 * np.sum(r * r, axis=2) / m.noise_var
                               - 0.5 * 4 * (LOG_2PI + np.log(m.noise_var)), rtol=1e-12)


@pytest.mark.parametrize("K,noise_var", [(1, 1.0), (4, 1.0), (5, 0.3), (5, 1e-4), (3, 1e3)])
def test_binary_likelihood_factorised_sum_matches_the_enumeration(K, noise_var):
    """The likelihood's sum of products over the two halves of the bits equals the direct
    log-sum-exp of the 2^K logits, including cases so far from every configuration that
    the products underflow (tiny noise: the direct sum takes over)."""
    from sklearn_vb.bdmc_models.kernels import binary_log_likelihood

    rng = np.random.default_rng(K)
    A = rng.standard_normal((3, K, 6))
    Y = 3.0 * rng.standard_normal((9, 6))
    log_p = np.log(rng.uniform(0.1, 0.9, K))
    log_1mp = np.log1p(-np.exp(log_p))
    got = binary_log_likelihood(A, Y, log_p, log_1mp, noise_var)
    expected = logsumexp(np_binary_logits(A, Y, log_p, log_1mp, noise_var, np.ones(9)), axis=2)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
