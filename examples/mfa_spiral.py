"""Tiling a noisy spiral with locally linear analysers (Beal 2003, section 4.5.3)
==============================================================================

800 points from the shrinking spiral of Ueda et al. (2000) in 3-D, a 1-dimensional
manifold embedded non-linearly.  ``VBMixtureFactorAnalysers`` starts from one analyser
and grows the mixture by births (accepted only when the lower bound F improves); each
analyser has at most ``--factors`` factors (default 1, so the spiral is covered by a
chain of line segments; with 2, ARD decides how many each analyser keeps).  The
figure shows the analysers (centre and +-2 s.d. along each active factor) over the
data, and F against VBEM iterations for the whole search, accepted and rejected
epochs drawn differently (cf. thesis Figs 4.6 and 4.7).

Run ``python examples/mfa_spiral.py [--quick] [--factors K] [--output FILE.png]``.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBMixtureFactorAnalysers  # noqa: E402
from sklearn_vb.datasets import make_noisy_spiral  # noqa: E402
from sklearn_vb.plotting import plot_bound_trace  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one pass of the search")
    parser.add_argument("--factors", type=int, default=1)
    parser.add_argument("--output", default="mfa_spiral.png")
    args = parser.parse_args(argv)

    X, t = make_noisy_spiral(800, random_state=0)
    model = VBMixtureFactorAnalysers(
        n_factors=args.factors, random_state=0, max_tries=1 if args.quick else 3,
        max_iter=700 if args.quick else 5000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    print(f"components: {model.n_components_}, factors per component: "
          f"{model.n_factors_per_component_.tolist()}, F = {model.lower_bound_:.1f} nats, "
          f"{model.n_births_accepted_}/{model.n_births_proposed_} births accepted")

    fig = plt.figure(figsize=(11, 4.5))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    labels = model.predict(X)
    ax.scatter(*X.T, c=labels, cmap="tab20", s=4, alpha=0.5)
    for s in range(model.n_components_):
        c = model.means_[s]
        for j in np.flatnonzero(model.active_factors_[s]):
            seg = np.array([c - 2 * model.loadings_[s, :, j], c + 2 * model.loadings_[s, :, j]])
            ax.plot(*seg.T, color="k", lw=2)
    ax.set_title(f"{model.n_components_} analysers")
    plot_bound_trace(model, fig.add_subplot(1, 2, 2))
    fig.suptitle("VB mixture of factor analysers on the noisy spiral")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    return model


if __name__ == "__main__":
    main()
