"""VBDiscreteDAG: exact oracles (enumeration, closed-form evidence), bound identities,
EM, prediction and input validation."""

import itertools
import pickle

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from sklearn_vb.dag.structure import (
    CPTLayout,
    parameter_count,
    parse_structure,
    prepare_patterns,
)
from sklearn_vb.dag.kernels import digamma, enumerate_posterior, dirichlet_update
from sklearn_vb.dag import VBDiscreteDAG, alias_count

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LATENT = ({"h": [], "a": ["h"], "b": ["h"]}, {"h": 2, "a": 3, "b": 3}, ["h"])
LATENT_CLASS_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
LATENT_CLASS_EXACT = -13.721206877201771
# two hidden parents: s1 -> y1, (s1, s2) -> y2, three-state children
TOY2 = ({"s1": [], "s2": [], "y1": ["s1"], "y2": ["s1", "s2"]},
        {"s1": 2, "s2": 2, "y1": 3, "y2": 3}, ["s1", "s2"])


def make(spec, **kw):
    parents, cards, hidden = spec
    kw.setdefault("random_state", 0)
    return VBDiscreteDAG(parents, cards, hidden, **kw)


def random_dag(rng, n_hidden, n_observed, max_parents=2):
    names = [f"h{i}" for i in range(n_hidden)] + [f"o{i}" for i in range(n_observed)]
    parents = {}
    for j, name in enumerate(names):
        cand = names[:j]
        k = rng.integers(0, min(max_parents, len(cand)) + 1)
        parents[name] = list(rng.choice(cand, size=k, replace=False)) if k else []
    cards = {n: int(rng.integers(2, 4)) for n in names}
    return parents, cards, names[:n_hidden]


def brute_joint(structure, theta_tables, states):
    """ln prod_j phi_j[l, k] for one full assignment."""
    total = 0.0
    for j in range(structure.n_nodes):
        l = 0
        for p in structure.parents[j]:
            l = l * structure.cardinalities[p] + states[p]
        total += np.log(theta_tables[j][l, states[j]])
    return total


def naive_exact(structure, prior_tables, X):
    """ln p(y|m) summing over all H_tot^n completions (no grouping)."""
    s = structure
    hid = list(s.hidden_nodes)
    obs = list(s.observed)
    configs = list(itertools.product(*[range(s.cardinalities[h]) for h in hid]))
    terms = []
    for comp in itertools.product(configs, repeat=len(X)):
        counts = [np.zeros_like(t) for t in prior_tables]
        for x, c in zip(X, comp):
            st = np.zeros(s.n_nodes, int)
            st[obs] = x
            st[hid] = c
            for j in range(s.n_nodes):
                l = 0
                for p in s.parents[j]:
                    l = l * s.cardinalities[p] + st[p]
                counts[j][l, st[j]] += 1
        tot = 0.0
        for lam, N in zip(prior_tables, counts):
            a = lam + N
            tot += np.sum(gammaln(a).sum(1) - gammaln(a.sum(1)) - gammaln(lam).sum(1) + gammaln(lam.sum(1)))
        terms.append(tot)
    return logsumexp(terms)


# ---------------------------------------------------------------------------- oracles
def test_latent_class_exact_evidence_reference_value():
    m = make(LATENT, max_iter=5).fit(LATENT_CLASS_X)
    assert m.exact_log_evidence(LATENT_CLASS_X) == pytest.approx(LATENT_CLASS_EXACT, abs=1e-10)


def test_grouped_exact_matches_naive_enumeration():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(5, 2))
    m = make(TOY2, max_iter=2).fit(X)
    s = m.structure_
    naive = naive_exact(s, m.prior_, X)
    assert m.exact_log_evidence(X) == pytest.approx(naive, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_vb_bound_below_exact_on_random_tiny_networks(seed):
    rng = np.random.default_rng(seed)
    parents, cards, hidden = random_dag(rng, n_hidden=int(rng.integers(1, 3)), n_observed=2)
    s = parse_structure(parents, cards, hidden)
    n = int(rng.integers(3, 7))
    X = np.column_stack([rng.integers(0, s.cardinalities[j], size=n) for j in s.observed])
    prior = float(rng.choice([0.5, 1.0, 2.0]))
    m = VBDiscreteDAG(parents, cards, hidden, prior=prior, random_state=seed, n_init=2,
                      tol=1e-9, max_iter=300).fit(X)
    exact = m.exact_log_evidence(X)
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * abs(m.lower_bound_))
    assert np.all(m.lower_bounds_ <= exact + 1e-9)
    # the CS value at the EM estimate is also a lower bound (Theorem 2.3)
    e = VBDiscreteDAG(parents, cards, hidden, prior=prior, method="map", random_state=seed,
                      n_init=2, tol=1e-9).fit(X)
    assert e.lower_bound_ <= exact + 1e-9


