"""DAGStructureSearch on Beal's structure class (2 binary hidden, 4 five-state observed)."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.datasets import (
    BEAL_TRUE_CODE,
    bipartite_structure,
    enumerate_bipartite_structures,
    make_beal_dag,
)
from sklearn_vb.model_selection import DAGStructureSearch
from sklearn_vb.model_selection._dag_search import _Graph, _MoveSet

HIDDEN = ["s1", "s2"]
OBSERVED = ["y1", "y2", "y3", "y4"]
BIPARTITE = [(s, y) for s in HIDDEN for y in OBSERVED]
SWAPPED_TRUE = tuple({1: 2, 2: 1}.get(c, c) for c in BEAL_TRUE_CODE)


@pytest.fixture(scope="module")
def beal_data():
    return make_beal_dag(6000, random_state=0)


def _code(structure):
    """Parent-set code tuple (bit 0 = s1, bit 1 = s2) of a bipartite structure dict."""
    return tuple(sum(1 << HIDDEN.index(p) for p in structure[y]) for y in OBSERVED)


def _dag(code=(0, 0, 0, 0), **kw):
    parents, cards, hidden = bipartite_structure(code)
    kw.setdefault("n_init", 2)
    kw.setdefault("max_iter", 400)
    kw.setdefault("tol", 1e-3)
    return VBDiscreteDAG(parents, cards, hidden, **kw)


def test_exhaustive_ranks_true_structure_first(beal_data):
    codes = enumerate_bipartite_structures()
    assert len(codes) == 136
    # a fast subset of the class: the truth, every member one parent-set change away
    # from it, and the extremes (empty, latent-class, full)
    near = [c for c in codes if sum(a != b for a, b in zip(c, BEAL_TRUE_CODE)) == 1]
    subset = sorted(set([BEAL_TRUE_CODE, (0, 0, 0, 0), (1, 1, 1, 1), (3, 3, 3, 3)] + near[:8]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DAGStructureSearch(
            _dag(), search="exhaustive", structures=[bipartite_structure(c) for c in subset],
            random_state=0,
        ).fit(beal_data)
    r = search.results_
    assert _code(search.best_structure_) == BEAL_TRUE_CODE
    assert search.best_estimator_.structure == search.best_structure_
    assert len(r["score_vb"]) == len(subset) and not r["fit_failed"].any()
    # the alias correction is the estimator's ln S (2 connected binary hidden nodes: ln 4)
    i = subset.index(BEAL_TRUE_CODE)
    assert r["log_alias_correction_vb"][i] == pytest.approx(np.log(4.0))
    assert r["log_alias_correction_vb"][subset.index((0, 0, 0, 0))] == pytest.approx(0.0)
    np.testing.assert_allclose(r["corrected_score_vb"],
                               r["raw_score_vb"] + r["log_alias_correction_vb"])
    table = search.results_table()
    assert np.all(np.diff(table["score_vb"].to_numpy()) <= 0)
    assert list(r["n_edges"])[subset.index((3, 3, 3, 3))] == 8


def test_greedy_backward_search_finds_true_structure(beal_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DAGStructureSearch(
            _dag((3, 3, 3, 3)), allowed_edges=BIPARTITE, max_in_degree=2, random_state=0,
        ).fit(beal_data)
    assert _code(search.best_structure_) in (BEAL_TRUE_CODE, SWAPPED_TRUE)
    scores = [step["score"] for step in search.path_]
    assert np.all(np.diff(scores) > 0)  # every accepted move improved the score
    assert search.path_[0]["move"] is None
    assert search.best_score_ == pytest.approx(scores[-1])
    assert search.best_score_ == pytest.approx(np.max(search.results_["score_vb"]))
    # every structure scored is in the class and within the in-degree limit
    for s in search.results_["structure"]:
        assert all(s[h] == [] for h in HIDDEN)
        assert all(len(s[y]) <= 2 for y in OBSERVED)
    # each structure was fitted once
    keys = [tuple(tuple(v) for v in s.values()) for s in search.results_["structure"]]
    assert len(keys) == len(set(keys))


def test_warm_start_needs_fewer_iterations(beal_data):
    runs = {}
    for warm in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[warm] = DAGStructureSearch(
                _dag((3, 3, 3, 3)), allowed_edges=BIPARTITE, warm_start=warm, random_state=1,
            ).fit(beal_data)
    assert _code(runs[True].best_structure_) in (BEAL_TRUE_CODE, SWAPPED_TRUE)
    warm_iter = runs[True].results_["n_iter"][runs[True].results_["step"] > 0]
    cold_iter = runs[False].results_["n_iter"][runs[False].results_["step"] > 0]
    # neighbours of the start: a warm-started neighbour runs one VBEM chain from its
    # parent's posterior; a cold one runs n_init=2 chains from prior draws
    assert warm_iter.mean() < 0.75 * cold_iter.mean()
    # the start graph itself is fitted cold in both runs: identical
    assert runs[True].results_["raw_score_vb"][0] == runs[False].results_["raw_score_vb"][0]
    # the warm start goes through the estimator's public init_params="posterior": the
    # best (a warm-started neighbour) carries its start, and a clone repeats its fit
    best = runs[True].best_estimator_
    assert best.init_params == "posterior" and best.n_init == 1
    assert set(best.init_posterior) < set(best.structure_.names)
    refit = clone(best).fit(beal_data)
    assert refit.lower_bound_ == best.lower_bound_ and refit.n_iter_ == best.n_iter_


def _brute_force_neighbours(graph, max_in_degree, allowed, required, forbidden):
    """Every acyclic graph one edge operation away, by enumeration of edge sets."""
    n = len(graph.names)
    edges = graph.edges()
    out = set()

    def legal(es):
        parents = [[] for _ in range(n)]
        for p, c in es:
            parents[c].append(p)
        g = graph.with_parents(parents)
        if any(g.reaches(c, p) for p, c in es):
            return None
        if max_in_degree is not None and any(len(ps) > max_in_degree for ps in parents):
            return None
        if not required <= es or es & forbidden:
            return None
        if allowed is not None and not es <= (allowed | required):
            return None
        return g.key

    pairs = [(p, c) for p in range(n) for c in range(n) if p != c]
    for e in pairs:
        if e in edges:
            out.add(legal(edges - {e}))
            out.add(legal((edges - {e}) | {(e[1], e[0])}))
        else:
            out.add(legal(edges | {e}))
    out.discard(None)
    out.discard(graph.key)
    return out


@pytest.mark.parametrize("max_in_degree", [None, 1, 2])
def test_moves_match_brute_force(max_in_degree):
    names = ["a", "b", "c", "d"]
    rng = np.random.RandomState(0)
    for trial in range(20):
        order = rng.permutation(4)
        parents = [[] for _ in names]
        for i, j in itertools.combinations(range(4), 2):
            if rng.rand() < 0.4:
                parents[order[j]].append(order[i])
        graph = _Graph(names, [False] * 4, parents)
        required = {e for e in graph.edges() if rng.rand() < 0.3}
        forbidden = {(0, 3)} - graph.edges()
        allowed = None if trial % 2 else {(p, c) for p in range(4) for c in range(4) if p != c
                                          and rng.rand() < 0.8} | graph.edges()
        if max_in_degree is not None and any(len(ps) > max_in_degree for ps in graph.parents):
            continue
        moves = _MoveSet(graph, allowed, required, forbidden, max_in_degree,
                         ("add", "remove", "reverse"))
        got = [g.key for _, g in moves.neighbours(graph)]
        assert len(got) == len(set(got))
        assert set(got) == _brute_force_neighbours(graph, max_in_degree, allowed, required, forbidden)


def test_constraints_are_respected_and_validated(beal_data):
    X = beal_data[:800]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DAGStructureSearch(
            _dag((3, 3, 3, 3), max_iter=100), allowed_edges=BIPARTITE,
            required_edges=[("s1", "y1")],
            max_steps=2, random_state=0,
        ).fit(X)
    for s in search.results_["structure"]:
        assert "s1" in s["y1"]
    assert len(search.path_) <= 3
    with pytest.raises(ValueError, match="both required and forbidden"):
        DAGStructureSearch(_dag((1, 0, 0, 0)), required_edges=[("s1", "y1")],
                           forbidden_edges=[("s1", "y1")]).fit(X)
    with pytest.raises(ValueError, match="unknown node 'zz'"):
        DAGStructureSearch(_dag(), forbidden_edges=[("zz", "y1")]).fit(X)
    with pytest.raises(ValueError, match="exceed max_in_degree=1"):
        DAGStructureSearch(_dag((3, 0, 0, 0)), max_in_degree=1).fit(X)
    with pytest.raises(ValueError, match="lacks the required edge"):
        DAGStructureSearch(_dag(), required_edges=[("s1", "y1")]).fit(X)
    with pytest.raises(ValueError, match="needs a non-empty list of structures"):
        DAGStructureSearch(_dag(), search="exhaustive").fit(X)


def test_restarts_start_from_random_legal_graphs(beal_data):
    X = beal_data[:1500]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DAGStructureSearch(
            _dag((1, 3, 3, 3), max_iter=150), allowed_edges=BIPARTITE, n_restarts=2,
            max_steps=3, random_state=0, forbidden_edges=[("s2", "y1")],
        ).fit(X)
    starts = [p for p in search.path_ if p["move"] is None]
    assert [p["restart"] for p in starts] == [0, 1, 2]
    assert set(search.results_["restart"]) == {0, 1, 2}
    for s in search.results_["structure"]:
        assert "s2" not in s["y1"]  # forbidden edges never appear, in any restart
    assert search.best_score_ == pytest.approx(np.nanmax(search.results_["score_vb"]))


# ------------------------------------------------------------- attaching a hidden node
LATENT_OBSERVED = [0, 1, 2, 3, 4]


def _latent_class_data(n, strength, seed):
    """Five ternary columns; with ``strength`` > 0 each copies the state of one binary
    hidden class (0 -> 0, 1 -> 2) with that probability, else uniform noise."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    copy = rng.random((n, len(LATENT_OBSERVED))) < strength
    return np.where(copy, 2 * z[:, None], rng.integers(0, 3, (n, len(LATENT_OBSERVED))))


