"""VBHiddenMarkov with Poisson emissions against exact oracles: path enumeration of the
forward-backward pass, the closed-form Gamma-Poisson evidence, the exact evidence of a
tiny problem (every path, parameters integrated out), monotone bounds."""

import itertools

import numpy as np
import pytest
from scipy import stats as st
from scipy.special import digamma, gammaln, logsumexp

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.base import bound_round_off

# tiny problem: two sequences, 7 frames, 2 count features -> 2^7 paths for K = 2
X_TINY = np.array([[0, 3], [1, 4], [0, 2], [5, 0], [4, 1], [6, 0], [1, 3]])
L_TINY = [4, 3]
PRIOR = dict(startprob_prior=0.8, transmat_prior=0.6, rate_prior=(1.5, 0.5))


def fit(X, lengths, K, **kw):
    params = dict(PRIOR, n_init=3, max_iter=500, tol=1e-10, random_state=0)
    params.update(kw)
    return VBHiddenMarkov(K, emission="poisson", **params).fit(X, lengths=lengths)


# ---------------------------------------------------------------------------
# independent oracles
# ---------------------------------------------------------------------------


def all_paths(K, T):
    return np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int64)


def starts_of(lengths):
    return np.concatenate([[0], np.cumsum(lengths)[:-1]])


def enumerate_sequences(log_pi, log_A, log_b, lengths):
    """ln Z per sequence and the state marginals (T, K), summing over every path of
    every sequence separately."""
    K = len(log_pi)
    lnZ, gamma = [], np.zeros((sum(lengths), K))
    for t0, n in zip(starts_of(lengths), lengths):
        paths = all_paths(K, n)
        w = log_pi[paths[:, 0]] + log_b[t0 + np.arange(n), paths].sum(axis=1)
        for t in range(1, n):
            w = w + log_A[paths[:, t - 1], paths[:, t]]
        z = logsumexp(w)
        lnZ.append(z)
        p = np.exp(w - z)
        for t in range(n):
            for k in range(K):
                gamma[t0 + t, k] = p[paths[:, t] == k].sum()
    return np.array(lnZ), gamma


def gamma_poisson_evidence(x, a0, b0):
    """Closed-form ln p(x) of frames x (n, D) under independent Gamma(a0, b0) rates."""
    n = x.shape[0]
    S = x.sum(axis=0)
    return float(
        np.sum(a0 * np.log(b0) - gammaln(a0) + gammaln(a0 + S) - (a0 + S) * np.log(b0 + n))
        - gammaln(x + 1.0).sum()
    )


def exact_log_evidence(X, lengths, K, u_pi, u_A, a0, b0):
    """Every joint path: Dirichlet-multinomial evidence of its initial and transition
    counts times the Gamma-Poisson evidence of each state's frames."""
    paths = all_paths(K, len(X))
    first = np.zeros(len(X), bool)
    first[starts_of(lengths)] = True
    vals = []
    for path in paths:
        n_pi = np.bincount(path[first], minlength=K)
        n_A = np.zeros((K, K))
        for t in range(1, len(X)):
            if not first[t]:
                n_A[path[t - 1], path[t]] += 1
        v = gammaln(u_pi.sum()) - gammaln(u_pi.sum() + n_pi.sum()) + np.sum(
            gammaln(u_pi + n_pi) - gammaln(u_pi))
        v += np.sum(gammaln(u_A.sum(axis=1)) - gammaln(u_A.sum(axis=1) + n_A.sum(axis=1)))
        v += np.sum(gammaln(u_A + n_A) - gammaln(u_A))
        v += sum(gamma_poisson_evidence(X[path == k], a0[k], b0[k]) for k in range(K))
        vals.append(v)
    return float(logsumexp(vals))


def expected_log_table(model, X):
    """E_q[ln Poisson(x_t | lambda_k)] from the posterior Gamma parameters (T, K)."""
    a, b = model.rate_shape_posterior_, model.rate_rate_posterior_
    e_log, e_rate = digamma(a) - np.log(b), a / b
    return X @ e_log.T - e_rate.sum(axis=1) - gammaln(X + 1.0).sum(axis=1)[:, None]


def gamma_kl(a, b, a0, b0):
    """KL(Gamma(a, b) || Gamma(a0, b0)) as -H[q] - E_q ln p, with scipy's entropy."""
    e_log_p = a0 * np.log(b0) - gammaln(a0) + (a0 - 1.0) * (digamma(a) - np.log(b)) - b0 * a / b
    return -st.gamma(a, scale=1.0 / b).entropy() - e_log_p


def dirichlet_expected_log(w):
    return digamma(w) - digamma(w.sum(axis=-1, keepdims=True))


