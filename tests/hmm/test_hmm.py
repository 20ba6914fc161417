"""VBHiddenMarkov: exact oracles (path enumeration, closed-form evidence), monotonicity,
API behaviour."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import digamma, gammaln, logsumexp, multigammaln

from sklearn_vb._core.distributions import log_multivariate_beta
from sklearn_vb.hmm import kernels
from sklearn_vb.hmm.forward_backward import (forward_backward, forward_backward_log,
                                                  forward_backward_scaled)
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.base import bound_round_off
from sklearn_vb.hmm import VBHiddenMarkov, optimize_dirichlet_scale
from sklearn_vb.hmm._vbem import expected_log_params

# exact ln p(X) of X = [0, 0, 1, 2, 2, 2, 1, 0] in two sequences of 4 under a 2-state,
# 3-symbol HMM with Dirichlet(1) on every row (tests/oracles/reference_models.DiscreteHMM)
DISCRETE_HMM_EXACT = -9.759777231503435


# ---------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------


def all_paths(K, T):
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64)


def path_counts(paths, lengths, K):
    """Complete-data counts n_pi (P, K), n_A (P, K, K) of every joint path."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    P, T = paths.shape
    n_pi = np.zeros((P, K))
    n_A = np.zeros((P, K, K))
    rows = np.arange(P)
    for s, (t0, length) in enumerate(zip(starts, lengths)):
        np.add.at(n_pi, (rows, paths[:, t0]), 1)
        for t in range(t0 + 1, t0 + length):
            np.add.at(n_A, (rows, paths[:, t - 1], paths[:, t]), 1)
    return n_pi, n_A


def exact_log_evidence_categorical(symbols, lengths, K, M, u_pi, u_A, u_C):
    """ln p(y) = logsumexp over joint paths of the Dirichlet integrals (Beal 2003, eq. 3.44)."""
    paths = all_paths(K, len(symbols))
    n_pi, n_A = path_counts(paths, lengths, K)
    n_C = np.zeros((len(paths), K, M))
    rows = np.arange(len(paths))
    for t, y in enumerate(symbols):
        np.add.at(n_C, (rows, paths[:, t], y), 1)
    total = (
        log_multivariate_beta(u_pi + n_pi) - log_multivariate_beta(u_pi)
        + np.sum(log_multivariate_beta(u_A + n_A) - log_multivariate_beta(u_A), axis=1)
        + np.sum(log_multivariate_beta(u_C + n_C) - log_multivariate_beta(u_C), axis=1)
    )
    return logsumexp(total)


def log_evidence_normal_gamma(x, m0, beta0, a0, b0):
    """Closed-form ln p(x) of frames x (n, D) under the per-dimension Normal-Gamma prior."""
    n = x.shape[0]
    if n == 0:
        return 0.0
    xbar = x.mean(axis=0)
    beta = beta0 + n
    a = a0 + n / 2
    b = b0 + 0.5 * (((x - xbar) ** 2).sum(axis=0) + beta0 * n / beta * (xbar - m0) ** 2)
    per_dim = (
        gammaln(a) - gammaln(a0) + a0 * np.log(b0) - a * np.log(b)
        + 0.5 * np.log(beta0 / beta) - 0.5 * n * np.log(2 * np.pi)
    )
    return float(per_dim.sum())


def log_evidence_normal_wishart(x, m0, beta0, nu0, S0):
    """Closed-form ln p(x) under the Normal-Wishart prior with inverse scale S0 = W0^-1."""
    n, D = x.shape
    if n == 0:
        return 0.0
    xbar = x.mean(axis=0)
    beta = beta0 + n
    nu = nu0 + n
    d = x - xbar
    S = S0 + d.T @ d + beta0 * n / beta * np.outer(xbar - m0, xbar - m0)
    return float(
        -0.5 * n * D * np.log(np.pi)
        + multigammaln(nu / 2, D) - multigammaln(nu0 / 2, D)
        + 0.5 * nu0 * np.linalg.slogdet(S0)[1] - 0.5 * nu * np.linalg.slogdet(S)[1]
        + 0.5 * D * np.log(beta0 / beta)
    )


