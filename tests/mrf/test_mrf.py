"""PairwiseMRF, exact enumeration, belief propagation, the Bethe free energy and linear
response against exact oracles (enumeration, finite differences, reference values)."""

import numpy as np
import pytest
from scipy import stats

from sklearn_vb import PairwiseMRF
from sklearn_vb.mrf.inference import (BPConvergenceWarning, BPEngine, ExactEngine,
                                       lbfgs_minimize, log_prior, lr_logdet, newton_map)
from sklearn_vb.mrf.layout import MRFLayout, parse_structure
from sklearn_vb.datasets import sample_mrf

# reference instances; parameter vectors in the package's order (edges sorted)
RM1 = dict(K=[2, 2, 2], edges=[(0, 1), (1, 2)], coef=[0.2, -0.5, 0.3, 0.8, -0.6])
RM2 = dict(K=[2, 2, 2], edges=[(0, 1), (0, 2), (1, 2)], coef=[0.2, -0.5, 0.3, 0.8, 0.5, -0.6])
RM3A = dict(K=[3, 2, 3], edges=[(0, 1), (1, 2)], coef=[0.3, -0.2, 0.5, -0.4, 0.1, 0.7, -0.3, 0.2, -0.6])
RM3B = dict(K=[3, 3, 3, 3], edges=[(0, 1), (0, 3), (1, 2), (2, 3)],
            coef=[0.3, -0.2, 0.5, 0.1, -0.4, 0.1, 0.0, 0.6] + [0.7, -0.3, 0.2, 0.4] * 4)
RM4_COUNTS = [6, 3, 1, 2, 7, 13, 8, 10]


def layout_of(inst):
    return MRFLayout(inst["K"], parse_structure(inst["edges"], len(inst["K"])))


def rm4_data():
    return np.array([[int(b) for b in f"{s:03b}"] for s in range(8) for _ in range(RM4_COUNTS[s])])


def fd_jacobian(f, x, h=1e-6):
    cols = []
    for a in range(x.size):
        e = np.zeros_like(x)
        e[a] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def random_forest(rng, p, K_choices=(2, 3), isolated=True):
    K = rng.choice(K_choices, size=p)
    edges = []
    for j in range(1, p):
        if isolated and rng.random() < 0.2:
            continue
        edges.append((int(rng.integers(j)), j))
    L = MRFLayout(K, parse_structure(edges, p))
    return L, rng.normal(size=L.n_features)


# ------------------------------------------------------------------ exact enumeration
def test_exact_reference_chain_values_and_derivatives():
    L = layout_of(RM1)
    coef = np.array(RM1["coef"])
    eng = ExactEngine(L)
    m = eng.moments(coef)
    assert m.log_partition == pytest.approx(2.2133129612368543, abs=1e-12)
    np.testing.assert_allclose(m.kappa, [0.627626185220, 0.429258477752, 0.510532353919,
                                         0.313813092610, 0.182674157429], atol=1e-11)
    np.testing.assert_allclose(np.linalg.eigvalsh(m.cov), [0.028296546557, 0.047419643620,
                               0.208824483989, 0.300080064934, 0.508614269451], atol=1e-11)
    pi, _ = eng.probabilities(coef)
    assert pi.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(fd_jacobian(lambda c: eng.log_partition(c[None])[0], coef),
                               m.kappa, atol=1e-8)
    np.testing.assert_allclose(fd_jacobian(lambda c: eng.moments(c, False).kappa, coef), m.cov,
                               atol=1e-8)
    uncentred = (eng.Phi * pi[:, None]).T @ eng.Phi - np.outer(m.kappa, m.kappa)
    np.testing.assert_allclose(uncentred, m.cov, atol=1e-14)


