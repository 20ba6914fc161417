"""Structure search over undirected edge sets of PairwiseMRF."""

from math import comb

import numpy as np
import pytest

from sklearn_vb import PairwiseMRF
from sklearn_vb.datasets import nested_edge_sequence, random_undirected_structures, sample_mrf
from sklearn_vb.model_selection import MRFStructureSearch, StructureSearch, enumerate_undirected_graphs
from sklearn_vb.scoring import get_scorer

TREE = [(0, 1), (1, 2), (1, 3)]
COEF = np.array([0.3, -0.4, 0.2, -0.1, 1.2, -1.0, 0.9])


@pytest.fixture(scope="module")
def tree_data():
    return sample_mrf(COEF, TREE, 4, 5000, random_state=0)


def test_enumerations_and_nested_sequences():
    graphs = enumerate_undirected_graphs(5)
    assert len(graphs) == 1024 and len({tuple(g) for g in graphs}) == 1024
    counts = np.bincount([len(g) for g in graphs])
    assert counts.tolist() == [comb(10, k) for k in range(11)]
    true = [(0, 1), (2, 4), (1, 3)]
    seq = nested_edge_sequence(true, 5, random_state=0)
    assert seq[0] == [] and len(seq[-1]) == 10 and len(seq) == 11
    assert all(set(a) <= set(b) for a, b in zip(seq, seq[1:]))
    assert set(seq[3]) == set(true)
    s = random_undirected_structures(20, 5, random_state=0)
    assert len({tuple(g) for g in s}) == 20 and all(g for g in s)


def test_greedy_finds_the_exhaustive_best(tree_data):
    scorer = get_scorer("bethe_laplace", gradient="exact", covariance="exact")
    est = PairwiseMRF()
    ex = MRFStructureSearch(est, search="exhaustive", scoring=scorer).fit(tree_data)
    assert ex.n_candidates_ == 64
    assert sorted(ex.best_structure_) == TREE
    plain = StructureSearch(est, {"structure": enumerate_undirected_graphs(4)}, scoring=scorer)
    plain.fit(tree_data)
    np.testing.assert_allclose(plain.results_["score_bethe_laplace"],
                               ex.results_["score_bethe_laplace"], atol=1e-10)
    gr = MRFStructureSearch(est, scoring=scorer).fit(tree_data)
    assert gr.best_structure_ == ex.best_structure_
    assert gr.best_score_ == pytest.approx(ex.best_score_, abs=1e-8)
    assert gr.path_[0]["move"] is None and gr.path_[1]["move"][0] == "add"
    assert np.all(np.diff([s["score"] for s in gr.path_]) > 0)
    # warm starts change only where Newton starts: the same scores
    cold = MRFStructureSearch(est, scoring=scorer, warm_start=False).fit(tree_data)
    np.testing.assert_allclose(cold.results_["score_bethe_laplace"],
                               gr.results_["score_bethe_laplace"], atol=1e-8)


def test_greedy_constraints_restarts_and_parallel(tree_data):
    est = PairwiseMRF()
    s = MRFStructureSearch(est, initial_structure=[(2, 3)], required_edges=[(2, 3)],
                           forbidden_edges=[(1, 2)],
                           max_degree=2, n_restarts=1, random_state=0).fit(tree_data)
    for st in s.results_["structure"]:
        assert (2, 3) in st and (1, 2) not in st
        deg = np.bincount(np.asarray(st, dtype=int).ravel(), minlength=4)
        assert deg.max() <= 2
    assert {step["restart"] for step in s.path_} == {0, 1}
    par = MRFStructureSearch(est, initial_structure=[(2, 3)], required_edges=[(2, 3)],
                             forbidden_edges=[(1, 2)],
                             max_degree=2, n_restarts=1, random_state=0, n_jobs=2).fit(tree_data)
    np.testing.assert_allclose(par.results_["score_bethe_laplace"],
                               s.results_["score_bethe_laplace"], atol=1e-10)
    with pytest.raises(ValueError, match="both required and forbidden"):
        MRFStructureSearch(est, required_edges=[(0, 1)], forbidden_edges=[(1, 0)]).fit(tree_data)
    with pytest.raises(ValueError, match="moves"):
        MRFStructureSearch(est, moves=("reverse",)).fit(tree_data)