@pytest.mark.parametrize("prior", [1.0, 0.3, "bdeu"])
def test_no_hidden_nodes_bound_equals_closed_form(prior):
    rng = np.random.default_rng(3)
    parents = {"a": [], "b": ["a"], "c": ["a", "b"]}
    cards = {"a": 2, "b": 3, "c": 2}
    X = np.column_stack([rng.integers(0, 2, 40), rng.integers(0, 3, 40), rng.integers(0, 2, 40)])
    m = VBDiscreteDAG(parents, cards, prior=prior, random_state=0, max_iter=5).fit(X)
    layout = CPTLayout(m.structure_)
    # counts by hand
    N = np.zeros(layout.size)
    for a, b, c in X:
        N[layout.offsets[0] + a] += 1
        N[layout.offsets[1] + a * 3 + b] += 1
        N[layout.offsets[2] + (a * 3 + b) * 2 + c] += 1
    lam = layout.join(m.prior_)
    closed = 0.0
    for i in range(layout.n_rows):
        sl = slice(layout.row_ptr[i], layout.row_ptr[i + 1])
        closed += (gammaln(lam[sl].sum()) - gammaln(lam[sl].sum() + N[sl].sum())
                   + np.sum(gammaln(lam[sl] + N[sl]) - gammaln(lam[sl])))
    assert m.lower_bound_ == pytest.approx(closed, abs=1e-10)
    assert m.exact_log_evidence(X[:8]) == pytest.approx(
        VBDiscreteDAG(parents, cards, prior=prior, max_iter=2).fit(X[:8]).lower_bound_, abs=1e-10)


def _manual_data(m, X):
    data = m._check_fit_data(X)
    m._initialize(data, np.random.RandomState(0))
    return data


def _vbm(m, data):
    """A VBM step on the stored state by the kernel the compiled fit runs."""
    alpha, elog = np.empty(data.layout.size), np.empty(data.layout.size)
    m._kl_ = dirichlet_update(data.prior, m._counts_, data.layout.row_ptr, alpha, elog)
    m._alpha_, m._elog_ = alpha, elog


def _vbe(m, data):
    m._infer(data, m._elog_)


def test_three_forms_of_the_bound_agree_and_increase():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(30, 2))
    m = make(TOY2, max_iter=1)
    data = _manual_data(m, X)
    previous = -np.inf
    for _ in range(25):
        _vbm(m, data)
        b, c = m._bound_form_b(data), m._bound_form_c(data)
        assert c == pytest.approx(b, abs=1e-10)
        assert c >= previous - 1e-10
        _vbe(m, data)
        a, c2 = m._bound_form_a(data), m._bound_form_c(data)
        assert c2 == pytest.approx(a, abs=1e-10)
        assert c2 >= c - 1e-10
        previous = c2


@pytest.mark.parametrize("acceleration", [None, "squarem"])
def test_compiled_run_is_vbem_step_by_step(acceleration):
    """The fit's bound after every iteration is that of VBM + VBE steps run one at a time
    from the same start (plain), or at least that (extrapolated); the stored state is the
    last iteration's, whose three forms of the bound agree."""
    rng = np.random.default_rng(6)
    X = rng.integers(0, 3, size=(50, 2))
    fit = make(TOY2, n_init=1, max_iter=60, tol=0.0, random_state=3,
               acceleration=acceleration).fit(X)
    m = make(TOY2, random_state=3)
    data = _manual_data(m, X)
    m._initialize(data, np.random.RandomState(3))
    steps = []
    for _ in range(60):
        _vbm(m, data)
        _vbe(m, data)
        steps.append(m._bound_form_c(data))
    if acceleration is None:
        np.testing.assert_allclose(fit.lower_bounds_, steps, rtol=1e-13)
    else:
        assert np.all(fit.lower_bounds_ >= np.array(steps) - 1e-9)
        assert fit.extrapolations_["accepted"] > 0
    data = fit._check_fit_data(X)
    for form in (fit._bound_form_a, fit._bound_form_c, fit._lower_bound):
        assert form(data) == pytest.approx(fit.lower_bound_, rel=1e-13)