@pytest.mark.parametrize("inst, lnz, logdet", [
    (RM2, 2.398611107091101, -13.322806747634),
    (RM3A, 3.2614563012315156, -21.465718386997),
    (RM3B, 5.470435281229232, -69.999407078457),
])
def test_exact_reference_values(inst, lnz, logdet):
    m = ExactEngine(layout_of(inst)).moments(np.array(inst["coef"]))
    assert m.log_partition == pytest.approx(lnz, abs=1e-12)
    assert np.linalg.slogdet(m.cov)[1] == pytest.approx(logdet, abs=1e-9)


def test_spin_coding_conversion():
    # ln Z_01 = ln Z_pm(h, J) + sum h - sum J, with J = w / 4, h = theta / 2 + sum_j w_ij / 4
    L = layout_of(RM2)
    coef = np.array(RM2["coef"])
    X = np.array([[0, 1, 1]] * 3 + [[1, 0, 1]])
    est = PairwiseMRF(RM2["edges"]).fit(X)
    est.coef_ = coef  # evaluate the conversion at the reference parameters
    h, J = est.ising_params()
    s = 2 * L.all_states() - 1
    en = s @ h + np.sum(J * s[:, L.edges[:, 0]] * s[:, L.edges[:, 1]], axis=1)
    lnz_pm = np.log(np.sum(np.exp(en)))
    assert ExactEngine(L).log_partition(coef[None])[0] == pytest.approx(
        lnz_pm + h.sum() - J.sum(), abs=1e-13)


# ------------------------------------------------------------------ belief propagation
@pytest.mark.parametrize("schedule", ["auto", "parallel"])
def test_bp_exact_on_forests(schedule):
    rng = np.random.default_rng(0)
    for _ in range(6):
        L, coef = random_forest(rng, int(rng.integers(2, 8)))
        ex = ExactEngine(L).moments(coef)
        eng = BPEngine(L, tol=1e-13, schedule=schedule)
        bp = eng.moments(coef)
        assert bp.info["bp_converged"]
        assert bp.log_partition == pytest.approx(ex.log_partition, abs=1e-10)
        np.testing.assert_allclose(bp.kappa, ex.kappa, atol=1e-10)
        np.testing.assert_allclose(bp.cov, ex.cov, atol=1e-10)
        np.testing.assert_allclose(eng.covariance_propagation(coef), ex.cov, atol=1e-10)
        node, edge = L.beliefs_from_moments(ex.kappa)
        r = eng.run(coef)
        np.testing.assert_allclose(np.exp(r.node_logb), node, atol=1e-10)
        np.testing.assert_allclose(np.exp(r.edge_logb), edge, atol=1e-10)


def test_bethe_reference_values_and_belief_form():
    L = layout_of(RM2)
    coef = np.array(RM2["coef"])
    eng = BPEngine(L, tol=1e-13)
    m = eng.moments(coef)
    assert m.log_partition == pytest.approx(2.4015583545047448, abs=1e-8)
    np.testing.assert_allclose(m.kappa, [0.689492176, 0.4290513023, 0.5927749417, 0.3360899205,
                                         0.434811811, 0.218874002], atol=1e-8)
    assert np.linalg.slogdet(m.cov)[1] == pytest.approx(-13.281421156056, abs=1e-8)
    # belief form -F_B = -U + H_B equals the message form
    r = eng.run(coef)
    node, edge = L.potentials(coef)
    bn, be = np.exp(r.node_logb), np.exp(r.edge_logb)
    with np.errstate(invalid="ignore", divide="ignore"):
        H_e = -np.nansum(be * r.edge_logb, axis=(1, 2))
        H_n = -np.nansum(bn * r.node_logb, axis=1)
    U = -np.sum(bn * node) - np.sum(be * edge)
    assert -U + H_e.sum() - np.sum((L.degree - 1) * H_n) == pytest.approx(r.log_partition, abs=1e-12)
    m3 = BPEngine(layout_of(RM3B), tol=1e-12).moments(np.array(RM3B["coef"]))
    assert m3.log_partition == pytest.approx(5.46753996560912, abs=1e-8)
    assert np.linalg.slogdet(m3.cov)[1] == pytest.approx(-69.883994167713, abs=1e-7)


