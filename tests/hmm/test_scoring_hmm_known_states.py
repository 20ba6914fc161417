"""The evidence scores of a VBHiddenMarkov fitted with known states (``states=``, -1
unknown) estimate ln p(X, known states): every score conditions on them.

Oracles: the exact evidence by enumerating the state paths that agree with the known
states and integrating the parameters in closed form given each path (Dirichlet rows;
Dirichlet-categorical emissions from :mod:`tests.oracles.hmm_paths`, Gamma-Poisson
rates here); the likelihood at a point by enumerating those paths; and, with every
state known, the closed form itself, which CS reaches exactly (the E step is a point
mass on the one path).
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import score, scoring_model_for
from tests.oracles.hmm_paths import dirichlet_evidence, exact_categorical_log_evidence

X_CAT = np.array([0, 0, 2, 2, 1, 1, 0, 2, 2, 0]).reshape(-1, 1)
LENGTHS = [6, 4]
KNOWN = np.array([0, -1, -1, 1, -1, -1, 0, -1, -1, -1])

EVIDENCE_SCORES = ["vb", "cs", "cs_dagger", "laplace", "is", "ais", "smc", "vmcmc",
                   "nested_sampling"]
OPTIONS = {"is": dict(n_samples=20000, n_runs=2), "ais": dict(n_temperatures=500, n_chains=16),
           "smc": dict(n_particles=400), "vmcmc": dict(n_samples=2000),
           "nested_sampling": dict(n_live=40)}


def _fit(X, lengths, states, **kw):
    params = dict(n_components=2, random_state=0, n_init=2)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBHiddenMarkov(**params).fit(X, lengths=lengths, states=states)


def _scores(est, X, lengths, states, methods):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {m: score(est, X, m, lengths=lengths, states=states, random_state=0,
                         **OPTIONS.get(m, {})) for m in methods}


def _check_against(exact, res, free):
    """VB and CS lie below the exact ln p(X, known states); the sampling scores agree
    with it within their error bars (and are far from ln p(X) without the states)."""
    assert res["vb"].log_evidence <= exact + 1e-9
    assert res["cs"].log_evidence <= exact + 1e-9
    assert res["cs_dagger"].log_evidence <= exact + 1e-9
    for m in ("is", "ais", "smc", "vmcmc", "nested_sampling"):
        r = res[m]
        assert abs(r.log_evidence - exact) < 0.15 + 4 * r.stderr, (m, r.log_evidence, exact)
    assert abs(res["laplace"].log_evidence - exact) < 1.5
    # the quantity differs from the evidence of X alone by more than the error bars
    assert free - exact > 1.0


@pytest.mark.slow
def test_categorical_scores_against_the_paths_that_agree_with_the_known_states():
    est = _fit(X_CAT, LENGTHS, KNOWN, n_symbols=3)
    args = (2, 3, est.startprob_prior_, est.transmat_prior_, est.emissionprob_prior_)
    exact = exact_categorical_log_evidence(X_CAT.ravel(), LENGTHS, *args, known=KNOWN)
    free = exact_categorical_log_evidence(X_CAT.ravel(), LENGTHS, *args)
    model = scoring_model_for(est)
    data = model.prepare_data(X_CAT, lengths=LENGTHS, states=KNOWN)
    assert model.log_evidence(data) == pytest.approx(exact, abs=1e-10)
    _check_against(exact, _scores(est, X_CAT, LENGTHS, KNOWN, EVIDENCE_SCORES), free)


def _poisson_log_evidence(X, lengths, known, est):
    """ln p(X, known states) of a Poisson HMM: the paths that agree with the known
    states, each with its Dirichlet integrals and the Gamma-Poisson marginal of the
    counts of every state and dimension."""
    T, D = X.shape
    K = 2
    a0 = np.broadcast_to(est.rate_shape_prior_, (K, D))
    b0 = np.broadcast_to(est.rate_rate_prior_, (K, D))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    first = np.zeros(T, dtype=bool)
    first[starts] = True
    out = []
    for path in itertools.product(range(K), repeat=T):
        path = np.array(path)
        if np.any((known >= 0) & (path != known)):
            continue
        n_pi = np.bincount(path[first], minlength=K)
        n_A = np.zeros((K, K))
        np.add.at(n_A, (path[:-1][~first[1:]], path[1:][~first[1:]]), 1.0)
        v = (dirichlet_evidence(est.startprob_prior_, n_pi)
             + dirichlet_evidence(est.transmat_prior_, n_A))
        for k in range(K):
            x = X[path == k]
            s, n = x.sum(axis=0), x.shape[0]
            v += float(np.sum(a0[k] * np.log(b0[k]) - gammaln(a0[k]) + gammaln(a0[k] + s)
                              - (a0[k] + s) * np.log(b0[k] + n)) - np.sum(gammaln(x + 1.0)))
        out.append(v)
    return float(logsumexp(out))


@pytest.mark.slow
def test_poisson_scores_against_the_paths_that_agree_with_the_known_states():
    rng = np.random.default_rng(2)
    X = rng.poisson(np.where(np.arange(11)[:, None] < 6, 1.0, 5.0), size=(11, 2)).astype(float)
    lengths = [11]
    known = -np.ones(11, dtype=int)
    known[[0, 8]] = [0, 1]
    est = _fit(X, lengths, known, emission="poisson")
    exact = _poisson_log_evidence(X, lengths, known, est)
    free = _poisson_log_evidence(X, lengths, -np.ones(11, dtype=int), est)
    model = scoring_model_for(est)
    data = model.prepare_data(X, lengths=lengths, states=known)
    assert model.log_evidence(data) == pytest.approx(exact, abs=1e-9)
    _check_against(exact, _scores(est, X, lengths, known, EVIDENCE_SCORES), free + 1.0)


def test_likelihood_and_e_step_sum_over_the_paths_that_agree():
    """At a point, ln p(X, known states | theta) and the posterior state marginals by
    enumerating the agreeing paths, for categorical and full-covariance Gaussian
    emissions."""
    rng = np.random.default_rng(0)
    Xg = np.concatenate([rng.normal(-2, 1, (4, 2)), rng.normal(2, 1, (4, 2))])
    known = np.array([-1, 0, -1, -1, -1, 1, -1, -1])
    cases = [(X_CAT[:8], [5, 3], np.array([0, -1, -1, 1, -1, -1, 0, -1]), dict(n_symbols=3)),
             (Xg, [8], known, dict(emission="gaussian"))]
    for X, lengths, states, kw in cases:
        est = _fit(X, lengths, states, **kw)
        model = scoring_model_for(est)
        data = model.prepare_data(X, lengths=lengths, states=states)
        theta = model.variational_posterior().sample(np.random.default_rng(1), 2)
        for c in range(2):
            th = {k: v[c:c + 1] for k, v in theta.items()}
            pi, A, log_emis = _point_arrays(model, th, X)
            ref, marg = _enumerate(pi, A, log_emis, lengths, states)
            assert float(model.log_likelihood(th, data)[0]) == pytest.approx(ref, abs=1e-9)
            e = model.e_step(th, data)
            assert e.loglik == pytest.approx(ref, abs=1e-9)
            assert e.expected_complete_loglik + e.entropy == pytest.approx(ref, abs=1e-8)
            start = e.stats["pi"] if isinstance(e.stats, dict) else e.stats.start
            np.testing.assert_allclose(start, marg, atol=1e-9)


def _point_arrays(model, th, X):
    """(pi, A, log p(x_t | s)) (T, K) of one parameter set of either scoring model (the
    Gaussian densities from the family's tables, which its own tests check)."""
    if "pi" in th:  # categorical: Dirichlet blocks pi, A, B
        B = th["B"][0]
        return th["pi"][0], th["A"][0], np.log(B[:, X.ravel().astype(int)]).T
    log_emis = model.family.log_likelihood_tables(th, np.ascontiguousarray(X, dtype=float))[0]
    return th["startprob"][0], th["transmat"][0], log_emis


def _enumerate(pi, A, log_emis, lengths, known):
    """ln sum over the agreeing paths of p(X, path | theta) and the posterior
    probability of each state at the sequences' first frames, summed over sequences."""
    total, start = 0.0, np.zeros(len(pi))
    lo = 0
    for n in lengths:
        terms, firsts = [], []
        for path in itertools.product(range(len(pi)), repeat=n):
            path = np.array(path)
            if np.any((known[lo:lo + n] >= 0) & (path != known[lo:lo + n])):
                continue
            v = np.log(pi[path[0]]) + np.sum(np.log(A[path[:-1], path[1:]]))
            terms.append(v + log_emis[lo + np.arange(n), path].sum())
            firsts.append(path[0])
        terms = np.array(terms)
        z = logsumexp(terms)
        total += z
        w = np.exp(terms - z)
        np.add.at(start, np.array(firsts), w)
        lo += n
    return total, start


def test_with_every_state_known_cs_is_the_exact_evidence():
    states = np.array([0, 0, 1, 1, 0, 1, 0, 1, 1, 0])
    est = _fit(X_CAT, LENGTHS, states, n_symbols=3)
    exact = exact_categorical_log_evidence(X_CAT.ravel(), LENGTHS, 2, 3, est.startprob_prior_,
                                           est.transmat_prior_, est.emissionprob_prior_,
                                           known=states)
    res = _scores(est, X_CAT, LENGTHS, states, ["vb", "cs"])
    assert res["vb"].log_evidence == pytest.approx(exact, abs=1e-8)
    assert res["cs"].log_evidence == pytest.approx(exact, abs=1e-8)


def test_scores_refuse_what_would_not_condition_on_the_known_states():
    est = _fit(X_CAT, LENGTHS, KNOWN, n_symbols=3)
    # the fit's bound is of ln p(X, known states): 'vb' needs them to say so
    with pytest.raises(ValueError, match="states="):
        score(est, X_CAT, "vb", lengths=LENGTHS)
    with pytest.raises(ValueError, match="known states"):
        score(est, X_CAT, "ais", lengths=LENGTHS, states=KNOWN, anneal="joint",
              n_temperatures=10, n_chains=2, random_state=0)
    with pytest.raises(ValueError, match="states"):
        score(est, X_CAT, "bic", lengths=LENGTHS, states=KNOWN[:5])
    # a model fitted without known states scores X with given states as well
    free = _fit(X_CAT, LENGTHS, None, n_symbols=3)
    model = scoring_model_for(free)
    exact = model.log_evidence(model.prepare_data(X_CAT, lengths=LENGTHS, states=KNOWN))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = score(free, X_CAT, "ais", lengths=LENGTHS, states=KNOWN, random_state=0,
                  n_temperatures=300, n_chains=8)
    assert abs(r.log_evidence - exact) < 0.15 + 4 * r.stderr
    assert exact < model.log_evidence(model.prepare_data(X_CAT, lengths=LENGTHS)) - 1.0
