"""DAGStructureSearch on fully observed data: scores by family, tabu search."""

import itertools
import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.model_selection import DAGStructureSearch
from sklearn_vb.model_selection._common import resolve_scoring
from sklearn_vb.model_selection._dag_families import decomposable_family_scores
from sklearn_vb.model_selection._dag_search import _Graph, _MoveSet
from sklearn_vb.scoring import score

# a 6-node DAG of ternary nodes on which hill climbing from the empty graph stops at a
# local optimum far below the true graph (its first edges get orientations that later
# v-structures contradict).  Drawn in topological order, then relabelled j -> 5 - j so
# that no tie-breaking by node index follows the true order.
_TOPOLOGICAL = {0: [], 1: [0], 2: [0], 3: [1, 2], 4: [1, 3], 5: [0, 2]}
TRUE = {5 - c: [5 - p for p in ps] for c, ps in sorted(_TOPOLOGICAL.items(), reverse=True)}


def _sample(n, seed=3, card=3):
    """Tables drawn from Dirichlet(0.5) rows (strong dependences), then n cases."""
    rng = np.random.default_rng(seed)
    _ = [rng.random() for c in range(6) for p in range(c)]  # the draws that chose TRUE
    X = np.zeros((n, 6), dtype=np.int64)
    for c, ps in _TOPOLOGICAL.items():
        cpt = rng.dirichlet(np.full(card, 0.5), size=card ** len(ps))
        cfg = np.zeros(n, dtype=np.int64)
        for p in ps:
            cfg = cfg * card + X[:, p]
        u = rng.random(n)
        X[:, c] = (u[:, None] > np.cumsum(cpt[cfg], axis=1)).sum(axis=1).clip(0, card - 1)
    return X[:, ::-1].copy()


@pytest.fixture(scope="module")
def data():
    return _sample(2000)


def _est(**kw):
    return VBDiscreteDAG(structure={j: [] for j in range(6)}, cardinalities=3, n_init=1,
                         random_state=0, **kw)


def _search(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DAGStructureSearch(_est(), scoring="bic", random_state=0, **kw).fit(X)


def _score_of(structure, X, method="bic", **kw):
    est = VBDiscreteDAG(structure=structure, cardinalities=3, n_init=1, random_state=0,
                        **kw).fit(X)
    return score(est, X, method).log_evidence


def _skeleton(structure):
    return {frozenset((p, c)) for c, ps in structure.items() for p in ps}


def _v_structures(structure):
    sk = _skeleton(structure)
    return {(frozenset((a, b)), c) for c, ps in structure.items()
            for a, b in itertools.combinations(ps, 2) if frozenset((a, b)) not in sk}


@pytest.mark.parametrize("prior", [1.0, "bdeu"])
def test_family_sums_are_the_scorers_values(data, prior):
    X = data[:400]
    est = VBDiscreteDAG(structure=TRUE, cardinalities=3, prior=prior, ess=4.0, n_init=1,
                        random_state=0).fit(X)
    specs = resolve_scoring(["bic", "bic_map", "vb"])
    families = decomposable_family_scores(est, specs, est, X, {}, [False] * 6)
    names = list(est.structure_.names)
    totals = families.total([tuple(sorted(names.index(p) for p in TRUE[n])) for n in names])
    for method, value in zip(families.methods, totals):
        assert value == pytest.approx(score(est, X, method).log_evidence, rel=1e-10, abs=1e-8)
    # not decomposable: hidden nodes, missing values, per-node prior tables
    assert decomposable_family_scores(est, specs, est, X, {}, [True] + [False] * 5) is None
    Xm = X.copy()
    Xm[0, 0] = -1
    miss = VBDiscreteDAG(structure=TRUE, cardinalities=3, n_init=1, random_state=0).fit(Xm)
    assert decomposable_family_scores(miss, specs, miss, Xm, {}, [False] * 6) is None


def test_search_reaches_the_true_equivalence_class(data):
    true_score = _score_of(TRUE, data)
    search = _search(data)
    best = search.best_structure_
    # at least as good as the true graph (n = 2000: BIC's optimum is the true class)
    assert search.best_score_ >= true_score - 1.0
    assert _skeleton(best) == _skeleton(TRUE)
    assert _v_structures(best) == _v_structures(TRUE)
    # the reported score is the scorer's value of the fitted best graph
    assert search.best_estimator_.structure == best
    assert search.best_score_ == pytest.approx(score(search.best_estimator_, data, "bic").log_evidence,
                                               rel=1e-10)
    # plain hill climbing from the empty graph stops far below it on these data
    plain = _search(data, tabu_steps=0, n_restarts=0)
    assert plain.best_score_ < true_score - 20


def _neighbour_scores(search, X, **kw):
    best = search.best_structure_
    names = list(best)
    graph = _Graph(names, [False] * len(names),
                   [[names.index(p) for p in best[n]] for n in names])
    moves = _MoveSet(graph, None, set(), set(), kw.get("max_in_degree"),
                     ("add", "remove", "reverse"))
    specs = resolve_scoring("bic")
    families = decomposable_family_scores(search.best_estimator_, specs, search.best_estimator_,
                                          X, {}, graph.hidden)
    return [families.total(g.parents)[0] for _, g in moves.neighbours(graph)]


@pytest.mark.parametrize("kw", [{}, {"max_in_degree": 1}])
def test_result_is_a_local_optimum(data, kw):
    X = data[:600]
    search = _search(X, **kw)
    if "max_in_degree" in kw:
        assert all(len(ps) <= 1 for ps in search.best_structure_.values())
    neighbours = _neighbour_scores(search, X, **kw)
    assert len(neighbours) > 5
    assert max(neighbours) <= search.best_score_ + 1e-6
    # the best graph is the best row of results_, and a path of visited graphs
    assert search.best_score_ == pytest.approx(np.max(search.results_["score_bic"]))
    assert search.path_[0]["move"] is None and len(search.path_) >= len(search.results_["score_bic"])


def test_constraints_and_move_kinds(data):
    X = data[:600]
    start = {j: [5] if j == 4 else [] for j in range(6)}
    search = _search(X, initial_structure=start, required_edges=[(5, 4)],
                     forbidden_edges=[(0, 1), (1, 0)], moves=("add", "remove"))
    for s in search.results_["structure"]:
        assert 5 in s[4] and 0 not in s[1] and 1 not in s[0]
    assert all(p["move"] is None or p["move"][0] in ("add", "remove") for p in search.path_)
    # reproducible with random_state
    again = _search(X, initial_structure=start, required_edges=[(5, 4)],
                    forbidden_edges=[(0, 1), (1, 0)], moves=("add", "remove"))
    assert again.best_structure_ == search.best_structure_
    assert [p["move"] for p in again.path_] == [p["move"] for p in search.path_]


def test_tabu_steps_need_a_decomposable_score():
    est = VBDiscreteDAG({"h": [], 0: [], 1: []}, cardinalities={"h": 2, 0: 2, 1: 2}, hidden="h",
                        n_init=1, max_iter=20)
    X = np.array([[0, 1], [1, 1], [1, 0], [0, 0]] * 5)
    with pytest.raises(ValueError, match="tabu_steps=5 needs a decomposable score"):
        DAGStructureSearch(est, scoring="bic", tabu_steps=5).fit(X)
