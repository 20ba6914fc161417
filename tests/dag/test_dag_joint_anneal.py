"""Joint (theta, z) annealing on discrete DAGs: the tempered conditionals of the hidden
configurations and of the CPTs against enumeration and conjugate closed forms, and
joint AIS / reverse AIS against the enumerated evidence."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.scoring import UnreliableEstimateWarning, score, scoring_model_for
from sklearn_vb._core.evidence.dirichlet import dirichlet_evidence

# h1 -> h2, h1 -> a, h2 -> b, h2 -> c: two hidden nodes (2 and 3 states), one the
# other's parent, so the order of the configuration grid matters
STRUCTURE = {"h1": [], "h2": ["h1"], "a": ["h1"], "b": ["h2"], "c": ["h2"]}
CARDS = {"h1": 2, "h2": 3, "a": 2, "b": 3, "c": 2}
X2 = np.array([[0, 0, 1], [1, 2, 0], [0, 1, 1], [1, 2, 0], [0, 0, 0]])
LATENT_CLASS_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])


@pytest.fixture(scope="module")
def two_hidden():
    est = VBDiscreteDAG(STRUCTURE, cardinalities=CARDS, hidden=["h1", "h2"], n_init=1,
                        random_state=0).fit(X2)
    model = scoring_model_for(est)
    return est, model, model.prepare_data(X2)


def _log_joint_terms(theta, x):
    """(ln p(z | theta), ln p(x | z, theta)) for the 6 configurations (h1, h2) in C order,
    written out from the CPTs."""
    h1, h2 = theta["cpt[h1]"], theta["cpt[h2]"]
    A, B, Cc = theta["cpt[a]"], theta["cpt[b]"], theta["cpt[c]"]
    lz, lx = [], []
    for z1, z2 in itertools.product(range(2), range(3)):
        lz.append(np.log(h1[0, z1] * h2[z1, z2]))
        lx.append(np.log(A[z1, x[0]] * B[z2, x[1]] * Cc[z2, x[2]]))
    return np.array(lz), np.array(lx)


def test_complete_likelihood_and_prior_draws_match_the_cpts(two_hidden):
    _, model, data = two_hidden
    rng = np.random.default_rng(0)
    th = model.sample_prior(rng, 3)
    Z = np.tile(np.arange(6), (3, 1))[:, :5]
    lc = model.log_complete_likelihood_per_case(th, Z, data)
    ll = model.log_likelihood_per_case(th, data)
    for c in range(3):
        single = {k: v[c] for k, v in th.items()}
        for i, x in enumerate(X2):
            lz, lx = _log_joint_terms(single, x)
            assert lc[c, i] == pytest.approx(lx[Z[c, i]], rel=1e-12)
            # summing the complete likelihood over z recovers p(x | theta)
            assert logsumexp(lz + lx) == pytest.approx(ll[c, i], rel=1e-12)


MIXED = np.array([0.0, 1.0, 0.4, 1.0, 0.0])  # one exponent per case (as SMC over data uses)


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0, MIXED])
def test_sample_latents_draws_the_tempered_conditional(two_hidden, beta):
    _, model, data = two_hidden
    single = model.sample_prior(np.random.default_rng(3), 1)
    C = 20000
    th = {k: np.repeat(v, C, axis=0) for k, v in single.items()}
    Z = model.sample_latents(th, data, np.random.default_rng(4), beta)
    assert Z.shape == (C, 5) and Z.dtype.kind == "i"
    worst = 0.0
    betas = np.broadcast_to(beta, (5,))
    for i, x in enumerate(X2):
        lz, lx = _log_joint_terms({k: v[0] for k, v in single.items()}, x)
        b = betas[i]
        p = np.exp(lz + b * lx - logsumexp(lz + b * lx))
        freq = np.bincount(Z[:, i], minlength=6) / C
        worst = max(worst, np.max(np.abs(freq - p) / np.sqrt(p * (1 - p) / C + 1e-12)))
    assert worst < 5.0
    if np.isscalar(beta) and beta == 0.0:  # the prior draw of the start of the path has the same law
        Zp = model.sample_latents_prior(th, 5, np.random.default_rng(5))
        lz, _ = _log_joint_terms({k: v[0] for k, v in single.items()}, X2[0])
        p = np.exp(lz)
        for i in range(5):
            freq = np.bincount(Zp[:, i], minlength=6) / C
            assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / C) + 1e-12)


@pytest.mark.parametrize("beta", [0.3, MIXED])
def test_sample_params_draws_the_conjugate_dirichlets_with_tempered_observed_counts(two_hidden,
                                                                                   beta):
    _, model, data = two_hidden
    C = 20000
    betas = np.broadcast_to(beta, (5,))
    z = np.array([0, 5, 3, 4, 1])  # (h1, h2) = (0,0), (1,2), (1,0), (1,1), (0,1)
    Z = np.tile(z, (C, 1))
    th = model.sample_params(Z, data, np.random.default_rng(6), beta)
    z1, z2 = np.unravel_index(z, (2, 3))
    counts = {k: np.zeros_like(a) for k, a in model.prior_alpha.items()}
    for i, x in enumerate(X2):
        counts["cpt[h1]"][0, z1[i]] += 1
        counts["cpt[h2]"][z1[i], z2[i]] += 1
        counts["cpt[a]"][z1[i], x[0]] += betas[i]
        counts["cpt[b]"][z2[i], x[1]] += betas[i]
        counts["cpt[c]"][z2[i], x[2]] += betas[i]
    for k, a in model.prior_alpha.items():
        post = a + counts[k]
        mean = post / post.sum(axis=-1, keepdims=True)
        sd = np.sqrt(mean * (1 - mean) / (post.sum(axis=-1, keepdims=True) + 1) / C)
        assert np.all(np.abs(th[k].mean(axis=0) - mean) < 5 * sd + 1e-12), k
        np.testing.assert_allclose(th[k].sum(axis=-1), 1.0)


def _exact_posterior_draws(model, data, size, rng):
    """Exact draws of p(theta | X) on tiny data: every completion of the hidden values
    weighted by its Dirichlet integral, then the CPTs given the drawn completion."""
    n, H = data.inverse.size, 2
    Zs = np.array(list(itertools.product(range(H), repeat=n)))
    ent = data.idx[data.row_start[data.inverse][None, :] + Zs]
    P = model.layout.size
    counts = np.stack([np.bincount(e.ravel(), minlength=P) for e in ent]).astype(float)
    log_w = sum(dirichlet_evidence(a, counts[:, model.layout.offsets[j]:model.layout.offsets[j + 1]]
                                   .reshape((-1,) + a.shape))
                for j, a in enumerate(model.prior_alpha.values()))
    assert logsumexp(log_w) == pytest.approx(model.log_evidence(data), rel=1e-10)
    pick = rng.choice(len(Zs), size=size, p=np.exp(log_w - logsumexp(log_w)))
    return model.sample_params(Zs[pick], data, rng, 1.0)


def test_joint_ais_and_reverse_ais_bracket_the_enumerated_evidence():
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3,
                        random_state=0).fit(LATENT_CLASS_X)
    model = scoring_model_for(est)
    data = model.prepare_data(LATENT_CLASS_X)
    exact = model.log_evidence(data)
    kw = dict(anneal="joint", n_temperatures=300, n_chains=64, random_state=0)
    lo = score(est, LATENT_CLASS_X, "ais", **kw)
    assert lo.bound == "stochastic_lower"
    assert abs(lo.log_evidence - exact) < max(0.05, 4 * lo.stderr)
    ex = _exact_posterior_draws(model, data, 64, np.random.default_rng(1))
    hi = score(est, LATENT_CLASS_X, "rais", exact_posterior_samples=ex, **kw)
    assert abs(hi.log_evidence - exact) < max(0.05, 4 * hi.stderr)
    b = score(est, LATENT_CLASS_X, "bdmc", anneal="joint", K_grid=(30, 300), n_chains=32,
              exact_posterior_samples=ex, random_state=0)
    lo_b, hi_b = b.interval
    assert lo_b - 0.2 < exact < hi_b + 0.2
    # one temperature is likelihood weighting over (theta, z): far below the truth
    with pytest.warns(UnreliableEstimateWarning):
        lw = score(est, LATENT_CLASS_X, "ais", anneal="joint", schedule=np.array([0.0, 1.0]),
                   n_chains=64, random_state=0)
    assert lw.log_evidence < exact - 0.5


def test_smc_gibbs_moves_use_the_per_case_conditionals():
    """Particle learning over data moves with sample_latents / sample_params at 0/1
    case exponents; it must land on the enumerated evidence."""
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3,
                        random_state=0).fit(LATENT_CLASS_X)
    exact = scoring_model_for(est).log_evidence(scoring_model_for(est).prepare_data(LATENT_CLASS_X))
    r = score(est, LATENT_CLASS_X, "smc", random_state=0)
    assert abs(r.log_evidence - exact) < max(0.1, 4 * r.stderr)


def test_joint_annealing_refuses_what_it_cannot_represent():
    Xm = np.array([[0, 0], [0, -1], [2, 2], [2, 1]])  # -1: a missing value
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=1, random_state=0).fit(Xm)
    with pytest.raises(ValueError, match="complete data"):
        score(est, Xm, "ais", anneal="joint", n_temperatures=10, n_chains=2)
    # the conditionals themselves treat a missing value as a latent: SMC's Gibbs moves
    model = scoring_model_for(est)
    exact = model.log_evidence(model.prepare_data(Xm))
    r = score(est, Xm, "smc", random_state=0)
    assert r.diagnostics["move"] == "gibbs"
    assert abs(r.log_evidence - exact) < max(0.1, 4 * r.stderr)
    # a hidden node with an observed parent: p(z | theta) would depend on the data
    est = VBDiscreteDAG({"a": [], "h": ["a"], "b": ["h"]}, cardinalities={"a": 2, "h": 2, "b": 2},
                        hidden=["h"], n_init=1, random_state=0).fit(np.array([[0, 1], [1, 0], [1, 1]]))
    with pytest.raises(ValueError, match="parents are all hidden"):
        score(est, np.array([[0, 1], [1, 0], [1, 1]]), "ais", anneal="joint", n_temperatures=10,
              n_chains=2)
