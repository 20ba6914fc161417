"""MRF panel: the edges of binary pairwise Markov random fields.

Problems
    ``ising-p{p}-n{n}``: a random graph on p = 8 nodes (6 in the guard) (each edge present with
    probability 0.3; :func:`~sklearn_vb.datasets.random_undirected_structures`), Boltzmann
    machine weights of size 1 +- 0.1 with random signs and biases in [-1, 1]
    (:func:`~sklearn_vb.datasets.make_boltzmann_machine`), exact samples
    (:func:`~sklearn_vb.datasets.sample_mrf`); held out: 2000 further exact samples.
    The distance is the number of edges wrong (missing plus extra).
    ``breast-cancer-10``: scikit-learn's breast-cancer data, its first ten (mean)
    features thresholded at their training medians; ``wine-13``: the 13 wine
    features, likewise.  Random 75/25 split; held-out only (no true graph).
Held-out log-likelihood per row is exact (enumeration) for every method; a peer's graph
is scored by fitting ``PairwiseMRF(structure=its edges)`` (the same MAP estimate for
every graph), so the comparison is of the graphs.
Methods
    ``sklearn_vb``: ``MRFStructureSearch(PairwiseMRF())`` with its defaults (greedy from
    the empty graph, score "bethe_laplace"); gap: its score minus the score of the true
    graph.
    ``GraphicalLassoCV``: scikit-learn's graphical lasso on the 0/1 data taken as
    continuous (standardised); edges where the precision entry is nonzero.
    ``L1-logistic neighbourhood (OR)``: Meinshausen–Bühlmann / Ravikumar et al. style:
    ``LogisticRegressionCV(l1_ratios=(1,), solver="liblinear")`` of each node on the
    others; an edge where either regression keeps the other node.
"""

from __future__ import annotations

import numpy as np

from .common import Outcome, Problem, check_size, edge_shd

_SIZES = {
    "guard": {"seeds": (0, 1, 2), "ising": ((6, 1000),), "real": ()},
    "quick": {"seeds": (0,), "ising": ((8, 500),), "real": ("breast-cancer-10",)},
    "full": {"seeds": (0, 1, 2, 3, 4), "ising": ((8, 300), (8, 1000), (8, 3000)),
             "real": ("breast-cancer-10", "wine-13")},
}
N_TEST = 2000


def _ising(p, n, cfg):
    from sklearn_vb.datasets import make_boltzmann_machine, random_undirected_structures, sample_mrf

    def make(seed):
        edges = random_undirected_structures(1, n_nodes=p, edge_prob=0.3, random_state=seed)[0]
        coef = make_boltzmann_machine(edges, p, d=1.0, random_state=seed)
        X = sample_mrf(coef, edges, p, n + N_TEST, random_state=seed)
        return {"X": X[:n], "X_test": X[n:], "truth": [tuple(map(int, e)) for e in edges]}

    return Problem(f"ising-p{p}-n{n}", "random graph per seed", cfg["seeds"], make)


def _real(name, cfg):
    def make(seed):
        from sklearn.datasets import load_breast_cancer, load_wine

        X = load_breast_cancer().data[:, :10] if name.startswith("breast") else load_wine().data
        perm = np.random.default_rng(seed + 55).permutation(X.shape[0])
        n_test = X.shape[0] // 4
        train, test = X[perm[n_test:]], X[perm[:n_test]]
        med = np.median(train, axis=0)
        return {"X": (train > med).astype(int), "X_test": (test > med).astype(int), "truth": None}

    return Problem(name, None, cfg["seeds"], make)


def problems(size):
    cfg = _SIZES[check_size(size)]
    return [_ising(p, n, cfg) for p, n in cfg["ising"]] + [_real(r, cfg) for r in cfg["real"]]


def _outcome(data, edges, heldout, gap=None):
    edges = sorted(tuple(sorted(map(int, e))) for e in edges)
    if data["truth"] is None:
        return Outcome(edges, heldout=heldout)
    shd = edge_shd(edges, data["truth"], directed=False)
    return Outcome(edges, recovered=shd == 0, distance=float(shd), heldout=heldout, gap=gap)


def _heldout(edges, data):
    from sklearn_vb import PairwiseMRF

    return PairwiseMRF(structure=list(edges)).fit(data["X"]).score(data["X_test"])


def ours(problem, data, seed):
    from sklearn_vb import PairwiseMRF
    from sklearn_vb.model_selection import MRFStructureSearch
    from sklearn_vb.scoring import score

    search = MRFStructureSearch(PairwiseMRF(), random_state=seed).fit(data["X"])
    gap = None
    if data["truth"] is not None:
        at_truth = PairwiseMRF(structure=data["truth"]).fit(data["X"])
        true_score = score(at_truth, data["X"], search.scoring, random_state=seed).log_evidence
        gap = float(search.best_score_ - true_score)
    return _outcome(data, search.best_structure_, search.best_estimator_.score(data["X_test"]),
                    gap)


def glasso(problem, data, seed):
    from sklearn.covariance import GraphicalLassoCV

    X = data["X"].astype(float)
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    prec = GraphicalLassoCV().fit(Z).precision_
    p = X.shape[1]
    edges = [(i, j) for i in range(p) for j in range(i + 1, p) if abs(prec[i, j]) > 1e-8]
    return _outcome(data, edges, _heldout(edges, data))


def neighbourhood(problem, data, seed):
    from sklearn.linear_model import LogisticRegressionCV

    X = data["X"]
    p = X.shape[1]
    edges = set()
    for i in range(p):
        others = [j for j in range(p) if j != i]
        y = X[:, i]
        if np.unique(y).size < 2:
            continue
        m = LogisticRegressionCV(Cs=10, l1_ratios=(1.0,), solver="liblinear", cv=5,
                                 random_state=seed).fit(X[:, others], y)
        for j, w in zip(others, m.coef_[0]):
            if abs(w) > 1e-8:
                edges.add(tuple(sorted((i, j))))
    edges = sorted(edges)
    return _outcome(data, edges, _heldout(edges, data))


METHODS = {"sklearn_vb": ours, "GraphicalLassoCV": glasso,
           "L1-logistic neighbourhood (OR)": neighbourhood}