def exact_log_evidence_gaussian(X, lengths, K, u_pi, u_A, emission_evidence):
    paths = all_paths(K, len(X))
    n_pi, n_A = path_counts(paths, lengths, K)
    total = (
        log_multivariate_beta(u_pi + n_pi) - log_multivariate_beta(u_pi)
        + np.sum(log_multivariate_beta(u_A + n_A) - log_multivariate_beta(u_A), axis=1)
    )
    for p, path in enumerate(paths):
        total[p] += sum(emission_evidence(X[path == k]) for k in range(K))
    return logsumexp(total)


def enumerate_posteriors(log_pi, log_A, log_b, lengths):
    """ln Z, gamma, xi-sum, start counts by brute force over every path of each sequence."""
    K = len(log_pi)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    lnZ = []
    gamma = np.zeros((sum(lengths), K))
    xi = np.zeros((K, K))
    start = np.zeros(K)
    for t0, length in zip(starts, lengths):
        paths = all_paths(K, length)
        w = log_pi[paths[:, 0]] + log_b[t0 + np.arange(length), paths].sum(axis=1)
        for t in range(1, length):
            w = w + log_A[paths[:, t - 1], paths[:, t]]
        z = logsumexp(w)
        lnZ.append(z)
        p = np.exp(w - z)
        for t in range(length):
            np.add.at(gamma[t0 + t], paths[:, t], p)
            if t > 0:
                np.add.at(xi, (paths[:, t - 1], paths[:, t]), p)
        np.add.at(start, paths[:, 0], p)
    return np.array(lnZ), gamma, xi, start


