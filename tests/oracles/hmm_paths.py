"""Exact evidence of a tiny categorical HMM by enumerating its state paths: the oracle of
the HMM's missing-value, known-state and transition-input tests."""

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp


def _log_beta(a):
    return np.sum(gammaln(a), axis=-1) - gammaln(np.sum(a, axis=-1))


def dirichlet_evidence(alpha, counts):
    """ln of the Dirichlet-multinomial integral of ``counts`` under prior ``alpha``."""
    return float(np.sum(_log_beta(alpha + counts) - _log_beta(alpha)))


def exact_categorical_log_evidence(x, lengths, K, M, a_pi, a_A, a_B, known=None,
                                   levels=None):
    """ln p(X) of a categorical HMM with Dirichlet priors, or with ``known`` (-1 where
    unknown) ln p(X, s_t = known_t where known_t >= 0): the sum over every joint state
    path (that agrees with the known states) of the Dirichlet integrals of its counts; a
    missing symbol (NaN) adds no count.  With ``levels`` (one input level per frame) the
    transition into frame t is counted in the matrix of level ``levels[t]`` and ``a_A``
    is (L, K, K): ln p(X | levels) of the input-driven HMM."""
    x = np.asarray(x, dtype=float)
    T = x.size
    first = np.zeros(T, dtype=bool)
    first[np.cumsum(lengths) - np.asarray(lengths)] = True
    known = -np.ones(T, dtype=int) if known is None else np.asarray(known)
    lv = np.zeros(T, dtype=int) if levels is None else np.asarray(levels)
    a_A = np.asarray(a_A, dtype=float)
    if levels is None:
        a_A = np.broadcast_to(a_A, (K, K))[None]
    elif a_A.ndim < 3:
        a_A = np.broadcast_to(a_A, (int(lv.max()) + 1, K, K))
    terms = []
    for path in itertools.product(range(K), repeat=T):
        if any(k >= 0 and s != k for s, k in zip(path, known)):
            continue
        n_pi, n_A, n_B = np.zeros(K), np.zeros(a_A.shape), np.zeros((K, M))
        for t, s in enumerate(path):
            if first[t]:
                n_pi[s] += 1
            else:
                n_A[lv[t], path[t - 1], s] += 1
            if not np.isnan(x[t]):
                n_B[s, int(x[t])] += 1
        terms.append(dirichlet_evidence(a_pi, n_pi) + dirichlet_evidence(a_A, n_A)
                     + dirichlet_evidence(a_B, n_B))
    return float(logsumexp(terms))


def path_sums(x, lengths, log_pi, log_A, log_B, levels=None):
    """ln of the sum over every state path of prod_t weights (initial ``log_pi`` (K,),
    transition ``log_A`` (K, K), or (L, K, K) with ``levels``, emission ``log_B``
    (K, M); the weights need not be normalised), and the expected transition counts
    under the path distribution these weights define, (K, K) or (L, K, K): the
    normaliser and transition statistics of one VBE step, by enumeration."""
    x = np.asarray(x, dtype=int).ravel()
    T = x.size
    K = log_pi.shape[0]
    first = np.zeros(T, dtype=bool)
    first[np.cumsum(lengths) - np.asarray(lengths)] = True
    lv = np.zeros(T, dtype=int) if levels is None else np.asarray(levels)
    A = log_A if levels is not None else log_A[None]
    weights, counts = [], []
    for path in itertools.product(range(K), repeat=T):
        w = 0.0
        n_A = np.zeros(A.shape)
        for t, s in enumerate(path):
            if first[t]:
                w += log_pi[s]
            else:
                w += A[lv[t], path[t - 1], s]
                n_A[lv[t], path[t - 1], s] += 1
            w += log_B[s, x[t]]
        weights.append(w)
        counts.append(n_A)
    weights = np.array(weights)
    log_z = float(logsumexp(weights))
    expected = np.tensordot(np.exp(weights - log_z), np.array(counts), axes=1)
    return log_z, (expected if levels is not None else expected[0])


def _gauss_hermite_grid(n_nodes, dim):
    """Nodes (n_nodes**dim, dim) and log weights of the tensor Gauss-Hermite rule for
    the expectation under N(0, I_dim)."""
    z, w = np.polynomial.hermite.hermgauss(n_nodes)
    z = np.sqrt(2.0) * z
    logw = np.log(w / np.sqrt(np.pi))
    grids = np.meshgrid(*([z] * dim), indexing="ij")
    lw = np.meshgrid(*([logw] * dim), indexing="ij")
    return (np.stack([g.ravel() for g in grids], axis=1), np.sum([g.ravel() for g in lw], axis=0))


def _log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def exact_logistic_log_evidence(x, lengths, design, K, M, a_pi, a_B, coef_mean, coef_cov,
                                n_nodes=40):
    """ln p(X | U) of a categorical HMM with stick-breaking logistic transitions: for
    every joint state path, the Dirichlet integrals of its initial and emission counts
    times, for every stick (k, i), the integral over its coefficients w_ki ~
    N(coef_mean[k, i], coef_cov[k, i]) of prod_t sigma(+-w_ki . design[t]) over the
    transitions that reach that stick (taken: +, passed: -), by a tensor Gauss-Hermite
    rule of ``n_nodes`` per dimension (the sticks' integrals factorise, since their
    priors are independent).  ``design`` (T, D) holds the rows [u_t, 1]; D <= 2."""
    x = np.asarray(x, dtype=int).ravel()
    T, D = design.shape
    first = np.zeros(T, dtype=bool)
    first[np.cumsum(lengths) - np.asarray(lengths)] = True
    Z, logw = _gauss_hermite_grid(n_nodes, D)
    # log sigma(+-psi) of every frame at every node of every stick: (K, K-1, 2, T, nodes)
    ls = np.empty((K, K - 1, 2, T, Z.shape[0]))
    for k in range(K):
        for i in range(K - 1):
            W = coef_mean[k, i] + Z @ np.linalg.cholesky(coef_cov[k, i]).T
            psi = design @ W.T  # (T, nodes)
            ls[k, i, 0] = _log_sigmoid(psi)
            ls[k, i, 1] = _log_sigmoid(-psi)
    terms = []
    for path in itertools.product(range(K), repeat=T):
        n_pi, n_B = np.zeros(K), np.zeros((K, M))
        acc = np.zeros((K, K - 1, Z.shape[0]))
        for t, s in enumerate(path):
            if first[t]:
                n_pi[s] += 1
            else:
                k = path[t - 1]
                for i in range(min(s, K - 2) + 1):
                    acc[k, i] += ls[k, i, 0 if i == s else 1, t]
            n_B[s, x[t]] += 1
        trans = float(np.sum(logsumexp(acc + logw, axis=-1)))
        terms.append(dirichlet_evidence(a_pi, n_pi) + dirichlet_evidence(a_B, n_B) + trans)
    return float(logsumexp(terms))
