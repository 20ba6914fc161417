"""MFA panel: the number of analysers (and, reported beside it, their dimensions).

Problems (80/20 random split of the rows; held-out log-likelihood per row in the units
the models were fitted in)
    ``embedded-10d``: thesis §4.5.2 / Table 4.1, six clusters of intrinsic dimensions
    7, 4, 3, 2, 2, 1 in 10-D (:func:`~sklearn_vb.datasets.make_embedded_clusters`); truth
    K = 6; ``dims_recovered`` is the fraction of clusters whose majority analyser has the
    cluster's dimension and models no other cluster.
    ``clusters-2d``: thesis §4.5.1, elongated clusters in the plane
    (:func:`~sklearn_vb.datasets.make_grid_clusters`, 18 in the full panel); truth K.
    ``spiral``: thesis §4.5.3, the shrinking spiral (no true K; held-out only).
    ``wine``, ``breast-cancer``, ``digits-600``: scikit-learn's data sets, standardised
    on the training rows (digits: 600 random digits, constant pixels dropped); held-out
    only.
Methods
    ``sklearn_vb``: ``VBMixtureFactorAnalysers()`` with its defaults (birth/death
    search from one analyser); gap: its bound minus the bound of
    ``VBMixtureFactorAnalysers(n_components=K_true, search=False)`` on the same rows.
    ``GaussianMixture BIC sweep``: full covariances, K = 1 .. K_max, K by BIC; gap:
    -BIC/2 at the chosen K minus at the true K.
    ``BayesianGaussianMixture``: ``n_components=K_max``, its defaults; K counts the
    components of weight above 1 %.
"""

from __future__ import annotations

import numpy as np

from .common import Outcome, Problem, check_size, size_distance, split_rows

EMBEDDED_DIMS = (7, 4, 3, 2, 2, 1)

_SIZES = {
    "guard": {"seeds": (0, 1, 2, 3), "embedded_n": 80, "clusters": (4, 60), "spiral": 0,
              "real": ("wine",), "k_extra": 3, "gap": False},
    "quick": {"seeds": (0,), "embedded_n": 100, "clusters": (6, 50), "spiral": 400,
              "real": ("wine",), "k_extra": 3},
    "full": {"seeds": (0, 1, 2), "embedded_n": 150, "clusters": (18, 50), "spiral": 800,
             "real": ("wine", "breast-cancer", "digits-600"), "k_extra": 4},
}
REAL_K_MAX = 10


def _split(X, seed, truth_labels=None):
    perm = np.random.default_rng(seed + 77).permutation(X.shape[0])
    n_test = int(round(0.2 * X.shape[0]))
    out = {"X": X[perm[n_test:]], "X_test": X[perm[:n_test]]}
    if truth_labels is not None:
        out["labels"] = truth_labels[perm[n_test:]]
    return out


def _embedded(cfg):
    from sklearn_vb.datasets import make_embedded_clusters

    def make(seed):
        X, labels = make_embedded_clusters(int(cfg["embedded_n"] * 1.25), EMBEDDED_DIMS,
                                           random_state=seed)
        return {**_split(X, seed, labels), "k_max": 6 + cfg["k_extra"],
                "gap": cfg.get("gap", True)}

    return Problem("embedded-10d", len(EMBEDDED_DIMS), cfg["seeds"], make)


def _clusters(cfg):
    from sklearn_vb.datasets import make_grid_clusters

    n_clusters, n_per = cfg["clusters"]

    def make(seed):
        # a box of the thesis's density: 18 clusters in 24 x 12
        width = 24.0 * np.sqrt(n_clusters / 18.0)
        X, labels = make_grid_clusters(int(n_per * 1.25), n_clusters=n_clusters, width=width,
                                       height=width / 2, random_state=seed)
        return {**_split(X, seed, labels), "k_max": n_clusters + cfg["k_extra"],
                "gap": cfg.get("gap", True)}

    return Problem(f"clusters-2d-K{n_clusters}", n_clusters, cfg["seeds"], make)