# ---------------------------------------------------------------------------
# kernels against enumeration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("K,lengths", [(2, [5, 4, 1]), (3, [6, 2]), (3, [1]), (2, [10])])
def test_forward_backward_matches_enumeration(K, lengths):
    rng = np.random.default_rng(K + len(lengths))
    T = sum(lengths)
    # sub-normalised weights, as in the VBE step (rows sum to less than one)
    log_pi = np.log(rng.dirichlet(np.ones(K))) - 0.3
    log_A = np.log(rng.dirichlet(np.ones(K), size=K)) - rng.uniform(0.1, 1.0, size=(K, 1))
    log_b = rng.normal(scale=3.0, size=(T, K)) - 40.0  # far from 1: exercises the shifts
    emis, shift = kernels.scale_rows(log_b)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ends = np.cumsum(lengths).astype(np.int64)
    lnZ, frame, start, xi, gamma = forward_backward_scaled(
        log_pi, log_A, emis, shift, np.arange(T, dtype=np.int64), starts, ends, True
    )
    lnZ_ref, gamma_ref, xi_ref, start_ref = enumerate_posteriors(log_pi, log_A, log_b, lengths)
    np.testing.assert_allclose(lnZ, lnZ_ref, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(gamma, gamma_ref, atol=1e-10)
    np.testing.assert_allclose(xi, xi_ref, atol=1e-10)
    np.testing.assert_allclose(start, start_ref, atol=1e-10)
    # per-frame log normalisers add up to each sequence's ln Z
    np.testing.assert_allclose(np.add.reduceat(frame, starts), lnZ, rtol=1e-12)
    # forward only gives the same ln Z
    lnZ_f = forward_backward_scaled(
        log_pi, log_A, emis, shift, np.arange(T, dtype=np.int64), starts, ends, False
    )[0]
    np.testing.assert_allclose(lnZ_f, lnZ, rtol=1e-14)


@pytest.mark.parametrize("K,lengths", [(2, [5, 4, 1]), (3, [6, 2])])
def test_log_space_forward_backward_matches_scaled_and_enumeration(K, lengths):
    """The log-space recursion equals the scaled one where both work, and the
    enumeration where the scaled one underflows."""
    rng = np.random.default_rng(7 * K + len(lengths))
    T = sum(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ends = np.cumsum(lengths).astype(np.int64)
    index = np.arange(T, dtype=np.int64)
    log_pi = np.log(rng.dirichlet(np.ones(K))) - 0.3
    log_A = np.log(rng.dirichlet(np.ones(K), size=K)) - 0.5
    log_b = rng.normal(scale=3.0, size=(T, K)) - 40.0
    emis, shift = kernels.scale_rows(log_b)
    scaled = forward_backward_scaled(log_pi, log_A, emis, shift, index, starts, ends, True)
    logged = forward_backward_log(log_pi, log_A, log_b, index, starts, ends, True)
    for a, b in zip(scaled, logged):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    # weights of exp(-1500): far below the smallest double, as exp E[ln A] of a transition
    # whose Dirichlet posterior count is ~1e-3; state 0 only ever goes to itself cheaply
    log_A[0, 1:] = -1500.0
    log_b[:, 0] = -2.0
    log_b[:, 1:] = -1.0
    long_seqs = np.asarray(lengths) > 1
    log_b[starts[long_seqs] + 1, 0] = -2000.0  # ...but cannot emit the second frame
    log_pi[:] = -1500.0
    log_pi[0] = 0.0  # every path starts in state 0 and has to leave it at the second frame
    out = forward_backward(log_pi, log_A, log_b, index, starts, ends, True)
    lnZ_ref, gamma_ref, xi_ref, start_ref = enumerate_posteriors(log_pi, log_A, log_b, lengths)
    np.testing.assert_allclose(out[0], lnZ_ref, rtol=1e-12)
    np.testing.assert_allclose(out[4], gamma_ref, atol=1e-10)
    np.testing.assert_allclose(out[3], xi_ref, atol=1e-10)
    np.testing.assert_allclose(out[2], start_ref, atol=1e-10)
    np.testing.assert_allclose(np.add.reduceat(out[1], starts), out[0], rtol=1e-12)
    # the scaled recursion alone loses this (the fallback is what makes it exact)
    emis, shift = kernels.scale_rows(log_b)
    naive = forward_backward_scaled(log_pi, log_A, emis, shift, index, starts, ends, True)[0]
    assert np.all(lnZ_ref[long_seqs] < -1400) and np.all(naive[long_seqs] == -np.inf)


def weak_prior_model(post, **kwargs):
    """A model whose q(theta) is exactly ``post`` (max_iter=1 only evaluates the start)."""
    K, M = post["emissionprob"].shape
    model = VBHiddenMarkov(
        K, n_symbols=M, startprob_prior=0.05 / 60, transmat_prior=0.05 / 60,
        emissionprob_prior=0.05 / 60, init_params="posterior", init_posterior=post, **kwargs,
    )
    return model


def test_weak_priors_keep_the_bound_finite():
    """Strength 0.05 over K=60 entries: w ~ 8e-4, exp E[ln theta] ~ exp(-1200) underflows.
    The fit, the held-out bound and the state marginals stay finite and exact."""
    w = 0.05 / 60
    post = {
        "startprob": np.array([3.0, w]),
        "transmat": np.array([[20.0, w], [w, 20.0]]),  # never seen a 0 -> 1 switch
        "emissionprob": np.array([[20.0, w, 1.0], [w, 20.0, 1.0]]),
    }
    X = np.array([0, 0, 2, 1, 1, 1, 0, 2]).reshape(-1, 1)
    lengths = [5, 3]
    with pytest.warns(Warning):  # max_iter=1: not converged
        model = weak_prior_model(post, max_iter=1).fit(X, lengths=lengths)
    Lpi, LA, LC = expected_log_params(model._family, model._hyper("posterior"))
    assert LA[0, 1] < -1000  # the regime where exp() underflows
    lnZ_ref, gamma_ref, _, _ = enumerate_posteriors(Lpi, LA, LC.T[X[:, 0]], lengths)
    assert model.score_bound(X, lengths=lengths) == pytest.approx(lnZ_ref.sum(), rel=1e-12)
    np.testing.assert_allclose(model.predict_proba(X, lengths=lengths), gamma_ref, atol=1e-10)
    terms = model.lower_bound_terms_
    assert terms["log_normaliser"] == pytest.approx(lnZ_ref.sum(), rel=1e-12)
    # a full fit from there climbs with finite bounds, also under "steps" checking
    model = weak_prior_model(post, max_iter=50, tol=1e-8, bound_check="steps").fit(X, lengths=lengths)
    assert np.all(np.isfinite(model.lower_bounds_))
    assert np.all(np.diff(model.lower_bounds_) >= -1e-7)
    assert model.lower_bound_ > model.lower_bounds_[0] + 1000


def test_viterbi_matches_enumeration():
    rng = np.random.default_rng(3)
    K, lengths = 3, [6, 3]
    T = sum(lengths)
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    log_A = np.log(rng.dirichlet(np.ones(K), size=K))
    log_b = rng.normal(size=(T, K))
    starts = np.array([0, 6])
    states, best = kernels.viterbi(log_pi, log_A, log_b, np.arange(T), starts, np.array([6, 9]))
    for s, (t0, length) in enumerate(zip(starts, lengths)):
        paths = all_paths(K, length)
        w = log_pi[paths[:, 0]] + log_b[t0 + np.arange(length), paths].sum(axis=1)
        for t in range(1, length):
            w += log_A[paths[:, t - 1], paths[:, t]]
        np.testing.assert_array_equal(states[t0:t0 + length], paths[np.argmax(w)])
        assert best[s] == pytest.approx(w.max(), rel=1e-12)


def test_long_sequence_does_not_underflow():
    """T = 10^6 frames with K = 20 states: the scaled recursion stays finite."""
    rng = np.random.default_rng(0)
    K, M, T = 20, 30, 1_000_000
    symbols = rng.integers(0, M, size=T)
    model = VBHiddenMarkov(K, n_symbols=M, max_iter=2, tol=0.0, random_state=0)
    with pytest.warns(Warning):
        model.fit(symbols.reshape(-1, 1))
    assert np.all(np.isfinite(model.lower_bounds_))
    # the bound is of the order of T ln(1/M), far below the underflow limit of exp
    assert model.lower_bound_ < -0.9 * T * np.log(M)
    assert np.isfinite(model.score(symbols[:1000].reshape(-1, 1)))


# ---------------------------------------------------------------------------
# the bound against exact evidence
# ---------------------------------------------------------------------------


def test_discrete_hmm_exact_evidence_reference():
    symbols = np.array([0, 0, 1, 2, 2, 2, 1, 0])
    value = exact_log_evidence_categorical(
        symbols, [4, 4], 2, 3, np.ones(2), np.ones((2, 2)), np.ones((2, 3))
    )
    assert value == pytest.approx(DISCRETE_HMM_EXACT, abs=1e-10)


@pytest.mark.parametrize("optimize", [False, True])
def test_discrete_hmm_bound_below_exact_evidence(optimize):
    X = np.array([0, 0, 1, 2, 2, 2, 1, 0]).reshape(-1, 1)
    for seed in range(5):
        model = VBHiddenMarkov(
            2, n_symbols=3, startprob_prior=1.0, transmat_prior=1.0, emissionprob_prior=1.0,
            max_iter=400, tol=1e-10, random_state=seed, bound_check="steps",
            optimize_prior_strengths=optimize,
        ).fit(X, lengths=[4, 4])
        if optimize:
            # the bound then bounds p(X | optimised priors): compare with that evidence
            exact = exact_log_evidence_categorical(
                X[:, 0], [4, 4], 2, 3, model.startprob_prior_, model.transmat_prior_,
                model.emissionprob_prior_,
            )
        else:
            exact = DISCRETE_HMM_EXACT
        assert np.all(model.lower_bounds_ <= exact + 1e-12)
        assert exact - model.lower_bound_ > 1e-3  # a real gap for K = 2
        # the log normaliser of the decomposition, recomputed by enumerating paths under
        # the sub-normalised parameters exp(E[ln theta]) of the stored posterior
        def elog(w):
            return digamma(w) - digamma(w.sum(axis=-1, keepdims=True))

        log_b = elog(model.emissionprob_posterior_)[:, X[:, 0]].T
        lnZ, _, _, _ = enumerate_posteriors(
            elog(model.startprob_posterior_), elog(model.transmat_posterior_), log_b, [4, 4])
        assert model.lower_bound_terms_["log_normaliser"] == pytest.approx(lnZ.sum(), abs=1e-9)


@pytest.mark.parametrize("K,lengths,M", [(2, [5, 4], 3), (3, [4, 3], 2), (2, [10], 4)])
def test_categorical_bound_below_enumerated_evidence(K, lengths, M):
    rng = np.random.default_rng(K * 10 + M)
    symbols = rng.integers(0, M, size=sum(lengths))
    priors = dict(startprob_prior=rng.uniform(0.3, 2, K), transmat_prior=rng.uniform(0.3, 2, K),
                  emissionprob_prior=rng.uniform(0.3, 2, M))
    exact = exact_log_evidence_categorical(
        symbols, lengths, K, M, priors["startprob_prior"],
        np.broadcast_to(priors["transmat_prior"], (K, K)),
        np.broadcast_to(priors["emissionprob_prior"], (K, M)),
    )
    model = VBHiddenMarkov(K, n_symbols=M, max_iter=100, tol=1e-9, n_init=3, random_state=0,
                           **priors).fit(symbols.reshape(-1, 1), lengths=lengths)
    assert np.all(model.lower_bounds_ <= exact + 1e-12)
    assert model.lower_bound_ > exact - 5.0  # and it is not vacuous


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_gaussian_bound_below_enumerated_evidence(covariance_type):
    rng = np.random.default_rng(1)
    lengths = [4, 3]
    X = rng.normal(size=(7, 2))
    X[2:4] += 3.0
    m0, beta0 = np.zeros(2), 0.5
    if covariance_type == "diag":
        nu0, s0 = 3.0, np.array([2.0, 1.5])
        evidence = lambda x: log_evidence_normal_gamma(x, m0, beta0, nu0 / 2, s0 / 2)  # noqa: E731
    else:
        nu0, s0 = 3.0, np.array([[2.0, 0.3], [0.3, 1.5]])
        evidence = lambda x: log_evidence_normal_wishart(x, m0, beta0, nu0, s0)  # noqa: E731
    exact = exact_log_evidence_gaussian(X, lengths, 2, np.full(2, 0.5), np.full((2, 2), 0.5), evidence)
    model = VBHiddenMarkov(
        2, emission="gaussian", covariance_type=covariance_type, means_prior=m0, beta_prior=beta0,
        dof_prior=nu0, scale_prior=s0, max_iter=200, tol=1e-10, n_init=3, init_params="random",
        random_state=0, bound_check="steps",
    ).fit(X, lengths=lengths)
    assert np.all(model.lower_bounds_ <= exact + 1e-12)
    assert model.lower_bound_ > exact - 5.0


def test_single_state_bound_is_exact_categorical():
    rng = np.random.default_rng(2)
    symbols = rng.integers(0, 4, size=40)
    u_C = np.array([0.5, 1.0, 2.0, 0.25])
    model = VBHiddenMarkov(1, n_symbols=4, emissionprob_prior=u_C, max_iter=3, tol=0.0,
                           random_state=0)
    with pytest.warns(Warning):
        model.fit(symbols.reshape(-1, 1), lengths=[10, 30])
    n_C = np.bincount(symbols, minlength=4).astype(float)
    exact = log_multivariate_beta(u_C + n_C) - log_multivariate_beta(u_C)
    assert model.lower_bounds_[1] == pytest.approx(exact, abs=1e-10)
    assert model.lower_bound_ == pytest.approx(exact, abs=1e-10)
    assert model.lower_bounds_[0] < exact  # the random initial q(theta) is not the posterior


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_single_state_bound_is_exact_gaussian(covariance_type):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3)) * [1.0, 2.0, 0.5] + [1.0, -2.0, 0.0]
    model = VBHiddenMarkov(1, emission="gaussian", covariance_type=covariance_type, max_iter=3,
                           tol=0.0, random_state=0)
    with pytest.warns(Warning):
        model.fit(X, lengths=[20, 30])
    m0, beta0, nu0, s0 = model.means_prior_, model.beta_prior_, model.dof_prior_, model.scale_prior_
    if covariance_type == "diag":
        exact = log_evidence_normal_gamma(X, m0, beta0, nu0 / 2, s0 / 2)
    else:
        exact = log_evidence_normal_wishart(X, m0, beta0, nu0, s0)
    assert model.lower_bound_ == pytest.approx(exact, abs=1e-8)


