"""The exact engine's zeta transforms, the layout's statistics and parsing, and the edge
search's predictions against brute-force enumeration over the joint states."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import PairwiseMRF
from sklearn_vb.model_selection import MRFStructureSearch
from sklearn_vb.mrf import prior_precision_vector
from sklearn_vb.mrf._exact_kernels import (assignment_cells, energy_table, marginal_table,
                                           transform_plan)
from sklearn_vb.mrf.edge_gains import CompleteGraphFeatures, predicted_gains
from sklearn_vb.mrf.inference import ExactEngine
from sklearn_vb.mrf.layout import MRFLayout, parse_structure, unique_rows

SHAPES = [[2, 2, 2], [2] * 6, [3, 2, 4], [3, 3, 2, 2], [2, 4, 2, 3, 2]]


def random_layout(rng, K, density=0.6):
    p = len(K)
    edges = [(i, j) for i in range(p) for j in range(i + 1, p) if rng.random() < density]
    return MRFLayout(K, parse_structure(edges, p))


def brute_force(layout, coef):
    """ln Z, kappa and the (centred) covariance from the feature matrix of every state."""
    Phi = layout.feature_matrix(layout.all_states())
    en = Phi @ coef
    lz = logsumexp(en)
    pi = np.exp(en - lz)
    kappa = pi @ Phi
    D = Phi - kappa
    return lz, pi, kappa, (D * pi[:, None]).T @ D


def assignment_indicator(states, nodes, values):
    """1 where every listed node (node >= 0) is at its value."""
    hit = np.ones(states.shape[0], dtype=bool)
    for n, v in zip(nodes, values):
        if n >= 0:
            hit &= states[:, n] == v
    return hit.astype(float)


@pytest.mark.parametrize("K", SHAPES)
@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_engine_matches_enumeration(K, scale):
    rng = np.random.default_rng(len(K) * 10 + int(scale))
    for _ in range(3):
        L = random_layout(rng, K)
        coef = scale * rng.normal(size=L.n_features)
        lz, pi, kappa, cov = brute_force(L, coef)
        eng = ExactEngine(L)
        m = eng.moments(coef)
        assert m.log_partition == pytest.approx(lz, abs=1e-12 * max(1.0, abs(lz)))
        np.testing.assert_allclose(m.kappa, kappa, atol=1e-14)
        np.testing.assert_allclose(m.cov, cov, atol=1e-14)
        np.testing.assert_array_equal(m.cov, m.cov.T)
        pi_e, lz_e = eng.probabilities(coef)
        np.testing.assert_allclose(pi_e, pi, rtol=1e-12, atol=1e-300)
        assert lz_e == pytest.approx(lz, abs=1e-12 * max(1.0, abs(lz)))
        batch = np.stack([coef, -coef, np.zeros_like(coef)])
        np.testing.assert_allclose(eng.log_partition(batch),
                                   [brute_force(L, c)[0] for c in batch], rtol=1e-13, atol=1e-13)


def test_batched_log_partition_of_a_larger_table():
    # past the size where the batch runs in one compiled loop
    rng = np.random.default_rng(9)
    L = random_layout(rng, [2] * 11, density=0.3)
    coefs = rng.normal(size=(3, L.n_features))
    np.testing.assert_allclose(ExactEngine(L).log_partition(coefs),
                               [brute_force(L, c)[0] for c in coefs], rtol=1e-13)


@pytest.mark.parametrize("K", SHAPES + [[2] * 9, [3, 2, 2, 3, 2, 2]])
@pytest.mark.parametrize("block_max, chunk_max, tile", [(1, 1, 1), (4, 16, 3), (8, 64, 8),
                                                         (8, 4096, 256), (64, 8, 5)])
def test_transforms_against_enumeration(K, block_max, chunk_max, tile):
    # every way of splitting the axes into blocks, chunks and column tiles
    rng = np.random.default_rng(sum(K) + block_max + chunk_max)
    L = random_layout(rng, K, density=1.0)
    states = L.all_states()
    coef = rng.normal(size=L.n_features)
    strides, plan, up, down = transform_plan(L.n_states, block_max, chunk_max, tile)
    assert np.array_equal(states @ strides, np.arange(states.shape[0]))
    nodes, values = L.feature_assignments()
    cells = assignment_cells(nodes, values, strides)
    en = np.empty(states.shape[0])
    energy_table(coef, cells, L.n_states, strides, *plan, up, en)
    np.testing.assert_allclose(en, L.feature_matrix(states) @ coef, atol=1e-12)
    w = rng.random(states.shape[0])
    T = w.copy()
    marginal_table(T, L.n_states, strides, *plan, down)
    # every cell is a partial assignment (digit 0 = unconstrained): its probability mass
    digits = states
    for c in range(states.shape[0]):
        mask = np.all((digits[c] == 0) | (states == digits[c]), axis=1)
        assert T[c] == pytest.approx(w[mask].sum(), rel=1e-13)


@pytest.mark.parametrize("K", SHAPES)
def test_assignment_moments_of_absent_edges(K):
    rng = np.random.default_rng(7 + len(K))
    L = random_layout(rng, K, density=0.4)
    p = len(K)
    coef = rng.normal(size=L.n_features)
    _, pi, _, _ = brute_force(L, coef)
    states = L.all_states()
    Phi = L.feature_matrix(states)
    # every pair's features, whether the layout has the edge or not, and a node feature
    nodes, values = [], []
    for a in range(p):
        for b in range(a + 1, p):
            for ka in range(1, K[a]):
                for kb in range(1, K[b]):
                    nodes.append((a, b))
                    values.append((ka, kb))
    nodes.append((0, -1))
    values.append((1, 0))
    nodes, values = np.array(nodes), np.array(values)
    F_new = np.stack([assignment_indicator(states, n, v) for n, v in zip(nodes, values)], axis=1)
    mean, cross, own = ExactEngine(L).assignment_moments(coef, nodes, values)
    mean_ref = pi @ F_new
    D_new, D_old = F_new - mean_ref, Phi - pi @ Phi
    np.testing.assert_allclose(mean, mean_ref, atol=1e-14)
    np.testing.assert_allclose(cross, (D_new * pi[:, None]).T @ D_old, atol=1e-14)
    np.testing.assert_allclose(own, (D_new * pi[:, None]).T @ D_new, atol=1e-14)


def test_engine_near_determinism():
    # strong fields: the uncentred covariance m(f u g) - m(f) m(g) keeps its absolute
    # accuracy (the Laplace matrix N C + P needs no more)
    rng = np.random.default_rng(3)
    L = random_layout(rng, [2] * 5, density=0.7)
    coef = np.concatenate([np.full(5, 12.0), rng.normal(size=L.n_features - 5)])
    lz, _, kappa, cov = brute_force(L, coef)
    m = ExactEngine(L).moments(coef)
    assert m.log_partition == pytest.approx(lz, rel=1e-14)
    np.testing.assert_allclose(m.kappa, kappa, atol=1e-15)
    np.testing.assert_allclose(m.cov, cov, atol=1e-15)


def test_sampling_follows_the_state_order():
    L = MRFLayout([2, 3], parse_structure([(0, 1)], 2))
    coef = np.array([0.5, -0.3, 1.0, 0.4, -0.8])
    eng = ExactEngine(L)
    X = eng.sample(coef, 20000, np.random.default_rng(0))
    assert X.dtype == np.int64 and X.shape == (20000, 2)
    freq = np.bincount(X[:, 0] * 3 + X[:, 1], minlength=6) / 20000
    pi, _ = eng.probabilities(coef)
    np.testing.assert_allclose(freq, pi, atol=0.015)


@pytest.mark.parametrize("K", SHAPES)
def test_statistics_and_unique_rows(K):
    rng = np.random.default_rng(11 + len(K))
    L = random_layout(rng, K)
    codes = np.stack([rng.integers(k, size=200) for k in K], axis=1)
    act = L.active_features(codes)
    ref = np.bincount(act.ravel(), minlength=L.n_features + 1)[:L.n_features]
    np.testing.assert_array_equal(L.statistics(codes), ref)
    w = rng.random(200)
    ref_w = np.bincount(act.ravel(), weights=np.repeat(w, act.shape[1]),
                        minlength=L.n_features + 1)[:L.n_features]
    np.testing.assert_allclose(L.statistics(codes, w), ref_w, rtol=1e-12)
    patterns, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    got = unique_rows(codes, K)
    np.testing.assert_array_equal(got[0], patterns)
    np.testing.assert_array_equal(got[1], inverse.ravel())
    np.testing.assert_array_equal(got[2], counts)


def test_layout_arrays_and_parsing_against_loops():
    rng = np.random.default_rng(5)
    for _ in range(40):
        p = int(rng.integers(1, 7))
        K = rng.integers(2, 5, size=p)
        L = random_layout(rng, K)
        offset = L.n_node_features
        for i in range(p):
            np.testing.assert_array_equal(L.node_feat[i, 1:K[i]], L.node_offset[i] + np.arange(K[i] - 1))
            assert np.all(L.node_feat[i, K[i]:] == -1) and L.node_feat[i, 0] == -1
        for e, (a, b) in enumerate(L.edges):
            block = offset + np.arange((K[a] - 1) * (K[b] - 1)).reshape(K[a] - 1, K[b] - 1)
            np.testing.assert_array_equal(L.edge_feat[e, 1:K[a], 1:K[b]], block)
            offset += block.size
            assert np.sum(L.edge_feat[e] >= 0) == block.size
        # the vectorised parse of a list of pairs gives the loop's result and errors
        pairs = [(int(a), int(b)) for a, b in rng.integers(0, p + 1, size=(int(rng.integers(0, 8)), 2))]
        ref = None
        edges = []
        for a, b in pairs:
            if not (0 <= a < p and 0 <= b < p) or a == b:
                ref = ValueError
                break
            edges.append((min(a, b), max(a, b)))
        if ref is None and len(set(edges)) != len(edges):
            ref = ValueError
        if ref is ValueError:
            with pytest.raises(ValueError, match="structure"):
                parse_structure(pairs, p)
            with pytest.raises(ValueError, match="structure"):
                parse_structure(np.array(pairs), p)
        else:
            expect = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
            np.testing.assert_array_equal(parse_structure(pairs, p), expect)
            np.testing.assert_array_equal(parse_structure(np.array(pairs).reshape(-1, 2), p), expect)


def test_predicted_add_gains_against_enumeration():
    # the score test of each absent edge from the parent's moments, with the new edge's
    # covariances from the feature matrix of the complete graph over every state
    rng = np.random.default_rng(2)
    X = (rng.random((300, 5)) < 0.5).astype(int)
    X[:, 1] = np.where(rng.random(300) < 0.8, X[:, 0], X[:, 1])
    X[:, 3] = np.where(rng.random(300) < 0.7, X[:, 2], X[:, 3])
    parent = PairwiseMRF(structure=[(0, 1), (2, 4)]).fit(X)
    feats = CompleteGraphFeatures.from_codes(parent.n_states_, parent.check_data(X), 2**16)
    present = {(0, 1), (2, 4)}
    moves = [("add", i, j) for i in range(5) for j in range(i + 1, 5) if (i, j) not in present]
    moves += [("remove", 0, 1), ("remove", 2, 4)]
    P = prior_precision_vector(1.0, parent.layout_)
    pred = predicted_gains(parent, feats, moves, P, 1.0)
    _, pi, _, C = brute_force(parent.layout_, parent.coef_)
    N = float(X.shape[0])
    A = N * C + np.diag(P)
    Phi = parent.layout_.feature_matrix(parent.layout_.all_states())
    S = parent.layout_.statistics(X)
    states = parent.layout_.all_states()
    for k, (kind, i, j) in enumerate(moves):
        if kind == "add":
            f = (states[:, i] * states[:, j]).astype(float)
            kf = pi @ f
            c_no = ((f - kf) * pi) @ (Phi - pi @ Phi)
            H = N * (pi @ (f - kf) ** 2) + 1.0 - N**2 * c_no @ np.linalg.solve(A, c_no)
            g = float(np.sum(X[:, i] * X[:, j])) - N * kf
            expect = 0.5 * g**2 / H - 0.5 * np.log(H)
        else:
            e = [tuple(x) for x in parent.layout_.edges.tolist()].index((i, j))
            idx = parent.layout_.n_nodes + e
            B = np.linalg.inv(A)[idx, idx]
            expect = -0.5 * parent.coef_[idx] ** 2 / B - 0.5 * np.log(P[idx]) - 0.5 * np.log(B)
        assert pred.gains[k] == pytest.approx(expect, abs=1e-9), (kind, i, j)
    assert np.allclose(S, parent.sufficient_stats_)


def _coupled_data(p, seed):
    rng = np.random.default_rng(seed)
    pairs = sorted({tuple(sorted(rng.choice(p, 2, replace=False).tolist())) for _ in range(p + 3)})
    X = (rng.random((400, p)) < 0.5).astype(int)
    for a, b in pairs:
        flip = rng.random(400) < 0.2
        X[:, b] = np.where(flip, X[:, b], X[:, a])
    return X


# the edges chosen by the search before its exact engine worked on transforms (the
# feature-matrix enumeration), recorded with that code
RECORDED = {
    (6, 1): ([(0, 1), (0, 4), (1, 4), (1, 5), (2, 3), (3, 4), (3, 5), (4, 5)], -1240.387632456524),
    (8, 2): ([(0, 2), (0, 3), (0, 4), (0, 6), (0, 7), (1, 4), (1, 6), (2, 3), (2, 5), (3, 5),
              (3, 6), (4, 6), (4, 7), (6, 7)], -1506.6615584799301),
}


@pytest.mark.parametrize("p, seed", sorted(RECORDED))
def test_search_chooses_the_recorded_edges(p, seed):
    edges, score = RECORDED[(p, seed)]
    s = MRFStructureSearch(PairwiseMRF(), random_state=0).fit(_coupled_data(p, seed))
    assert s.best_structure_ == edges
    assert s.best_score_ == pytest.approx(score, abs=1e-8)