def _ising_data(p, n, seed, d=1.0):
    from sklearn_vb.datasets import make_boltzmann_machine

    edges = random_undirected_structures(1, n_nodes=p, edge_prob=0.4, random_state=seed)[0]
    coef = make_boltzmann_machine(edges, p, d=d, random_state=seed)
    return sample_mrf(coef, edges, p, n, random_state=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_screened_search_matches_the_unscreened_search(seed):
    X = _ising_data(5, 400, seed)
    est = PairwiseMRF()
    full = MRFStructureSearch(est, screen=None).fit(X)
    screened = MRFStructureSearch(est, screen=2).fit(X)
    # the screen fits fewer neighbours and climbs to the same graph
    assert screened.n_candidates_ < full.n_candidates_
    assert screened.best_structure_ == full.best_structure_
    assert screened.best_score_ == pytest.approx(full.best_score_, abs=1e-8)
    # a graph fitted by both searches has the same score
    by_graph = dict(zip(map(tuple, full.results_["structure"]),
                        full.results_["score_bethe_laplace"]))
    for g, v in zip(map(tuple, screened.results_["structure"]),
                    screened.results_["score_bethe_laplace"]):
        assert v == pytest.approx(by_graph[g], abs=1e-8)


def test_screened_search_with_three_states_and_grouped_prior():
    # blocks of four features per edge, edge prior apart from the node prior
    rng = np.random.RandomState(0)
    X = rng.randint(0, 3, size=(400, 5))
    X[:, 1] = np.where(rng.rand(400) < 0.7, X[:, 0], X[:, 1])
    X[:, 3] = np.where(rng.rand(400) < 0.6, X[:, 2], X[:, 3])
    X[:, 4] = np.where(rng.rand(400) < 0.6, X[:, 3], X[:, 4])
    est = PairwiseMRF(n_states=3, prior_variance={"node": 2.0, "edge": 0.5})
    full = MRFStructureSearch(est, screen=None).fit(X)
    screened = MRFStructureSearch(est, screen=1).fit(X)
    assert screened.n_candidates_ < full.n_candidates_
    assert screened.best_structure_ == full.best_structure_
    assert screened.best_score_ == pytest.approx(full.best_score_, abs=1e-8)


@pytest.mark.parametrize("seed", [0, 1])
def test_screened_search_finds_the_exhaustive_best(seed):
    X = _ising_data(4, 600, seed)
    est = PairwiseMRF()
    ex = MRFStructureSearch(est, search="exhaustive").fit(X)  # all 64 graphs
    screened = MRFStructureSearch(est, screen=1).fit(X)
    assert screened.best_structure_ == sorted(ex.best_structure_)
    assert screened.best_score_ == pytest.approx(ex.best_score_, abs=1e-8)


def test_predicted_gains_match_the_evidence_changes_of_weak_moves():
    # the second-order prediction of the change of the Laplace evidence is exact in the
    # limit of small moves: on moves that change the evidence by a few nats it is within
    # hundredths of a nat, and it ranks the best move first
    from sklearn_vb.mrf import prior_precision_vector
    from sklearn_vb.mrf.edge_gains import CompleteGraphFeatures, predicted_gains
    from sklearn_vb.scoring import score

    X = _ising_data(6, 1500, 3, d=0.6)
    current = [(0, 1), (2, 3)]
    parent = PairwiseMRF(structure=current).fit(X)
    base = score(parent, X, "bethe_laplace").log_evidence
    moves = [("add", i, j) for i in range(6) for j in range(i + 1, 6) if (i, j) not in current]
    moves += [("remove",) + e for e in current]
    feats = CompleteGraphFeatures.from_codes(parent.n_states_, parent.check_data(X), 2**16)
    pred = predicted_gains(parent, feats, moves, prior_precision_vector(1.0, parent.layout_),
                           1.0).gains
    actual = []
    for m in moves:
        g = current + [m[1:]] if m[0] == "add" else [e for e in current if e != m[1:]]
        actual.append(score(PairwiseMRF(structure=g).fit(X), X, "bethe_laplace").log_evidence - base)
    actual = np.array(actual)
    weak = np.abs(actual) < 3
    assert weak.sum() >= 5
    np.testing.assert_allclose(pred[weak], actual[weak], atol=0.05)
    assert np.argmax(pred) == np.argmax(actual)


def test_screen_parameters_are_validated(tree_data):
    for bad in ({"screen": 0}, {"screen": 2.5}, {"screen": "all"}, {"screen_margin": -1.0}):
        with pytest.raises(ValueError, match="screen"):
            MRFStructureSearch(PairwiseMRF(), **bad).fit(tree_data)
