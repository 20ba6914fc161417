"""Handwritten digits: the analysers and factors a VB mixture of factor analysers finds
====================================================================================

scikit-learn's bundled 8x8 digits (1797 images, 64 pixels).  The birth/death search
chooses the number of analysers, ARD the number of factors of each (at most
``--factors``).  The figure shows, for each analyser, its centre and the centre
plus and minus two standard deviations along its strongest factors, as images
(cf. thesis Fig. 4.10), with the analyser's mixing weight and the majority digit of
its points.  The noise floor is raised to 1e-2 of each pixel's variance: border
pixels inked in only a few images would otherwise be explained by loadings alone,
their noise variance would drop to the floor, and each analyser's centre would pay
a large coding cost for them.

Run ``python examples/mfa_digits.py [--quick] [--factors K] [--output FILE.png]``.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

from sklearn_vb import VBMixtureFactorAnalysers  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 images of 0-2, short search")
    parser.add_argument("--factors", type=int, default=8)
    parser.add_argument("--psi-min", type=float, default=1e-2,
                        help="noise floor relative to each pixel's variance")
    parser.add_argument("--output", default="mfa_digits.png")
    args = parser.parse_args(argv)

    digits = load_digits()
    X, y = digits.data.astype(float), digits.target
    if args.quick:
        keep = np.flatnonzero(y < 3)[:300]
        X, y = X[keep], y[keep]
    model = VBMixtureFactorAnalysers(
        n_factors=min(args.factors, 4) if args.quick else args.factors, random_state=0,
        max_tries=1 if args.quick else 2, max_components=30, psi_min=args.psi_min,
        max_iter=800 if args.quick else 5000, polish_iter=100 if args.quick else 1000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    labels = model.predict(X)
    majority = np.array([np.bincount(y[labels == s], minlength=10).argmax()
                         if np.any(labels == s) else -1 for s in range(model.n_components_)])
    accuracy = np.mean(majority[labels] == y)
    print(f"components: {model.n_components_}, factors: "
          f"{model.n_factors_per_component_.tolist()}, majority-label accuracy {accuracy:.3f}")

    n_show = 3
    S = model.n_components_
    order = np.argsort(-model.weights_)
    fig, axes = plt.subplots(S, 1 + 2 * n_show, figsize=(1.1 * (1 + 2 * n_show), 1.15 * S),
                             squeeze=False)
    for row, s in enumerate(order):
        c = model.means_[s]
        strength = np.sum(model.loadings_[s] ** 2, axis=0)
        cols = np.argsort(-strength)[:n_show]
        images = [c]
        for j in cols:
            if model.active_factors_[s, j]:
                images += [c - 2 * model.loadings_[s, :, j], c + 2 * model.loadings_[s, :, j]]
            else:
                images += [np.full(64, np.nan), np.full(64, np.nan)]
        for k, img in enumerate(images):
            ax = axes[row, k]
            ax.imshow(img.reshape(8, 8), cmap="gray_r", vmin=0, vmax=16)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[row, 0].set_ylabel(f"{majority[s]} ({model.weights_[s]:.2f})", fontsize=7)
    axes[0, 0].set_title("centre", fontsize=8)
    for k in range(n_show):
        axes[0, 1 + 2 * k].set_title(f"f{k + 1} -2sd", fontsize=8)
        axes[0, 2 + 2 * k].set_title(f"f{k + 1} +2sd", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=90)
    plt.close(fig)
    return model, accuracy


if __name__ == "__main__":
    main()