@pytest.mark.parametrize("method", ["map", "ml"])
def test_compiled_em_stores_the_last_iteration(method):
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(50, 2))
    fit = make(TOY2, method=method, n_init=2, max_iter=40, tol=0.0).fit(X)
    assert fit.n_iter_ == 40 and not fit.converged_
    data = fit._check_fit_data(X)
    assert fit._lower_bound(data) == pytest.approx(fit.objectives_[-1], rel=1e-13)
    assert fit.lower_bound_ == pytest.approx(fit._bound_form_b(data), rel=1e-13)


def test_verbose_prints_the_bound_every_interval(capsys):
    rng = np.random.default_rng(8)
    X = rng.integers(0, 3, size=(40, 2))
    fit = make(TOY2, n_init=2, max_iter=30, tol=0.0, verbose=2, verbose_interval=10).fit(X)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("  iteration")]
    assert len(lines) == 6 and lines[2].startswith("  iteration 30:")
    assert f"{fit.lower_bounds_[9]:.6f}" in out
    assert out.count("restart") == 2


def test_bound_never_decreases_with_step_checks():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(60, 2))
    m = make(TOY2, bound_check="steps", tol=1e-8, max_iter=400, n_init=2).fit(X)
    assert np.all(np.diff(m.lower_bounds_) >= -1e-9 * abs(m.lower_bound_))
    assert m.lower_bounds_[-1] > m.lower_bounds_[0]


def test_posterior_equals_brute_force_enumeration():
    rng = np.random.default_rng(4)
    parents, cards, hidden = random_dag(rng, 2, 3)
    s = parse_structure(parents, cards, hidden)
    layout = CPTLayout(s)
    # sub-normalised tables, as in the VBE step
    phi = rng.uniform(0.05, 1.0, layout.size)
    tables = layout.split(phi)
    codes = np.column_stack([rng.integers(0, s.cardinalities[j], 7) for j in s.observed])
    codes[2, 1] = -1  # a missing value becomes hidden for that case
    pd = prepare_patterns(codes, None, layout)
    counts = np.empty(layout.size)
    post = np.empty(pd.idx.shape[0])
    lz = np.empty(pd.n_patterns)
    ent = np.empty(pd.n_patterns)
    enumerate_posterior(np.log(phi), pd.idx, pd.row_start, pd.weights, counts, post, lz, ent)
    N_brute = [np.zeros_like(t) for t in tables]
    for i, x in enumerate(codes):
        free = [j for j in range(s.n_nodes) if s.hidden[j] or x[s.observed.index(j)] < 0]
        configs = list(itertools.product(*[range(s.cardinalities[f]) for f in free]))
        logp = []
        for c in configs:
            st = np.zeros(s.n_nodes, int)
            for k, j in enumerate(s.observed):
                st[j] = x[k]
            st[free] = c
            logp.append(brute_joint(s, tables, st))
        logp = np.array(logp)
        z = logsumexp(logp)
        u = pd.inverse[i]
        assert lz[u] == pytest.approx(z, abs=1e-12)
        q = np.exp(logp - z)
        a = pd.row_start[u]
        np.testing.assert_allclose(post[a:a + len(q)], q, atol=1e-12)
        assert ent[u] == pytest.approx(-np.sum(q * np.log(q)), abs=1e-12)
        for qc, c in zip(q, configs):
            st = np.zeros(s.n_nodes, int)
            for k, j in enumerate(s.observed):
                st[j] = x[k]
            st[free] = c
            for j in range(s.n_nodes):
                l = 0
                for p in s.parents[j]:
                    l = l * s.cardinalities[p] + st[p]
                N_brute[j][l, st[j]] += qc
    np.testing.assert_allclose(counts, layout.join(N_brute), atol=1e-12)


