"""Work units of ``reproduce mfa`` on synthetic data: Beal (2003) §4.5.1 (18 Gaussian
clusters in the plane), §4.5.2 (embedded clusters of intrinsic dimensions 7, 4, 3, 2, 2,
1 in 10-D, Table 4.1) and §4.5.3 (the shrinking spiral).

Every fit starts, as in the thesis, from one analyser at the data mean and grows by the
estimator's birth/death search.  Each data set is fitted with several configurations
(``VARIANTS``): the package's defaults (responsibility split), the spatial split the
thesis used for all three experiments (§4.5: children at ``μ ± d``), and either with the
ARD rate ``b*`` kept at its prior value instead of re-estimated (the thesis does not say
which hyperparameters it re-estimated).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from ..datasets import make_embedded_clusters, make_grid_clusters, make_noisy_spiral
from ..mfa import VBMixtureFactorAnalysers, max_identifiable_factors

__all__ = ["clusters_unit", "embedded_unit", "spiral_unit", "EMBEDDED_DIMS", "VARIANTS"]

EMBEDDED_DIMS = (7, 4, 3, 2, 2, 1)

#: name -> (estimator settings on top of the defaults, description for the report)
VARIANTS = {
    "default": ({}, "package default: responsibility split, Ψ and b* re-estimated"),
    "spatial": ({"split": "spatial"}, "spatial split (thesis §4.5), Ψ and b* re-estimated"),
    "default_fixed_b": ({"optimize_hyperparameters": ("noise",)},
                        "responsibility split, Ψ re-estimated, b* fixed at 1"),
    "spatial_fixed_b": ({"split": "spatial", "optimize_hyperparameters": ("noise",)},
                        "spatial split, Ψ re-estimated, b* fixed at 1"),
}


def _data_seed(config, *parts):
    """Seed of a data set: the run's seed and the data set's identity, so that every
    unit fitting the same data set sees the same points."""
    return int(np.random.SeedSequence([int(config["seed"]), *[int(p) for p in parts]])
               .generate_state(1)[0])


def _fit(X, n_factors, seed, max_iter, variant):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(n_factors=n_factors, max_iter=int(max_iter),
                                        random_state=seed, **VARIANTS[variant][0]).fit(X)


def _trace(est):
    """The bound after every VBEM iteration of the search and the structure events."""
    h = est.search_history_ or {}
    if not h:
        return {"bound": est.lower_bounds_.tolist(), "event": [], "n_components": []}
    return {"bound": np.asarray(h["bound"], dtype=float).tolist(),
            "event": [str(e) for e in h["event"]],
            "n_components": np.asarray(h["n_components"], dtype=int).tolist()}


def _geometry(est):
    """Centres and expected covariances ``E[Λ]E[Λ]ᵀ + Ψ`` (original units) for plots."""
    L = est.loadings_[:, :, :]
    cov = np.einsum("spk,sqk->spq", L, L) + np.diag(est.noise_variance_)[None]
    return {"means": est.means_.tolist(), "covariances": cov.tolist()}


def _common(est, X, labels):
    return {"n_components": int(est.n_components_),
            "n_factors": est.n_factors_per_component_.astype(int).tolist(),
            "lower_bound": float(est.lower_bound_), "n_iter": int(est.n_iter_),
            "births_proposed": int(est.n_births_proposed_),
            "births_accepted": int(est.n_births_accepted_),
            "converged": bool(est.converged_),
            "ari": float(adjusted_rand_score(labels, est.predict(X)))}


def clusters_unit(key, config, seed):
    """§4.5.1: 18 elongated Gaussian clusters in the plane, ``n`` points each, fitted
    with the configuration ``variant`` (every variant sees the same data)."""
    _, n, rep, variant = key
    X, labels = make_grid_clusters(int(n), n_clusters=int(config.get("n_clusters", 18)),
                                   random_state=_data_seed(config, 1, n, rep))
    # k_max(p = 2) = 1 (thesis eq. 4.10): one factor per analyser in the plane
    est = _fit(X, max_identifiable_factors(2), seed, config["max_iter"], variant)
    out = _common(est, X, labels)
    if rep == 0:
        out.update(_geometry(est), trace=_trace(est))
    return out


def embedded_unit(key, config, seed):
    """§4.5.2: clusters of intrinsic dimensions 7, 4, 3, 2, 2, 1 in 10-D; which true
    clusters each analyser took and the factors ARD kept."""
    _, n, rep, variant = key
    X, labels = make_embedded_clusters(int(n), EMBEDDED_DIMS,
                                       random_state=_data_seed(config, 2, n, rep))
    est = _fit(X, 7, seed, config["max_iter"], variant)
    out = _common(est, X, labels)
    assigned = est.predict(X)
    # counts[s, c]: points of true cluster c given to analyser s
    counts = np.zeros((est.n_components_, len(EMBEDDED_DIMS)), dtype=int)
    np.add.at(counts, (assigned, labels), 1)
    out["counts"] = counts.tolist()
    return out


def spiral_unit(key, config, seed):
    """§4.5.3: the shrinking spiral of Ueda et al. (2000), 800 points, k_max = 2."""
    _, rep, variant = key
    X, _ = make_noisy_spiral(800, random_state=_data_seed(config, 3, rep))
    est = _fit(X, 2, seed, config["max_iter"], variant)
    out = {"n_components": int(est.n_components_),
           "n_factors": est.n_factors_per_component_.astype(int).tolist(),
           "lower_bound": float(est.lower_bound_), "n_iter": int(est.n_iter_),
           "births_proposed": int(est.n_births_proposed_),
           "births_accepted": int(est.n_births_accepted_),
           "converged": bool(est.converged_)}
    if rep == 0:
        out.update(_geometry(est), trace=_trace(est))
    return out


def cluster_dimensions(counts, n_factors, dims=EMBEDDED_DIMS):
    """For each true cluster, the dimension of the analyser that took most of its points,
    and whether that analyser also took most of another cluster's points (a "box" of
    Table 4.1: one analyser modelling more than one cluster)."""
    counts = np.asarray(counts)
    owner = np.argmax(counts, axis=0)
    shared = np.bincount(owner, minlength=counts.shape[0]) > 1
    return [{"true": int(d), "found": int(n_factors[owner[c]]), "shared": bool(shared[owner[c]])}
            for c, d in enumerate(dims)]
