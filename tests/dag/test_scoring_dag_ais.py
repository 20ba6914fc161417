"""Compiled AIS for discrete DAGs (Beal's joint Dirichlet kernel): likelihood, prior and
proposal densities against independent computations, accuracy against enumerated
evidence, reproducibility, and the benchmark's quick mode."""

import numpy as np
import pytest
from numba import njit
from scipy.stats import dirichlet

from sklearn_vb import VBDiscreteDAG
from scipy.special import logsumexp

from sklearn_vb.dag._evidence_kernels import (
    _propose,
    dag_pattern_loglik,
    dag_prior_log_density,
    product_trie,
)
from sklearn_vb.datasets import BEAL_TRUE_CODE, bipartite_structure, make_beal_dag
from sklearn_vb.scoring import score, scoring_model_for

LATENT_CLASS_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
LATENT_CLASS_EXACT = -13.721206877201771


@pytest.fixture(scope="module")
def beal_model():
    X = make_beal_dag(200, random_state=1)
    est = VBDiscreteDAG(*bipartite_structure(BEAL_TRUE_CODE), n_init=1, max_iter=500,
                        tol=1e-2, random_state=0, bound_check="off").fit(X)
    model = scoring_model_for(est)
    return est, model, model.prepare_data(X), X


def test_compiled_densities_match_the_model(beal_model):
    _, model, data, _ = beal_model
    rng = np.random.default_rng(0)
    th = model.sample_prior(rng, 5)
    flat = model._flat(th)
    prior = model._flat_prior()
    row_ptr = model.layout.row_ptr.astype(np.int64)
    ll = model.log_likelihood(th, data)
    lp = model.log_prior(th)
    for c in range(5):
        assert dag_pattern_loglik(flat[c], data.idx, data.row_start, data.weights) == pytest.approx(
            ll[c], rel=1e-12)
        assert dag_prior_log_density(flat[c], prior, row_ptr) == pytest.approx(lp[c], rel=1e-12, abs=1e-9)
    # log-space fallback: every configuration of a pattern underflows in probability space
    tiny = flat[0].copy()
    tiny[model.layout.offsets[2]:model.layout.offsets[3]] = 1e-120
    tiny_params = model.param_space.unflatten(tiny[None])
    ref = model.log_likelihood(tiny_params, data)[0]
    got = dag_pattern_loglik(tiny, data.idx, data.row_start, data.weights)
    assert np.isfinite(got) and got == pytest.approx(ref, rel=1e-10)


def test_pattern_loglik_with_shared_products_equals_the_plain_sum():
    """Rows sharing their first entries share one product (a trie), and patterns of
    weight 1 or 2 enter one running product (rescaled when it gets small): the result is
    the plain sum of w_u ln p(y_u | theta) to round-off, also with missing values (patterns
    with other numbers of configurations), other weights, and tiny tables."""
    rng = np.random.default_rng(5)
    X = make_beal_dag(3000, random_state=2).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    est = VBDiscreteDAG(*bipartite_structure(BEAL_TRUE_CODE), n_init=1, max_iter=5,
                        random_state=0, bound_check="off").fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    assert len(set(np.diff(data.row_start))) > 1  # several configuration grids
    assert {1.0, 2.0} <= set(data.weights) and data.weights.max() > 2
    parent, entry, n_roots, row_parent, row_entry = product_trie(data.idx)
    assert parent.size < data.idx.size / 6  # most rows reuse most of their product
    # every row's product is its trie node's times its last entry, formed in node order
    th0 = model._flat(model.sample_prior(rng, 1))[0]
    values = np.empty(parent.size)
    for m in range(parent.size):
        values[m] = th0[entry[m]] * (values[parent[m]] if parent[m] >= 0 else 1.0)
    for r in range(data.idx.shape[0]):
        p = 1.0
        for j in data.idx[r]:
            p *= th0[j]
        assert row_entry[r] == data.idx[r, -1]
        assert values[row_parent[r]] * th0[row_entry[r]] == p
    th = model.sample_prior(rng, 3)
    flat = model._flat(th)
    flat[2, model.layout.offsets[3]:model.layout.offsets[4]] *= 1e-30  # tiny, unnormalised
    for c in range(3):
        with np.errstate(divide="ignore"):
            log_theta = np.log(flat[c])
        plain = 0.0
        for u in range(data.n_patterns):
            rows = log_theta[data.idx[data.row_start[u]:data.row_start[u + 1]]].sum(axis=1)
            plain += data.weights[u] * logsumexp(rows)
        got = dag_pattern_loglik(flat[c], data.idx, data.row_start, data.weights)
        assert got == pytest.approx(plain, rel=1e-12), c


