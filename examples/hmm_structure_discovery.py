"""Discovering the structure of an HMM with variational Bayes (Beal 2003, section 3.5.1)
=====================================================================================

Training data: 21 sequences over the alphabet {a, b, c} of three kinds -- substrings of
(abc)*, substrings of (acb)*, and (a*b*)* with a and b equally likely.  A perfect model
needs 3 + 3 + 1 = 7 hidden states.  We fit an HMM with K = 12 states and symmetric
Dirichlet priors of strength 4 (as in the thesis); VB switches off the states the data do
not need.  The figure shows the posterior-mean transition and emission matrices (only
the rows of states in use are meaningful) and the lower bound at every iteration.

Run ``python examples/hmm_structure_discovery.py [--quick] [--output FILE.png]``.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBHiddenMarkov  # noqa: E402
from sklearn_vb.datasets import make_structure_discovery_sequences  # noqa: E402
from sklearn_vb.plotting import hinton, plot_bound_trace  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few restarts (a few seconds)")
    parser.add_argument("--output", default="hmm_structure_discovery.png")
    args = parser.parse_args(argv)

    X, lengths, kinds = make_structure_discovery_sequences(n_per_kind=7, random_state=0)
    K, M, strength = 12, 3, 4.0
    model = VBHiddenMarkov(
        K,
        n_symbols=M,
        startprob_prior=strength / K,
        transmat_prior=strength / K,
        emissionprob_prior=strength / M,
        max_iter=500 if args.quick else 2000,
        tol=1e-6,
        n_init=30 if args.quick else 100,
        init_params="random_params",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, lengths=lengths)

    used = np.flatnonzero(model.occupancy_ >= 1.0)
    print(f"{len(lengths)} sequences, {len(X)} symbols; K = {K} states fitted")
    print(f"lower bound: {model.lower_bound_:.3f} nats after {model.n_iter_} iterations")
    print(f"states in use (occupancy >= 1 frame): {model.n_effective_components_} "
          f"(a perfect model needs 7)")
    print("occupancy:", np.round(model.occupancy_, 1))
    # each state in use: its most likely symbol and successor
    letters = np.array(list("abc"))
    for k in used:
        emits = ", ".join(f"{c}={p:.2f}" for c, p in zip(letters, model.emissionprob_[k]))
        print(f"  state {k:2d}: emits {emits}; next state {np.argmax(model.transmat_[k])} "
              f"(p={model.transmat_[k].max():.2f})")

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), gridspec_kw={"width_ratios": [1.2, 0.45, 1]})
    hinton(model.transmat_, axes[0], max_weight=1.0, title="posterior-mean transition matrix",
           xlabel="to state", ylabel="from state")
    hinton(model.emissionprob_, axes[1], max_weight=1.0, title="emissions",
           xticklabels=letters, ylabel="state")
    for k in range(K):
        if k not in used:
            for ax in axes[:2]:
                ax.axhline(k, color="tab:red", alpha=0.25, linewidth=6)
    plot_bound_trace(model, axes[2], clip=False)
    axes[2].set_title(f"lower bound ({model.n_effective_components_} of {K} states used)")
    axes[2].set_xscale("log")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"figure written to {args.output}")
    return model


if __name__ == "__main__":
    main()