# ---------------------------------------------------------------------------
# monotonicity (property tests)
# ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    K=st.integers(1, 4),
    M=st.integers(2, 5),
    lengths=st.lists(st.integers(1, 25), min_size=1, max_size=4),
    prior=st.floats(0.05, 5.0),
    optimize=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_bound_never_decreases_categorical(K, M, lengths, prior, optimize, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, M, size=(sum(lengths), 1))
    model = VBHiddenMarkov(
        K, n_symbols=M, startprob_prior=prior, transmat_prior=prior, emissionprob_prior=prior,
        optimize_prior_strengths=optimize, max_iter=30, tol=0.0, random_state=seed,
        bound_check="steps",
    )
    with pytest.warns(Warning):
        model.fit(X, lengths=lengths)
    bounds = model.lower_bounds_
    assert np.all(np.diff(bounds) >= -bound_round_off(bounds[1:]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    K=st.integers(1, 4),
    D=st.integers(1, 3),
    lengths=st.lists(st.integers(2, 30), min_size=1, max_size=3),
    covariance_type=st.sampled_from(["full", "diag"]),
    optimize=st.booleans(),
    init=st.sampled_from(["random", "kmeans"]),
    seed=st.integers(0, 2**16),
)
def test_bound_never_decreases_gaussian(K, D, lengths, covariance_type, optimize, init, seed):
    rng = np.random.default_rng(seed)
    T = sum(lengths)
    X = rng.normal(size=(T, D)) + 3.0 * rng.integers(0, 2, size=(T, 1))
    model = VBHiddenMarkov(
        K, emission="gaussian", covariance_type=covariance_type, optimize_prior_strengths=optimize,
        init_params=init, max_iter=30, tol=0.0, random_state=seed, bound_check="steps",
    )
    if T < K:
        with pytest.raises(ValueError, match="n_samples"):
            model.fit(X, lengths=lengths)
        return
    with pytest.warns(Warning):
        model.fit(X, lengths=lengths)
    bounds = model.lower_bounds_
    assert np.all(np.diff(bounds) >= -bound_round_off(bounds[1:]))


def test_prior_strength_optimisation_maximises_objective():
    rng = np.random.default_rng(0)
    base = np.full((4, 5), 0.2)
    w = base + rng.gamma(2.0, 3.0, size=(4, 5))
    from sklearn_vb._core.distributions import dirichlet_expected_log, dirichlet_kl

    elog = dirichlet_expected_log(w)
    lam = optimize_dirichlet_scale(base, elog)
    kl = lambda s: np.sum(dirichlet_kl(w, s * base))  # noqa: E731
    assert kl(lam) <= kl(1.0)
    for factor in (0.9, 0.99, 1.01, 1.1):
        assert kl(lam) <= kl(lam * factor) + 1e-12


# ---------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------


def three_state_data(n_seq=20, length=100, seed=0):
    startprob = np.array([1.0, 0.0, 0.0])
    transmat = np.array([[0.8, 0.2, 0.0], [0.0, 0.8, 0.2], [0.2, 0.0, 0.8]])
    emission = np.full((3, 5), 0.05)
    emission[[0, 1, 2], [0, 1, 2]] = 0.8
    return make_hmm_sequences(startprob, transmat, emission, [length] * n_seq, random_state=seed)


def test_recovers_number_of_states():
    X, _, lengths = three_state_data()
    big = VBHiddenMarkov(8, max_iter=1000, tol=1e-4, n_init=6, random_state=0).fit(X, lengths=lengths)
    assert big.n_effective_components_ in (3, 4)
    occupancy = np.sort(big.occupancy_)[::-1]
    assert occupancy[:3].sum() > 0.97 * len(X)
    bounds = {}
    for K in (1, 3, 8):
        model = VBHiddenMarkov(K, max_iter=1000, tol=1e-4, n_init=6, random_state=1).fit(X, lengths=lengths)
        bounds[K] = model.lower_bound_
    assert bounds[3] > bounds[1]
    assert bounds[3] > bounds[8]


def near_symmetric_data():
    transmat = np.array([[0.9, 0.1, 0.0], [0.0, 0.9, 0.1], [0.1, 0.0, 0.9]])
    emission = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    X, _, lengths = make_hmm_sequences(np.ones(3) / 3, transmat, emission, [100] * 10, random_state=0)
    return X, lengths


def test_default_initialisation_breaks_symmetry():
    """Symmetric symbols and states: a start near the symmetric saddle point (all states
    alike) was declared converged there with a bound below that of K = 1."""
    X, lengths = near_symmetric_data()
    bounds = {
        K: VBHiddenMarkov(n_components=K, n_init=3, random_state=0).fit(X, lengths=lengths).lower_bound_
        for K in (1, 2, 3)
    }
    assert bounds[1] == pytest.approx(-1106.0, abs=0.1)
    assert bounds[2] > bounds[1] + 50.0  # a real two-state fit (about -1016.8)
    assert bounds[3] >= bounds[2]


def test_convergence_is_not_declared_while_leaving_a_saddle():
    """Per-frame random responsibilities start next to the saddle: the first bound
    increments are below tol = 1e-3 but growing, so the run continues and escapes."""
    X, lengths = near_symmetric_data()
    model = VBHiddenMarkov(2, init_params="random", max_iter=300, tol=1e-3,
                           random_state=0).fit(X, lengths=lengths)
    increments = np.diff(model.lower_bounds_)
    assert increments[0] < model.tol and increments[1] > increments[0]  # the saddle regime
    assert model.converged_ and model.n_iter_ > 20
    assert model.lower_bound_ > -1020.0
    # convergence itself: the last increment is below tol and no longer growing
    assert 0 <= increments[-1] < model.tol and increments[-1] <= increments[-2]


def test_unused_state_posterior_equals_prior():
    X, _, lengths = three_state_data(n_seq=10)
    model = VBHiddenMarkov(8, max_iter=300, tol=1e-6, random_state=0).fit(X, lengths=lengths)
    off = np.flatnonzero(model.occupancy_ < 1e-3)
    assert off.size > 0
    np.testing.assert_allclose(model.emissionprob_posterior_[off], model.emissionprob_prior_[off], atol=1e-2)
    np.testing.assert_allclose(model.emissionprob_[off], 1.0 / model.n_symbols_, atol=1e-2)


def test_score_and_bound_orderings():
    X, _, lengths = three_state_data(n_seq=5)
    model = VBHiddenMarkov(3, max_iter=100, random_state=0).fit(X, lengths=lengths)
    per_seq = model.score_samples(X, lengths=lengths, per="sequence")
    per_frame = model.score_samples(X, lengths=lengths)
    assert per_frame.shape == (len(X),) and per_seq.shape == (5,)
    np.testing.assert_allclose(per_seq.sum(), per_frame.sum(), rtol=1e-12)
    assert model.score(X, lengths=lengths) == pytest.approx(per_frame.mean(), rel=1e-12)
    # Jensen: ln Z(y) under exp E[ln theta] <= ln p(y | posterior mean)
    bound = model.score_bound(X, lengths=lengths)
    assert bound <= per_seq.sum()
    # and on the training data the VBE pass bound is at least F (it omits the KLs)
    assert bound >= model.lower_bound_ - 1e-8
    proba = model.predict_proba(X, lengths=lengths)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-10)
    assert model.bic(X, lengths=lengths) > model.aic(X, lengths=lengths)