def test_bethe_derivatives_on_loopy_graph():
    # d ln Z_B / d lambda = kappa_B and d kappa_B / d lambda = C_LR (matrix = propagation);
    # an isolated node (4) is included
    L = MRFLayout([2, 3, 2, 2, 2], parse_structure([(0, 1), (1, 2), (0, 2), (2, 3)], 5))
    coef = np.random.default_rng(1).normal(scale=0.7, size=L.n_features)
    eng = BPEngine(L, tol=1e-13)
    m = eng.moments(coef)
    np.testing.assert_allclose(fd_jacobian(lambda c: eng.run(c).log_partition, coef), m.kappa,
                               atol=1e-7)
    np.testing.assert_allclose(fd_jacobian(lambda c: eng.run(c).kappa, coef), m.cov, atol=1e-6)
    np.testing.assert_allclose(m.cov, m.cov.T, atol=1e-14)
    np.testing.assert_allclose(eng.covariance_propagation(coef), m.cov, atol=1e-10)


def test_bethe_hessian_reference_entries_and_fixed_point_relations():
    L = layout_of(RM1)
    eng = BPEngine(L, tol=1e-13)
    J = eng.moments(np.array(RM1["coef"])).J.toarray()
    ref = {(0, 0): 7.078744674687, (0, 1): 3.892134480438, (1, 1): 16.645144798094,
           (1, 2): 4.117203175125, (2, 2): 7.167302305505, (0, 3): -7.078744674687,
           (1, 3): -12.554239065849, (1, 4): -8.172611072482, (2, 4): -7.167302305505,
           (3, 3): 18.927459454347, (4, 4): 16.696938271423}
    expect = np.zeros((5, 5))
    for (i, j), v in ref.items():
        expect[i, j] = expect[j, i] = v
    np.testing.assert_allclose(J, expect, atol=1e-9)
    # relations (13): pseudo-moment matching at BP beliefs returns the parameters (loopy)
    L2 = layout_of(RM2)
    coef = np.array(RM2["coef"])
    kb = BPEngine(L2, tol=1e-13).run(coef).kappa
    np.testing.assert_allclose(L2.pmm_coef(kb), coef, atol=1e-9)


def test_lr_logdet_identity():
    L = layout_of(RM2)
    m = BPEngine(L, tol=1e-13).moments(np.array(RM2["coef"]))
    P = np.array([1, 1, 1, 2, 2, 2.0])
    direct = np.linalg.slogdet(50 * m.cov + np.diag(P))[1]
    assert lr_logdet(m.J, 50.0, P) == pytest.approx(direct, abs=1e-12)


def test_bp_nonconvergence_warns_on_spin_glass():
    L = MRFLayout([2] * 5, parse_structure("complete", 5))
    coef = np.array([-4, 4, 4, 0, 4, 4, 4, 4, -4, -4, -4, -4, -4, -4, 4.0])
    assert ExactEngine(L).log_partition(coef[None])[0] == pytest.approx(8.8313554929151, abs=1e-10)
    eng = BPEngine(L, tol=1e-10)
    with pytest.warns(BPConvergenceWarning, match="did not converge"):
        r = eng.run(coef)
    assert not r.converged and r.retried


# ------------------------------------------------------------------ fitting
def test_map_and_bp_map_reference_values():
    X = rm4_data()
    ex = PairwiseMRF([(0, 1), (1, 2), (0, 2)]).fit(X)
    assert ex.inference_ == "exact" and ex.converged_
    np.testing.assert_allclose(ex.coef_, [0.558342, -0.644604, -0.144489, 0.561858, 0.586847,
                                          -0.091158], atol=2e-6)
    assert ex.objective_ == pytest.approx(-100.722541910467, abs=1e-8)
    bp = PairwiseMRF([(0, 1), (1, 2), (0, 2)], inference="bp").fit(X)
    assert bp.inference_ == "bp" and bp.bp_converged_
    np.testing.assert_allclose(bp.coef_, [0.566919, -0.658597, -0.154814, 0.550397, 0.577283,
                                          -0.048709], atol=2e-6)
    assert bp.objective_ == pytest.approx(-100.735040517283, abs=1e-8)
    np.testing.assert_array_equal(ex.sufficient_stats_, [38, 21, 28, 18, 23, 12])
    lb = PairwiseMRF([(0, 1), (1, 2), (0, 2)], solver="lbfgs").fit(X)
    np.testing.assert_allclose(lb.coef_, ex.coef_, atol=1e-5)


