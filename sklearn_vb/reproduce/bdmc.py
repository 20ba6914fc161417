"""``reproduce bdmc``: Grosse, Ghahramani & Adams (2015), the evidence estimators graded
against bidirectional Monte Carlo ground truth.

* Data: one simulated data set per model (clustering, low rank, binary attributes; the
  paper: 50 cases, 25 dimensions, 10 latent components, 5 for low rank), hyperparameters
  fixed, the simulating parameters kept as the exact posterior draw.
* Ground truth: forward and reverse joint (theta, z) AIS (tempered Gibbs moves) with
  ``truth_K`` temperatures; their mean is the truth when they agree within 1 nat.
* Every estimator at several budgets (the paper's knob for each, §6.2), ``trials``
  independent runs each: log-ML estimate and CPU seconds, bias and RMSE against the truth
  (the paper's Figs. 2-5) and the seconds each needed to reach an RMSE under 10 nats.
* The paper's SMC beside ours: one particle, the weights W integrated out where the model
  allows it (clustering, binary attributes; low rank keeps V and integrates U), the
  number of MCMC sweeps per case as the knob (§6.2).
* The 25 trials of every setting pooled into one estimate as the paper's footnote 5 does
  (the mean of Z for estimators unbiased for Z, the harmonic mean for those unbiased for
  1/Z, the maximum for VB, the mean of the logs for nested sampling), its error against
  the truth against the CPU time of all trials (the paper's Fig. 3, right).
* VB started from the simulating latents (the paper's "hint", §6.4) beside VB with random
  restarts.
* Table 1: AIS estimates of every model fitted to the data of every model with the
  hyperparameters integrated out under inverse-gamma, Dirichlet and beta hyperpriors
  (:func:`~sklearn_vb.bdmc_models.integrate_hyperparameters`; the paper's footnote 6),
  30 000 temperatures as in the paper; and, as a control, with them fixed at the
  simulation's values.
* ``package_models=1``: instead, the package's own models (categorical and Gaussian
  HMM, MFA, LDS, discrete DAG) on data simulated from them, BDMC ground truth and the
  gap to it of every score the package offers (:mod:`._bdmc_package`).
"""

from __future__ import annotations

import time
import warnings
from math import lgamma

import numpy as np

from ..bdmc_models import (
    BayesianBinaryAttributes,
    BayesianClustering,
    BayesianLowRank,
    Hyperprior,
    integrate_hyperparameters,
)
from ..scoring import score
from ._bdmc_package import PACKAGE_MODELS, SCORES, run_case
from ._bdmc_report import report_paper_protocol
from ._experiment import Experiment, Option, register
from ._report import markdown_table, pyplot, save_figure

__all__ = ["bdmc"]

MODELS = ("clustering", "low_rank", "binary")
_CLASSES = {"clustering": BayesianClustering, "low_rank": BayesianLowRank,
            "binary": BayesianBinaryAttributes}

#: method -> (score method, fixed options, the option varied, display name).  "smc" is
#: the package's SMC at its defaults: W explicit (the latents summed out), the number of
#: particles as the knob, one data-augmentation sweep per case.  "smc_paper" is the
#: paper's: one particle, W integrated out where the model allows it (clustering and
#: binary attributes; low rank keeps V and integrates U, as the paper did), the number of
#: MCMC sweeps per case as the knob
METHODS = {
    "ais": ("ais", {"anneal": "joint", "n_chains": 1, "n_runs": 1}, "n_temperatures", "AIS"),
    "rais": ("rais", {"anneal": "joint", "n_chains": 1, "n_runs": 1}, "n_temperatures",
             "reverse AIS"),
    "smc": ("smc", {"n_steps": 1, "n_runs": 1}, "n_particles", "SMC"),
    "smc_paper": ("smc", {"n_particles": 1, "collapse": "auto", "n_runs": 1}, "n_steps",
                  "SMC-1"),
    "shme": ("shme", {"n_steps": 1, "n_runs": 1}, "n_particles", "SHME"),
    "nested_sampling": ("nested_sampling", {"n_live": 2, "n_runs": 1}, "n_steps", "NS"),
    "cms": ("cms", {"n_runs": 1}, "n_samples", "CMS"),
    "hme": ("hme", {"n_chains": 1}, "n_samples", "HME"),
    "lw": ("is", {"proposal": "prior", "n_runs": 1}, "n_samples", "LW"),
    "vb": ("vb", {}, "n_init", "VB"),
    "bic": ("bic", {}, None, "BIC"),
}
_EXACT = {"rais", "shme", "hme", "cms"}

