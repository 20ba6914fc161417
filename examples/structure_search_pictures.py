"""Pictures of structure searches: DAGs with hidden nodes and Markov random fields
=================================================================================

Two searches over graph structures, drawn with :mod:`sklearn_vb.plotting`.

* **A DAG with hidden nodes.**  Data from the true structure of Beal's experiment (two
  hidden binary parents of four observed 5-state variables, Beal 2003, §6.4) are scored
  by :class:`~sklearn_vb.model_selection.DAGStructureSearch` over a few structures of the
  same class, by the VB bound and BIC.  :func:`~sklearn_vb.plotting.plot_structure_search`
  draws the three best with their scores, :func:`~sklearn_vb.plotting.plot_parameters`
  the conditional probability tables of the best (Hinton diagrams).
* **A Markov random field.**  Samples of a five-node Boltzmann machine on a chain are
  searched greedily over undirected edge sets by
  :class:`~sklearn_vb.model_selection.MRFStructureSearch` with the Bethe-Laplace score
  (Parise and Welling 2006); the best graphs are drawn without arrows.

Run ``python examples/structure_search_pictures.py [--quick] [--out DIR]``.
"""

import argparse
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import PairwiseMRF, VBDiscreteDAG  # noqa: E402
from sklearn_vb.datasets import (  # noqa: E402
    BEAL_TRUE_CODE,
    bipartite_structure,
    enumerate_bipartite_structures,
    make_beal_dag,
    make_boltzmann_machine,
    sample_mrf,
)
from sklearn_vb.model_selection import DAGStructureSearch, MRFStructureSearch  # noqa: E402
from sklearn_vb.plotting import plot_parameters, plot_structure_search  # noqa: E402


def dag_search(n_samples, n_structures, n_init, seed=0):
    X = make_beal_dag(n_samples=n_samples, random_state=seed)
    codes = enumerate_bipartite_structures()
    rng = np.random.default_rng(seed)
    others = [c for c in codes if c != BEAL_TRUE_CODE]
    picked = [BEAL_TRUE_CODE] + [others[i] for i in rng.choice(len(others), n_structures - 1,
                                                                replace=False)]
    structure, cardinalities, hidden = bipartite_structure(BEAL_TRUE_CODE)
    estimator = VBDiscreteDAG(cardinalities=cardinalities, hidden=hidden, n_init=n_init,
                              random_state=seed)
    search = DAGStructureSearch(estimator, search="exhaustive",
                                structures=[bipartite_structure(c)[0] for c in picked],
                                scoring=["vb", "bic"], random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X)
    return search


def mrf_search(n_samples, seed=0):
    edges = [(0, 1), (1, 2), (2, 3), (3, 4)]
    coef = make_boltzmann_machine(edges, 5, d=1.0, random_state=seed)
    X = sample_mrf(coef, edges, 5, n_samples, random_state=seed)
    search = MRFStructureSearch(PairwiseMRF(), random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X)
    return search, edges


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer structures and cases")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    dag = dag_search(480 if args.quick else 2000, 6 if args.quick else 20, 1 if args.quick else 3)
    order = np.argsort(-dag.results_["score_vb"])
    print("DAG structures ranked by the VB bound (edges, vb, bic):")
    for i in order:
        print(f"  {int(dag.results_['n_edges'][i]):2d} edges  vb {dag.results_['score_vb'][i]:10.2f}"
              f"  bic {dag.results_['score_bic'][i]:10.2f}")
    axes = plot_structure_search(dag, n_best=3)
    axes[0].figure.suptitle("best DAG structures by the VB bound (shaded: hidden)")
    axes[0].figure.savefig(out / "dag_structure_search.png", dpi=90)
    plt.close(axes[0].figure)
    axes = plot_parameters(dag.best_estimator_, max_cols=3)
    axes[0].figure.suptitle("conditional probability tables of the best structure")
    axes[0].figure.savefig(out / "dag_best_cpts.png", dpi=90)
    plt.close(axes[0].figure)

    mrf, true_edges = mrf_search(300 if args.quick else 2000)
    print(f"MRF: best edge set {mrf.best_structure_} (true {true_edges})")
    axes = plot_structure_search(mrf, n_best=3)
    axes[0].figure.suptitle("best MRF structures by the Bethe-Laplace score")
    axes[0].figure.savefig(out / "mrf_structure_search.png", dpi=90)
    plt.close(axes[0].figure)
    return dag, mrf


if __name__ == "__main__":
    main()
