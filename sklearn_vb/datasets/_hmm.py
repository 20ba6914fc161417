"""Data generators for hidden Markov model tests and examples."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_hmm_sequences", "make_input_driven_hmm_sequences",
           "make_structure_discovery_sequences"]


def make_hmm_sequences(startprob, transmat, emission, lengths, *, random_state=None):
    """Sample sequences from an HMM.

    Parameters
    ----------
    startprob : array-like of shape (K,)
        Initial state distribution.
    transmat : array-like of shape (K, K)
        Transition matrix (rows sum to one).
    emission : array-like of shape (K, M) or tuple
        Categorical emission matrix, or a tuple ``(means, covars)`` of shapes (K, D) and
        (K, D, D) for Gaussian emissions.
    lengths : sequence of int
        The length of every sequence.
    random_state : int, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (sum(lengths), 1) or (sum(lengths), D)
        Integer symbols (categorical) or floats (Gaussian), sequences concatenated.
    states : ndarray of shape (sum(lengths),)
        The hidden states.
    lengths : ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> transmat = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> emission = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> X, states, lengths = make_hmm_sequences([0.5, 0.5], transmat, emission, [50, 30],
    ...                                         random_state=0)
    >>> X.shape, states.shape, lengths.tolist()
    ((80, 1), (80,), [50, 30])
    """
    rng = check_random_state(random_state)
    startprob = np.asarray(startprob, dtype=float)
    transmat = np.asarray(transmat, dtype=float)
    lengths = np.asarray(lengths, dtype=np.int64)
    if np.any(lengths < 1):
        raise ValueError("lengths must be positive.")
    T = int(lengths.sum())
    states = _draw_states(startprob, transmat[None], np.zeros(T, dtype=np.int64), lengths,
                          rng.random_sample(T))
    if isinstance(emission, tuple):
        means, covars = (np.asarray(a, dtype=float) for a in emission)
        chol = np.linalg.cholesky(covars)
        z = rng.standard_normal((T, means.shape[1]))
        X = means[states] + np.einsum("tij,tj->ti", chol[states], z)
    else:
        X = _categorical_frames(np.asarray(emission, dtype=float), states, rng)
    return X, states, lengths


def _draw_states(startprob, transmats, levels, lengths, u):
    """The state path of every sequence of ``lengths`` by inversion of the uniform
    draws ``u`` (one per frame): the first state from ``startprob``, the others from the
    row of the previous state in ``transmats[levels[t]]`` (L, K, K)."""
    K = startprob.shape[0]
    cum_pi = np.cumsum(startprob)
    cum_A = np.cumsum(transmats, axis=2)
    states = np.empty(u.shape[0], dtype=np.int64)
    pos = 0
    for length in lengths:  # generator, not a fitting loop
        s = min(int(np.searchsorted(cum_pi, u[pos], side="right")), K - 1)
        states[pos] = s
        for t in range(pos + 1, pos + length):
            s = min(int(np.searchsorted(cum_A[levels[t], s], u[t], side="right")), K - 1)
            states[t] = s
        pos += length
    return states


def _categorical_frames(emission, states, rng):
    """One symbol per frame from the row of its state of ``emission`` (K, M), (T, 1)."""
    cdf = np.cumsum(emission, axis=1)[states]
    r = rng.random_sample(states.shape[0])[:, None]
    return np.minimum((r >= cdf).sum(axis=1), emission.shape[1] - 1).reshape(-1, 1)


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

    Examples
    --------
    >>> from sklearn_vb.datasets import make_structure_discovery_sequences
    >>> X, lengths, kinds = make_structure_discovery_sequences(n_per_kind=7, random_state=0)
    >>> X.shape[1], len(lengths), int(lengths.sum()) == len(X)
    (1, 21, True)
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


def make_input_driven_hmm_sequences(transmats, emission, lengths, *, level_probs=None,
                                    startprob=None, transition_coef=None, inputs=None,
                                    random_state=None):
    """Sample sequences of an HMM whose transitions depend on a known input.

    Categorical inputs (``transmats``): every frame t draws an input level u_t from
    ``level_probs``; the state at t follows ``transmats[u_t, s_{t-1}]``, the model of
    ``VBHiddenMarkov(transition_inputs="categorical")``.  Continuous inputs
    (``transmats=None`` and ``transition_coef``): every frame has P real inputs u_t
    (``inputs``, or independent standard normal draws) and the state at t follows the
    stick-breaking logistic transitions of ``transition_coef`` at u_t, the model of
    ``VBHiddenMarkov(transition_inputs="continuous")`` (see
    :func:`sklearn_vb.hmm.stick_breaking_transitions`).  Either way the input of a
    sequence's first frame is drawn but not used: its state follows ``startprob``.

    Parameters
    ----------
    transmats : array-like of shape (L, K, K) or None
        One transition matrix per input level; None for continuous inputs.
    emission : array-like of shape (K, M)
        Categorical emission matrix.
    lengths : sequence of int
    level_probs : array-like of shape (L,)
        Probabilities of the input levels (independent across frames); categorical
        inputs only, and required there.
    startprob : array-like of shape (K,) or None
        Initial state distribution (default: uniform).
    transition_coef : array-like of shape (K, K - 1, P + 1) or None
        Continuous inputs: the coefficients of the stick-breaking logistic transitions,
        ``transition_coef[k, i]`` those of stick i of row k, the bias last.
    inputs : array-like of shape (sum(lengths), P) or None
        Continuous inputs: the inputs of every frame (default: standard normal draws).
    random_state : int, RandomState or None, default=None

    Returns
    -------
    X : ndarray of shape (sum(lengths), 1)
        Integer symbols.
    states : ndarray of shape (sum(lengths),)
    U : ndarray of shape (sum(lengths),) or (sum(lengths), P)
        Input levels (categorical) or inputs (continuous).
    lengths : ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.datasets import make_input_driven_hmm_sequences
    >>> A = np.array([[[0.9, 0.1], [0.1, 0.9]], [[0.1, 0.9], [0.9, 0.1]]])
    >>> B = np.array([[0.8, 0.2], [0.2, 0.8]])
    >>> X, states, U, lengths = make_input_driven_hmm_sequences(
    ...     A, B, [20, 30], level_probs=[0.7, 0.3], random_state=0)
    >>> X.shape, U.shape, lengths.tolist()
    ((50, 1), (50,), [20, 30])
    >>> coef = np.array([[[-2.0, 2.5]], [[-2.0, -2.5]]])  # K = 2, one input
    >>> X, states, U, lengths = make_input_driven_hmm_sequences(
    ...     None, B, [20, 30], transition_coef=coef, random_state=0)
    >>> U.shape
    (50, 1)
    """
    rng = check_random_state(random_state)
    emission = np.asarray(emission, dtype=float)
    lengths = np.asarray(lengths, dtype=np.int64)
    if np.any(lengths < 1):
        raise ValueError("lengths must be positive.")
    T = int(lengths.sum())
    if (transmats is None) == (transition_coef is None):
        raise ValueError("give either transmats (categorical inputs) or transition_coef "
                         "(continuous inputs), not both or neither.")
    if transmats is None:
        return _continuous_input_sequences(np.asarray(transition_coef, dtype=float),
                                           emission, lengths, startprob, inputs, rng)
    if level_probs is None:
        raise ValueError("level_probs is required with transmats (categorical inputs).")
    transmats = np.asarray(transmats, dtype=float)
    L, K = transmats.shape[:2]
    startprob = np.full(K, 1.0 / K) if startprob is None else np.asarray(startprob, float)
    U = rng.choice(L, size=T, p=np.asarray(level_probs, dtype=float))
    states = _draw_states(startprob, transmats, U, lengths, rng.random_sample(T))
    X = _categorical_frames(emission, states, rng)
    return X, states, U, lengths


def _continuous_input_sequences(coef, emission, lengths, startprob, inputs, rng):
    """The continuous-input case of :func:`make_input_driven_hmm_sequences`."""
    from ..hmm import stick_breaking_transitions

    K = coef.shape[0]
    T = int(lengths.sum())
    P = coef.shape[-1] - 1
    startprob = np.full(K, 1.0 / K) if startprob is None else np.asarray(startprob, float)
    if inputs is None:
        U = rng.standard_normal((T, P))
    else:
        U = np.array(inputs, dtype=float).reshape(T, -1)
    transmats = stick_breaking_transitions(coef, U)  # (T, K, K): one matrix per frame
    states = _draw_states(startprob, transmats, np.arange(T), lengths, rng.random_sample(T))
    X = _categorical_frames(emission, states, rng)
    return X, states, U, lengths