def test_compiled_chains_keep_their_cached_densities_and_are_reproducible(beal_model):
    """After many moves the cached ln p(X | theta) of every chain is that of its final
    state, the weight is the sum of its increments, and the same seeds give the same
    chains."""
    from sklearn_vb.dag._evidence_kernels import dag_ais_chains, dag_ais_init

    _, model, data, _ = beal_model
    prior = model._flat_prior()
    row_ptr = model.layout.row_ptr.astype(np.int64)
    floor = np.minimum(prior, 1.0)
    K = 300
    betas = np.linspace(0.0, 1.0, K + 1) ** 4
    out = []
    for _ in range(2):
        theta = np.ascontiguousarray(model._flat(model.sample_prior(np.random.default_rng(4), 3)))
        ll, lp, lw = np.empty(3), np.empty(3), np.zeros(3)
        acc, lr = np.zeros(K, np.int64), np.zeros(K)
        dag_ais_init(theta, prior, row_ptr, data.idx, data.row_start, data.weights, ll, lp)
        for k0, k1 in ((0, 120), (120, K)):  # two segments, reseeded
            dag_ais_chains(theta, ll, lp, lw, betas, k0, k1, prior, row_ptr, data.idx,
                           data.row_start, data.weights, 200.0, 10.0, 3.0, floor,
                           np.array([11, 12, 13]) + k0, acc, lr)
        out.append(lw.copy())
        assert acc.sum() > 0.1 * 3 * K
        for c in range(3):
            assert ll[c] == pytest.approx(
                dag_pattern_loglik(theta[c], data.idx, data.row_start, data.weights), rel=1e-12)
        np.testing.assert_allclose(lr.sum(), lw.sum(), rtol=1e-12)
    np.testing.assert_array_equal(out[0], out[1])


def test_vectorised_log_ratio_estimates_equal_the_per_temperature_ones():
    from sklearn_vb.scoring import log_mean_exp
    from sklearn_vb.scoring._ais import _log_mean_exp_rows

    rng = np.random.default_rng(1)
    for C in (1, 5):
        a = rng.normal(size=(300, C)) * 40
        a[7] = -np.inf
        np.testing.assert_array_equal(_log_mean_exp_rows(a), [log_mean_exp(x) for x in a])
    with pytest.raises(ValueError, match="NaN"):
        _log_mean_exp_rows(np.array([[0.0, np.nan]]))


@njit
def _seed_compiled(seed):
    np.random.seed(seed)  # numba's generator (np.random.seed in Python seeds numpy's)


def _gamma_cache(theta, row_ptr):
    """Fresh log-gamma arrays of ``_propose`` (nothing known yet)."""
    n_rows = row_ptr.size - 1
    return [np.empty_like(theta), np.empty_like(theta), np.empty(n_rows), np.empty(n_rows),
            np.full(1, np.nan)]


