"""VB lower bound of all 136 structures of Beal's DAG class against data size
==========================================================================

The class (thesis §6.5): 2 binary hidden nodes, 4 five-valued observed nodes, each
observed node with parent set {}, {s1}, {s2} or {s1, s2}; structures related by swapping
the hidden nodes are identified, leaving 136.  Data come from the true structure with
the thesis parameters, as nested data sets.  For every size the VB bound F of every
structure is computed (3 restarts, tolerance 1e-6 per case) and plotted per case,
relative to the best structure at that size, with the true structure highlighted
(cf. thesis Fig. 6.2).  The rank of the true structure is printed (1 = best).

Run ``python examples/dag_structure_scores.py [--quick] [--output FILE.png]``.
"""

import argparse
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402

from sklearn_vb import VBDiscreteDAG  # noqa: E402
from sklearn_vb.plotting import plot_structure  # noqa: E402
from sklearn_vb.datasets import (  # noqa: E402
    BEAL_SIZES,
    BEAL_TRUE_CODE,
    bipartite_structure,
    enumerate_bipartite_structures,
    make_beal_dag_datasets,
)


def vb_bounds(X, codes, n_init, max_iter, seed=0):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for code in codes:
            m = VBDiscreteDAG(*bipartite_structure(code), n_init=n_init, max_iter=max_iter,
                              tol=1e-6 * len(X), random_state=seed, bound_check="off").fit(X)
            out.append(m.lower_bound_)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 small sizes, 1 restart")
    parser.add_argument("--output", default="dag_structure_scores.png")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    sizes = (10, 40, 160) if args.quick else BEAL_SIZES[:17]
    n_init, max_iter = (1, 60) if args.quick else (3, 1000)
    n_jobs = 1 if args.quick else args.n_jobs
    data = make_beal_dag_datasets(sizes=sizes, random_state=args.seed)
    codes = enumerate_bipartite_structures()
    true_index = codes.index(BEAL_TRUE_CODE)
    chunks = [codes[i::n_jobs] for i in range(n_jobs)]

    F = np.empty((len(sizes), len(codes)))
    for row, n in enumerate(sizes):
        parts = Parallel(n_jobs=n_jobs)(delayed(vb_bounds)(data[n], c, n_init, max_iter) for c in chunks)
        bounds = {}
        for chunk, values in zip(chunks, parts):
            bounds.update(zip(chunk, values))
        F[row] = [bounds[c] for c in codes]
        rank = 1 + int(np.sum(F[row] > F[row, true_index]))
        print(f"n={n:6d}  best F={F[row].max():12.3f}  true F={F[row, true_index]:12.3f}  "
              f"rank of true structure {rank:3d}/136")

    ns = np.array(sizes, dtype=float)
    rel = (F - F.max(axis=1, keepdims=True)) / ns[:, None]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(ns, np.delete(rel, true_index, axis=1), color="0.7", lw=0.6)
    ax.plot(ns, rel[:, true_index], color="C3", lw=2.0, marker="o", label=f"true structure {BEAL_TRUE_CODE}")
    ax.set_xscale("log")
    ax.set_xlabel("number of cases n")
    ax.set_ylabel("(F - max F) / n   [nats per case]")
    ax.set_title("VB lower bound of the 136 structures")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"written {args.output}")

    # the three structures with the highest bound at the largest n, and the true one
    best = [int(i) for i in np.argsort(-F[-1])[:3]]
    picks = best + ([true_index] if true_index not in best else [])
    fig, axes = plt.subplots(1, len(picks), figsize=(3.2 * len(picks), 3.2), layout="constrained")
    for ax, i in zip(axes, picks):
        structure, _, hidden = bipartite_structure(codes[i])
        kind = "true, " if i == true_index else ""
        plot_structure(structure, ax, hidden=hidden,
                       title=f"{kind}rank {1 + int(np.sum(F[-1] > F[-1, i]))}: F = {F[-1, i]:.1f}")
    fig.suptitle(f"highest VB bounds at n = {sizes[-1]}")
    best_output = Path(args.output).with_name(Path(args.output).stem + "_best.png")
    fig.savefig(best_output, dpi=100)
    plt.close(fig)
    return F


if __name__ == "__main__":
    main()