def test_digamma_and_dirichlet_update_match_scipy():
    from scipy.special import digamma as sp_digamma
    from sklearn_vb._core.distributions import dirichlet_kl, dirichlet_expected_log
    xs = np.array([1e-3, 0.1, 0.5, 1.0, 3.7, 9.99, 10.0, 55.5, 1e5])
    np.testing.assert_allclose([digamma(x) for x in xs], sp_digamma(xs), rtol=1e-13, atol=1e-13)
    rng = np.random.default_rng(0)
    lam, N = rng.uniform(0.1, 3, 6), rng.uniform(0, 5, 6)
    row_ptr = np.array([0, 2, 6])
    alpha, elog = np.empty(6), np.empty(6)
    kl = dirichlet_update(lam, N, row_ptr, alpha, elog)
    ref = dirichlet_kl(alpha[:2], lam[:2]) + dirichlet_kl(alpha[2:], lam[2:])
    assert kl == pytest.approx(ref, abs=1e-12)
    np.testing.assert_allclose(elog[2:], dirichlet_expected_log(alpha[2:]), atol=1e-12)


def test_pattern_compression_and_sample_weight_match_duplicated_data():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(12, 2))
    w = rng.integers(1, 4, size=12)
    a = make(TOY2, tol=1e-10, n_init=1).fit(X, sample_weight=w)
    b = make(TOY2, tol=1e-10, n_init=1).fit(np.repeat(X, w, axis=0))
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, abs=1e-9)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-9)
    # compressed and uncompressed enumeration give the same totals
    layout = CPTLayout(a.structure_)
    lp = np.log(rng.uniform(0.1, 1, layout.size))
    out = []
    for compress in (True, False):
        pd = prepare_patterns(X, None, layout, compress=compress)
        c, p = np.empty(layout.size), np.empty(pd.idx.shape[0])
        lz, en = np.empty(pd.n_patterns), np.empty(pd.n_patterns)
        enumerate_posterior(lp, pd.idx, pd.row_start, pd.weights, c, p, lz, en)
        out.append((c, pd.weights @ lz, pd.weights @ en))
    np.testing.assert_allclose(out[0][0], out[1][0], atol=1e-12)
    assert out[0][1] == pytest.approx(out[1][1], abs=1e-10)
    assert out[0][2] == pytest.approx(out[1][2], abs=1e-10)


def test_case_order_does_not_matter():
    rng = np.random.default_rng(8)
    X = rng.integers(0, 3, size=(25, 2))
    a = make(TOY2, tol=1e-8).fit(X)
    b = make(TOY2, tol=1e-8).fit(X[rng.permutation(25)])
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, abs=1e-9)


def test_missing_values_are_marginalised():
    rng = np.random.default_rng(9)
    X = rng.integers(0, 3, size=(5, 2)).astype(float)
    X[1, 0] = np.nan
    X[3, 1] = -1
    m = make(LATENT, tol=1e-10, max_iter=500).fit(X)
    exact = m.exact_log_evidence(X)
    assert m.lower_bound_ <= exact + 1e-9
    # score of a row with a missing value = log of the sum over that value
    row = X[1:2].copy()
    full = np.repeat(row, 3, axis=0)
    full[:, 0] = [0, 1, 2]
    assert m.score_samples(row)[0] == pytest.approx(logsumexp(m.score_samples(full)), abs=1e-12)


# ---------------------------------------------------------------------------- EM
def test_map_equals_ml_under_uniform_prior_natural_basis():
    rng = np.random.default_rng(10)
    X = rng.integers(0, 3, size=(40, 2))
    a = make(TOY2, method="ml", tol=1e-9, n_init=1, max_iter=200).fit(X)
    b = make(TOY2, method="map", map_basis="natural", tol=1e-9, n_init=1, max_iter=200).fit(X)
    assert a.n_iter_ == b.n_iter_
    for ta, tb in zip(a.cpts_, b.cpts_):
        np.testing.assert_allclose(ta, tb, atol=1e-12)
    # ML objective = log likelihood; MAP natural differs by sum_rows lnGamma(r_j) (BICp - BIC)
    lay = CPTLayout(a.structure_)
    const = sum(gammaln(lay.r[j]) * lay.q[j] for j in range(4))
    np.testing.assert_allclose(b.objectives_ - a.objectives_, const, atol=1e-9)
    assert np.all(np.diff(a.objectives_) >= -1e-9)
    assert a.objective_ == pytest.approx(a.log_likelihood_, abs=1e-9)


