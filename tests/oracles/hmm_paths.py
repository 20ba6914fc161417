"""Exact evidence of a tiny categorical HMM by enumerating its state paths: the oracle of
the HMM's missing-value and known-state tests."""

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp


def _log_beta(a):
    return np.sum(gammaln(a), axis=-1) - gammaln(np.sum(a, axis=-1))


def dirichlet_evidence(alpha, counts):
    """ln of the Dirichlet-multinomial integral of ``counts`` under prior ``alpha``."""
    return float(np.sum(_log_beta(alpha + counts) - _log_beta(alpha)))


def exact_categorical_log_evidence(x, lengths, K, M, a_pi, a_A, a_B, known=None):
    """ln p(X) of a categorical HMM with Dirichlet priors, or with ``known`` (-1 where
    unknown) ln p(X, s_t = known_t where known_t >= 0): the sum over every joint state
    path (that agrees with the known states) of the Dirichlet integrals of its counts; a
    missing symbol (NaN) adds no count."""
    x = np.asarray(x, dtype=float)
    T = x.size
    first = np.zeros(T, dtype=bool)
    first[np.cumsum(lengths) - np.asarray(lengths)] = True
    known = -np.ones(T, dtype=int) if known is None else np.asarray(known)
    terms = []
    for path in itertools.product(range(K), repeat=T):
        if any(k >= 0 and s != k for s, k in zip(path, known)):
            continue
        n_pi, n_A, n_B = np.zeros(K), np.zeros((K, K)), np.zeros((K, M))
        for t, s in enumerate(path):
            if first[t]:
                n_pi[s] += 1
            else:
                n_A[path[t - 1], s] += 1
            if not np.isnan(x[t]):
                n_B[s, int(x[t])] += 1
        terms.append(dirichlet_evidence(a_pi, n_pi) + dirichlet_evidence(a_A, n_A)
                     + dirichlet_evidence(a_B, n_B))
    return float(logsumexp(terms))
