"""Input-driven transitions: an HMM whose switching depends on a known input
=============================================================================

A two-state chain emits three symbols.  Every frame also carries a known input level
u_t: under level 0 ("calm") the chain stays put with probability 0.95, under level 1
("shock") it switches with probability 0.9.  ``VBHiddenMarkov(transition_inputs=
"categorical")`` fits one Dirichlet transition matrix per level, given the levels as
``U``; the plain HMM, blind to them, has to average the two regimes.

The script fits both on training sequences and reports, for held-out sequences, the
log-likelihood per frame (the inputs predict the switches) and the two lower bounds on
the training data (the evidence for the input-driven model).  Then it repeats the
comparison on data whose input has no effect, where the bound prefers the plain model:
the second transition matrix costs its Dirichlet KL and explains nothing.  The figure
shows the true and the fitted transition matrices of both levels.

Run ``python examples/hmm_input_driven.py [--quick] [--output FILE.png]``.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBHiddenMarkov  # noqa: E402
from sklearn_vb.datasets import make_input_driven_hmm_sequences  # noqa: E402

A_TRUE = np.array([[[0.95, 0.05], [0.05, 0.95]],   # level 0: stay
                   [[0.1, 0.9], [0.9, 0.1]]])      # level 1: switch
EMISSIONS = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])


def simulate(transmats, n_sequences, length, rng, p_shock=0.3):
    """Symbols (n, 1), input levels (n,) and lengths of sequences of the input-driven
    chain with transition matrices ``transmats`` (2, K, K)."""
    X, _, U, lengths = make_input_driven_hmm_sequences(
        transmats, EMISSIONS, [length] * n_sequences, level_probs=[1 - p_shock, p_shock],
        random_state=int(rng.integers(2**31)))
    return X, U, lengths


def compare(transmats, n_sequences, rng):
    """Fit both models; return them and the held-out log-likelihoods per frame."""
    X, U, lengths = simulate(transmats, n_sequences, 100, rng)
    Xt, Ut, lt = simulate(transmats, n_sequences, 100, rng)
    io = VBHiddenMarkov(2, transition_inputs="categorical", random_state=0).fit(
        X, lengths=lengths, U=U)
    plain = VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths)
    return io, plain, io.score(Xt, lengths=lt, U=Ut), plain.score(Xt, lengths=lt)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sequences (seconds)")
    parser.add_argument("--output", default="hmm_input_driven.png")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    n_sequences = 10 if args.quick else 40

    results = {}
    for name, transmats in [("input matters", A_TRUE),
                            ("input irrelevant", np.stack([A_TRUE[0], A_TRUE[0]]))]:
        io, plain, io_heldout, plain_heldout = compare(transmats, n_sequences, rng)
        results[name] = (io, plain)
        print(f"{name}: held-out log-likelihood per frame {io_heldout:.4f} (inputs) vs "
              f"{plain_heldout:.4f} (plain); lower bound {io.lower_bound_:.1f} vs "
              f"{plain.lower_bound_:.1f} nats")

    io = results["input matters"][0]
    order = np.argsort(io.emissionprob_[:, 0])[::-1]  # state 0 emits symbol 0 most
    fitted = io.transmat_[:, order][:, :, order]
    fig, axes = plt.subplots(2, 2, figsize=(6, 5.5))
    for level in range(2):
        for row, (title, A) in enumerate([("true", A_TRUE), ("fitted", fitted)]):
            ax = axes[row, level]
            ax.imshow(A[level], vmin=0, vmax=1, cmap="Greys")
            for i in range(2):
                for j in range(2):
                    ax.text(j, i, f"{A[level, i, j]:.2f}", ha="center", va="center",
                            color="red")
            ax.set_title(f"{title}, input level {level}")
            ax.set_xticks([0, 1])
            ax.set_yticks([0, 1])
            ax.set_xlabel("to state")
            ax.set_ylabel("from state")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    return results


if __name__ == "__main__":
    main()
