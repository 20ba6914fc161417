"""Data generators for hidden Markov model tests and examples."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_hmm_sequences", "make_structure_discovery_sequences"]


def make_hmm_sequences(startprob, transmat, emission, lengths, *, random_state=None):
    """Sample sequences from an HMM.

    Parameters
    ----------
    startprob : (K,) initial distribution.
    transmat : (K, K) transition matrix (rows sum to one).
    emission : (K, M) categorical emission matrix, or a tuple ``(means (K, D),
        covars (K, D, D))`` for Gaussian emissions.
    lengths : sequence of ints, the length of every sequence.

    Returns
    -------
    X : (sum(lengths), 1) int symbols or (sum(lengths), D) floats.
    states : (sum(lengths),) hidden states.
    lengths : int64 array.
    """
    rng = check_random_state(random_state)
    startprob = np.asarray(startprob, dtype=float)
    transmat = np.asarray(transmat, dtype=float)
    lengths = np.asarray(lengths, dtype=np.int64)
    if np.any(lengths < 1):
        raise ValueError("lengths must be positive.")
    K = startprob.shape[0]
    T = int(lengths.sum())
    states = np.empty(T, dtype=np.int64)
    pos = 0
    cum_A = np.cumsum(transmat, axis=1)
    cum_pi = np.cumsum(startprob)
    u = rng.random_sample(T)
    for length in lengths:  # generator, not a fitting loop
        s = min(int(np.searchsorted(cum_pi, u[pos], side="right")), K - 1)
        states[pos] = s
        for t in range(pos + 1, pos + length):
            s = min(int(np.searchsorted(cum_A[s], u[t], side="right")), K - 1)
            states[t] = s
        pos += length
    if isinstance(emission, tuple):
        means, covars = (np.asarray(a, dtype=float) for a in emission)
        chol = np.linalg.cholesky(covars)
        z = rng.standard_normal((T, means.shape[1]))
        X = means[states] + np.einsum("tij,tj->ti", chol[states], z)
    else:
        emission = np.asarray(emission, dtype=float)
        cdf = np.cumsum(emission, axis=1)[states]
        r = rng.random_sample(T)[:, None]
        X = np.minimum((r >= cdf).sum(axis=1), emission.shape[1] - 1).reshape(-1, 1)
    return X, states, lengths


def make_structure_discovery_sequences(n_per_kind=7, min_length=20, max_length=39, *,
                                       random_state=None):
    """The synthetic structure-discovery data of Beal (2003), section 3.5.1.

    Three kinds of sequences over the alphabet {a, b, c} = {0, 1, 2}: substrings of
    (abc)*, substrings of (acb)*, and (a*b*)* with a and b emitted with probability 1/2
    each.  A perfect HMM needs 3 + 3 + 1 = 7 states.  The thesis used 21 sequences of
    length at most 39.

    Returns
    -------
    X : (n_frames, 1) int symbols, lengths : (3 * n_per_kind,) int64, kinds : int array.
    """
    rng = check_random_state(random_state)
    cycles = [np.array([0, 1, 2]), np.array([0, 2, 1])]
    seqs, kinds = [], []
    for kind in range(3):
        for _ in range(n_per_kind):
            length = rng.randint(min_length, max_length + 1)
            if kind < 2:
                offset = rng.randint(3)
                seq = cycles[kind][(offset + np.arange(length)) % 3]
            else:
                seq = rng.randint(0, 2, size=length)
            seqs.append(seq)
            kinds.append(kind)
    X = np.concatenate(seqs).reshape(-1, 1).astype(np.int64)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    return X, lengths, np.array(kinds)
