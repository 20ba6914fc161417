"""Joint (theta, z) annealing on the categorical HMM: tempered forward-filtering
backward-sampling and the conjugate row draws against enumeration and closed forms, and
joint AIS / reverse AIS against the evidence enumerated over every state path."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb._core.evidence.dirichlet import dirichlet_evidence

X = np.array([0, 2, 2, 1, 0, 0, 1]).reshape(-1, 1)
LENGTHS = [4, 3]
PATHS = np.array(list(itertools.product(range(2), repeat=7)))


@pytest.fixture(scope="module")
def hmm():
    est = VBHiddenMarkov(n_components=2, n_symbols=3, n_init=2, random_state=0).fit(X, lengths=LENGTHS)
    model = scoring_model_for(est)
    return est, model, model.prepare_data(X, lengths=LENGTHS)


def _assert_frequencies(codes, p, C):
    """Observed path frequencies against ``p``: cells expected at least 10 times each and
    the pooled rest, within 5 standard deviations (rare cells are Poisson, not normal)."""
    freq = np.bincount(codes, minlength=p.size) / C
    big = C * p >= 10
    f = np.append(freq[big], freq[~big].sum())
    q = np.append(p[big], p[~big].sum())
    assert np.all(np.abs(f - q) <= 5 * np.sqrt(q * (1 - q) / C) + 1e-12), (f, q)


def _path_terms(th, obs):
    """(ln p(z | theta), ln p(x | z, theta)) of every path of the two sequences, from the
    definitions."""
    pi, A, B = th["pi"], th["A"], th["B"]
    lz, lx = np.zeros(len(PATHS)), np.zeros((len(PATHS), 7))
    for m, z in enumerate(PATHS):
        for t in range(7):
            first = t in (0, 4)
            lz[m] += np.log(pi[z[t]] if first else A[z[t - 1], z[t]])
            lx[m, t] = np.log(B[z[t], obs[t]])
    return lz, lx  # lx: per frame


MIXED = np.array([1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.2])  # one exponent per frame


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, MIXED])
def test_sampled_state_paths_follow_the_tempered_conditional(hmm, beta):
    _, model, data = hmm
    single = model.sample_prior(np.random.default_rng(2), 1)
    C = 20000
    th = {k: np.repeat(v, C, axis=0) for k, v in single.items()}
    Z = model.sample_latents(th, data, np.random.default_rng(3), beta)
    lz, lx = _path_terms({k: v[0] for k, v in single.items()}, data.symbols)
    lt = lz + lx @ np.broadcast_to(beta, (7,))
    p = np.exp(lt - logsumexp(lt))
    _assert_frequencies(Z @ (2 ** np.arange(6, -1, -1)), p, C)
    if np.isscalar(beta) and beta == 0.0:
        Zp = model.sample_latents_prior(th, 7, np.random.default_rng(4))
        _assert_frequencies(Zp @ (2 ** np.arange(6, -1, -1)), p, C)


@pytest.mark.parametrize("beta", [0.3, MIXED])
def test_complete_likelihood_and_conjugate_draws(hmm, beta):
    _, model, data = hmm
    th = model.sample_prior(np.random.default_rng(5), 2)
    Z = PATHS[[5, 77]]
    lc = model.log_complete_likelihood_per_case(th, Z, data)
    for c in range(2):
        single = {k: v[c] for k, v in th.items()}
        _, lx = _path_terms(single, data.symbols)
        np.testing.assert_allclose(lc[c], lx[[5, 77][c]], rtol=1e-12)
    C = 20000
    betas = np.broadcast_to(beta, (7,))
    z = PATHS[77]
    draws = model.sample_params(np.tile(z, (C, 1)), data, np.random.default_rng(6), beta)
    counts = {k: np.zeros_like(a) for k, a in model.prior_alpha.items()}
    for t in range(7):
        if t in (0, 4):
            counts["pi"][z[t]] += 1
        else:
            counts["A"][z[t - 1], z[t]] += 1
        counts["B"][z[t], data.symbols[t]] += betas[t]
    for k, a in model.prior_alpha.items():
        post = a + counts[k]
        mean = post / post.sum(axis=-1, keepdims=True)
        sd = np.sqrt(mean * (1 - mean) / (post.sum(axis=-1, keepdims=True) + 1) / C)
        assert np.all(np.abs(draws[k].mean(axis=0) - mean) < 5 * sd), k


def _exact_posterior_draws(model, data, size, rng):
    """p(theta | X) exactly: a path weighted by its Dirichlet integrals, then the rows."""
    log_w = np.array([
        sum(float(dirichlet_evidence(model.prior_alpha[k], v))
            for k, v in _counts(z, data.symbols, model).items()) for z in PATHS])
    assert logsumexp(log_w) == pytest.approx(model.log_evidence(data), rel=1e-10)
    pick = rng.choice(len(PATHS), size=size, p=np.exp(log_w - logsumexp(log_w)))
    return model.sample_params(PATHS[pick], data, rng, 1.0)


def _counts(z, obs, model):
    c = {k: np.zeros_like(a) for k, a in model.prior_alpha.items()}
    for t in range(7):
        if t in (0, 4):
            c["pi"][z[t]] += 1
        else:
            c["A"][z[t - 1], z[t]] += 1
        c["B"][z[t], obs[t]] += 1
    return c


def test_joint_ais_and_reverse_ais_bracket_the_enumerated_evidence(hmm):
    est, model, data = hmm
    exact = model.log_evidence(data)
    kw = dict(anneal="joint", n_temperatures=300, n_chains=64, random_state=0, lengths=LENGTHS)
    lo = score(est, X, "ais", **kw)
    assert abs(lo.log_evidence - exact) < max(0.05, 4 * lo.stderr)
    ex = _exact_posterior_draws(model, data, 64, np.random.default_rng(1))
    hi = score(est, X, "rais", exact_posterior_samples=ex, **kw)
    assert abs(hi.log_evidence - exact) < max(0.05, 4 * hi.stderr)


def test_smc_gibbs_moves_use_the_per_frame_conditionals(hmm):
    est, model, data = hmm
    r = score(est, X, "smc", random_state=0, lengths=LENGTHS)
    assert abs(r.log_evidence - model.log_evidence(data)) < max(0.1, 4 * r.stderr)
