"""AIS from the alias-symmetrised variational posterior (``start="q_aliases"``) on the
DAG class: the alias group, the exact mixture density, the compiled chains' cached
densities, and the estimate against the enumerated evidence (unbiased in exp, forward
below and reverse above it from an exact posterior draw)."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import dirichlet

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.datasets import bipartite_structure, make_beal_dag, random_beal_parameters
from sklearn_vb.scoring import score, scoring_model_for


def _q(est, X):
    model = scoring_model_for(est)
    return model.flat_concentrations(model.variational_posterior(model.prepare_data(X)))


def _fit(code, X, n_init=3):
    return VBDiscreteDAG(*bipartite_structure(code), n_init=n_init, max_iter=300,
                         random_state=0, bound_check="off").fit(X)


@pytest.fixture(scope="module")
def tiny():
    """True structure, CPTs drawn from the prior, n = 7 cases drawn from them (so the
    drawn CPTs are an exact posterior draw) and the enumerated evidence."""
    params = random_beal_parameters(random_state=3)
    X = make_beal_dag(7, parameters=params, random_state=4)
    est = _fit((1, 3, 3, 2), X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = float(est.exact_log_evidence(X, max_terms=10 ** 7))
    return est, X, params, exact


@pytest.mark.parametrize("code", [(1, 3, 3, 2), (3, 3, 3, 3), (3, 3, 3, 1), (0, 0, 0, 0),
                                  (0, 3, 0, 3)])
def test_alias_group_is_the_models_symmetry_group(code):
    X = make_beal_dag(30, random_state=0)
    est = _fit(code, X, n_init=1)
    model = scoring_model_for(est)
    G = model.alias_permutations()
    P = model.layout.size
    assert G.shape == (round(np.exp(est.log_alias_count_)), P)
    assert np.array_equal(G[0], np.arange(P))
    assert len({tuple(g) for g in G}) == len(G)
    for g in G:  # bijections that map CPT rows onto CPT rows
        assert np.array_equal(np.sort(g), np.arange(P))
        rows = model.layout.entry_row
        assert len(set(zip(rows, rows[g]))) == model.layout.n_rows
    # a group: closed under composition
    maps = {tuple(g) for g in G}
    for a in G:
        for b in G:
            assert tuple(b[a]) in maps
    # likelihood and prior are unchanged by every relabelling
    data = model.prepare_data(X)
    flat = model._flat(model.sample_prior(np.random.default_rng(1), 3))
    ll0 = model.log_likelihood(model.param_space.unflatten(flat), data)
    lp0 = model.log_prior(model.param_space.unflatten(flat))
    for g in G:
        moved = np.empty_like(flat)
        moved[:, g] = flat
        p = model.param_space.unflatten(moved)
        np.testing.assert_allclose(model.log_likelihood(p, data), ll0, rtol=1e-12)
        np.testing.assert_allclose(model.log_prior(p), lp0, rtol=1e-12, atol=1e-12)
    if len(G) > 1:  # a relabelling changes the parameters themselves
        assert not np.allclose(moved, flat)


def test_mixture_density_against_scipy(tiny):
    est, X, _, _ = tiny
    model = scoring_model_for(est)
    q = _q(est, X)
    other = q[::-1].copy() + 0.5
    mix = model.alias_mixture(np.stack([q, other]))
    assert mix.shape == (2 * len(model.alias_permutations()), q.size)
    # q's copies are those of alias_permutations; duplicates are dropped
    assert model.alias_mixture(np.stack([q, q])).shape[0] == len(model.alias_permutations())
    theta = model._flat(model.sample_prior(np.random.default_rng(2), 4))
    got = model.mixture_log_density(model.param_space.unflatten(theta), mix)
    rp = model.layout.row_ptr
    for c in range(4):
        comp = [sum(dirichlet.logpdf(theta[c, a:b], m[a:b]) for a, b in zip(rp[:-1], rp[1:])
                    if b - a >= 2) for m in mix]
        assert got[c] == pytest.approx(logsumexp(comp) - np.log(len(mix)), rel=1e-10)


def test_mixture_chains_keep_their_cached_densities(tiny):
    est, X, _, _ = tiny
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    mix = model.alias_mixture(_q(est, X))
    betas = np.linspace(0.0, 1.0, 101)
    seeds = list(range(7, 13))  # 6 chains, 4 components
    r = model.run_ais_compiled(data, betas, seeds, start_mixture=mix, segment=40)
    r2 = model.run_ais_compiled(data, betas, seeds, start_mixture=mix, segment=40)
    np.testing.assert_array_equal(r["log_weights"], r2["log_weights"])
    assert 0.05 < r["acceptance"].mean() < 1
    # the weight is the stratification offset plus the sum of the increments
    per = np.bincount(np.arange(6) % len(mix), minlength=len(mix))
    offset = np.log(6 / (len(mix) * per[np.arange(6) % len(mix)]))
    np.testing.assert_allclose(r["log_ratios"].sum() * 6, (r["log_weights"] - offset).sum(),
                               rtol=1e-10)
    assert np.exp(offset).mean() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not both"):
        model.run_ais_compiled(data, betas, seeds, start_mixture=mix, start_alpha=mix[0])
    with pytest.raises(ValueError, match="start_mixture"):
        model.run_ais_compiled(data, betas, seeds, start_mixture=mix[:, :-1])


LATENT_CLASS_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
LATENT_CLASS_EXACT = -13.721206877201771  # enumerated (VBDiscreteDAG.exact_log_evidence)


def test_q_aliases_matches_the_enumerated_evidence():
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3,
                        random_state=0).fit(LATENT_CLASS_X)
    r = score(est, LATENT_CLASS_X, "ais", start="q_aliases", n_temperatures=300, n_chains=32,
              random_state=0)
    err = abs(r.log_evidence - LATENT_CLASS_EXACT)
    assert err <= max(0.05, 4 * r.stderr) and err < 0.3, (r.log_evidence, r.stderr)
    assert r.log_alias_correction == 0.0
    # unbiased for Z: every chain's weight is an unbiased estimate, so the mean of
    # exp(log_w - exact) over many independent chains brackets 1 (a short schedule, so
    # that single weights scatter widely)
    model = scoring_model_for(est)
    data = model.prepare_data(LATENT_CLASS_X)
    mix = model.alias_mixture(_q(est, LATENT_CLASS_X))
    assert len(mix) == 2
    lw = model.run_ais_compiled(data, np.linspace(0.0, 1.0, 31), list(range(2000)),
                                start_mixture=mix)["log_weights"]
    w = np.exp(lw - LATENT_CLASS_EXACT)
    assert lw.std() > 0.3  # the check has something to check
    assert abs(w.mean() - 1.0) < 4 * w.std(ddof=1) / np.sqrt(w.size)
    # the start from q alone misses the relabelled copy's mass at this schedule length
    lw_q = model.run_ais_compiled(data, np.linspace(0.0, 1.0, 31), list(range(2000)),
                                  start_alpha=mix[0])["log_weights"]
    assert np.exp(lw_q - LATENT_CLASS_EXACT).mean() < w.mean()
    X = LATENT_CLASS_X
    with pytest.raises(ValueError, match="hysteresis"):
        score(est, X, "ais", start="q_aliases", n_temperatures=5, hysteresis=True)
    with pytest.raises(ValueError, match="compiled"):
        score(est, X, "ais", start="q_aliases", n_temperatures=5, kernel="dirichlet")


def _exact_posterior_draws(X, n_draws, rng):
    """Exact draws of the latent-class posterior p(theta | X) (2 classes, children of 3
    states, uniform Dirichlet priors) by enumerating the class of every case: a
    completion z with probability p(X, z) (a product of Dirichlet-multinomial
    integrals), then theta ~ Dir(1 + counts(X, z)).  Also returns ln p(X) = ln sum_z p(X, z)."""
    from itertools import product

    from scipy.special import gammaln

    def log_int(counts):
        a = 1.0 + counts
        return float(np.sum(gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))
                            - (gammaln(np.ones_like(a)).sum(axis=-1)
                               - gammaln(np.full(a.shape[:-1], a.shape[-1])))))

    zs = np.array(list(product(range(2), repeat=len(X))))
    tabs = []
    logp = np.empty(len(zs))
    for i, z in enumerate(zs):
        cz = np.bincount(z, minlength=2)[None].astype(float)
        cx = [np.zeros((2, 3)) for _ in range(X.shape[1])]
        for j in range(X.shape[1]):
            np.add.at(cx[j], (z, X[:, j]), 1.0)
        tabs.append([cz] + cx)
        logp[i] = log_int(cz) + sum(log_int(c) for c in cx)
    log_z = float(logsumexp(logp))
    pick = rng.choice(len(zs), size=n_draws, p=np.exp(logp - log_z))
    draws = [[np.stack([rng.dirichlet(1.0 + row) for row in t]) for t in tabs[i]] for i in pick]
    return draws, log_z


def test_forward_below_and_reverse_above_from_exact_draws():
    """BDMC on the mixture path (latent-class model, 8 cases): reverse AIS from exact
    posterior draws is a stochastic upper bound, forward AIS a stochastic lower bound;
    both within 0.1 nats of the enumerated evidence at 300 temperatures."""
    rng = np.random.default_rng(11)
    X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2], [1, 1], [0, 2]])
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3, random_state=0).fit(X)
    model = scoring_model_for(est)
    draws, log_z = _exact_posterior_draws(X, 64, rng)
    exact = float(est.exact_log_evidence(X))
    assert log_z == pytest.approx(exact, abs=1e-9)  # two enumerations agree
    exact_samples = {b: np.stack([d[i] for d in draws]) for i, b in enumerate(model.block_names)}
    gaps = []
    for K in (3, 300):
        kw = dict(start="q_aliases", n_temperatures=K, n_chains=64, random_state=1)
        lo = score(est, X, "ais", **kw)
        hi = score(est, X, "rais", exact_posterior_samples=exact_samples, **kw)
        # each side within its error bars of its own side of the truth
        assert lo.log_evidence <= exact + 3 * lo.stderr, (K, lo.log_evidence, exact)
        assert hi.log_evidence >= exact - 3 * hi.stderr, (K, hi.log_evidence, exact)
        gaps.append(hi.log_evidence - lo.log_evidence)
    assert abs(gaps[1]) < 0.15, gaps
    assert abs(lo.log_evidence - exact) < 0.1 and abs(hi.log_evidence - exact) < 0.1


RANK_CODES = ["1332", "3333", "0001", "0000", "1122", "0303"]
MARGIN = 3.0


@pytest.fixture(scope="module")
def rank_run(tmp_path_factory):
    from sklearn_vb import reproduce

    import json

    tmp = tmp_path_factory.mktemp("ais_rank")
    # a journal of a reproduce-dag run: its AIS^(5) puts "0000" far ahead of the rest
    journal = tmp / "dag.jsonl"
    lines = [{"format": 1, "experiment": "dag"}]
    lines += [{"key": ["beal", 200, c, "ais16384"], "result": {"ais": -500.0 + 100 * (c == "0000")}}
              for c in RANK_CODES]
    journal.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return reproduce.ais(quick=True, schedule_K=[16], schedule_starts=1, exact_sizes=[5],
                         exact_codes=RANK_CODES[:2], exact_K=32, rank_sizes=[200],
                         rank_codes=RANK_CODES, rank_K=60, rank_chains=4, rank_repeats=2,
                         rank_restarts=3, rank_margin=MARGIN, rank_journal=str(journal),
                         verbose=0, out=tmp)


def test_rank_study_quick_mode(rank_run):
    p = rank_run.summary["rank"][200]
    assert len(p["ranks"]) == 2
    assert all(isinstance(r, int) and 1 <= r <= len(RANK_CODES) for r in p["ranks"])
    assert p["agree"] == (p["ranks"][0] == p["ranks"][1])
    rows = {k: v for k, v in rank_run.results.items() if k[0] == "rank"}
    assert len(rows) == 2 * len(RANK_CODES)
    best = max(v["vb_corrected"] for v in rows.values())
    for key, v in rows.items():
        # the screen keeps exactly the structures within the margin of the best bound,
        # and those the journal's AIS puts within the margin of its best
        assert v["screened"] == (v["vb_corrected"] >= best - MARGIN or key[2] == "0000")
        if v["screened"]:
            assert np.isfinite(v["ais"]) and np.all(np.isfinite(v["log_weights"]))
            assert len(v["log_weights"]) == 4 and v["n_components"] >= 1
    assert "0000" in p["screened"] and p["n_screened"] == len(p["screened"])
    assert 1 <= p["n_screened"] < len(RANK_CODES)  # the screen excludes something here
    assert p["excluded_journal_ais_below_best"] == pytest.approx(100.0)
    # independent seeds give different estimates of the same structure
    a = [rank_run.results[k]["ais"] for k in sorted(rows) if k[2] == "0000"]
    assert a[0] != a[1]
    assert "precise AIS, screened ranking study" in rank_run.report
