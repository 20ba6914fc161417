"""Output feedback through the inputs (Beal 2003, §5.5, eqs 5.152-5.154)
=====================================================================

The outputs of the previous step are fed back as inputs, u_t = y_{t-1}: the first
observation of each sequence is used only as an input, the rest are modelled.  Data
are simulated from y_t = D y_{t-1} + C x_t + noise with a sparse D; the entries of D
more than 3 posterior standard deviations from zero are reported and compared with
the true non-zero pattern.

Run ``python examples/lds_feedback.py [--quick]``.
"""

import argparse
import warnings

import numpy as np

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.datasets import make_lds_params


def feedback_data(T, n_seq, rng):
    p, k = 5, 2
    params = make_lds_params(k, p, 0, random_state=int(rng.integers(2**31)))
    D = np.zeros((p, p))
    D[0, 1], D[2, 2], D[4, 3] = 0.6, -0.5, 0.4
    Ys = []
    for _ in range(n_seq):
        x, y = rng.standard_normal(k), rng.standard_normal(p)
        rows = [y]
        for _ in range(T):
            x = params["A"] @ x + rng.standard_normal(k)
            y = 0.3 * params["C"] @ x + D @ y + rng.standard_normal(p)
            rows.append(y)
        Ys.append(np.array(rows))
    return Ys, D


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    Ys, D_true = feedback_data(100 if args.quick else 500, 3, rng)
    # u_t = y_{t-1}: drop the first row of each sequence from the modelled outputs
    X = np.vstack([Y[1:] for Y in Ys])
    U = np.vstack([Y[:-1] for Y in Ys])
    lengths = [Y.shape[0] - 1 for Y in Ys]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBLinearDynamicalSystem(n_states=4, input_to_state=False,
                                        max_iter=150 if args.quick else 500,
                                        random_state=0).fit(X, U=U, lengths=lengths)
    found = model.significant_inputs()["D"][:, :D_true.shape[1]]
    print("true non-zero D entries:\n", (D_true != 0).astype(int))
    print("significant D entries (|mean| > 3 sd):\n", found.astype(int))
    return model, found, D_true


if __name__ == "__main__":
    main()