def test_predict_matches_decode_and_sample_roundtrip():
    X, states_true, lengths = three_state_data(n_seq=5)
    model = VBHiddenMarkov(3, max_iter=100, random_state=0).fit(X, lengths=lengths)
    pred = model.predict(X, lengths=lengths)
    logp, states = model.decode(X, lengths=lengths)
    np.testing.assert_array_equal(pred, states)
    _, states_q = model.decode(X, lengths=lengths, parameters="expected_log")
    assert np.mean(states_q == states) > 0.9
    # the decoded labelling matches the truth up to a relabelling
    agreement = max(np.mean(np.array(p)[pred] == states_true) for p in itertools.permutations(range(3)))
    assert agreement > 0.8
    Xs, zs = model.sample(500, random_state=0)
    assert Xs.shape == (500, 1) and zs.shape == (500,)
    assert Xs.min() >= 0 and Xs.max() < model.n_symbols_


def test_pickle_determinism_and_inputs_unchanged():
    X, _, lengths = three_state_data(n_seq=4)
    X_copy, lengths_copy = X.copy(), lengths.copy()
    a = VBHiddenMarkov(3, max_iter=20, n_init=2, random_state=7).fit(X, lengths=lengths)
    b = VBHiddenMarkov(3, max_iter=20, n_init=2, random_state=7).fit(X, lengths=lengths)
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(lengths, lengths_copy)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X, lengths=lengths), a.predict(X, lengths=lengths))
    assert c.score(X, lengths=lengths) == a.score(X, lengths=lengths)


