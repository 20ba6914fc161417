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