def test_latent_class_ml_and_cheeseman_stutz_reference():
    m = make(LATENT, method="ml", n_init=30, tol=1e-10).fit(LATENT_CLASS_X)
    assert m.log_likelihood_ == pytest.approx(-7.978, abs=1e-3)
    assert m.log_likelihood_ >= LATENT_CLASS_EXACT  # ML upper bound (global optimum)
    assert m.cheeseman_stutz_ == pytest.approx(-16.349, abs=1e-3)
    assert m.cheeseman_stutz_ <= LATENT_CLASS_EXACT
    assert -0.5 * m.bic(LATENT_CLASS_X) == pytest.approx(-16.041, abs=1e-3)
    # softmax-basis MAP objective never decreases either
    s = make(LATENT, method="map", n_init=2, tol=1e-8).fit(LATENT_CLASS_X)
    assert np.all(np.diff(s.objectives_) >= -1e-9)


def test_natural_basis_with_small_prior_warns_and_falls_back():
    with pytest.warns(UserWarning, match="softmax"):
        make(LATENT, method="map", map_basis="natural", prior=0.5,
             max_iter=20).fit(LATENT_CLASS_X)


# ---------------------------------------------------------------------------- prediction
def test_predict_proba_and_score_match_brute_force():
    rng = np.random.default_rng(11)
    X = rng.integers(0, 3, size=(50, 2))
    m = make(TOY2, tol=1e-6).fit(X)
    s = m.structure_
    Xt = np.array([[0, 2], [1, 1], [2, 0]])
    p_s2 = m.predict_proba(Xt, node="s2")
    p_y2 = m.predict_proba(Xt, node="y2")  # held-out observed node
    ll = m.score_samples(Xt)
    for i, x in enumerate(Xt):
        joint = np.zeros((2, 2, 3))
        for s1, s2, y2 in itertools.product(range(2), range(2), range(3)):
            st = np.array([s1, s2, x[0], y2])
            joint[s1, s2, y2] = np.exp(brute_joint(s, m.cpts_, st))
        obs = joint[:, :, x[1]]
        assert ll[i] == pytest.approx(np.log(obs.sum()), abs=1e-12)
        np.testing.assert_allclose(p_s2[i], obs.sum(0) / obs.sum(), atol=1e-12)
        marg_y2 = joint.sum((0, 1))
        np.testing.assert_allclose(p_y2[i], marg_y2 / marg_y2.sum(), atol=1e-12)
    np.testing.assert_array_equal(m.predict(Xt, node="s2"), p_s2.argmax(1))
    assert m.score(Xt) == pytest.approx(ll.mean())
    assert m.aic(Xt) == pytest.approx(-2 * ll.sum() + 2 * m.n_parameters_)


def test_sample_frequencies_follow_cpts():
    m = make(LATENT, max_iter=50).fit(LATENT_CLASS_X)
    X, H = m.sample(20000)
    assert X.shape == (20000, 2) and H.shape == (20000, 1)
    freq = np.bincount(H[:, 0], minlength=2) / 20000
    np.testing.assert_allclose(freq, m.cpts_[0][0], atol=0.015)
    for h in range(2):
        f = np.bincount(X[H[:, 0] == h, 0], minlength=3) / np.sum(H[:, 0] == h)
        np.testing.assert_allclose(f, m.cpts_[1][h], atol=0.03)


def test_pickle_and_reproducibility():
    rng = np.random.default_rng(12)
    X = rng.integers(0, 3, size=(30, 2))
    a = make(TOY2, random_state=3).fit(X)
    b = make(TOY2, random_state=3).fit(X)
    assert a.lower_bound_ == b.lower_bound_
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict_proba(X), a.predict_proba(X))
    Xc = X.copy()
    make(TOY2).fit(X)
    np.testing.assert_array_equal(X, Xc)


# ---------------------------------------------------------------------------- structure
def test_structure_forms_are_equivalent():
    d = parse_structure({"h": [], "a": ["h"], "b": ["h", "a"]}, {"h": 2, "a": 3, "b": 2}, "h")
    e = parse_structure([("h", "a"), ("h", "b"), ("a", "b")], {"h": 2, "a": 3, "b": 2}, ["h"])
    A = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]])
    g = parse_structure(A, [2, 3, 2], [0])
    assert d.parents == e.parents == g.parents == ((), (0,), (0, 1))
    assert d.hidden == g.hidden == (True, False, False)
    assert parameter_count(d) == 1 + 4 + 6