#: how the trials of a setting are pooled into one estimate (the paper's footnote 5):
#: the mean of Z for estimators unbiased for Z, the harmonic mean for those unbiased for
#: 1/Z, the best bound for VB, the mean of the logs for nested sampling (and BIC)
POOL = {"ais": "mean", "smc": "mean", "smc_paper": "mean", "cms": "mean", "lw": "mean",
        "rais": "harmonic", "shme": "harmonic", "hme": "harmonic", "vb": "max",
        "nested_sampling": "mean_log", "bic": "mean_log"}

FULL = {
    "n_samples": 50, "n_features": 25,
    "n_components": {"clustering": 10, "low_rank": 5, "binary": 10},
    "hyper": {"clustering": {"mean_sd": 1.0, "noise_sd": 1.0},
              "low_rank": {"latent_sd": 1.0, "component_sd": 1.0, "noise_sd": 1.0},
              "binary": {"feature_sd": 1.0, "noise_sd": 1.0, "attribute_prob": 0.5}},
    "models": list(MODELS), "truth_K": 30000, "truth_chains": 4, "trials": 25,
    "budgets": {"ais": [100, 300, 1000, 3000, 10000], "rais": [100, 1000, 10000],
                "smc": [1, 4, 16, 64, 256], "smc_paper": [1, 4, 16, 64], "shme": [4, 16, 64],
                "nested_sampling": [5, 20, 80],
                "cms": [10, 100, 1000], "hme": [10, 100, 1000], "lw": [10, 100, 1000, 10000],
                "vb": [1, 10], "bic": [0]},
    "cross_K": 10000,
    # Table 1 with the hyperparameters integrated out: the paper's 30 000 temperatures
    "cross_hyper_K": 30000, "cross_chains": 4,
    "hyperprior": {"variance_shape": 1.0, "variance_scale": 1.0, "concentration": 1.0,
                   "attribute_a": 1.0, "attribute_b": 1.0},
    # cost on one core (measured per unit, CPU seconds): ground truth about 170 (binary
    # attributes 140), Table 1 about 60 with fixed and 190 with integrated
    # hyperparameters, the estimates about 1600 (binary attributes 1100, of which AIS and
    # reverse AIS 430, nested sampling 230, the one-particle SMC 100): about 35 minutes
    # package_models=1: the package's models at these sizes (cases or time steps), sizes
    # at which forward and reverse AIS met within 10000 temperatures in pilot runs; the
    # truth is the first K of the grid at which they agree within 1 nat.  The sizes
    # change which units exist, not their results: a run with fewer sizes resumes and
    # reports from the journal of a longer one
    "package_models": 0,
    "package_sizes": {"hmm_categorical": [100, 400], "hmm_gaussian": [100, 400],
                      "mfa": [50, 100], "lds": [40, 80], "dag": [100, 400]},
    "package": {"models": list(PACKAGE_MODELS), "truth_K_grid": [1000, 3000, 10000],
                "truth_chains": 16, "ais_options": {}},
}
QUICK = dict(FULL, n_samples=20, n_features=8,
             n_components={"clustering": 3, "low_rank": 2, "binary": 3},
             truth_K=2000, truth_chains=2, trials=3, cross_K=300, cross_hyper_K=300,
             budgets={"ais": [30, 300], "rais": [300], "smc": [1, 16], "smc_paper": [1, 4],
                      "shme": [16],
                      "nested_sampling": [5], "cms": [30], "hme": [100], "lw": [100],
                      "vb": [1, 5], "bic": [0]},
             package_sizes=[30],
             package={"models": list(PACKAGE_MODELS),
                      "truth_K_grid": [300, 1000], "truth_chains": 4,
                      "ais_options": {"n_temperatures": 200, "n_chains": 8}})


def _data(config, name):
    est = _CLASSES[name](config["n_components"][name], **config["hyper"][name])
    seed = int(np.random.SeedSequence([config["seed"], 1, MODELS.index(name)]).generate_state(1)[0])
    return est.simulate(config["n_samples"], config["n_features"], random_state=seed)


