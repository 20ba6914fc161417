"""DAG panel: the edges of discrete Bayesian networks.

Problems
    ``beal-n{n}``: Beal (2003) Chapter 6 (Tables 6.1 and 6.5): the 136 structures of
    2 binary hidden and 4 five-valued observed nodes, data from the thesis's printed
    true parameters (:func:`~sklearn_vb.datasets.make_beal_dag`, one stream per seed);
    the structure is right when the top-ranked one is the truth; ``rank_of_true`` is
    reported beside it (Table 6.1's column VB).  Held out: 2000 new cases.
    ``<network>-n{n}``: networks bundled with pgmpy (asia: 8 nodes, 8 edges; sachs: 11
    nodes, 17 edges; child: 20 nodes, 25 edges), forward-sampled, fully observed; held out:
    2000 new cases.  The distance is the structural Hamming distance to the true DAG (a
    missing, extra or reversed edge counts 1; edges whose direction the data cannot
    identify count when reversed too).  Held-out log-likelihood per row of every
    method's DAG uses the same parameter estimate (posterior-mean CPTs under the
    Dirichlet(1) prior, ``VBDiscreteDAG(structure=...)``), so it compares structures only.
Methods
    ``sklearn_vb``: ``DAGStructureSearch`` with its defaults (greedy from the empty graph,
    score "vb"; on Beal's class ``search="exhaustive"`` over the 136 structures); gap: its
    score minus the same score of the true structure.
    ``pgmpy HillClimb BIC / K2 / BDeu``: ``HillClimbSearch(data).estimate(scoring_method=
    "bic-d" / "k2" / "bdeu")`` with its defaults (fully observed networks only); gap: its
    score of its DAG minus that of the true DAG.
"""

from __future__ import annotations

import warnings

import numpy as np

from .common import NotApplicable, Outcome, Problem, check_size, edge_shd

_SIZES = {
    "guard": {"seeds": (0, 1), "beal_n": (480, 2560), "networks": (("asia", 1000),),
              "n_test": 1000},
    "quick": {"seeds": (0,), "beal_n": (480,), "networks": (("asia", 500),), "n_test": 1000},
    "full": {"seeds": (0, 1, 2), "beal_n": (160, 640, 2560, 5120),
             "networks": (("asia", 200), ("asia", 1000), ("asia", 5000), ("sachs", 200),
                          ("sachs", 1000), ("sachs", 5000), ("child", 500), ("child", 5000)),
             "n_test": 2000},
}


def _edges(structure):
    return sorted((str(p), str(c)) for c, ps in structure.items() for p in ps)


def _beal(n, cfg):
    from sklearn_vb.datasets import (BEAL_TRUE_CODE, bipartite_structure, make_beal_dag)

    truth = _edges(bipartite_structure(BEAL_TRUE_CODE)[0])

    def make(seed):
        X = make_beal_dag(n + cfg["n_test"], random_state=seed)
        return {"X": X[:n], "X_test": X[n:], "beal": True}

    return Problem(f"beal-n{n}", truth, cfg["seeds"], make)


def _network(name, n, cfg):
    def make(seed):
        from pgmpy.sampling import BayesianModelSampling
        from pgmpy.utils import get_example_model

        # the bundled copy (its successor, pgmpy.example_models.load_model, downloads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model = get_example_model(name)
        nodes = sorted(model.nodes())
        frame = BayesianModelSampling(model).forward_sample(
            size=n + cfg["n_test"], seed=seed, show_progress=False)[nodes]
        codes = np.column_stack([
            frame[v].map({s: i for i, s in enumerate(model.states[v])}).to_numpy(int)
            for v in nodes])
        return {"X": codes[:n], "X_test": codes[n:], "frame": frame.iloc[:n], "nodes": nodes,
                "cards": {v: len(model.states[v]) for v in nodes},
                "truth_structure": {v: sorted(model.get_parents(v)) for v in nodes},
                "beal": False}

    # the true edges need pgmpy; they are read when the data are made
    return Problem(f"{name}-n{n}", f"{name} (pgmpy)", cfg["seeds"], make, info={"network": name})