def test_parent_configuration_order_is_c_order():
    s = parse_structure({"s1": [], "s2": [], "y": ["s1", "s2"]}, {"s1": 2, "s2": 2, "y": 5}, ["s1", "s2"])
    lay = CPTLayout(s)
    # rows [1 1], [1 2], [2 1], [2 2] in 1-based thesis labels
    rows = [(lay.coef[0, 2] * a + lay.coef[1, 2] * b) // 5 for a, b in [(0, 0), (0, 1), (1, 0), (1, 1)]]
    assert rows == [0, 1, 2, 3]
    assert parameter_count(parse_structure({"a": [], "b": [], "c": ["a", "b"]}, {"a": 3, "b": 3, "c": 2})) == 2 + 2 + 9


def test_alias_counts():
    s = parse_structure({"a": [], "b": [], "c": [], "y": ["a", "b", "c"]},
                        {"a": 3, "b": 3, "c": 4, "y": 2}, ["a", "b", "c"])
    lay = CPTLayout(s)
    assert alias_count(s, np.ones(lay.size), lay) == 1728
    # hidden node without children adds nothing
    s2 = parse_structure({"h": [], "g": [], "y": ["h"]}, {"h": 3, "g": 2, "y": 2}, ["h", "g"])
    assert alias_count(s2, np.ones(CPTLayout(s2).size), CPTLayout(s2)) == 6


@pytest.mark.parametrize("kwargs, X, match", [
    (dict(structure={"a": ["b"], "b": ["a"]}, cardinalities=2), [[0, 1]], "cycle"),
    (dict(structure={"a": ["a"]}, cardinalities=2), [[0]], "cycle"),
    (dict(structure={"a": []}, cardinalities=2, hidden=["zz"]), [[0]], "unknown node"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities={"a": 2}, hidden="h"), [[0]], "hidden node 'h' needs"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities=2, hidden="h"), [[0, 1]], "2 columns"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities=2, hidden="h"), [[2]], r"\[0, 2\)"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities=2, hidden="h"), [[0.5]], "integers"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities=[2], hidden="h"), [[0]], "cardinalities has 1"),
    (dict(structure={"h": [], "a": ["h"]}, cardinalities=2, hidden="h", prior={"q": 1.0}), [[0]], "prior names"),
    (dict(structure=[("a", "b", "c")], cardinalities=2), [[0, 1]], "pairs"),
    (dict(structure=np.ones((2, 3)), cardinalities=2), [[0, 1]], "square"),
])
def test_bad_input_gives_clear_errors(kwargs, X, match):
    with pytest.raises(ValueError, match=match):
        VBDiscreteDAG(**kwargs, max_iter=2).fit(np.array(X, dtype=float))



# ---------------------------------------------------------------------------- init_params="posterior"
@pytest.mark.parametrize("method", ["vb", "map"])
def test_posterior_start_continues_a_fit_exactly(method):
    """Starting from a fit's q(theta) (VB: its Dirichlet parameters; MAP: its CPTs as
    Dirichlet means) is one exact VBE / E step under them, so one more iteration from
    there equals the same fit run one iteration longer."""
    rng = np.random.default_rng(21)
    X = rng.integers(0, 3, size=(40, 2))
    k = 4
    # plain iterations: an extrapolated one is not a VBE step from the stored q(theta)
    plain = {"acceleration": None}
    short = make(TOY2, method=method, n_init=1, max_iter=k, random_state=7, **plain).fit(X)
    longer = make(TOY2, method=method, n_init=1, max_iter=k + 1, random_state=7, **plain).fit(X)
    tables = short.posterior_ if method == "vb" else short.cpts_
    start = {name: t for name, t in zip(short.structure_.names, tables)}
    given = {name: t.copy() for name, t in start.items()}
    cont = make(TOY2, method=method, n_init=1, max_iter=1, init_params="posterior",
                init_posterior=start, random_state=123).fit(X)
    assert cont.n_iter_ == 1
    history = "lower_bounds_" if method == "vb" else "objectives_"
    assert getattr(cont, history)[-1] == pytest.approx(getattr(longer, history)[-1], abs=1e-9)
    assert getattr(longer, history)[-1] != pytest.approx(getattr(short, history)[-1], abs=1e-6)
    for a, b in zip(cont.expected_counts_, longer.expected_counts_):
        np.testing.assert_allclose(a, b, atol=1e-9)
    for name in start:  # the given tables are not modified
        np.testing.assert_array_equal(start[name], given[name])