def _fit(config, name, Y, n_init=1, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _CLASSES[name](config["n_components"][name], n_init=int(n_init),
                              random_state=int(seed), **config["hyper"][name]).fit(Y)


def _units(config):
    if config["package_models"]:
        # the smaller size of every model first
        models = config["package"]["models"]
        n_sizes = max(len(_package_sizes(config, m)) for m in models)
        return [("package", m, "", int(_package_sizes(config, m)[i]), 0)
                for i in range(n_sizes) for m in models if i < len(_package_sizes(config, m))]
    # the longest units first (truth, then Table 1, then each method's estimates from
    # the largest budget down), so that parallel workers finish together; a unit's
    # result depends on its key only, never on this order
    units = [("truth", m, "", 0, 0) for m in config["models"]]
    units += [("cross_hyper", d, f, 0, 0) for d in config["models"] for f in config["models"]]
    units += [("cross", d, f, 0, 0) for d in config["models"] for f in config["models"]]
    units += [("hint", m, "", 0, 0) for m in config["models"]]
    for meth, budgets in config["budgets"].items():
        units += [("estimate", m, meth, int(b), t) for b in sorted(budgets, reverse=True)
                  for m in config["models"] for t in range(int(config["trials"]))]
    return units


def _run_unit(key, config, seed):
    kind, model, method, budget, trial = key
    if kind == "package":
        pk = config["package"]
        try:
            return run_case(model, budget, config["seed"], pk["truth_K_grid"],
                            pk["truth_chains"], score_seed=seed % 2**31,
                            ais_options=pk["ais_options"])
        except Exception as exc:  # noqa: BLE001 - a failed case is reported, the study goes on
            return {"model": model, "n": int(budget), "error": f"{type(exc).__name__}: {exc}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "truth":
            Y, params, _ = _data(config, model)
            est = _fit(config, model, Y)
            ex = {k: v[None] for k, v in params.items()}
            t0 = time.perf_counter()
            lo = score(est, Y, "ais", anneal="joint", n_temperatures=config["truth_K"],
                       n_chains=config["truth_chains"], random_state=seed)
            hi = score(est, Y, "rais", anneal="joint", n_temperatures=config["truth_K"],
                       n_chains=config["truth_chains"], exact_posterior_samples=ex,
                       random_state=seed + 1)
            return {"lower": lo.log_evidence, "upper": hi.log_evidence,
                    "seconds": time.perf_counter() - t0,
                    "log_symmetry": lgamma(config["n_components"][model] + 1)}
        if kind == "cross":
            Y, _, _ = _data(config, model)
            est = _fit(config, method, Y, n_init=3, seed=seed)
            r = score(est, Y, "ais", anneal="joint", n_temperatures=config["cross_K"],
                      n_chains=2, random_state=seed)
            return {"ais": r.log_evidence}
        if kind == "cross_hyper":
            # the fit only sizes the model (components, features): nothing of it is used
            Y, _, _ = _data(config, model)
            hyper = integrate_hyperparameters(_fit(config, method, Y, seed=seed),
                                              Hyperprior(**config["hyperprior"]))
            t0 = time.process_time()
            r = score(hyper, Y, "ais", anneal="joint", n_temperatures=config["cross_hyper_K"],
                      n_chains=config["cross_chains"], n_runs=config["cross_chains"],
                      random_state=seed, lower_bound=None)
            return {"ais": r.log_evidence, "chains": r.diagnostics["run_estimates"],
                    "seconds": time.process_time() - t0}
        if kind == "hint":
            Y, _, Z = _data(config, model)
            t0 = time.process_time()
            est = _CLASSES[model](config["n_components"][model],
                                  **config["hyper"][model]).fit_from_latents(Y, Z)
            return {"vb": est.lower_bound_, "n_iter": est.n_iter_,
                    "seconds": time.process_time() - t0}
        Y, params, Z = _data(config, model)
        name, fixed, knob, _ = METHODS[method]
        opts = dict(fixed)
        if method in _EXACT:
            opts["exact_posterior_samples"] = {k: v[None] for k, v in params.items()}
        if method == "cms":
            opts["exact_latents"] = Z
        # the time axis of Figs. 2-5 is the estimator's CPU time (process time, one
        # thread): unlike wall time it does not grow when other work shares the core
        t0 = time.process_time()
        if method in ("vb", "bic"):
            # BIC at the posterior-mean weights of the fit, as the estimator reports it
            est = _fit(config, model, Y, n_init=max(budget, 1), seed=seed)
            value = est.lower_bound_ if method == "vb" else -0.5 * est.bic(Y)
        else:
            est = _fit(config, model, Y, seed=seed)
            t0 = time.process_time()
            if knob is not None:
                opts[knob] = int(budget)
            value = score(est, Y, name, random_state=seed, **opts).log_evidence
        return {"estimate": float(value), "seconds": time.process_time() - t0}


def _summarize(results, config):
    if config["package_models"]:
        return _summarize_package(results, config)
    out = {"truth": {}, "methods": {}, "to_10_nats": {}, "pooled_to_10_nats": {}, "cross": {},
           "cross_hyper": {}, "hint": {}}
    for m in config["models"]:
        tr = results[("truth", m, "", 0, 0)]
        truth = 0.5 * (tr["lower"] + tr["upper"])
        out["truth"][m] = dict(tr, truth=truth, gap=tr["upper"] - tr["lower"])
        per = {}
        for meth, budgets in config["budgets"].items():
            rows = []
            for b in budgets:
                rs = [results[("estimate", m, meth, int(b), t)] for t in range(int(config["trials"]))]
                e = np.array([r["estimate"] for r in rs])
                err = e - truth
                secs = [r["seconds"] for r in rs]
                pooled = pool_trials(e, POOL[meth])
                rows.append({"budget": int(b), "mean": float(e.mean()), "bias": float(err.mean()),
                             "rmse": float(np.sqrt(np.mean(err ** 2))),
                             "sd": float(e.std(ddof=1)) if e.size > 1 else 0.0,
                             "seconds": float(np.mean(secs)),
                             "pooled": pooled, "pooled_error": pooled - truth,
                             "pooled_seconds": float(np.sum(secs))})
            per[meth] = rows
        if "vb" in per:  # VB with the K! symmetry correction
            ls = tr["log_symmetry"]
            per["vb_sym"] = [dict(r, mean=r["mean"] + ls, bias=r["bias"] + ls,
                                  rmse=float(np.sqrt(max(r["rmse"] ** 2 - r["bias"] ** 2, 0)
                                                     + (r["bias"] + ls) ** 2)),
                                  pooled=r["pooled"] + ls, pooled_error=r["pooled_error"] + ls)
                             for r in per["vb"]]
        out["methods"][m] = per
        out["to_10_nats"][m] = {meth: min([r["seconds"] for r in rows if r["rmse"] < 10],
                                          default=None) for meth, rows in per.items()}
        out["pooled_to_10_nats"][m] = {
            meth: min([r["pooled_seconds"] for r in rows if abs(r["pooled_error"]) < 10],
                      default=None) for meth, rows in per.items()}
        h = results[("hint", m, "", 0, 0)]
        out["hint"][m] = dict(h, gap=h["vb"] - truth, gap_sym=h["vb"] + tr["log_symmetry"] - truth)
    for d in config["models"]:
        out["cross"][d] = {f: results[("cross", d, f, 0, 0)]["ais"] for f in config["models"]}
        out["cross_hyper"][d] = {f: results[("cross_hyper", d, f, 0, 0)]
                                 for f in config["models"]}
    return out


def pool_trials(estimates, rule):
    """One estimate from independent trials by ``rule`` (see ``POOL``): "mean" (of Z),
    "harmonic" (of Z), "max" or "mean_log".

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(pool_trials(np.log([1.0, 3.0]), "mean"), np.log(2.0)))
    True
    >>> bool(np.isclose(pool_trials(np.log([1.0, 3.0]), "harmonic"), np.log(1.5)))
    True
    """
    e = np.asarray(estimates, dtype=float)
    if rule == "mean":
        return float(np.logaddexp.reduce(e) - np.log(e.size))
    if rule == "harmonic":
        return float(-(np.logaddexp.reduce(-e) - np.log(e.size)))
    if rule == "max":
        return float(e.max())
    if rule == "mean_log":
        return float(e.mean())
    raise ValueError(f"unknown pooling rule {rule!r}.")


def _report(summary, config, out_dir):
    if config["package_models"]:
        return _report_package(summary, config, out_dir)
    return report_paper_protocol(summary, config, out_dir, METHODS)


def _package_sizes(config, model):
    sizes = config["package_sizes"]
    return sizes[model] if isinstance(sizes, dict) else sizes


def _summarize_package(results, config):
    """Per model and size: the BDMC bracket, and every score minus the truth."""
    cases, failed = [], []
    for m in config["package"]["models"]:
        for n in _package_sizes(config, m):
            r = results[("package", m, "", int(n), 0)]
            if "error" in r:
                failed.append(r)
                continue
            truth = r["truth"]["value"]
            gaps = {k: {"gap": v["value"] - truth, "seconds": v["seconds"],
                        "same_model": v["same_model"]}
                    for k, v in r["scores"].items() if isinstance(v, dict)}
            cases.append({"model": m, "n": int(n), "same_model": r["same_model"],
                          "truth": r["truth"], "gaps": gaps,
                          "stderr": {k[:-7]: v for k, v in r["scores"].items()
                                     if k.endswith("_stderr")},
                          "errors": {k[:-6]: v for k, v in r["scores"].items()
                                     if k.endswith("_error")},
                          "log_aliases": r["log_aliases"]})
    return {"cases": cases, "failed": failed}


def _report_package(summary, config, out_dir):
    plt = pyplot()
    pk = config["package"]
    names = [s[3] for s in SCORES]
    L = ["# BDMC ground truth on the package's own models: how far is each score from the "
         "truth?", "",
         f"Seed {config['seed']}{' (quick mode)' if config['quick'] else ''}; models "
         f"{', '.join(pk['models'])} at sizes {config['package_sizes']} (cases, or time steps of one "
         f"sequence), one simulated data set each; ground truth: forward AIS from the prior and reverse AIS from the "
         f"simulating parameters (theta-only, the latents summed out exactly), "
         f"{pk['truth_chains']} chains each, the first K of {pk['truth_K_grid']} at which "
         f"they agree within 1 nat.  Scores at their defaults"
         + (f" (AIS with {pk['ais_options']})" if pk["ais_options"] else "") + ".", ""]
    rows = [[c["model"], c["n"], c["truth"]["K"], c["truth"]["lower"], c["truth"]["upper"],
             c["truth"]["gap"],
             0.5 * np.hypot(c["truth"]["stderr_lower"], c["truth"]["stderr_upper"]),
             "yes" if abs(c["truth"]["gap"]) < 1 else "no",
             ", ".join(f"{h['K']}: {h['gap']:.2f}" for h in c["truth"].get("history", [])),
             c["truth"]["seconds"]]
            for c in summary["cases"]]
    L += ["## Ground truth (BDMC)", "", markdown_table(
        ["model", "size", "K", "forward AIS", "reverse AIS", "reverse − forward",
         "s.e. of the mean", "within 1 nat", "gap at each K", "seconds"], rows, digits=2), ""]
    rows = []
    for c in summary["cases"]:
        cells = []
        for key, _, _, _ in SCORES:
            g = c["gaps"][key]
            mark = "" if g["same_model"] else "*"
            cells.append("–" if not np.isfinite(g["gap"]) else
                         f"{g['gap']:.1f}{mark} ({g['seconds']:.2g} s)")
        rows.append([c["model"], c["n"], f"{c['truth']['value']:.1f}"] + cells)
    L += ["## Every score minus the truth (nats), seconds in brackets", "",
          markdown_table(["model", "size", "truth"] + names, rows), "",
          "VB's time is the fit's.  `*`: computed with the refit, whose hyperparameters "
          "were re-derived from the simulated data (a slightly different prior than the "
          "truth's).", ""]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    markers = "osD^v<>"
    for i, c in enumerate(summary["cases"]):
        y = np.arange(len(SCORES)) + (i - len(summary["cases"]) / 2) * 0.05
        x = [c["gaps"][k]["gap"] for k, _, _, _ in SCORES]
        ax.plot(x, y, markers[pk["models"].index(c["model"]) % len(markers)], ms=4,
                label=f"{c['model']} {c['n']}", alpha=0.8)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yticks(np.arange(len(SCORES)))
    ax.set_yticklabels(names)
    ax.set_xlabel("score − BDMC truth (nats)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    L += [save_figure(fig, out_dir, "bdmc_package.png"), ""]
    heads = [f"{c['model']} ({c['n']}): {c['gaps']['vb']['gap']:.1f}" for c in summary["cases"]]
    L += ["Headline, VB − truth (nats): " + "; ".join(heads) + ".", ""]
    if summary["failed"]:
        L += ["Cases that failed: " + "; ".join(f"{r['model']} ({r['n']}): {r['error']}"
                                               for r in summary["failed"]), ""]
    return "\n".join(L)


bdmc = register(Experiment(
    name="bdmc",
    description="Grosse et al. 2015: evidence estimators against BDMC ground truth on the "
                "clustering, low-rank and binary-attribute models",
    quick=QUICK, full=FULL, units=_units, run_unit=_run_unit, summarize=_summarize,
    report=_report,
    options=(Option("trials", int, "independent runs per estimator and budget"),
             Option("truth_K", int, "temperatures of the ground-truth AIS runs"),
             Option("package_models", int,
                    "1: the package's own models (HMM, MFA, LDS, DAG) instead of the paper's")),
    # units are keyed by model, method, budget and trial: a journal written with other
    # trials or budgets resumes (the units both runs share are not recomputed)
    resume_ignores=("trials", "budgets", "package_sizes")))