def test_proposal_reuses_its_log_gamma_terms_exactly(beal_model):
    """At a fixed strength the forward terms come from the cache (for a theta that stayed,
    and for an accepted proposal, from its reverse terms): the ratio is bit for bit the one
    computed afresh; a changed strength recomputes them."""
    _, model, _, _ = beal_model
    theta = model._flat(model.sample_prior(np.random.default_rng(4), 1))[0]
    row_ptr = model.layout.row_ptr.astype(np.int64)
    g = np.full(theta.size, 0.5)

    def propose(th, log_th, cache, seed, strength=60.0):
        prop, log_prop = np.empty_like(th), np.empty_like(th)
        _seed_compiled(seed)
        ratio = _propose(th, log_th, prop, log_prop, row_ptr, strength, g, np.empty_like(th),
                         *cache)
        return ratio, prop, log_prop

    cache = _gamma_cache(theta, row_ptr)
    log_theta = np.log(theta)
    propose(theta, log_theta, cache, 1)
    for seed in (2, 3):  # theta stays (a rejection): cached forward terms
        assert propose(theta, log_theta, cache, seed)[0] == propose(
            theta, log_theta, _gamma_cache(theta, row_ptr), seed)[0]
    _, theta2, log_theta2 = propose(theta, log_theta, cache, 4)
    cache[0], cache[1] = cache[1], cache[0]  # accepted, as the chains swap them
    cache[2], cache[3] = cache[3], cache[2]
    fresh = propose(theta2, log_theta2, _gamma_cache(theta, row_ptr), 5)[0]
    assert propose(theta2, log_theta2, cache, 5)[0] == fresh
    assert propose(theta2, log_theta2, cache, 6, strength=61.0)[0] == propose(
        theta2, log_theta2, _gamma_cache(theta, row_ptr), 6, strength=61.0)[0]


@pytest.mark.parametrize("floor", [0.0, 0.7])
def test_proposal_log_ratio_matches_scipy(beal_model, floor):
    _, model, _, _ = beal_model
    rng = np.random.default_rng(2)
    theta = model._flat(model.sample_prior(rng, 1))[0]
    row_ptr = model.layout.row_ptr.astype(np.int64)
    g = np.full(theta.size, floor)
    prop = np.empty_like(theta)
    log_prop = np.empty_like(theta)
    strength = 40.0
    np.random.seed(3)
    got = _propose(theta, np.log(theta), prop, log_prop, row_ptr, strength, g,
                   np.empty_like(theta), *_gamma_cache(theta, row_ptr))
    np.testing.assert_allclose(log_prop, np.log(prop), rtol=1e-15, atol=0)
    want = 0.0
    for i in range(row_ptr.size - 1):
        a, b = row_ptr[i], row_ptr[i + 1]
        np.testing.assert_allclose(prop[a:b].sum(), 1.0, rtol=1e-12)
        want += dirichlet.logpdf(prop[a:b], strength * theta[a:b] + g[a:b])
        want -= dirichlet.logpdf(theta[a:b], strength * prop[a:b] + g[a:b])
    assert got == pytest.approx(want, rel=1e-9)


def test_compiled_ais_matches_enumerated_evidence_and_is_reproducible():
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3,
                        random_state=0).fit(LATENT_CLASS_X)
    kw = dict(n_temperatures=1000, n_chains=16, random_state=0)
    r = score(est, LATENT_CLASS_X, "ais", **kw)
    assert r.diagnostics["acceptance_profile"]["acceptance"]
    err = abs(r.log_evidence - LATENT_CLASS_EXACT)
    assert err <= max(0.05, 4 * r.stderr) and err <= 0.5, (err, r.stderr)
    # chains depend only on their own seed streams: threads, grouping and repeats agree
    r2 = score(est, LATENT_CLASS_X, "ais", n_jobs=2, **kw)
    np.testing.assert_array_equal(r.diagnostics["log_weights"], r2.diagnostics["log_weights"])
    # the Python row-wise kernel is an independent implementation of a valid AIS: agrees
    py = score(est, LATENT_CLASS_X, "ais", kernel="dirichlet", **{**kw, "n_temperatures": 400})
    assert abs(py.log_evidence - LATENT_CLASS_EXACT) <= max(0.05, 4 * py.stderr)


