"""How many hidden states? Structure search for an HMM by VB and BIC
=================================================================

Sequences are drawn from a 3-state HMM over 6 symbols (each state mostly emits its own
pair of symbols, and stays put with probability 0.9).  :class:`~sklearn_vb.model_selection.StructureSearch` fits an
HMM with K = 1..8 states to the whole data set (several restarts each, seeds derived
from ``random_state`` and K) and ranks the candidates by the VB lower bound and by BIC
(both as log-evidence estimates in nats, higher is better).  The figure shows both
scores against K with the chosen K starred; the table printed is ``results_`` sorted
best first.

Candidates run in parallel with ``--n-jobs``; the same code runs on a dask cluster with
``joblib.parallel_config(backend="dask")``.

Run ``python examples/model_selection_hmm_states.py [--quick] [--output FILE.png]``.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBHiddenMarkov  # noqa: E402
from sklearn_vb.datasets import make_hmm_sequences  # noqa: E402
from sklearn_vb.model_selection import StructureSearch  # noqa: E402
from sklearn_vb.plotting import plot_score_vs_size  # noqa: E402


def true_hmm(n_states=3, n_symbols=6, stay=0.9):
    transmat = np.full((n_states, n_states), (1 - stay) / (n_states - 1))
    np.fill_diagonal(transmat, stay)
    emission = np.full((n_states, n_symbols), 0.02)
    for k in range(n_states):
        emission[k, 2 * k : 2 * k + 2] = 0.47
    emission /= emission.sum(axis=1, keepdims=True)
    return np.full(n_states, 1.0 / n_states), transmat, emission


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller grid and data (seconds)")
    parser.add_argument("--output", default="model_selection_hmm_states.png")
    parser.add_argument("--n-jobs", type=int, default=None)
    args = parser.parse_args(argv)

    startprob, transmat, emission = true_hmm()
    lengths = [100] * (6 if args.quick else 20)
    X, _, lengths = make_hmm_sequences(startprob, transmat, emission, lengths, random_state=0)
    grid = {"n_components": list(range(1, 6 if args.quick else 9))}
    search = StructureSearch(
        VBHiddenMarkov(n_init=3 if args.quick else 10, max_iter=200 if args.quick else 1000,
                       tol=1e-4),
        grid,
        scoring=["vb", "bic"],
        random_state=0,
        n_jobs=args.n_jobs,
        verbose=1,
    )
    with warnings.catch_warnings():
        # convergence warnings of individual restarts, and the note that the alias
        # correction ln K! is not available for this model yet
        warnings.simplefilter("ignore")
        search.fit(X, lengths=lengths)

    table = search.results_table()
    columns = ["param_n_components", "score_vb", "score_bic", "rank", "n_iter", "converged",
               "fit_time"]
    print(table[columns].to_string(index=False))
    print(f"chosen number of states: {search.best_params_['n_components']} (true: 3)")

    fig, ax = plt.subplots(figsize=(6, 4))
    plot_score_vs_size(search, "n_components", ax=ax)
    ax.axvline(3, color="grey", linestyle=":", label="true K")
    ax.set_title(f"HMM structure search ({len(lengths)} sequences of length 100)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    return search


if __name__ == "__main__":
    main()