def test_lbfgs_runs_with_one_blas_thread_and_matches_scipy():
    """The L-BFGS fits of PairwiseMRF and LinearChainCRF go through ``lbfgs_minimize``:
    the objective sees BLAS limited to one thread, the caller's limit is back afterwards,
    and the optimum is scipy's."""
    from scipy.optimize import minimize
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    seen = []
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -1.0])

    def fun(x):
        seen.extend(blas_threads())
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    with threadpool_limits(2, user_api="blas"):  # a caller with threaded BLAS
        before = blas_threads()
        res = lbfgs_minimize(fun, np.zeros(2), gtol=1e-12)
        after = blas_threads()
    assert seen and set(seen) == {1}
    assert after == before
    ref = minimize(fun, np.zeros(2), jac=True, method="L-BFGS-B", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.x, ref.x, atol=1e-12)
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), atol=1e-9)


@pytest.mark.parametrize("engine_kind", ["exact", "bp"])
def test_newton_ascends_and_is_stationary(engine_kind):
    L = MRFLayout([2, 3, 2, 2], parse_structure([(0, 1), (1, 2), (2, 3), (0, 3)], 4))
    rng = np.random.default_rng(3)
    coef_true = rng.normal(size=L.n_features)
    codes = ExactEngine(L).sample(coef_true, 200, rng)
    S, N = L.statistics(codes), 200.0
    P = np.full(L.n_features, 0.5)
    eng = ExactEngine(L) if engine_kind == "exact" else BPEngine(L, tol=1e-12)
    res = newton_map(eng, S, N, P, np.zeros(L.n_features))
    assert res.converged
    assert np.all(np.diff(res.objectives) >= -1e-10)
    g = S - N * res.moments.kappa - P * res.coef
    assert np.max(np.abs(g)) < 1e-8 * N
    assert res.objective == pytest.approx(res.coef @ S - N * res.moments.log_partition
                                          + log_prior(res.coef, P), abs=1e-10)


def test_pmm_is_ml_on_trees():
    # exact marginals of a tree model -> its parameters; L2 reference lambda_ML
    rng = np.random.default_rng(4)
    L, coef = random_forest(rng, 6)
    np.testing.assert_allclose(L.pmm_coef(ExactEngine(L).moments(coef, False).kappa), coef,
                               atol=1e-10)
    X = np.array([[0, 0]] * 7 + [[0, 1]] * 3 + [[1, 0]] * 4 + [[1, 1]] * 6)
    L2 = MRFLayout([2, 2], parse_structure([(0, 1)], 2))
    ref = [-0.55961579, -0.84729786, 1.25276297]
    np.testing.assert_allclose(L2.pmm_coef(L2.statistics(X) / 20), ref, atol=1e-8)
    ml = PairwiseMRF([(0, 1)], point="ml").fit(X)
    np.testing.assert_allclose(ml.coef_, ref, atol=1e-3)  # ML computed under a 1e4 prior
    assert not ml.ml_at_boundary_
    mp = PairwiseMRF([(0, 1)]).fit(X)
    np.testing.assert_allclose(mp.coef_, [-0.20973081, -0.39739934, 0.53767539], atol=1e-7)


