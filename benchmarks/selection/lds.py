"""LDS panel: the dimension of the hidden state.

Problems
    ``thesis-5.4.1``: Beal (2003) §5.4.1, k = 6 states, p = 10 outputs, no inputs
    (:func:`~sklearn_vb.datasets.make_lds_params`, eigenvalues 0.65 .. 0.9), one
    training sequence of T steps and an independent held-out sequence of the same
    system; held-out: mean one-step predictive log-likelihood per step.
    ``thesis-5.4.2-inputs``: §5.4.2, k = 2, p = 4, three inputs (B = 0, D's third column
    zero; :func:`~sklearn_vb.datasets.make_lds_input_experiment`), T = 100 for training
    and an independent sequence held out.
    ``sunspots`` (yearly, standardised) and ``macrodata`` (quarterly growth of real GDP,
    consumption and investment, and the unemployment rate; standardised) from
    statsmodels' data sets: fitted on the first 80 % of the series; held-out: the mean
    one-step predictive log-likelihood of the last 20 % given everything before it
    (filtering the whole series at the training fit's parameters).
Methods
    ``sklearn_vb ARD``: ``VBLinearDynamicalSystem(n_states=k_max)`` with its defaults
    (ARD on); K = ``n_effective_states_``; gap: its bound minus the bound of the same
    estimator at ``n_states=k_true``.
    ``sklearn_vb sweep``: ``StructureSearch(VBLinearDynamicalSystem(ard=False),
    {"n_states": 1 .. k_max})`` by the VB bound; gap from the same search.
    ``statsmodels ... + BIC``: ``DynamicFactor(k_factors=k, factor_order=1)`` (with the
    inputs as ``exog``) for k = 1 .. k_true + 1, k by BIC; on the univariate sunspots
    ``SARIMAX(p, 0, q)``, p <= 3, q <= 2, whose state dimension is max(p, q + 1).
"""

from __future__ import annotations

import numpy as np

from .common import Outcome, Problem, check_size, size_distance

_SIZES = {
    "guard": {"seeds": (0, 1), "T": 150, "dimension": True, "inputs": True, "real": (),
              "gap": False},
    "quick": {"seeds": (0,), "T": 150, "dimension": True, "inputs": True, "real": ("sunspots",)},
    "full": {"seeds": (0, 1, 2), "T": 300, "dimension": True, "inputs": True,
             "real": ("sunspots", "macrodata")},
}
THESIS_K, THESIS_P, K_EXTRA = 6, 10, 3


def _with_gap(cfg):
    """The guard skips the fit at the true structure (its gap is not checked)."""
    return cfg.get("gap", True)


def _dimension(cfg, k=THESIS_K, p=THESIS_P):
    from sklearn_vb.datasets import make_lds, make_lds_params

    def make(seed):
        params = make_lds_params(k, p, 0, random_state=seed)
        X, _ = make_lds(params, [cfg["T"]], random_state=seed)
        Xt, _ = make_lds(params, [cfg["T"]], random_state=seed + 10**6)
        return {"X": X, "X_test": Xt, "U": None, "U_test": None, "k_max": k + K_EXTRA,
                "k_sweep": tuple(range(1, k + K_EXTRA + 1)), "n_train": None,
                "gap": _with_gap(cfg)}

    return Problem("thesis-5.4.1", k, cfg["seeds"], make)


def _inputs(cfg):
    from sklearn_vb.datasets import make_lds_input_experiment

    def make(seed):
        X, U, _, params = make_lds_input_experiment(100, random_state=seed)
        rng = np.random.RandomState(seed + 10**6)
        # the held-out sequence: same system and inputs, new noise
        from sklearn_vb.datasets import make_lds

        Xt, _ = make_lds(params, [100], U, random_state=rng)
        return {"X": X, "X_test": Xt, "U": U, "U_test": U, "k_max": 4,
                "k_sweep": (1, 2, 3, 4), "n_train": None, "gap": _with_gap(cfg)}

    return Problem("thesis-5.4.2-inputs", 2, cfg["seeds"], make)


def real_series(name):
    import statsmodels.api as sm

    if name == "sunspots":
        return sm.datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(float)[:, None]
    d = sm.datasets.macrodata.load_pandas().data
    growth = np.diff(np.log(d[["realgdp", "realcons", "realinv"]].to_numpy(float)), axis=0)
    return np.column_stack([100 * growth, d["unemp"].to_numpy(float)[1:]])


def _real(name, cfg):
    def make(seed):
        Y = real_series(name)
        n_train = int(round(0.8 * len(Y)))
        mu, sd = Y[:n_train].mean(axis=0), Y[:n_train].std(axis=0)
        Y = (Y - mu) / sd
        k_max = 4 if Y.shape[1] == 1 else Y.shape[1]
        return {"X": Y[:n_train], "X_full": Y, "U": None, "k_max": k_max,
                "k_sweep": tuple(range(1, k_max + 1)), "n_train": n_train}

    # one fixed series: one seed (the fit's)
    return Problem(name, None, cfg["seeds"][:1], make)


