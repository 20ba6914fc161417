"""Independent references for full-covariance Gaussian HMMs with missing entries (NaN).

Nothing here calls the library: densities come from scipy, state paths are enumerated,
missing entries are integrated by numerical quadrature, and Normal-Wishart parameters
are integrated by sequential Student-t predictives.

Conventions (those of the library's hyperparameters): ``mu | Lambda ~ N(m, (beta
Lambda)^-1)``, ``Lambda ~ Wishart(W = S^-1, nu)`` with ``S`` the ``scale``.
"""

import itertools

import numpy as np
from scipy import integrate
from scipy.special import digamma, gammaln, logsumexp
from scipy.stats import multivariate_normal, multivariate_t

LOG_2PI = np.log(2.0 * np.pi)


def log_dirichlet_evidence(alpha, counts):
    """ln of the Dirichlet-multinomial integral of one or more rows of counts."""
    alpha, counts = np.atleast_2d(alpha), np.atleast_2d(counts)
    lb = lambda a: np.sum(gammaln(a), axis=-1) - gammaln(np.sum(a, axis=-1))  # noqa: E731
    return float(np.sum(lb(alpha + counts) - lb(alpha)))


def enumerate_paths(log_emission, log_start, log_trans):
    """ln sum over the state paths of one sequence of exp(start + transitions +
    emissions); ``log_emission`` (T, K)."""
    T, K = log_emission.shape
    terms = []
    for path in itertools.product(range(K), repeat=T):
        v = log_start[path[0]] + log_emission[0, path[0]]
        for t in range(1, T):
            v += log_trans[path[t - 1], path[t]] + log_emission[t, path[t]]
        terms.append(v)
    return float(logsumexp(terms))


def observed_marginal_table(X, means, covars):
    """ln N(x_o | mu_k,o, Sigma_k,oo) of every frame and state (T, K); 0 for a frame with
    nothing observed."""
    T, K = X.shape[0], means.shape[0]
    out = np.zeros((T, K))
    for t in range(T):
        o = ~np.isnan(X[t])
        if not o.any():
            continue
        for k in range(K):
            out[t, k] = multivariate_normal.logpdf(X[t, o], means[k, o],
                                                   covars[k][np.ix_(o, o)])
    return out


def expected_log_normal(x, m, beta, W, nu):
    """E[ln N(x | mu, Lambda^-1)] under the Normal-Wishart (Bishop 2006, eq. 10.64)."""
    D = x.shape[0]
    e_logdet = (np.sum(digamma(0.5 * (nu - np.arange(D)))) + D * np.log(2.0)
                + np.linalg.slogdet(W)[1])
    r = x - m
    return 0.5 * e_logdet - 0.5 * D * LOG_2PI - 0.5 * D / beta - 0.5 * nu * r @ W @ r


def vbe_log_weight(x, m, beta, W, nu):
    """ln of the integral over the missing entries of x (one of them at most here) of
    exp E[ln N(x | mu, Lambda^-1)], by adaptive quadrature; 0 when nothing is observed
    (such a frame has likelihood 1 and is not augmented)."""
    miss = np.flatnonzero(np.isnan(x))
    if miss.size == 0:
        return expected_log_normal(x, m, beta, W, nu)
    if miss.size == x.size:
        return 0.0
    if miss.size > 1:
        raise ValueError("the quadrature oracle integrates one missing entry")
    d = int(miss[0])
    ref = expected_log_normal(np.where(np.isnan(x), m, x), m, beta, W, nu)

    def f(v):
        y = x.copy()
        y[d] = v
        return np.exp(expected_log_normal(y, m, beta, W, nu) - ref)

    sd = 1.0 / np.sqrt(nu * W[d, d])
    centre = m[d]
    val, _ = integrate.quad(f, centre - 40 * sd, centre + 40 * sd, epsabs=0,
                            epsrel=1e-13, limit=400, points=[centre])
    return ref + np.log(val)


def _nw_update(m, beta, S, nu, x):
    """The Normal-Wishart posterior after one complete frame x."""
    beta1 = beta + 1.0
    m1 = (beta * m + x) / beta1
    S1 = S + beta / beta1 * np.outer(x - m, x - m)
    return m1, beta1, S1, nu + 1.0


def _predictive_log(m, beta, S, nu, x):
    """ln of the Student-t predictive of the observed entries of x."""
    D = m.shape[0]
    o = ~np.isnan(x)
    if not o.any():
        return 0.0
    dof = nu - D + 1.0
    shape = (beta + 1.0) / (beta * dof) * S
    return float(multivariate_t.logpdf(x[o], loc=m[o], shape=shape[np.ix_(o, o)], df=dof))


def exact_log_evidence(X, K, a_start, a_trans, m0, beta0, S0, nu0):
    """ln p(X_obs) of a one-sequence full-covariance Gaussian HMM with Dirichlet and
    Normal-Wishart priors: the paths enumerated; given a path, every state's frames
    integrate against its Normal-Wishart prior as a product of Student-t predictives,
    the complete frames first and at most one partially observed frame last (whose
    predictive marginal over its observed entries is Student-t again).  Frames with
    nothing observed have likelihood 1."""
    T = X.shape[0]
    complete = ~np.isnan(X).any(axis=1)
    terms = []
    for path in itertools.product(range(K), repeat=T):
        path = np.array(path)
        start = np.bincount(path[:1], minlength=K)
        trans = np.zeros((K, K))
        np.add.at(trans, (path[:-1], path[1:]), 1.0)
        v = log_dirichlet_evidence(a_start, start) + log_dirichlet_evidence(a_trans, trans)
        for k in range(K):
            m, beta, S, nu = m0.copy(), beta0, S0.copy(), nu0
            partial = [t for t in np.flatnonzero(path == k)
                       if not complete[t] and not np.isnan(X[t]).all()]
            if len(partial) > 1:
                raise ValueError("the oracle integrates one partially observed frame per state")
            for t in np.flatnonzero((path == k) & complete):
                v += _predictive_log(m, beta, S, nu, X[t])
                m, beta, S, nu = _nw_update(m, beta, S, nu, X[t])
            for t in partial:
                v += _predictive_log(m, beta, S, nu, X[t])
        terms.append(v)
    return float(logsumexp(terms))
