"""Continuous inputs: an HMM whose switching probabilities follow a real-valued input
===================================================================================

A two-state chain emits three symbols.  Every frame carries a known real input u_t
(standard normal): state 0 stays with probability sigma(2.5 - 2.5 u_t), and state 1
moves to state 0 with probability sigma(-2.5 - 2.5 u_t), so a large input pushes the
chain into state 1 and keeps it there.  ``VBHiddenMarkov(transition_inputs=
"continuous")`` fits stick-breaking logistic transitions of [u_t, 1] with Gaussian
coefficients (VB through the Jaakkola-Jordan bound, so ``lower_bound_`` bounds
ln p(X | U)); the plain HMM is blind to the input, and the categorical-input HMM sees it
binned into four quantile levels.

The script reports the three lower bounds on the training data and the held-out
log-likelihoods per frame, repeats the comparison on data whose input has no effect
(where the bound prefers the plain model), and draws the fitted probability of staying
in each state against u_t with the true curves.

Run ``python examples/hmm_continuous_inputs.py [--quick] [--output FILE.png]``.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBHiddenMarkov  # noqa: E402
from sklearn_vb.datasets import make_input_driven_hmm_sequences  # noqa: E402
from sklearn_vb.hmm import stick_breaking_transitions  # noqa: E402

#: row k's single stick is "go to state 0"; the bias is last
COEF = np.array([[[-2.5, 2.5]], [[-2.5, -2.5]]])
COEF_NULL = np.array([[[0.0, 2.5]], [[0.0, -2.5]]])
EMISSIONS = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])


def simulate(coef, n_sequences, seed):
    X, _, U, lengths = make_input_driven_hmm_sequences(
        None, EMISSIONS, [100] * n_sequences, transition_coef=coef, random_state=seed)
    return X, U, lengths


def compare(coef, n_sequences):
    """Fit the three models; return them and their held-out log-likelihoods per frame."""
    X, U, lengths = simulate(coef, n_sequences, 0)
    Xt, Ut, lt = simulate(coef, n_sequences, 1)
    edges = np.quantile(U[:, 0], [0.25, 0.5, 0.75])
    levels, levels_t = np.searchsorted(edges, U[:, 0]), np.searchsorted(edges, Ut[:, 0])
    models = {
        "continuous": VBHiddenMarkov(2, transition_inputs="continuous", random_state=0).fit(
            X, lengths=lengths, U=U),
        "4 bins": VBHiddenMarkov(2, transition_inputs="categorical", random_state=0).fit(
            X, lengths=lengths, U=levels),
        "plain": VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths),
    }
    heldout = {
        "continuous": models["continuous"].score(Xt, lengths=lt, U=Ut),
        "4 bins": models["4 bins"].score(Xt, lengths=lt, U=levels_t),
        "plain": models["plain"].score(Xt, lengths=lt),
    }
    return models, heldout


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sequences (seconds)")
    parser.add_argument("--output", default="hmm_continuous_inputs.png")
    args = parser.parse_args(argv)
    n_sequences = 10 if args.quick else 40

    results = {}
    for name, coef in [("input matters", COEF), ("input irrelevant", COEF_NULL)]:
        models, heldout = compare(coef, n_sequences)
        results[name] = models
        print(f"{name}:")
        for label, model in models.items():
            print(f"  {label:>10}: lower bound {model.lower_bound_:9.1f} nats, held-out "
                  f"log-likelihood {heldout[label]:.4f} per frame")

    model = results["input matters"]["continuous"]
    u = np.linspace(-3, 3, 200)[:, None]
    # name the fitted states as the truth does: state 0 emits symbol 0 most
    order = np.argsort(model.emissionprob_[:, 0])[::-1]
    fitted = stick_breaking_transitions(model.transition_coef_, u)[:, order][:, :, order]
    true = stick_breaking_transitions(COEF, u)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for k, colour in enumerate(["tab:blue", "tab:red"]):
        ax.plot(u[:, 0], true[:, k, k], color=colour, lw=2, alpha=0.4,
                label=f"true, state {k}")
        ax.plot(u[:, 0], fitted[:, k, k], color=colour, ls="--",
                label=f"fitted, state {k}")
    ax.set_xlabel("input u_t")
    ax.set_ylabel("p(stay in the state)")
    ax.set_title("Stick-breaking logistic transitions, posterior means")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    return results


if __name__ == "__main__":
    main()