def problems(size):
    cfg = _SIZES[check_size(size)]
    out = []
    if cfg["dimension"]:
        out.append(_dimension(cfg))
    if cfg["inputs"]:
        out.append(_inputs(cfg))
    return out + [_real(name, cfg) for name in cfg["real"]]


def _fit_kwargs(data):
    return {} if data["U"] is None else {"U": data["U"]}


def _heldout(est, data):
    if data["n_train"] is None:
        kw = {} if data["U_test"] is None else {"U": data["U_test"]}
        return float(est.score(data["X_test"], **kw))
    return float(np.mean(est.score_samples(data["X_full"])[data["n_train"]:]))


def _truth(problem, K):
    if problem.truth is None:
        return {}
    return {"recovered": K == problem.truth, "distance": size_distance(K, problem.truth)}


def ours_ard(problem, data, seed):
    from sklearn_vb import VBLinearDynamicalSystem

    est = VBLinearDynamicalSystem(data["k_max"], random_state=seed).fit(
        data["X"], **_fit_kwargs(data))
    K = int(est.n_effective_states_)
    gap = None
    if problem.truth is not None and data["gap"]:
        at_truth = VBLinearDynamicalSystem(problem.truth, random_state=seed).fit(
            data["X"], **_fit_kwargs(data))
        gap = float(est.lower_bound_ - at_truth.lower_bound_)
    return Outcome(K, heldout=_heldout(est, data), gap=gap, **_truth(problem, K))


def ours_sweep(problem, data, seed):
    from sklearn_vb import VBLinearDynamicalSystem
    from sklearn_vb.model_selection import StructureSearch

    search = StructureSearch(VBLinearDynamicalSystem(ard=False, random_state=seed),
                             {"n_states": list(data["k_sweep"])}, scoring="vb",
                             random_state=seed).fit(data["X"], **_fit_kwargs(data))
    K = int(search.best_params_["n_states"])
    gap = None
    if problem.truth is not None:
        scores = np.asarray(search.results_["score_vb"], dtype=float)
        grid = np.asarray(search.results_["param_n_states"], dtype=int)
        gap = float(search.best_score_ - scores[grid == problem.truth][0])
    return Outcome(K, heldout=_heldout(search.best_estimator_, data), gap=gap,
                   **_truth(problem, K))


def _statsmodels_heldout(model_full, params, n_train):
    res = model_full.filter(params)
    return float(np.mean(res.llf_obs[n_train:]))


def statsmodels_bic(problem, data, seed):
    import statsmodels.api as sm

    X = data["X"]
    candidates = {}
    if X.shape[1] == 1:
        for p in range(0, 4):
            for q in range(0, 3):
                if p == q == 0:
                    continue
                res = sm.tsa.SARIMAX(X[:, 0], order=(p, 0, q)).fit(disp=False)
                candidates[(p, q)] = (res.bic, max(p, q + 1), res)
    else:
        k_top = data["k_max"] if problem.truth is None else problem.truth + 1
        exog = data["U"]
        for k in range(1, min(k_top, X.shape[1]) + 1):
            model = sm.tsa.DynamicFactor(X, exog=exog, k_factors=k, factor_order=1)
            res = model.fit(disp=False, maxiter=200)
            candidates[k] = (res.bic, k, res)
    best = min(candidates, key=lambda c: candidates[c][0])
    bic, K, res = candidates[best]
    if data["n_train"] is None:  # an independent held-out sequence
        model = res.model.clone(data["X_test"], exog=data["U_test"]) if data["U"] is not None \
            else res.model.clone(data["X_test"])
        heldout = float(model.loglike(res.params) / len(data["X_test"]))
    else:
        Y = data["X_full"]
        if Y.shape[1] == 1:
            full = sm.tsa.SARIMAX(Y[:, 0], order=(best[0], 0, best[1]))
        else:
            full = sm.tsa.DynamicFactor(Y, k_factors=best, factor_order=1)
        heldout = _statsmodels_heldout(full, res.params, data["n_train"])
    gap = None
    if problem.truth is not None and problem.truth in candidates:
        gap = float(-0.5 * bic + 0.5 * candidates[problem.truth][0])
    return Outcome(K, heldout=heldout, gap=gap, extra={"order": str(best)},
                   **_truth(problem, K))


METHODS = {"sklearn_vb ARD": ours_ard, "sklearn_vb sweep": ours_sweep,
           "statsmodels + BIC": statsmodels_bic}