def test_compiled_ais_schedule_convergence_on_beal_data(beal_model):
    """On the true structure at n = 200 the estimate rises with K and passes VB; the
    acceptance is recorded along the schedule."""
    est, _, _, X = beal_model
    vals = []
    for K in (16, 256, 2048):
        r = score(est, X, "ais", n_temperatures=K, n_chains=5, schedule="beal", random_state=0,
                  start="prior")
        vals.append(r.log_evidence)
    assert vals[0] < vals[1] < vals[2]
    assert vals[2] > est.lower_bound_
    prof = r.diagnostics["acceptance_profile"]
    assert len(prof["acceptance"]) == 16 and all(0 < a < 1 for a in prof["acceptance"])
    assert prof["beta_start"] == sorted(prof["beta_start"])


def test_compiled_kernel_option_errors(beal_model):
    est, _, _, X = beal_model
    from tests.oracles.reference_models import BetaBernoulli

    with pytest.raises(ValueError, match="run_ais_compiled"):
        score(BetaBernoulli(1, 1), [1, 0], "ais", kernel="compiled", n_temperatures=5)
    with pytest.raises(ValueError, match="n_steps=1"):
        score(est, X, "ais", kernel="compiled", n_steps=2, n_temperatures=5)


def test_benchmark_quick_mode_reports_ranks_and_timings():
    from benchmarks.bench_scoring import run_dag_ais136

    codes = [(0, 0, 0, 0), (3, 3, 3, 3)]
    res = run_dag_ais136(n=80, n_temperatures=64, n_runs=2, n_jobs=1, codes=codes, verbose=0)
    assert res["n_structures"] == 3  # the true structure is always added
    assert set(res["true_ranks"]) >= {"ais", "vb", "bic", "cs", "vb+lnS"}
    assert all(1 <= v <= 3 for v in res["true_ranks"].values())
    assert len(res["acceptance_profile_true"]) == 16


def test_hysteresis_gap_shrinks_with_the_schedule(beal_model):
    """Beal's backward pass (same forward ratios, states moved at the upper temperature):
    the forward/backward disagreement is large for a short schedule and small for a long
    one, and it concentrates at high temperature (small beta), as the thesis found."""
    from tests.oracles.reference_models import BetaBernoulli

    est, _, _, X = beal_model
    gaps = {}
    for K in (16, 2048):
        r = score(est, X, "ais", n_temperatures=K, n_chains=5, schedule="beal", random_state=0,
                  hysteresis=True, start="prior")
        h = r.diagnostics["hysteresis"]
        assert h["forward_estimate"] == pytest.approx(r.log_evidence)
        assert h["backward_log_weights"].shape == (5,) and len(h["ratio_difference_profile"]) == 16
        gaps[K] = h["gap"]
    assert gaps[16] > 20 and abs(gaps[2048]) < 0.5 * gaps[16]
    prof = np.array(h["ratio_difference_profile"])
    assert prof[:4].sum() > prof[-4:].sum()
    # the generic (Python kernel) path on a conjugate model with exact evidence
    rng = np.random.default_rng(0)
    Xb = (rng.random(100) < 0.3).astype(int)
    bb = BetaBernoulli(1, 1)
    r = score(bb, Xb, "ais", n_temperatures=1000, n_chains=16, random_state=0, hysteresis=True)
    h = r.diagnostics["hysteresis"]
    exact = bb.log_evidence(bb.prepare_data(Xb))
    assert abs(h["gap"]) < 0.15 and abs(h["backward_estimate"] - exact) < 0.2


def test_pattern_loglik_of_a_single_node():
    """One node: every row's product is its one entry (the trie has no inner level)."""
    idx = np.array([[0], [1], [2], [1]])
    theta = np.array([0.2, 0.3, 0.5])
    got = dag_pattern_loglik(theta, idx, np.array([0, 1, 2, 4]), np.array([1.0, 2.0, 3.0]))
    assert got == pytest.approx(np.log(0.2) + 2 * np.log(0.3) + 3 * np.log(0.8), rel=1e-15)
