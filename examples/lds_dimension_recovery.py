"""Hidden-state dimension recovery by ARD (Beal 2003, §5.4.1-5.4.2)
================================================================

Data from a 3-state linear dynamical system (p = 8 outputs) is fitted with
``n_states=6``; ARD switches off the unneeded dimensions.  Saves Hinton diagrams of
the learnt A and C (dimensions ordered by gamma, as in the thesis's Fig. 5.4) and
the trajectories of the inverse ARD hyperparameters ln(1/alpha_j) against
ln(1/gamma_j) (Fig. 5.5), then repeats the input-driven experiment of §5.4.2.

Run ``python examples/lds_dimension_recovery.py [--quick] [--out DIR]``.
"""

import argparse
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBLinearDynamicalSystem  # noqa: E402
from sklearn_vb.datasets import make_lds, make_lds_input_experiment, make_lds_params  # noqa: E402
from sklearn_vb.plotting import hinton, plot_ard, plot_lds_states  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lengths = [100, 300] if args.quick else [30, 100, 300, 1000]
    n_iter = 100 if args.quick else 500

    params = make_lds_params(3, 8, 0, random_state=0)
    X_all, _ = make_lds(params, [max(lengths)], random_state=0)
    fig, axes = plt.subplots(2, len(lengths), figsize=(3 * len(lengths), 6))
    models = []
    for col, T in enumerate(lengths):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = VBLinearDynamicalSystem(n_states=6, fit_intercept=False, max_iter=n_iter,
                                            random_state=0).fit(X_all[:T])
        order = np.argsort(model.gamma_)
        hinton(model.A_mean_[np.ix_(order, order)], axes[0, col], title=f"A, T={T}")
        hinton(model.C_mean_[:, order], axes[1, col],
               title=f"C ({model.n_effective_states_} states)")
        print(f"T={T}: {model.n_effective_states_} effective states, F={model.lower_bound_:.2f}")
        models.append(model)
    fig.tight_layout()
    fig.savefig(out / "lds_hinton.png", dpi=80)
    plt.close(fig)

    hist = models[-1].hyperparameter_history_
    fig, ax = plt.subplots(figsize=(5, 5))
    for j in range(hist["alpha"].shape[1]):
        ax.plot(-np.log(hist["alpha"][:, j]), -np.log(hist["gamma"][:, j]), ".-", ms=2)
    ax.set_xlabel("ln 1/alpha_j")
    ax.set_ylabel("ln 1/gamma_j")
    ax.set_title(f"ARD trajectories, T={lengths[-1]}")
    fig.savefig(out / "lds_ard_traces.png", dpi=80)
    plt.close(fig)

    # the ARD precisions of the longest fit, and its states with their uncertainty
    fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
    plot_ard(models[-1], ax)
    ax.set_title(f"ARD precisions, T={lengths[-1]}")
    fig.savefig(out / "lds_ard_precisions.png", dpi=80)
    plt.close(fig)
    axes = plot_lds_states(models[-1], X_all[:200])
    axes[0].set_title("filtered and smoothed states (first 200 steps)")
    axes[0].figure.savefig(out / "lds_states.png", dpi=80)
    plt.close(axes[0].figure)

    X, U, _, _ = make_lds_input_experiment(100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBLinearDynamicalSystem(n_states=4, fit_intercept=False,
                                        max_iter=2 * n_iter, random_state=0).fit(X, U=U)
    print("input experiment: 1/beta =", np.array2string(1 / model.beta_, precision=3),
          " 1/delta =", np.array2string(1 / model.delta_, precision=3))
    print("significant D entries per input:", model.significant_inputs()["D"].sum(axis=0))
    return models


if __name__ == "__main__":
    main()