def test_posterior_start_draws_the_nodes_not_given_from_the_prior():
    rng = np.random.default_rng(22)
    X = rng.integers(0, 3, size=(40, 2))
    cold = make(TOY2, n_init=1, random_state=4).fit(X)
    # no node given: the same prior draws as init_params="random"
    none = make(TOY2, n_init=1, random_state=4, init_params="posterior", init_posterior={}).fit(X)
    np.testing.assert_allclose(none.lower_bounds_, cold.lower_bounds_, rtol=1e-12)
    # a partial start: the given node starts from its table, the others are drawn
    part = {"y2": cold.posterior_[3]}
    a = make(TOY2, n_init=1, random_state=4, init_params="posterior", init_posterior=part, max_iter=1).fit(X)
    b = make(TOY2, n_init=1, random_state=5, init_params="posterior", init_posterior=part, max_iter=1).fit(X)
    c = make(TOY2, n_init=1, random_state=4, init_params="posterior", init_posterior=part, max_iter=1).fit(X)
    assert a.lower_bound_ == c.lower_bound_ != b.lower_bound_


@pytest.mark.parametrize("start, match", [
    (None, "needs init_posterior"),
    ({"zz": np.ones((1, 2))}, r"init_posterior names unknown node\(s\) \['zz'\]"),
    ({"y2": np.ones((2, 3))}, r"init_posterior\['y2'\] must have shape \(4, 3\)"),
    ({"s1": np.ones(2)}, r"init_posterior\['s1'\] must have shape \(1, 2\)"),
    ({"y1": np.zeros((2, 3))}, r"init_posterior\['y1'\] must hold positive finite"),
    ({"y1": np.full((2, 3), np.nan)}, r"init_posterior\['y1'\] must hold positive finite"),
    ({"s2": [[1.0, -1.0]]}, r"init_posterior\['s2'\] must hold positive finite"),
])
def test_bad_init_posterior_gives_clear_errors(start, match):
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match=match):
        make(TOY2, init_params="posterior", init_posterior=start, max_iter=2).fit(X)

def test_too_large_hidden_space_is_refused():
    parents = {f"h{i}": [] for i in range(12)}
    parents["y"] = [f"h{i}" for i in range(12)]
    with pytest.raises(ValueError, match="max_configurations"):
        VBDiscreteDAG(parents, 2, [f"h{i}" for i in range(12)], max_configurations=1000).fit([[0], [1]])


def test_dataframe_columns_are_matched_by_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(13)
    X = rng.integers(0, 3, size=(30, 2))
    a = make(TOY2, n_init=1).fit(X)
    df = pd.DataFrame({"y2": X[:, 1], "y1": X[:, 0]})
    b = make(TOY2, n_init=1).fit(df)
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, abs=1e-10)
    with pytest.raises(ValueError, match="hidden"):
        make(TOY2).fit(pd.DataFrame({"y1": X[:, 0], "y2": X[:, 1], "s1": X[:, 0] % 2}))
    with pytest.raises(ValueError, match="do not match"):
        make(TOY2).fit(pd.DataFrame({"y1": X[:, 0], "zz": X[:, 1]}))


def test_default_latent_class_model_learns_categories():
    rng = np.random.default_rng(14)
    X = rng.choice([-2.5, 0.0, 7.0], size=(40, 3))
    with pytest.raises(ValueError, match="allow_float_categories"):
        VBDiscreteDAG(random_state=0, max_iter=30).fit(X)
    m = VBDiscreteDAG(random_state=0, max_iter=30, allow_float_categories=True).fit(X)
    assert m.cardinalities_ == {"latent": 2, "x0": 3, "x1": 3, "x2": 3}
    np.testing.assert_array_equal(m.categories_[0], [-2.5, 0.0, 7.0])
    Xs, H = m.sample(5)
    assert set(np.unique(Xs)) <= {-2.5, 0.0, 7.0}
    # an unseen value is marginalised like a missing one
    a = m.score_samples(np.array([[99.0, 0.0, 7.0]]))
    b = m.score_samples(np.array([[np.nan, 0.0, 7.0]]))
    assert a[0] == pytest.approx(b[0])