def test_data_handling_weights_scores_and_structures():
    X = rm4_data()
    a = PairwiseMRF([(0, 1), (1, 2)]).fit(X, sample_weight=np.arange(X.shape[0]) % 3)
    b = PairwiseMRF([(1, 2), (1, 0)]).fit(np.repeat(X, np.arange(X.shape[0]) % 3, axis=0))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)
    adj = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    c = PairwiseMRF(adj).fit(np.repeat(X, np.arange(X.shape[0]) % 3, axis=0))
    np.testing.assert_allclose(c.coef_, b.coef_, atol=1e-12)
    ll = a.score_samples(X)
    assert np.sum(ll * (np.arange(X.shape[0]) % 3)) == pytest.approx(
        a.coef_ @ a.sufficient_stats_ - a.n_samples_ * a.log_partition_, abs=1e-10)
    # conditionals against enumeration
    L = a.layout_
    pi, _ = ExactEngine(L).probabilities(a.coef_)
    table = pi.reshape(2, 2, 2)
    cl = a.conditional_log_proba(X[:5])
    for n, x in enumerate(X[:5]):
        joint = table[tuple(x)]
        assert np.exp(cl[n, 1]) == pytest.approx(joint / table[x[0], :, x[2]].sum(), abs=1e-12)
    np.testing.assert_allclose(a.node_marginals_[:, 1], a.feature_moments_[:3], atol=1e-14)


@pytest.mark.parametrize("kwargs, X, match", [
    (dict(structure=[(0, 0)]), [[0, 1], [1, 0]], "self-loop"),
    (dict(structure=[(0, 1), (1, 0)]), [[0, 1], [1, 0]], "duplicate"),
    (dict(structure=[(0, 3)]), [[0, 1], [1, 0]], "outside"),
    (dict(structure=np.array([[0, 1, 0], [0, 0, 1], [0, 1, 0]])), [[0, 1, 1]], "symmetric"),
    (dict(structure=np.eye(3)), [[0, 1, 1]], "self-loop"),
    (dict(), [[0, 2], [1, 0]], r"integers in \[0, 2\)"),
    (dict(), [[0, 0.5], [1, 0]], "integers"),
    (dict(n_states=[2, 3, 2]), [[0, 1], [1, 0]], "n_states"),
    (dict(), [[0, np.nan], [1, 0]], "NaN"),
])
def test_bad_input_raises(kwargs, X, match):
    with pytest.raises(ValueError, match=match):
        PairwiseMRF(**kwargs).fit(np.asarray(X, dtype=float))


def test_exact_sampler_and_gibbs_frequencies():
    coef = np.array(RM2["coef"])
    X = sample_mrf(coef, RM2["edges"], 3, 100_000, random_state=0)
    L = layout_of(RM2)
    pi, _ = ExactEngine(L).probabilities(coef)
    counts = np.bincount(X @ np.array([4, 2, 1]), minlength=8)
    assert stats.chisquare(counts, pi * X.shape[0]).pvalue > 1e-3
    est = PairwiseMRF(RM2["edges"]).fit(X[:10])
    est.coef_ = coef
    est.node_coef_, est.edge_coef_ = L.potentials(coef)
    G = est.sample(4000, random_state=1, method="gibbs", n_burnin=100, thin=2)
    freq = np.bincount(G @ np.array([4, 2, 1]), minlength=8) / G.shape[0]
    assert np.all(np.abs(freq - pi) < 4 * np.sqrt(pi * (1 - pi) / 1000))
    assert est.sample(5, random_state=2).shape == (5, 3)


def test_k_state_fit_matches_between_exact_and_tree_inference():
    rng = np.random.default_rng(5)
    L, coef = random_forest(rng, 5, K_choices=(3,), isolated=False)
    X = sample_mrf(coef, L.edges, 5, 300, n_states=3, random_state=0)
    ex = PairwiseMRF(L.edges, n_states=3).fit(X)
    tr = PairwiseMRF(L.edges, n_states=3, inference="bp").fit(X)
    assert tr.inference_ == "tree"
    np.testing.assert_allclose(tr.coef_, ex.coef_, atol=1e-9)
    assert tr.log_partition_ == pytest.approx(ex.log_partition_, abs=1e-10)
    np.testing.assert_allclose(tr.feature_covariance_, ex.feature_covariance_, atol=1e-10)