# ---------------------------------------------------------------------------
# forward-backward and the bound against enumeration
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("K", [2, 3])
def test_forward_backward_equals_path_enumeration(K):
    X = X_TINY[:6] if K == 3 else X_TINY
    lengths = [4, 2] if K == 3 else L_TINY
    model = fit(X, lengths, K)
    log_pi = dirichlet_expected_log(model.startprob_posterior_)
    log_A = dirichlet_expected_log(model.transmat_posterior_)
    lnZ, gamma = enumerate_sequences(log_pi, log_A, expected_log_table(model, X), lengths)
    assert model.score_bound(X, lengths=lengths) == pytest.approx(lnZ.sum(), rel=1e-12)
    np.testing.assert_allclose(model.predict_proba(X, lengths=lengths), gamma, atol=1e-12)
    # the recorded bound: ln Z of the last VBE pass minus every KL, computed here
    terms = model.lower_bound_terms_
    assert terms["log_normaliser"] == pytest.approx(lnZ.sum(), rel=1e-12)
    kl = gamma_kl(model.rate_shape_posterior_, model.rate_rate_posterior_,
                  model.rate_shape_prior_, model.rate_rate_prior_).sum()
    assert terms["kl_emission"] == pytest.approx(kl, rel=1e-10)
    assert model.lower_bound_ == pytest.approx(
        terms["log_normaliser"] - terms["kl_startprob"] - terms["kl_transmat"] - kl, rel=1e-12)
    # plug-in likelihood of every sequence at the posterior-mean rates
    log_b = st.poisson.logpmf(X[:, None, :], model.rates_[None]).sum(axis=2)
    lnZ_mean, _ = enumerate_sequences(np.log(model.startprob_), np.log(model.transmat_),
                                      log_b, lengths)
    np.testing.assert_allclose(model.score_samples(X, lengths=lengths, per="sequence"),
                               lnZ_mean, rtol=1e-12)
    assert model.score(X, lengths=lengths) == pytest.approx(lnZ_mean.sum() / len(X), rel=1e-12)


def test_single_state_bound_is_closed_form_evidence():
    rng = np.random.default_rng(1)
    X = rng.poisson([2.0, 0.3, 7.0], size=(40, 3))
    model = VBHiddenMarkov(1, emission="poisson", rate_prior=(np.array([1.0, 0.5, 2.0]), 0.4),
                           random_state=0).fit(X, lengths=[15, 25])
    a0 = np.array([1.0, 0.5, 2.0])
    assert model.lower_bound_ == pytest.approx(gamma_poisson_evidence(X, a0, 0.4), abs=1e-10)


@pytest.mark.parametrize("K", [2, 3])
def test_bound_below_exact_evidence(K):
    X = X_TINY[:6] if K == 3 else X_TINY
    lengths = [4, 2] if K == 3 else L_TINY
    model = fit(X, lengths, K)
    exact = exact_log_evidence(X, lengths, K, model.startprob_prior_, model.transmat_prior_,
                               model.rate_shape_prior_, model.rate_rate_prior_)
    assert model.lower_bound_ <= exact + 1e-9
    assert model.lower_bound_ > exact - 5.0  # and not vacuous


@pytest.mark.parametrize("init", ["kmeans", "random"])
@pytest.mark.parametrize("optimize", [False, True])
def test_bound_never_decreases_step_by_step(init, optimize):
    rng = np.random.default_rng(2)
    z = np.repeat([0, 1, 2, 1, 0], 30)
    X = rng.poisson(np.array([[0.5, 4.0], [5.0, 5.0], [8.0, 0.2]])[z])
    model = VBHiddenMarkov(4, emission="poisson", init_params=init, max_iter=200, tol=1e-9,
                           optimize_prior_strengths=optimize, random_state=3,
                           bound_check="steps")
    model.fit(X, lengths=[75, 75])
    bounds = model.lower_bounds_
    assert np.all(np.diff(bounds) >= -bound_round_off(bounds[1:]))
    assert bounds[-1] > bounds[0] + 10.0


def test_sampling_and_scores():
    rng = np.random.default_rng(4)
    z = np.repeat([0, 1] * 10, 25)
    X = rng.poisson(np.array([[1.0, 6.0], [7.0, 0.5]])[z])
    model = VBHiddenMarkov(2, emission="poisson", random_state=0).fit(X, lengths=[250, 250])
    Xs, states = model.sample(20000, random_state=0)
    assert Xs.shape == (20000, 2) and Xs.dtype.kind == "i" and Xs.min() >= 0
    for k in range(2):
        np.testing.assert_allclose(Xs[states == k].mean(axis=0), model.rates_[k], rtol=0.05)
    assert np.all(np.isfinite(model.score_samples(Xs[:100])))
    assert model.score(X, lengths=[250, 250]) > model.score(X[:, ::-1], lengths=[250, 250])
    assert model.bic(X) < VBHiddenMarkov(1, emission="poisson").fit(X).bic(X)
    assert np.mean(model.predict(X) == (z if model.rates_[0, 0] < 3 else 1 - z)) > 0.95


def test_init_posterior_and_validation():
    post = {"startprob": [1.0, 1.0], "transmat": np.ones((2, 2)),
            "rate_shape": np.full((2, 2), 2.0), "rate_rate": np.ones((2, 2))}
    model = VBHiddenMarkov(2, emission="poisson", init_params="posterior", init_posterior=post,
                           random_state=0).fit(X_TINY)
    assert np.isfinite(model.lower_bound_)
    for X, kw, match in [
        (np.array([[0, -1], [1, 2]]), {}, "non-negative integer"),
        (np.array([[0.5, 1], [1, 2]]), {}, "non-negative integer"),
        (X_TINY, {"rate_prior": (1.0, -2.0)}, "rate_prior"),
        (X_TINY, {"rate_prior": (1.0, 2.0, 3.0)}, "rate_prior"),
        (X_TINY, {"init_params": "posterior", "init_posterior": {**post, "rate_rate": -post["rate_rate"]}},
         "rate_rate"),
        (X_TINY, {"init_params": "random_marginals"}, "random_marginals"),
    ]:
        with pytest.raises(ValueError, match=match):
            VBHiddenMarkov(2, emission="poisson", **kw).fit(X)
    with pytest.raises(ValueError, match="non-negative integer"):
        model.predict(np.array([[0.5, 1.0]]))