def test_sequence_ids_equal_lengths():
    X, _, lengths = three_state_data(n_seq=4)
    ids = np.repeat(np.arange(4), lengths)
    a = VBHiddenMarkov(3, max_iter=20, random_state=0).fit(X, lengths=lengths)
    b = VBHiddenMarkov(3, max_iter=20, random_state=0).fit(X, sequence_ids=ids)
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)


def test_warm_start_continues():
    X, _, lengths = three_state_data(n_seq=4)
    model = VBHiddenMarkov(3, max_iter=5, tol=0.0, warm_start=True, random_state=0)
    with pytest.warns(Warning):
        model.fit(X, lengths=lengths)
    first = model.lower_bound_
    with pytest.warns(Warning):
        model.fit(X, lengths=lengths)
    assert len(model.lower_bounds_) == 10
    assert model.lower_bound_ >= first - 1e-9


@pytest.mark.parametrize(
    "kwargs,X,fit_kw,match",
    [
        ({}, np.array([[0.5], [1.0]]), {}, "integer"),
        ({}, np.array([[0], [-1]]), {}, "negative"),
        ({"n_symbols": 2}, np.array([[0], [2]]), {}, "alphabet"),
        ({}, np.array([[0], [1], [1]]), {"lengths": [1, 1]}, "lengths"),
        ({}, np.array([[0], [1], [1]]), {"lengths": [3, 0]}, "lengths"),
        ({"transmat_prior": -1.0}, np.array([[0], [1]]), {}, "transmat_prior"),
        ({"emissionprob_prior": [1.0, 2.0, 3.0]}, np.array([[0], [1]]), {}, "emissionprob_prior"),
        ({"emission": "gaussian"}, np.array([[0.0], [np.inf]]), {}, "infinity"),
        ({"emission": "gaussian", "scale_prior": [[1.0, 2.0], [2.0, 1.0]]}, np.ones((4, 2)), {}, "scale_prior"),
        ({"init_params": "posterior"}, np.array([[0], [1]]), {}, "init_posterior"),
    ],
)
def test_bad_input_raises(kwargs, X, fit_kw, match):
    with pytest.raises(ValueError, match=match):
        VBHiddenMarkov(2, random_state=0, **kwargs).fit(X, **fit_kw)


