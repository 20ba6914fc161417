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


# ---------------------------------------------------------------------------
# the scoring adapter (the same family pieces) and the scorers
# ---------------------------------------------------------------------------


def brute_force_loglik(params, X, lengths):
    """ln p(X | theta_c) by enumerating every path, with scipy's Poisson pmf."""
    K = params["rates"].shape[1]
    out = []
    for c in range(params["rates"].shape[0]):
        log_b = st.poisson.logpmf(X[:, None, :], params["rates"][c][None]).sum(axis=2)
        if K > 1:
            lp, lA = np.log(params["startprob"][c]), np.log(params["transmat"][c])
        else:
            lp, lA = np.zeros(1), np.zeros((1, 1))
        out.append(enumerate_sequences(lp, lA, log_b, lengths)[0].sum())
    return np.array(out)


@pytest.fixture(scope="module")
def tiny_model():
    from sklearn_vb.scoring import scoring_model_for

    est = fit(X_TINY, L_TINY, 2)
    return est, scoring_model_for(est)


def test_adapter_likelihood_densities_and_counts(tiny_model):
    from sklearn_vb.scoring import ScoringModel, VariationalPosterior

    est, model = tiny_model
    assert isinstance(model, ScoringModel)
    assert isinstance(model.variational_posterior(), VariationalPosterior)
    assert model.param_space.names == ["startprob", "transmat", "rates"]
    assert model.n_parameters() == est._n_parameters() == 1 + 2 + 4
    data = model.prepare_data(X_TINY, lengths=L_TINY)
    th = model.sample_prior(np.random.default_rng(0), 5)
    ll = model.log_likelihood(th, data)
    np.testing.assert_allclose(ll, brute_force_loglik(th, X_TINY, L_TINY), rtol=1e-10)
    np.testing.assert_allclose(model.log_likelihood_per_case(th, data).sum(axis=1), ll,
                               rtol=1e-10)
    # the estimator's plug-in likelihood at the posterior mean
    mean = model.variational_posterior().mean()
    np.testing.assert_allclose(mean["rates"][0], est.rates_, rtol=1e-12)
    np.testing.assert_allclose(model.log_likelihood_per_sequence(mean, data)[0],
                               est.score_samples(X_TINY, lengths=L_TINY, per="sequence"),
                               rtol=1e-10)
    # prior and q densities against scipy's Dirichlet and Gamma densities
    q = model.variational_posterior()
    for dist, u_pi, u_A, a, b in (
        (model.prior, est.startprob_prior_, est.transmat_prior_, est.rate_shape_prior_,
         est.rate_rate_prior_),
        (q, est.startprob_posterior_, est.transmat_posterior_, est.rate_shape_posterior_,
         est.rate_rate_posterior_),
    ):
        draws = dist.sample(np.random.default_rng(1), 4)
        ref = [st.dirichlet.logpdf(draws["startprob"][c], u_pi)
               + sum(st.dirichlet.logpdf(draws["transmat"][c, k], u_A[k]) for k in range(2))
               + st.gamma.logpdf(draws["rates"][c], a, scale=1.0 / b).sum() for c in range(4)]
        np.testing.assert_allclose(dist.log_pdf(draws), ref, rtol=1e-10)
    big = q.sample(np.random.default_rng(2), 40000)
    np.testing.assert_allclose(big["rates"].mean(axis=0), est.rates_, rtol=0.02)
    th["rates"][0, 0, 0] = -1.0
    lp = model.log_prior(th)
    assert lp[0] == -np.inf and np.all(np.isfinite(lp[1:]))


def test_adapter_e_step_and_complete_evidence(tiny_model):
    est, model = tiny_model
    data = model.prepare_data(X_TINY, lengths=L_TINY)
    rng = np.random.default_rng(3)
    th = model.sample_prior(rng, 3)
    exact = exact_log_evidence(X_TINY, L_TINY, 2, est.startprob_prior_, est.transmat_prior_,
                               est.rate_shape_prior_, est.rate_rate_prior_)
    assert model.log_evidence(data) == pytest.approx(exact, abs=1e-9)
    for c in range(3):
        one = {k: v[c:c + 1] for k, v in th.items()}
        e = model.e_step(one, data)
        assert e.loglik == pytest.approx(model.log_likelihood(one, data)[0], abs=1e-9)
        assert e.entropy >= -1e-12
        assert e.stats.emission.N.sum() == pytest.approx(len(X_TINY))
        # conjugacy: ln p(theta) + E ln p(z, X | theta) - ln q(theta) = ln complete
        # evidence for every theta when q = VBM(stats)
        q = model.posterior_from_stats(e.stats)
        draws = q.sample(rng, 10)
        lhs = model.log_prior(draws) + model.complete_loglik(draws, e.stats) - q.log_pdf(draws)
        np.testing.assert_allclose(lhs, model.log_complete_evidence(e.stats), atol=1e-8)
    # the complete-data log-likelihood along a path, frame by frame
    Z = model.random_completion(data, rng)
    stats = model.stats_from_responsibilities(np.eye(2)[Z], data)
    np.testing.assert_allclose(model.log_complete_joint_per_case(th, Z, data).sum(axis=1),
                               model.complete_loglik(th, stats), rtol=1e-12)
    Xs, states = model.simulate(model.variational_posterior().mean(), rng, lengths=[3000, 2000])
    assert Xs.shape == (5000, 2) and states.shape == (5000,)
    for k in range(2):
        np.testing.assert_allclose(Xs[states == k].mean(axis=0), est.rates_[k], rtol=0.1,
                                   atol=0.05)


def test_scorers_against_exact_evidence(tiny_model):
    from sklearn_vb.scoring import score

    est, model = tiny_model
    exact = model.log_evidence(model.prepare_data(X_TINY, lengths=L_TINY))
    kw = dict(lengths=L_TINY, random_state=0)
    vb = score(est, X_TINY, "vb", **kw)
    assert vb.log_evidence == est.lower_bound_ <= exact + 1e-9
    bic = score(est, X_TINY, "bic", **kw)
    assert np.isfinite(bic.log_evidence)
    assert bic.diagnostics["n"] == 7 and bic.diagnostics["d"] == model.n_parameters()
    cs = score(est, X_TINY, "cs", **kw)
    assert cs.log_evidence <= exact + 1e-9
    vbcs = score(est, X_TINY, "vb", init="cs", **kw)
    assert vbcs.diagnostics["first_bound"] == pytest.approx(vbcs.diagnostics["cs"], abs=1e-10)
    assert vbcs.diagnostics["cs"] - 1e-9 <= vbcs.log_evidence <= exact + 1e-9
    ais = score(est, X_TINY, "ais", n_temperatures=500, n_chains=16, **kw)
    err = abs(ais.log_evidence - exact)
    assert err <= max(0.05, 4 * ais.stderr) and err <= 0.5, (ais.log_evidence - exact, ais.stderr)