def _latent_search(X, **kw):
    est = VBDiscreteDAG({"h": [], **{c: [] for c in LATENT_OBSERVED}},
                        cardinalities={"h": 2, **{c: 3 for c in LATENT_OBSERVED}}, hidden="h",
                        n_init=2, max_iter=300, tol=1e-4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DAGStructureSearch(est, max_in_degree=2, random_state=0, **kw).fit(X)


@pytest.mark.parametrize("scoring", ["vb", "bic"])
def test_greedy_search_attaches_a_hidden_node_from_the_empty_graph(scoring):
    X = _latent_class_data(300, 0.85, seed=0)
    search = _latent_search(X, scoring=scoring)
    children = [c for c in LATENT_OBSERVED if "h" in search.best_structure_[c]]
    assert len(children) >= 4
    attach = [p for p in search.path_ if p["move"] is not None and p["move"][0] == "attach"]
    assert len(attach) == 1 and attach[0]["move"][1] == "h"
    # better than the best graph over the observed nodes alone
    observed_only = _latent_search(X, scoring=scoring,
                                   forbidden_edges=[("h", c) for c in LATENT_OBSERVED])
    assert not any("h" in ps for s in observed_only.results_["structure"] for ps in s.values())
    assert search.best_score_ > observed_only.best_score_ + 20


def test_greedy_search_leaves_the_hidden_node_out_without_latent_structure():
    X = _latent_class_data(300, 0.0, seed=1)  # independent uniform columns
    search = _latent_search(X)
    assert not any("h" in ps for ps in search.best_structure_.values())
    # the attach move was proposed and scored, and lost
    attached = [i for i, s in enumerate(search.results_["structure"])
                if sum("h" in ps for ps in s.values()) >= 2]
    assert attached
    assert np.max(search.results_["score_vb"][attached]) < search.best_score_ - 1.0


def test_attach_move_respects_constraints():
    # h hidden and childless, with parent c (so h -> c would close a cycle); b is at the
    # in-degree limit; d may not be a child of h
    names = ["h", "a", "b", "c", "d", "e"]
    parents = [[3], [], [1], [], [], []]
    graph = _Graph(names, [True] + [False] * 5, parents)
    moves = _MoveSet(graph, None, set(), {(0, 4)}, 1, ("add", "attach"))
    attach = [(m, g) for m, g in moves.neighbours(graph) if m[0] == "attach"]
    assert len(attach) == 1
    (kind, h, children), g = attach[0]
    assert h == 0 and children == (1, 5)
    assert g.edges() == graph.edges() | {(0, 1), (0, 5)}
    # a hidden node that already has a child is not attached again
    assert not [m for m, _ in moves.neighbours(g) if m[0] == "attach"]
    no_attach = _MoveSet(graph, None, set(), {(0, 4)}, 1, ("add",))
    assert not [m for m, _ in no_attach.neighbours(graph) if m[0] == "attach"]
