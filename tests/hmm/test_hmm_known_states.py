"""Known states at some frames (``states=``, partial labels): q(s) clamped there.

Oracles: ln p(X, known states) of a categorical HMM with Dirichlet priors by enumerating
the state paths that agree with the known states and integrating the Dirichlets; with
every state known VB is exact (q(s) is a point mass and q(theta) the conjugate
posterior), so the bound equals that closed form; conditional state marginals at a
point by brute-force enumeration.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from tests.oracles.hmm_paths import exact_categorical_log_evidence


def exact_log_joint(x, lengths, known, K, M, a_pi, a_A, a_B):
    """ln p(X, s_t = known_t where known_t >= 0) by enumerating the agreeing paths."""
    return exact_categorical_log_evidence(x, lengths, K, M, a_pi, a_A, a_B, known=known)


X = np.array([0, 0, 2, 2, 1, 1, 0, 2]).reshape(-1, 1)
LENGTHS = [5, 3]
KNOWN = np.array([0, -1, -1, 1, -1, -1, 0, -1])
STRONG = dict(startprob_prior=20.0, transmat_prior=20.0,
              emissionprob_prior=np.array([[60.0, 20.0, 20.0], [20.0, 20.0, 60.0]]))


def _fit(states=KNOWN, **kw):
    params = dict(n_components=2, n_symbols=3, random_state=0, n_init=2)
    params.update(kw)
    return VBHiddenMarkov(**params).fit(X, lengths=LENGTHS, states=states)


@pytest.mark.parametrize("priors", ["default", "strong"])
def test_bound_is_below_the_exact_joint_evidence_of_x_and_the_known_states(priors):
    model = _fit(**(STRONG if priors == "strong" else {}))
    args = (2, 3, model.startprob_prior_, model.transmat_prior_, model.emissionprob_prior_)
    exact = exact_log_joint(X.ravel(), LENGTHS, KNOWN, *args)
    assert model.lower_bound_ <= exact + 1e-9
    if priors == "strong":
        assert exact - model.lower_bound_ < 0.2
        # a fit that ignored the known states would bound ln p(X), which is larger
        free = _fit(states=None, **STRONG)
        assert free.lower_bound_ > exact + 0.3


def test_with_every_state_known_vb_is_exact():
    states = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    model = _fit(states=states)
    exact = exact_log_joint(X.ravel(), LENGTHS, states, 2, 3, model.startprob_prior_,
                            model.transmat_prior_, model.emissionprob_prior_)
    assert model.lower_bound_ == pytest.approx(exact, abs=1e-8)
    # q(theta) is the conjugate posterior of the complete-data counts
    counts = np.zeros((2, 3))
    np.add.at(counts, (states, X.ravel()), 1.0)
    np.testing.assert_allclose(model.emissionprob_posterior_,
                               model.emissionprob_prior_ + counts, atol=1e-10)


def _conditional_marginals(model, x, known):
    """p(s_t | X, known states, theta_bar) of one sequence by enumerating paths."""
    pi, A, B = model.startprob_, model.transmat_, model.emissionprob_
    T, K = len(x), len(pi)
    out = np.zeros((T, K))
    for path in itertools.product(range(K), repeat=T):
        if any(k >= 0 and s != k for s, k in zip(path, known)):
            continue
        p = pi[path[0]] * B[path[0], x[0]]
        for t in range(1, T):
            p *= A[path[t - 1], path[t]] * B[path[t], x[t]]
        out[np.arange(T), path] += p
    return out / out.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("method", ["vb", "ml"])
def test_predictions_keep_the_known_states_and_fill_in_the_rest(method):
    model = _fit(states=None, method=method)
    x = np.array([0, 2, 2, 1, 0, 0])
    known = np.array([-1, 1, -1, -1, 0, -1])
    proba = model.predict_proba(x.reshape(-1, 1), states=known)
    np.testing.assert_allclose(proba[known >= 0], np.eye(2)[known[known >= 0]], atol=1e-12)
    if method == "ml":
        np.testing.assert_allclose(proba, _conditional_marginals(model, x, known), atol=1e-10)
    path = model.predict(x.reshape(-1, 1), states=known)
    assert np.all(path[known >= 0] == known[known >= 0])
    # forcing the other state where the free path has one changes the path there only
    free = model.predict(x.reshape(-1, 1))
    forced = free.copy()
    forced[2] = 1 - free[2]
    clamp = -np.ones(6, dtype=int)
    clamp[2] = forced[2]
    assert model.predict(x.reshape(-1, 1), states=clamp)[2] == forced[2]


def test_ml_fit_maximises_the_likelihood_of_x_and_the_known_states():
    x, known = X.ravel()[:5], KNOWN[:5]
    model = VBHiddenMarkov(2, n_symbols=3, method="ml", random_state=0).fit(
        x.reshape(-1, 1), states=known)
    pi, A, B = model.startprob_, model.transmat_, model.emissionprob_
    terms = []
    for path in itertools.product(range(2), repeat=5):
        if all(k < 0 or s == k for s, k in zip(path, known)):
            terms.append(np.log(pi[path[0]] * B[path[0], x[0]]) + sum(
                np.log(A[path[t - 1], path[t]] * B[path[t], x[t]]) for t in range(1, 5)))
    assert model.lower_bound_ == pytest.approx(logsumexp(terms), abs=1e-8)


def test_a_few_labels_name_the_states():
    # without labels a fit recovers the segmentation up to a permutation of the state
    # names; a few known frames per state fix the names
    start = np.array([0.5, 0.5])
    trans = np.array([[0.95, 0.05], [0.05, 0.95]])
    means = np.array([[-1.0, 0.0], [1.0, 0.0]])
    X2, truth, lengths = make_hmm_sequences(start, trans, (means, np.tile(np.eye(2), (2, 1, 1))),
                                            [200] * 5, random_state=1)
    known = -np.ones(len(truth), dtype=int)
    rng = np.random.default_rng(0)
    labelled = rng.choice(len(truth), size=20, replace=False)
    known[labelled] = truth[labelled]
    for seed in range(3):
        model = VBHiddenMarkov(2, emission="gaussian", random_state=seed).fit(
            X2, lengths=lengths, states=known)
        agree = np.mean(model.predict(X2, lengths=lengths) == truth)
        assert agree > 0.9, (seed, agree)


def test_known_states_in_online_learning_and_inputs_unchanged():
    states = KNOWN.copy()
    model = VBHiddenMarkov(2, n_symbols=3, learning_method="online", batch_size=1,
                           total_samples=2, max_iter=20, random_state=0)
    with pytest.warns(Warning):  # twenty epochs do not converge here
        model.fit(X, lengths=LENGTHS, states=states)
    np.testing.assert_array_equal(states, KNOWN)
    proba = model.predict_proba(X, lengths=LENGTHS, states=states)
    np.testing.assert_allclose(proba[KNOWN >= 0], np.eye(2)[KNOWN[KNOWN >= 0]], atol=1e-12)
    stream = VBHiddenMarkov(2, n_symbols=3, total_samples=2, random_state=0)
    stream.partial_fit(X[:5], lengths=[5], states=states[:5])
    stream.partial_fit(X[5:], lengths=[3], states=states[5:])
    assert np.isfinite(stream.lower_bound_)


@pytest.mark.parametrize("states, match", [
    (np.zeros(7, dtype=int), "one entry per row"),
    (np.full(8, 2), r"in \[0, 2\)"),
    (np.full(8, -2), r"in \[0, 2\)"),
    (np.full(8, 0.5), "integers"),
    (np.array(["a"] * 8), "integers"),
])
def test_bad_states_are_refused_by_name(states, match):
    with pytest.raises(ValueError, match=match):
        _fit(states=states)
    with pytest.raises(ValueError, match="subchain_length"):
        VBHiddenMarkov(2, n_symbols=3, learning_method="online", subchain_length=3).fit(
            X, lengths=LENGTHS, states=KNOWN)
