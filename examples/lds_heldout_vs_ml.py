"""Held-out error of VB against ML and MAP as the state dimension grows
====================================================================

The experiment of the thesis's Fig. 5.11, on simulated data.

Training and test sequences come from a 4-state system with p = 10 outputs.  For each
state dimension k the VB model (ARD) and point estimates are fitted on the training
sequence; the one-step-ahead prediction error on the test sequence is reported.
The baselines are the same estimator with ARD switched off and the column precisions
fixed, either at 1 ("MAP-like", unit priors) or at 1e-6 ("ML-like", vague priors).
They are not point-estimate EM fits: parameter uncertainty still enters their E
step, so the curves show the effect of ARD rather than of VB against true ML/MAP EM
(a point-estimate EM baseline is not implemented).

Run ``python examples/lds_heldout_vs_ml.py [--quick] [--out DIR]``.
"""

import argparse
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBLinearDynamicalSystem  # noqa: E402
from sklearn_vb.datasets import make_lds, make_lds_params  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ks = [1, 2, 4, 8] if args.quick else [1, 2, 3, 4, 6, 8, 12, 16]
    T = 100 if args.quick else 200
    n_iter = 60 if args.quick else 300

    params = make_lds_params(4, 10, 0, random_state=1)
    X, _ = make_lds(params, [T, 1000], random_state=1)
    X_train, X_test = X[:T], X[T:]
    settings = {
        "VB (ARD)": dict(ard=True),
        "fixed unit priors": dict(ard=False, ard_init=1.0),
        "fixed vague priors": dict(ard=False, ard_init=1e-6),
    }
    errors = {name: [] for name in settings}
    for k in ks:
        for name, extra in settings.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = VBLinearDynamicalSystem(n_states=k, fit_intercept=False,
                                                max_iter=n_iter, random_state=0,
                                                **extra).fit(X_train)
            pred = model.predict(X_test)
            errors[name].append(float(np.mean((pred - X_test) ** 2)))
        print(f"k={k}: " + ", ".join(f"{n}={errors[n][-1]:.3f}" for n in settings))
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, err in errors.items():
        ax.plot(ks, err, "o-", label=name)
    ax.set_xlabel("state dimension k")
    ax.set_ylabel("held-out one-step squared error")
    ax.legend()
    fig.savefig(out / "lds_heldout_vs_ml.png", dpi=80)
    plt.close(fig)
    return errors


if __name__ == "__main__":
    main()
