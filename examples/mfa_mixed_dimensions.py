"""Clusters of different intrinsic dimension: how many components, how many factors?
=================================================================================

A 1-D line, a 2-D plane and a 3-D blob (200 points each) embedded in 10 dimensions
(thesis section 4.5.2 in miniature).  The birth/death search chooses the number of
analysers by the lower bound F, and ARD switches off the loading columns each analyser
does not need.  The figure shows the squared norm of every loading column (relative to
the total noise variance; the dashed line is the ``ard_threshold`` that counts a factor
as active) and the data projected on their two leading principal components, coloured
by analyser.

Run ``python examples/mfa_mixed_dimensions.py [--quick] [--output FILE.png]``.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBMixtureFactorAnalysers  # noqa: E402
from sklearn_vb.datasets import make_mixed_dimension_clusters  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one pass of the search")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", default="mfa_mixed_dimensions.png")
    args = parser.parse_args(argv)

    X, truth = make_mixed_dimension_clusters(dims=(1, 2, 3), random_state=args.seed)
    model = VBMixtureFactorAnalysers(
        random_state=args.seed, max_tries=1 if args.quick else 3,
        max_iter=5000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    labels = model.predict(X)
    print(f"components: {model.n_components_} (true 3); factors: "
          f"{model.n_factors_per_component_.tolist()} (true 1, 2, 3 in some order)")

    psi = model.noise_variance_ / model._scale_**2
    col = np.sum(model.loading_means_[:, :, :-1] ** 2, axis=1) / psi.sum()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    width = 0.8 / model.n_components_
    for s in range(model.n_components_):
        order = np.sort(col[s])[::-1]
        ax.bar(np.arange(order.size) + s * width, order + 1e-12, width,
               label=f"analyser {s}: {model.n_factors_per_component_[s]} factors")
    ax.axhline(model.ard_threshold, ls="--", color="k")
    ax.set_yscale("log")
    ax.set_ylim(1e-8, None)
    ax.set_xlabel("loading column (sorted)")
    ax.set_ylabel("||column||^2 / total noise")
    ax.legend(fontsize=8)
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Xc @ Vt[:2].T
    axes[1].scatter(*P.T, c=[f"C{label % 10}" for label in labels], s=5)
    axes[1].set_title("data (2 leading PCs), coloured by analyser")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    return model, truth


if __name__ == "__main__":
    main()
