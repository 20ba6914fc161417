"""Work units of ``reproduce mfa`` on digits (Beal 2003 §4.6).

scikit-learn's bundled 8×8 digits (1797 images, about 180 per class, 17 grey levels)
stand in for the thesis's CEDAR digits (700 training and 200 test images per class).
A fixed test set of ``n_test_per_class`` images per class is held out (drawn once from
the run's seed); the remaining images of each class form its training pool.

* Unsupervised (§4.6.1): one VB MFA (``k_max = 6``) on the whole training pool, without
  labels; each analyser is assigned to the majority class of the training points it is
  most responsible for, and an image is classified by its most responsible analyser
  (Fig 4.10 confusion tables).  K-means with as many clusters as VB found, labelled the
  same way, is the thesis's comparison.
* Classification (§4.6.2, Table 4.2): one model per class trained on ``n`` images of it
  (a random subset of the pool, the same for VB and ML), a test image goes to the class
  whose model gives it the highest log density.  VB: the birth/death search with
  ``k_max = 5``.  BIC-ML (the thesis's baseline, method ``"ml_search"``): ML MFA with
  ``k = 5`` factors grown by the same birth search (``method="ml"``, ``search=True``:
  each candidate fitted by EM, births accepted on the BIC-penalised likelihood, thesis
  eqs. 4.88-4.89), from one analyser, with the VB search's iteration budget.  The
  earlier stand-in (method ``"ml"``): EM (``search=False``) over a grid of numbers of
  components and factors, the fit with the smallest BIC kept.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from ..mfa import VBMixtureFactorAnalysers

__all__ = ["digits_split", "unsupervised_unit", "classifier_unit", "cluster_accuracy"]


def digits_split(config):
    """``(X_pool, y_pool, X_test, y_test)``: ``n_test_per_class`` test images per class,
    drawn with the run's seed; the rest of each class is its training pool."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng([int(config["seed"]), 4])
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = np.flatnonzero(y == c)
        test[rng.choice(idx, int(config["n_test_per_class"]), replace=False)] = True
    return X[~test], y[~test], X[test], y[test]


def _training_subset(config, y_pool, digit, n, rep):
    """``n`` pool images of class ``digit``; the same for every method (seeded by the
    run's seed, the size and the repetition only)."""
    idx = np.flatnonzero(y_pool == digit)
    rng = np.random.default_rng([int(config["seed"]), 5, int(n), int(rep), int(digit)])
    return rng.choice(idx, min(int(n), idx.size), replace=False)


def cluster_accuracy(train_assign, y_train, test_assign, y_test, n_clusters):
    """Each cluster labelled by the majority class of its training points; returns
    ``(train accuracy, test accuracy, train confusion, test confusion)``."""
    counts = np.zeros((n_clusters, 10), dtype=int)
    np.add.at(counts, (train_assign, y_train), 1)
    cls = np.argmax(counts, axis=1)
    out = []
    for assign, y in ((train_assign, y_train), (test_assign, y_test)):
        pred = cls[assign]
        conf = np.zeros((10, 10), dtype=int)
        np.add.at(conf, (y, pred), 1)
        out.append((float(np.mean(pred == y)), conf))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def unsupervised_unit(key, config, seed):
    """§4.6.1: VB MFA on the whole training pool, and K-means with as many clusters."""
    X_pool, y_pool, X_test, y_test = digits_split(config)
    n = config.get("unsupervised_max_points")
    if n:
        keep = np.random.default_rng([int(config["seed"]), 6]).choice(len(y_pool), int(n),
                                                                       replace=False)
        X_pool, y_pool = X_pool[keep], y_pool[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = VBMixtureFactorAnalysers(n_factors=6, max_iter=int(config["unsupervised_max_iter"]),
                                       random_state=seed).fit(X_pool)
    S = int(est.n_components_)
    tr, te, conf_tr, conf_te = cluster_accuracy(est.predict(X_pool), y_pool, est.predict(X_test),
                                                y_test, S)
    km = KMeans(S, n_init=10, random_state=seed).fit(X_pool)
    km_tr, km_te, _, _ = cluster_accuracy(km.labels_, y_pool, km.predict(X_test), y_test, S)
    counts = np.zeros((S, 10), dtype=int)
    np.add.at(counts, (est.predict(X_pool), y_pool), 1)
    return {"n_components": S, "n_factors": est.n_factors_per_component_.astype(int).tolist(),
            "component_class": np.argmax(counts, axis=1).tolist(),
            "n_train": int(len(y_pool)), "n_test": int(len(y_test)),
            "train_accuracy": tr, "test_accuracy": te,
            "train_confusion": conf_tr.tolist(), "test_confusion": conf_te.tolist(),
            "kmeans_train_accuracy": km_tr, "kmeans_test_accuracy": km_te,
            "lower_bound": float(est.lower_bound_), "n_iter": int(est.n_iter_),
            "templates": est.means_.tolist()}


def _fit_ml_bic(X, config, seed):
    """The BIC-penalised ML MFA: EM at every (components, factors) of the grid, the
    smallest BIC kept.  Returns ``(estimator, table of the grid)``."""
    best, grid = None, []
    for S in config["ml_components"]:
        for k in config["ml_factors"]:
            if S > len(X) // 2:
                continue
            est = VBMixtureFactorAnalysers(int(S), n_factors=int(k), method="ml", search=False,
                                           max_iter=int(config["ml_max_iter"]),
                                           random_state=seed).fit(X)
            bic = float(est.bic(X))
            grid.append([int(S), int(k), bic])
            if best is None or bic < best[0]:
                best = (bic, est)
    return best[1], grid


def classifier_unit(key, config, seed):
    """§4.6.2: the model of one class at one training size and repetition; returns its
    log density of every test image (all classes)."""
    _, method, n, rep, digit = key
    X_pool, y_pool, X_test, _ = digits_split(config)
    X = X_pool[_training_subset(config, y_pool, digit, n, rep)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if method in ("vb", "ml_search"):
            est = VBMixtureFactorAnalysers(n_factors=5, max_iter=int(config["vb_max_iter"]),
                                           method="ml" if method == "ml_search" else "vb",
                                           random_state=seed).fit(X)
            grid = None
        else:
            est, grid = _fit_ml_bic(X, config, seed)
    out = {"log_density": est.score_samples(X_test).tolist(),
           "n_components": int(est.n_components_),
           "n_factors": est.n_factors_per_component_.astype(int).tolist(), "bic_grid": grid}
    if method == "ml_search":
        h = est.search_history_
        out.update(bic=float(est.bic(X)), log_likelihood=float(est.log_likelihood_),
                   n_births_proposed=int(est.n_births_proposed_),
                   n_births_accepted=int(est.n_births_accepted_), n_iter=int(est.n_iter_),
                   min_bic_visited=float(np.min(h["bic"])))
    return out