def _spiral(cfg):
    from sklearn_vb.datasets import make_noisy_spiral

    def make(seed):
        X, _ = make_noisy_spiral(int(cfg["spiral"] * 1.25), random_state=seed)
        return {**_split(X, seed), "k_max": REAL_K_MAX}

    return Problem("spiral", None, cfg["seeds"], make)


def real_data(name):
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    if name == "wine":
        return load_wine().data
    if name == "breast-cancer":
        return load_breast_cancer().data
    X = load_digits().data
    return X[np.random.default_rng(0).permutation(X.shape[0])[:600]]


def _real(name, cfg):
    def make(seed):
        X = real_data(name).astype(float)
        parts = _split(X, seed)
        keep = parts["X"].std(axis=0) > 0
        mu, sd = parts["X"][:, keep].mean(axis=0), parts["X"][:, keep].std(axis=0)
        return {"X": (parts["X"][:, keep] - mu) / sd, "X_test": (parts["X_test"][:, keep] - mu) / sd,
                "k_max": REAL_K_MAX}

    return Problem(name, None, cfg["seeds"], make)


def problems(size):
    cfg = _SIZES[check_size(size)]
    out = []
    if cfg["embedded_n"]:
        out.append(_embedded(cfg))
    out.append(_clusters(cfg))
    if cfg["spiral"]:
        out.append(_spiral(cfg))
    out += [_real(name, cfg) for name in cfg["real"]]
    return out


def _dims_recovered(est, data):
    from sklearn_vb.reproduce._mfa_synthetic import cluster_dimensions

    assigned = est.predict(data["X"])
    counts = np.zeros((est.n_components_, len(EMBEDDED_DIMS)), dtype=int)
    np.add.at(counts, (assigned, data["labels"]), 1)
    found = cluster_dimensions(counts, est.n_factors_per_component_)
    return float(np.mean([c["found"] == c["true"] and not c["shared"] for c in found]))


def _truth_outcome(problem, K):
    if problem.truth is None:
        return {"recovered": None, "distance": None}
    return {"recovered": K == problem.truth, "distance": size_distance(K, problem.truth)}


def ours(problem, data, seed):
    from sklearn_vb import VBMixtureFactorAnalysers

    est = VBMixtureFactorAnalysers(random_state=seed).fit(data["X"])
    K = int(est.n_components_)
    gap, extra = None, {"n_factors": est.n_factors_per_component_.astype(int).tolist()}
    if problem.truth is not None and data["gap"]:  # the guard does not check it
        at_truth = VBMixtureFactorAnalysers(n_components=problem.truth, search=False,
                                            random_state=seed).fit(data["X"])
        gap = float(est.lower_bound_ - at_truth.lower_bound_)
    if problem.name == "embedded-10d":
        extra["dims_recovered"] = _dims_recovered(est, data)
    return Outcome(K, heldout=est.score(data["X_test"]), gap=gap, extra=extra,
                   **_truth_outcome(problem, K))


def gmm_bic(problem, data, seed):
    from sklearn.mixture import GaussianMixture

    X = data["X"]
    bic = {}
    models = {}
    for K in range(1, data["k_max"] + 1):
        models[K] = GaussianMixture(K, covariance_type="full", random_state=seed).fit(X)
        bic[K] = models[K].bic(X)
    K = min(bic, key=bic.get)
    gap = None if problem.truth is None else float(-0.5 * bic[K] + 0.5 * bic[problem.truth])
    return Outcome(K, heldout=models[K].score(data["X_test"]), gap=gap,
                   **_truth_outcome(problem, K))


def bgm(problem, data, seed):
    from sklearn.mixture import BayesianGaussianMixture

    m = BayesianGaussianMixture(n_components=data["k_max"], max_iter=1000,
                                random_state=seed).fit(data["X"])
    K = int(np.sum(m.weights_ > 0.01))
    return Outcome(K, heldout=m.score(data["X_test"]), **_truth_outcome(problem, K))


METHODS = {"sklearn_vb": ours, "GaussianMixture BIC sweep": gmm_bic,
           "BayesianGaussianMixture": bgm}
