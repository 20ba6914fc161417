"""Edge search of binary pairwise MRFs on real data against graphical lasso and
L1-logistic neighbourhood selection: time and held-out log-likelihood in one run.

One workload per data set, ``mrf-search-<data>``: scikit-learn's breast-cancer data
(its first 10 or 15 features), wine (13 features) and digits (the 16 or 20 pixels of
largest training variance), each column thresholded at its training median (as the
selection panel, :mod:`benchmarks.selection.mrf`), random 75/25 split (seed 55).  Rows:

* ``sklearn_vb``: ``MRFStructureSearch(PairwiseMRF())`` with its defaults (greedy from
  the empty graph, exact Laplace evidence, the screen of predicted evidence changes);
  on 20 columns with ``PairwiseMRF(max_exact_states=2**20)``, so that the 2^20 joint
  states are enumerated (the default limit, 2^16, would fit these graphs by belief
  propagation) - in the search and in every row's held-out refit;
* ``sklearn_vb unscreened`` (full runs, the two smallest sets): ``screen=None``, every
  neighbour fitted at every step (the chosen edges must be the same);
* ``GraphicalLassoCV``: scikit-learn's graphical lasso with its cross-validated
  penalty, on the standardised 0/1 data; an edge where the precision entry is nonzero;
* ``GraphicalLasso (CV alpha)``: one graphical lasso fit at the penalty the CV chose
  (found before the timed call): the cost of the lasso when its penalty is known;
* ``L1-logistic neighbourhood (OR)``: ``LogisticRegressionCV(l1_ratios=(1,),
  solver="liblinear")`` of each node on the others, an edge where either keeps the other.

Every row's structure is scored the same way: ``PairwiseMRF(structure=its edges)``
fitted on the training rows, its exact held-out log-likelihood per row (``heldout``),
so the numbers compare the graphs.  The time of a row is its structure search only
(the refit for the held-out score is not timed); ``cpu_s`` is the process CPU time of
the same call (BLAS on one thread), steadier than the wall time on a loaded machine.
The ratios are ours over the row's, in wall and in CPU time.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .harness import workload

DATASETS = ("breast-cancer-10", "wine-13", "breast-cancer-15", "digits-16", "digits-20")


def _mrf_options(X):
    """The estimator options of every row's ``PairwiseMRF``: exact enumeration up to 20
    columns."""
    return {"max_exact_states": 2**20} if X.shape[1] > 16 else {}
#: the data sets with an unscreened row in full runs (it fits every neighbour)
UNSCREENED = ("breast-cancer-10", "wine-13")
QUICK = "breast-cancer-8"


def binary_split(name, seed=0):
    """Training and test 0/1 matrices of data set ``name`` (see the module docstring)."""
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    kind, _, k = name.rpartition("-")
    k = int(k)
    if kind == "breast-cancer":
        X = load_breast_cancer().data[:, :k]
    elif kind == "wine":
        X = load_wine().data[:, :k]
    elif kind == "digits":
        X = load_digits().data
    else:
        raise ValueError(f"unknown data set {name!r}")
    perm = np.random.default_rng(seed + 55).permutation(X.shape[0])
    n_test = X.shape[0] // 4
    train, test = X[perm[n_test:]], X[perm[:n_test]]
    if kind == "digits":
        cols = np.sort(np.argsort(-train.var(axis=0), kind="stable")[:k])
        train, test = train[:, cols], test[:, cols]
    med = np.median(train, axis=0)
    return (train > med).astype(int), (test > med).astype(int)


def _edges_from_precision(prec):
    p = prec.shape[0]
    return [(i, j) for i in range(p) for j in range(i + 1, p) if abs(prec[i, j]) > 1e-8]


def _standardise(X):
    X = X.astype(float)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def _result(edges, seconds, cpu, X, X_test, extra=None):
    from sklearn_vb import PairwiseMRF

    edges = sorted(tuple(sorted(map(int, e))) for e in edges)
    heldout = PairwiseMRF(structure=edges, **_mrf_options(X)).fit(X).score(X_test)
    return {"n_iter": None, "elapsed_s": seconds, "cpu_s": cpu, "n_edges": len(edges),
            "heldout": float(heldout), **(extra or {}),
            "trace": {"edges": [list(e) for e in edges]}}  # written to the JSON file only


def _timed(fn):
    from threadpoolctl import threadpool_limits

    # the peers' convergence and deprecation warnings would bury the run's log
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.perf_counter() - t0, time.process_time() - c0


def _register(name):
    @workload(f"mrf-search-{name}", per="call", repeats=1, warmup=False, stem="mrf_search")
    def search_vs_glasso(quick):
        data = QUICK if quick else name
        X, X_test = binary_split(data)
        Z = _standardise(X)

        def ours(screen="default"):
            from sklearn_vb import PairwiseMRF
            from sklearn_vb.model_selection import MRFStructureSearch

            kw = {} if screen == "default" else {"screen": screen}
            s, sec, cpu = _timed(lambda: MRFStructureSearch(PairwiseMRF(**_mrf_options(X)),
                                                            random_state=0, **kw).fit(X))
            return _result(s.best_structure_, sec, cpu, X, X_test,
                           {"n_fitted": int(s.n_candidates_), "data": data})

        def glasso_cv():
            from sklearn.covariance import GraphicalLassoCV

            m, sec, cpu = _timed(lambda: GraphicalLassoCV().fit(Z))
            return _result(_edges_from_precision(m.precision_), sec, cpu, X, X_test,
                           {"alpha": float(m.alpha_)})

        def glasso_fixed():
            from sklearn.covariance import GraphicalLasso, GraphicalLassoCV

            alpha = _timed(lambda: GraphicalLassoCV().fit(Z))[0].alpha_  # chosen untimed
            m, sec, cpu = _timed(lambda: GraphicalLasso(alpha=alpha).fit(Z))
            return _result(_edges_from_precision(m.precision_), sec, cpu, X, X_test,
                           {"alpha": float(alpha)})

        def neighbourhood():
            from sklearn.linear_model import LogisticRegressionCV

            def select():
                p = X.shape[1]
                edges = set()
                for i in range(p):
                    others = [j for j in range(p) if j != i]
                    if np.unique(X[:, i]).size < 2:
                        continue
                    m = LogisticRegressionCV(Cs=10, l1_ratios=(1.0,), solver="liblinear", cv=5,
                                             random_state=0).fit(X[:, others], X[:, i])
                    edges |= {tuple(sorted((i, j))) for j, w in zip(others, m.coef_[0])
                              if abs(w) > 1e-8}
                return edges

            edges, sec, cpu = _timed(select)
            return _result(edges, sec, cpu, X, X_test)

        candidates = {"sklearn_vb": ours}
        if not quick and name in UNSCREENED:
            candidates["sklearn_vb unscreened"] = lambda: ours(screen=None)
        candidates.update({"GraphicalLassoCV": glasso_cv, "GraphicalLasso (CV alpha)": glasso_fixed,
                           "L1-logistic neighbourhood (OR)": neighbourhood})

        def summarize(measurements):
            mine = measurements[0]
            if mine.status != "ok":
                return
            for m in measurements[1:]:
                if m.status != "ok":
                    continue
                m.ratios["cpu ours/theirs"] = mine.metrics["cpu_s"] / max(m.metrics["cpu_s"], 1e-9)
                m.ratios["heldout ours - theirs"] = mine.metrics["heldout"] - m.metrics["heldout"]
                m.metrics["same_edges_as_sklearn_vb"] = m.trace["edges"] == mine.trace["edges"]

        return candidates, summarize

    return search_vs_glasso


for _name in DATASETS:
    _register(_name)
