"""Work units of ``reproduce mfa`` for Beal (2003) §4.7: how tight is F?

* Table 4.3 / Fig 4.14: three data sets of 150 points from 4 unit-variance Gaussian
  clusters in the plane, with centres ``spacing`` apart.  Ten VB MFAs with 4 components
  are trained from random starts (``n_init=10``, ``keep_restarts=True``) and the marginal
  likelihood is estimated by importance sampling with the six proposals of Table 4.3:
  from one model (the first restart, i.e. a model chosen without looking at its bound)
  q(π)q(Λ̃) itself (1), with its rows made Student-t with 3 (2) and 2 (3) degrees of
  freedom, and the equal-weight mixture of the ten restarts' posteriors, Gaussian (4)
  and t with 3 (5) and 2 (6) degrees of freedom (``score(..., "is", proposal="vb" |
  "vb_t" | "vb_mixture", dof=...)``).  F is the single model's bound, F' the best of the
  ten.
* Fig 4.13 stand-in: VB MFAs with a fixed number S of components on the digits 0, 1, 2
  of the training pool; at each S, importance sampling from q (the thesis's 6 runs of
  100 draws) gives ln p̂(Y), the parameter-only bound F(π, Λ̃) (mean log weight) and the
  gaps ln p̂ − F and ln p̂ − F(π, Λ̃).  The thesis recorded these after each accepted
  epoch of one search; here each S is a separate fit.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..datasets import make_spaced_clusters
from ..mfa import VBMixtureFactorAnalysers
from ..scoring import UnreliableEstimateWarning, score
from ._mfa_digits import cluster_accuracy, digits_split
from ._mfa_synthetic import _data_seed

__all__ = ["SAMPLERS", "clusters_is_unit", "digits_is_unit", "search_trace_unit"]

#: Table 4.3: key -> (single or mixture, degrees of freedom of the rows; None = Gaussian)
SAMPLERS = {1: ("single", None), 2: ("single", 3.0), 3: ("single", 2.0),
            4: ("mixture", None), 5: ("mixture", 3.0), 6: ("mixture", 2.0)}


def _is(est, X, kind, dof, config, seed):
    if kind == "single":
        opts = {"proposal": "vb"} if dof is None else {"proposal": "vb_t", "dof": dof}
    else:
        opts = {"proposal": "vb_mixture", "dof": dof}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        res = score(est, X, "is", n_samples=int(config["is_samples"]),
                    n_runs=int(config["is_runs"]), random_state=seed, **opts)
    d = res.diagnostics
    return {"log_evidence": float(res.log_evidence), "stderr": float(res.stderr),
            "per_run": [float(v) for v in d["per_run_estimates"]],
            "param_bound": float(d["param_bound"]), "kl_theta": float(d["kl_theta"]),
            "ess_fraction": float(d["ess_fraction"]),
            "max_normalised_weight": float(d["max_normalised_weight"]),
            "log_weight_variance": float(np.var(d["log_weights"][np.isfinite(d["log_weights"])])),
            "reliable": bool(d["reliable"]), "reasons": [str(r) for r in d["unreliable_reasons"]]}


def clusters_is_unit(key, config, seed):
    """Table 4.3 / Fig 4.14 on one of the three data sets (``spacing`` between centres)."""
    _, spacing = key
    X, _ = make_spaced_clusters(150, float(spacing),
                                random_state=_data_seed(config, 7, round(10 * spacing)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = VBMixtureFactorAnalysers(4, n_factors=1, search=False,
                                       n_init=int(config["is_restarts"]), init_params="random",
                                       keep_restarts=True, random_state=seed).fit(X)
        # the birth/death search from one analyser on the same data (as in §4.5.1)
        searched = VBMixtureFactorAnalysers(n_factors=1, random_state=seed).fit(X)
    single = est.restart_estimator(0)
    bounds = [float(r.lower_bound) for r in est.restarts_]
    out = {"F": float(single.lower_bound_), "F_best": float(max(bounds)),
           "restart_bounds": bounds, "X": X.tolist(), "samplers": {},
           "search_components": int(searched.n_components_),
           "search_lower_bound": float(searched.lower_bound_)}
    rng = np.random.SeedSequence(seed)
    for key_, ((kind, dof), s) in zip(SAMPLERS, zip(SAMPLERS.values(), rng.spawn(len(SAMPLERS)))):
        target = single if kind == "single" else est
        out["samplers"][str(key_)] = _is(target, X, kind, dof, config,
                                        int(s.generate_state(1)[0]))
    return out


def digits_is_unit(key, config, seed):
    """Fig 4.13 stand-in: a VB MFA with ``S`` components on the digits 0-2 of the pool."""
    _, S = key
    X_pool, y_pool, _, _ = digits_split(config)
    X = X_pool[y_pool <= 2]
    n = config.get("is_digits_max_points")
    if n:
        X = X[np.random.default_rng([int(config["seed"]), 8]).choice(len(X), int(n),
                                                                      replace=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = VBMixtureFactorAnalysers(int(S), n_factors=int(config["is_digits_factors"]),
                                       search=False, random_state=seed).fit(X)
    cfg = dict(config, is_samples=config["is_digits_samples"], is_runs=config["is_digits_runs"])
    res = _is(est, X, "single", None, cfg, seed)
    res.update(F=float(est.lower_bound_), n_components=int(est.n_components_),
               n_points=int(len(X)))
    return res


def search_trace_unit(key, config, seed):
    """Fig 4.12: the unsupervised VB search on the digits 0-2 of the pool (``k_max = 6``,
    as §4.6.1), and after each accepted epoch the model there: importance sampling from
    its q(π)q(Λ̃) (``is_digits_runs`` runs of ``is_digits_samples`` draws) for ln p̂(Y)
    and F(π, Λ̃), its bound F, and the fraction of training and test images (digits 0-2
    of the held-out set) it misclassifies, each analyser labelled by the majority class
    of its training points.

    The state after an accepted epoch is obtained by replaying the search with
    ``max_iter`` set to the iteration at which that epoch was accepted: the search is
    deterministic given ``random_state``, and with that cap it stops right after the
    accepted epoch (no polish, no refit), so the replay's bound at its last iteration
    equals the one the full search recorded there (checked: ``replay_gap``)."""
    X_pool, y_pool, X_test, y_test = digits_split(config)
    X, y = X_pool[y_pool <= 2], y_pool[y_pool <= 2]
    Xt, yt = X_test[y_test <= 2], y_test[y_test <= 2]
    n = config.get("is_digits_max_points")
    if n:
        keep = np.random.default_rng([int(config["seed"]), 9]).choice(len(X), int(n),
                                                                      replace=False)
        X, y = X[keep], y[keep]
    cfg = dict(config, is_samples=config["is_digits_samples"], is_runs=config["is_digits_runs"])

    def fit(max_iter):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return VBMixtureFactorAnalysers(n_factors=6, max_iter=int(max_iter),
                                            random_state=seed).fit(X)

    full = fit(config["unsupervised_max_iter"])
    h = full.search_history_
    accepted = [(int(it), float(F)) for it, F, ev in zip(h["iteration"], h["bound"], h["event"])
                if ev == "accept"]
    points = []
    for it, F_search in accepted + [(int(full.n_iter_), None)]:
        est = full if F_search is None else fit(it)
        S = int(est.n_components_)
        tr, te, _, _ = cluster_accuracy(est.predict(X), y, est.predict(Xt), yt, S)
        res = _is(est, X, "single", None, cfg, seed)
        points.append({"iteration": it, "n_components": S, "F": float(est.lower_bound_),
                       "replay_gap": None if F_search is None
                       else float(est.search_history_["bound"][-1] - F_search),
                       "log_evidence": res["log_evidence"], "stderr": res["stderr"],
                       "param_bound": res["param_bound"], "per_run": res["per_run"],
                       "train_error": 1.0 - tr, "test_error": 1.0 - te,
                       "final": F_search is None})
    return {"n_points": int(len(X)), "n_test": int(len(yt)),
            "n_births_proposed": int(full.n_births_proposed_),
            "n_births_accepted": int(full.n_births_accepted_), "points": points}
