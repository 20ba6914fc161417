"""``reproduce vmcmc``: de Freitas, Højen-Sørensen, Jordan & Russell (2001), variational
MCMC on Bayesian logistic belief networks — the unimodal experiment (Figs. 12 and 13)
and its cost table (Table 1), the likelihood of one weight (Fig. 11) and random-walk
Metropolis with three proposal variances (Fig. 5).

* Data: the paper's model (§2): every node takes the values -1/+1 (parents enter the
  child's activation as -1/+1, ``parent_coding="spin"``), one child with ``p`` parents
  (Bernoulli(0.5) each), the fixed bias ``alpha = 0.5`` (known, as in their Fig. 3
  recursion), generating weights uniform on (0, 1], ``n`` cases; prior ``N(0, 100 I)``
  on the child's ``p`` weights (:class:`~sklearn_vb.VBSigmoidBeliefNetwork`'s default).
  The parents' Bernoulli mean 0.5 is known too (``fixed_bias`` 0): the unknowns are the
  child's ``p`` weights, one parameter block, so block variational MH proposes the
  whole vector from q (independence MH in ``p`` dimensions).  ``parent_coding`` and
  ``bias_known`` of the configuration select the 0/1 coding and a learnt bias instead.
* Methods: the paper's VB, the one-pass sequential Jaakkola–Jordan approximation
  (``method="sequential"``, their Fig. 3), whose q is also the proposal of the samplers;
  block variational MH (``kernel="block"``), random walk Metropolis (variance 0.01,
  ``rw_step=0.1``) and the mixture of the two (``nu = 0.5``), one chain of ``n_mcmc``
  samples each, started from a draw of q, no burn-in (as in the paper).  Besides the
  paper: the batch Jaakkola–Jordan VBEM on all cases at once (``method="batch"``).
* Score: the log-likelihood of the data at each method's estimate of the posterior mean
  of the child's weights, minus that of the random walk (the paper's "relative
  log-likelihood"; positive = better than the random walk), mean and standard error
  over ``repeats`` data sets; the seconds each method took (the paper reported flops).

The bimodal experiment with a hidden parent (§5.2, Figs. 14-16, and Fig. 5 on its
posterior) is in :mod:`._vmcmc_bimodal`: mode masses, means, variances and kurtoses of
each sampler against the exact grid posterior, and the samples drawn over the exact
contours and q's.  Fig. 11 (the likelihood of a single weight set to 1, four data sets
of 1000 cases) is :func:`_fig11`.

Work units: Fig. 11, the bimodal experiment, then one per (number of parents, data
set), cheapest first; the report covers the numbers of parents whose data sets are all
done and names the others (``--report-only`` writes it from a run still going).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from ..mcmc import VariationalMCMC
from ..sbn import VBSigmoidBeliefNetwork
from ._experiment import Experiment, Option, register
from ._vmcmc_bimodal import run_bimodal
from ._vmcmc_report import COLUMNS, METHODS, report

__all__ = ["vmcmc"]

FULL = {"parents": list(range(1, 51)), "n": 1000, "repeats": 10, "n_mcmc": [500, 5000],
        "bias": 0.5, "bias_known": True, "parent_coding": "spin",
        "prior_variance": 100.0, "rw_step": 0.1, "nu": 0.5,
        "bimodal_n": 50, "bimodal_prior_mean": 3.0, "bimodal_prior_variance": 10.0,
        "bimodal_n_mcmc": 5000, "bimodal_rw_step": 0.1, "bimodal_repeats": 10,
        "bimodal_grid": [-12.0, 20.0, 321], "fig5_rw_steps": [0.1, 1.0, 10.0],
        "fig11_n": 1000, "fig11_sets": 4}
QUICK = dict(FULL, parents=[1, 3, 6], n=300, repeats=3, n_mcmc=[500], bimodal_n_mcmc=1500,
             bimodal_repeats=2, bimodal_grid=[-12.0, 20.0, 161])
BIMODAL = ("bimodal", 0)
FIG11 = ("fig11", 0)


def _data(p, n, seed, config, weights=None):
    """Cases of one child with ``p`` Bernoulli(0.5) parents; returns the frame, the
    structure and the known biases."""
    rng = np.random.default_rng(seed)
    U = (rng.random((n, p)) < 0.5).astype(float)
    w = rng.uniform(0.0, 1.0, p)
    w[w == 0] = 1.0
    if weights is not None:
        w = weights
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(config["bias"] + _coded(U, config) @ w))))
    cols = [f"x{i}" for i in range(p)]
    X = pd.DataFrame(np.column_stack([U, y.astype(float)]), columns=cols + ["y"])
    known = {c: 0.0 for c in cols}
    if config["bias_known"]:
        known["y"] = float(config["bias"])
    return X, {"y": cols, **{c: [] for c in cols}}, known


def _coded(U, config):
    return 2.0 * U - 1.0 if config["parent_coding"] == "spin" else U


def _loglik(w, X, p, config):
    """``ln p(y | x, w)`` at the child's ``[bias, weights...]`` ``w`` (the known bias
    prepended when ``w`` holds the weights only)."""
    w = np.asarray(w, dtype=float)
    if w.size == p:
        w = np.concatenate([[config["bias"]], w])
    a = w[0] + _coded(X.iloc[:, :p].to_numpy(), config) @ w[1:]
    s = 2 * X["y"].to_numpy() - 1
    return float(-np.logaddexp(0.0, -s * a).sum())


def _units(config):
    units = [FIG11] + ([BIMODAL] if int(config.get("bimodal_repeats", 0)) > 0 else [])
    return units + [(int(p), int(r)) for p in sorted(config["parents"])
                    for r in range(int(config["repeats"]))]


def _fig11(config, seed):
    """The paper's Fig. 11: ``ln p(y | x, w)`` on a grid of the single weight ``w`` of a
    child with one Bernoulli(0.5) parent (coded as in the unimodal experiment), bias 0.5
    (known), data generated with ``w = 1``; one curve per data set, with its
    maximiser."""
    grid = np.linspace(-1.0, 3.0, 401)
    curves, argmax = [], []
    for k in range(int(config["fig11_sets"])):
        X, _, _ = _data(1, int(config["fig11_n"]), seed + k, config, weights=np.array([1.0]))
        u, s = _coded(X["x0"].to_numpy(), config), 2 * X["y"].to_numpy() - 1
        ll = -np.logaddexp(0.0, -s[None] * (config["bias"] + grid[:, None] * u[None])).sum(1)
        curves.append(np.round(ll, 4).tolist())
        argmax.append(float(grid[np.argmax(ll)]))
    return {"grid": grid.tolist(), "loglik": curves, "argmax": argmax}


def _vb_fit(X, structure, known, config, seed, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est = VBSigmoidBeliefNetwork(structure, prior_variance=config["prior_variance"],
                                     fixed_bias=known, parent_coding=config["parent_coding"],
                                     n_init=1, tol=1e-6, method=method,
                                     random_state=seed).fit(X)
        return est, time.perf_counter() - t0


def _run_unit(key, config, seed):
    if tuple(key) == BIMODAL:
        return run_bimodal(config, seed)
    if tuple(key) == FIG11:
        return _fig11(config, seed)
    p, r = key
    X, structure, known = _data(p, int(config["n"]), seed, config)
    est, t_vb = _vb_fit(X, structure, known, config, seed, "sequential")
    batch, t_batch = _vb_fit(X, structure, known, config, seed, "batch")
    j = est.structure_.index("y")
    out = {"vb": {"loglik": _loglik(est.coef_[j], X, p, config), "seconds": t_vb,
                  "lower_bound": est.lower_bound_},
           "vb_batch": {"loglik": _loglik(batch.coef_[j], X, p, config), "seconds": t_batch,
                        "lower_bound": batch.lower_bound_, "n_iter": batch.n_iter_}}
    for n_mcmc in config["n_mcmc"]:
        for kernel in METHODS[1:]:
            t0 = time.perf_counter()
            s = VariationalMCMC(est, kernel, nu=config["nu"], n_samples=int(n_mcmc), burn_in=0,
                                n_chains=1, rw_step=config["rw_step"],
                                random_state=seed).fit(X)
            mean = s.samples_["w[y]"][0].mean(axis=0)
            out[f"{kernel}_{n_mcmc}"] = {"loglik": _loglik(mean, X, p, config),
                                         "seconds": time.perf_counter() - t0,
                                         "acceptance": s.acceptance_}
    return out


def _mean_se(d):
    d = np.asarray(d, dtype=float)
    return {"mean": float(d.mean()),
            "stderr": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")}


def _summarize(results, config):
    """The tables over the numbers of parents whose data sets are all in ``results``
    (the others are listed under ``parents_missing``)."""
    R = int(config["repeats"])
    parents = sorted(int(p) for p in config["parents"])
    done = [p for p in parents if all((p, r) in results for r in range(R))]
    rel, cost, accept, bounds = {}, {}, {}, {}
    for n_mcmc in config["n_mcmc"]:
        rel[n_mcmc], cost[n_mcmc], accept[n_mcmc] = {}, {}, {}
        for p in done:
            units = [results[(p, r)] for r in range(R)]
            row, crow = {}, {}
            for m in COLUMNS:
                tag = m if m.startswith("vb") else f"{m}_{n_mcmc}"
                row[m] = _mean_se([u[tag]["loglik"] - u[f"random_walk_{n_mcmc}"]["loglik"]
                                   for u in units])
                crow[m] = float(np.mean([u[tag]["seconds"] for u in units]))
            rel[n_mcmc][p] = row
            cost[n_mcmc][p] = crow
            accept[n_mcmc][p] = {
                f"{m}: {k}": float(np.mean([u[f"{m}_{n_mcmc}"]["acceptance"][k] for u in units]))
                for m in METHODS[1:] for k in units[0][f"{m}_{n_mcmc}"]["acceptance"]}
    for p in done:
        units = [results[(p, r)] for r in range(R)]
        bounds[p] = {"sequential": float(np.mean([u["vb"]["lower_bound"] for u in units])),
                     "batch": float(np.mean([u["vb_batch"]["lower_bound"] for u in units])),
                     "batch_iterations": float(np.mean([u["vb_batch"]["n_iter"] for u in units]))}
    out = {"relative_loglik": rel, "seconds": cost, "acceptance": accept, "vb_bounds": bounds,
           "parents_done": done, "parents_missing": [p for p in parents if p not in done]}
    if BIMODAL in results:
        out["bimodal"] = _summarize_bimodal(results[BIMODAL])
    if FIG11 in results:
        out["fig11"] = results[FIG11]
    return out


def _spread(runs, stats=("mode_mass", "mean", "variance", "kurtosis")):
    """Mean and sd over chains of each statistic, and the mean acceptance."""
    row = {}
    for stat in stats:
        vals = np.array([r[stat] for r in runs], dtype=float)
        row[stat] = {"mean": vals.mean(axis=0).tolist(),
                     "sd": (vals.std(axis=0, ddof=1) if len(runs) > 1
                            else np.full(vals.shape[1], np.nan)).tolist()}
    row["acceptance"] = {k: float(np.mean([r["acceptance"][k] for r in runs]))
                         for k in runs[0]["acceptance"]}
    return row


def _summarize_bimodal(res):
    """Per sampler: mean and spread over the chains of the mode masses and moments."""
    table = {name: _spread(runs) for name, runs in res["samplers"].items()}
    fig5 = {step: dict(_spread(runs), w_h=runs[0]["w_h"])
            for step, runs in res.get("fig5", {}).items()}
    return {"exact": res["exact"], "q": res["q"], "q_summary": res["q_summary"],
            "q_batch": res.get("q_batch"), "lower_bound": res["lower_bound"],
            "samplers": table, "fig5": fig5,
            "n_chains": len(next(iter(res["samplers"].values()))),
            "grid_axis": res["grid_axis"], "grid_log_p": res["grid_log_p"],
            "samples": {k: v[0]["samples"] for k, v in res["samplers"].items()}}


vmcmc = register(Experiment(
    name="vmcmc",
    description="de Freitas et al. (2001): variational MCMC on logistic belief networks "
                "(relative log-likelihood vs random walk, cost)",
    quick=QUICK, full=FULL, units=_units, run_unit=_run_unit, summarize=_summarize,
    report=report,
    options=(Option("repeats", int, "data sets per number of parents"),
             Option("bimodal_repeats", int, "chains per sampler in the bimodal experiment "
                    "(0: skip it)")),
    resume_ignores=("repeats", "parents")))
