"""Exact evidences of tiny clustering and binary-attribute data sets with the
hyperparameters integrated out: the latents enumerated, the weights, mixing proportions
and attribute probabilities integrated in closed form, the two variances (the prior
variance of the weights and the noise variance) by a product trapezoid rule in their
logarithms (the integrand is smooth and decays fast on both sides there)."""

import itertools

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

LOG_2PI = np.log(2.0 * np.pi)


def _log_ig_in_log_space(u, shape, scale):
    """ln of the density of ln(v) for v ~ IG(shape, scale)."""
    return shape * np.log(scale) - gammaln(shape) - shape * u - scale * np.exp(-u)


def _log_marginal_grid(Y, design, u, v):
    """ln p(Y | Z, weight_var = e^u, noise_var = e^v) on the grid (len(u), len(v)): the
    columns of Y are independent N(0, e^u Z Z^T + e^v I), diagonalised once."""
    n, D = Y.shape
    lam, Q = np.linalg.eigh(design @ design.T)
    lam = np.maximum(lam, 0.0)
    proj2 = np.sum((Q.T @ Y) ** 2, axis=1)  # (n,): sum over columns of (Q^T y_d)_j^2
    var = np.exp(u)[:, None, None] * lam[None, None, :] + np.exp(v)[None, :, None]
    return (-0.5 * np.sum(proj2 / var, axis=2) - 0.5 * D * np.sum(np.log(var), axis=2)
            - 0.5 * n * D * LOG_2PI)


def _integrate(Y, designs, log_latent_prior, hyperprior, n_grid=241, lo=-10.0, hi=14.0):
    hp = hyperprior
    u = np.linspace(lo, hi, n_grid)
    v = np.linspace(lo, hi, n_grid)
    total = None
    for design, lz in zip(designs, log_latent_prior):
        g = lz + _log_marginal_grid(Y, design, u, v)
        total = g if total is None else np.logaddexp(total, g)
    total = (total + _log_ig_in_log_space(u, hp.variance_shape, hp.variance_scale)[:, None]
             + _log_ig_in_log_space(v, hp.variance_shape, hp.variance_scale)[None, :])
    # the trapezoid rule in both coordinates (weights 1/2 on the edges)
    w = np.ones(n_grid)
    w[[0, -1]] = 0.5
    h = u[1] - u[0]
    logw = np.log(w)[:, None] + np.log(w)[None, :] + 2 * np.log(h)
    return float(logsumexp(total + logw))


def clustering_hyper_log_evidence(Y, K, hyperprior):
    """ln p(Y) of the clustering model with Dirichlet(concentration) mixing proportions
    and IG variances; K^n labellings."""
    n = Y.shape[0]
    a = hyperprior.concentration
    designs, priors = [], []
    for labels in itertools.product(range(K), repeat=n):
        counts = np.bincount(labels, minlength=K)
        priors.append(gammaln(K * a) - gammaln(K * a + n) + np.sum(gammaln(a + counts) - gammaln(a)))
        designs.append(np.eye(K)[list(labels)])
    return _integrate(Y, designs, priors, hyperprior)


def binary_hyper_log_evidence(Y, K, hyperprior):
    """ln p(Y) of the binary-attribute model with Beta attribute probabilities and IG
    variances; 2^(n K) attribute matrices."""
    n = Y.shape[0]
    a, b = hyperprior.attribute_a, hyperprior.attribute_b
    designs, priors = [], []
    for bits in itertools.product((0.0, 1.0), repeat=n * K):
        Z = np.array(bits).reshape(n, K)
        on = Z.sum(axis=0)
        priors.append(float(np.sum(betaln(a + on, b + n - on) - betaln(a, b))))
        designs.append(Z)
    return _integrate(Y, designs, priors, hyperprior)