def problems(size):
    cfg = _SIZES[check_size(size)]
    out = [_beal(n, cfg) for n in cfg["beal_n"]]
    return out + [_network(name, n, cfg) for name, n in cfg["networks"]]


def _truth_edges(problem, data):
    if data["beal"]:
        return problem.truth
    return _edges(data["truth_structure"])


def _heldout(structure, data, seed):
    from sklearn_vb import VBDiscreteDAG

    est = VBDiscreteDAG(structure=structure, cardinalities=data["cards"], random_state=seed)
    return est.fit(data["X"]).score(data["X_test"])


def _outcome(problem, data, edges, heldout, gap, extra=None):
    truth = _truth_edges(problem, data)
    shd = edge_shd(edges, truth, directed=True)
    return Outcome(edges, recovered=shd == 0, distance=float(shd), heldout=heldout, gap=gap,
                   extra=extra or {})


def _ours_beal(problem, data, seed):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import (BEAL_TRUE_CODE, bipartite_structure,
                                     enumerate_bipartite_structures)
    from sklearn_vb.model_selection import DAGStructureSearch

    codes = enumerate_bipartite_structures()
    structures = [bipartite_structure(c) for c in codes]
    search = DAGStructureSearch(VBDiscreteDAG(*structures[0]), search="exhaustive",
                                structures=structures, random_state=seed).fit(data["X"])
    scores = np.asarray(search.results_["score_vb"], dtype=float)
    true_score = scores[codes.index(BEAL_TRUE_CODE)]
    rank = 1 + int(np.sum(scores > true_score))
    edges = _edges(search.best_structure_)
    return _outcome(problem, data, edges, search.best_estimator_.score(data["X_test"]),
                    float(search.best_score_ - true_score), {"rank_of_true": rank})


def ours(problem, data, seed):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.model_selection import DAGStructureSearch

    if data["beal"]:
        return _ours_beal(problem, data, seed)
    empty = {v: [] for v in data["nodes"]}
    search = DAGStructureSearch(VBDiscreteDAG(structure=empty, cardinalities=data["cards"]),
                                random_state=seed).fit(data["X"])
    edges = _edges(search.best_structure_)
    at_truth = VBDiscreteDAG(structure=data["truth_structure"], cardinalities=data["cards"],
                             random_state=seed).fit(data["X"])
    gap = float(search.best_score_ - at_truth.lower_bound_)
    return _outcome(problem, data, edges, search.best_estimator_.score(data["X_test"]), gap)


def _pgmpy(scoring_method, score_class):
    def method(problem, data, seed):
        import pgmpy.estimators as estimators
        from pgmpy.models import DiscreteBayesianNetwork

        if data["beal"]:
            raise NotApplicable("hidden nodes")
        dag = estimators.HillClimbSearch(data["frame"]).estimate(
            scoring_method=scoring_method, show_progress=False)
        edges = sorted((str(a), str(b)) for a, b in dag.edges())
        structure = {v: sorted(p for p, c in edges if c == v) for v in data["nodes"]}
        scorer = getattr(estimators, score_class)(data["frame"])
        truth = DiscreteBayesianNetwork(_truth_edges(problem, data))
        truth.add_nodes_from(data["nodes"])
        found = DiscreteBayesianNetwork(edges)
        found.add_nodes_from(data["nodes"])
        gap = float(scorer.score(found) - scorer.score(truth))
        return _outcome(problem, data, edges, _heldout(structure, data, seed), gap)

    return method


METHODS = {"sklearn_vb": ours, "pgmpy HillClimb BIC": _pgmpy("bic-d", "BIC"),
           "pgmpy HillClimb K2": _pgmpy("k2", "K2"),
           "pgmpy HillClimb BDeu": _pgmpy("bdeu", "BDeu")}