def test_predict_rejects_unknown_symbols():
    model = VBHiddenMarkov(2, n_symbols=3, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        # whether five iterations converge on four frames depends on the start
        warnings.simplefilter("ignore")
        model.fit(np.array([[0], [1], [2], [1]]))
    with pytest.raises(ValueError, match="alphabet"):
        model.predict(np.array([[3]]))


def test_scoring_model_and_variational_posterior():
    from sklearn.exceptions import NotFittedError

    from sklearn_vb.scoring import scoring_model_for
    from sklearn_vb.hmm.scoring_model import HMMScoringModel
    from sklearn_vb.hmm.scoring_model import GaussianHMMScoringModel

    with pytest.raises(NotFittedError):
        scoring_model_for(VBHiddenMarkov(2))
    assert not hasattr(VBHiddenMarkov(2), "variational_posterior_")
    X, _, lengths = three_state_data(n_seq=3, length=40)
    model = VBHiddenMarkov(3, max_iter=50, random_state=0).fit(X, lengths=lengths)
    sm = scoring_model_for(model)
    assert isinstance(sm, HMMScoringModel)
    # the adapter's exact likelihood at the posterior mean is the estimator's plug-in score
    data = sm.prepare_data(X, lengths=lengths)
    theta_bar = {"pi": model.startprob_[None], "A": model.transmat_[None], "B": model.emissionprob_[None]}
    assert float(sm.log_likelihood(theta_bar, data)[0]) == pytest.approx(
        model.score_samples(X, lengths=lengths, per="sequence").sum(), rel=1e-10
    )
    q = sm.variational_posterior()
    mean = q.mean()
    np.testing.assert_allclose(np.squeeze(mean["B"]), model.emissionprob_, rtol=1e-12)
    np.testing.assert_allclose(np.squeeze(mean["A"]), model.transmat_, rtol=1e-12)
    Xg = np.random.default_rng(0).normal(size=(30, 2))
    gauss = VBHiddenMarkov(2, emission="gaussian", max_iter=20, random_state=0).fit(Xg)
    gauss_sm = scoring_model_for(gauss)
    assert isinstance(gauss_sm, GaussianHMMScoringModel)
    assert gauss_sm.n_parameters() == gauss._n_parameters()
    assert gauss_sm.variational_posterior() is not None


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_gaussian_values_whose_squares_underflow_are_refused_naming_X(covariance_type):
    X = np.full((4, 2), 6.9e-301)
    model = VBHiddenMarkov(2, emission="gaussian", covariance_type=covariance_type,
                           max_iter=3, random_state=0)
    with pytest.raises(ValueError, match="X: the values are too small"):
        model.fit(X)
