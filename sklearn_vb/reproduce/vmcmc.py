"""``reproduce vmcmc``: de Freitas, Højen-Sørensen, Jordan & Russell (2001), variational
MCMC on Bayesian logistic belief networks — the unimodal experiment (Figs. 12 and 13)
and its cost table (Table 1).

* Data: one child with ``p`` parents (Bernoulli(0.5) each), bias 0.5, generating
  weights uniform on (0, 1], ``n`` cases; prior ``N(0, 100 I)`` on every bias and weight
  (:class:`~sklearn_vb.VBSigmoidBeliefNetwork`'s default).
* Methods: the Jaakkola–Jordan VB fit; block variational MH (``kernel="block"``), random
  walk Metropolis (variance 0.01, ``rw_step=0.1``) and the mixture of the two
  (``nu = 0.5``), one chain of ``n_mcmc`` samples each, started from a draw of q, no
  burn-in (as in the paper).
* Score: the log-likelihood of the data at each method's estimate of the posterior mean
  of the child's weights, minus that of the random walk (the paper's "relative
  log-likelihood"; positive = better than the random walk), mean and standard error
  over ``repeats`` data sets; the seconds each method took (the paper reported flops).

The bimodal experiment with a hidden parent (§5.2, Figs. 14-16) is in
:mod:`._vmcmc_bimodal`: mode masses, means, variances and kurtoses of each sampler
against the exact grid posterior, and the samples drawn over the exact contours and q's.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from ..mcmc import VariationalMCMC
from ..sbn import VBSigmoidBeliefNetwork
from ._experiment import Experiment, Option, register
from ._vmcmc_bimodal import BIMODAL_SAMPLERS, run_bimodal
from ._report import markdown_table, pyplot, save_figure

__all__ = ["vmcmc"]

METHODS = ("vb", "block", "random_walk", "mixture")
_NAMES = {"vb": "VB", "block": "block variational MH", "random_walk": "random walk",
          "mixture": "mixture"}

FULL = {"parents": [1, 5, 10, 20, 50], "n": 1000, "repeats": 10, "n_mcmc": [500, 5000],
        "prior_variance": 100.0, "rw_step": 0.1, "nu": 0.5,
        "bimodal_n": 50, "bimodal_prior_mean": 3.0, "bimodal_prior_variance": 10.0,
        "bimodal_n_mcmc": 5000, "bimodal_rw_step": 0.1, "bimodal_repeats": 10,
        "bimodal_grid": [-12.0, 20.0, 321]}
QUICK = dict(FULL, parents=[1, 3, 6], n=300, repeats=3, n_mcmc=[500], bimodal_n_mcmc=1500,
             bimodal_repeats=2, bimodal_grid=[-12.0, 20.0, 161])
BIMODAL = ("bimodal", 0)


def _data(p, n, seed):
    rng = np.random.default_rng(seed)
    U = (rng.random((n, p)) < 0.5).astype(float)
    w = rng.uniform(0.0, 1.0, p)
    w[w == 0] = 1.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(0.5 + U @ w)))).astype(float)
    cols = [f"x{i}" for i in range(p)]
    X = pd.DataFrame(np.column_stack([U, y]), columns=cols + ["y"])
    return X, {"y": cols, **{c: [] for c in cols}}


def _loglik(w, X, p):
    U = np.column_stack([np.ones(len(X)), X.iloc[:, :p].to_numpy()])
    s = 2 * X["y"].to_numpy() - 1
    return float(-np.logaddexp(0.0, -s * (U @ w)).sum())


def _units(config):
    units = [(int(p), int(r)) for p in config["parents"] for r in range(int(config["repeats"]))]
    return units + [BIMODAL] if int(config.get("bimodal_repeats", 0)) > 0 else units


def _run_unit(key, config, seed):
    if tuple(key) == BIMODAL:
        return run_bimodal(config, seed)
    p, r = key
    X, structure = _data(p, int(config["n"]), seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est = VBSigmoidBeliefNetwork(structure, prior_variance=config["prior_variance"],
                                     n_init=1, tol=1e-6, random_state=seed).fit(X)
        t_vb = time.perf_counter() - t0
    j = est.structure_.index("y")
    out = {"vb": {"loglik": _loglik(est.coef_[j], X, p), "seconds": t_vb}}
    for n_mcmc in config["n_mcmc"]:
        for kernel in METHODS[1:]:
            t0 = time.perf_counter()
            s = VariationalMCMC(est, kernel, nu=config["nu"], n_samples=int(n_mcmc), burn_in=0,
                                n_chains=1, rw_step=config["rw_step"],
                                random_state=seed).fit(X)
            mean = s.samples_["w[y]"][0].mean(axis=0)
            out[f"{kernel}_{n_mcmc}"] = {"loglik": _loglik(mean, X, p),
                                         "seconds": time.perf_counter() - t0,
                                         "acceptance": s.acceptance_}
    return out


def _summarize(results, config):
    rel, cost = {}, {}
    for n_mcmc in config["n_mcmc"]:
        rel[n_mcmc], cost[n_mcmc] = {}, {}
        for p in config["parents"]:
            units = [results[(int(p), r)] for r in range(int(config["repeats"]))]
            row, crow = {}, {}
            for m in METHODS:
                tag = "vb" if m == "vb" else f"{m}_{n_mcmc}"
                d = np.array([u[tag]["loglik"] - u[f"random_walk_{n_mcmc}"]["loglik"] for u in units])
                row[m] = {"mean": float(d.mean()),
                          "stderr": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")}
                crow[m] = float(np.mean([u[tag]["seconds"] for u in units]))
            rel[n_mcmc][int(p)] = row
            cost[n_mcmc][int(p)] = crow
    out = {"relative_loglik": rel, "seconds": cost}
    if BIMODAL in results:
        out["bimodal"] = _summarize_bimodal(results[BIMODAL])
    return out


def _summarize_bimodal(res):
    """Per sampler: mean and spread over the chains of the mode masses and moments."""
    table = {}
    for name, runs in res["samplers"].items():
        row = {}
        for stat in ("mode_mass", "mean", "variance", "kurtosis"):
            vals = np.array([r[stat] for r in runs], dtype=float)
            row[stat] = {"mean": vals.mean(axis=0).tolist(),
                         "sd": (vals.std(axis=0, ddof=1) if len(runs) > 1
                                else np.full(vals.shape[1], np.nan)).tolist()}
        row["acceptance"] = {k: float(np.mean([r["acceptance"][k] for r in runs]))
                             for k in runs[0]["acceptance"]}
        table[name] = row
    return {"exact": res["exact"], "q": res["q"], "q_summary": res["q_summary"],
            "lower_bound": res["lower_bound"], "samplers": table,
            "n_chains": len(next(iter(res["samplers"].values()))),
            "grid_axis": res["grid_axis"], "grid_log_p": res["grid_log_p"],
            "samples": {k: v[0]["samples"] for k, v in res["samplers"].items()}}


def _report(summary, config, out_dir):
    parts = ["# Variational MCMC on logistic belief networks (de Freitas et al. 2001)", "",
             f"One child with p parents, n = {config['n']} cases, prior N(0, "
             f"{config['prior_variance']:g} I), random-walk variance {config['rw_step']**2:g}, "
             f"{config['repeats']} data sets per p.  Relative log-likelihood: ln p(y | posterior "
             "mean estimate) minus the random walk's (positive = better than the random walk).",
             ""]
    plt = pyplot()
    for n_mcmc, table in summary["relative_loglik"].items():
        rows = [[p] + [f"{table[p][m]['mean']:.2f} ± {table[p][m]['stderr']:.2f}"
                       for m in METHODS] for p in table]
        parts += [f"## {n_mcmc} MCMC samples (the paper's Fig. {12 if int(n_mcmc) <= 500 else 13})",
                  "", markdown_table(["parents"] + [_NAMES[m] for m in METHODS], rows), ""]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ps = list(table)
        for m in METHODS:
            ax.errorbar(ps, [table[p][m]["mean"] for p in ps],
                        yerr=[table[p][m]["stderr"] for p in ps], label=_NAMES[m], capsize=3)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xlabel("number of parents")
        ax.set_ylabel("log-likelihood − random walk's")
        ax.legend(fontsize=8)
        parts += [save_figure(fig, out_dir, f"vmcmc_relative_{n_mcmc}.png"), ""]
    for n_mcmc, table in summary["seconds"].items():
        rows = [[p] + [table[p][m] for m in METHODS] for p in table]
        parts += [f"## Seconds per run, {n_mcmc} samples (the paper's Table 1 in flops)", "",
                  markdown_table(["parents"] + [_NAMES[m] for m in METHODS], rows, digits=3), ""]
    parts += ["The paper found the mixture better than the random walk and than block "
              "variational MH, which was better than VB, for every number of parents; "
              "compare the tables above.", ""]
    if "bimodal" in summary:
        parts += _report_bimodal(summary["bimodal"], config, out_dir)
    return "\n".join(parts)


_BI_NAMES = {"random_walk": "random walk (Fig. 14)", "independence": "independence, VB q (Fig. 15)",
             "mixture": "mixture (Fig. 16)", "regeneration": "independence + regeneration"}


def _report_bimodal(bi, config, out_dir):
    ex = bi["exact"]
    fmt = lambda a: ", ".join(f"{v:.2f}" for v in a)  # noqa: E731
    pm = lambda row, s: ", ".join(f"{m:.2f} ± {d:.2f}" for m, d in  # noqa: E731
                                  zip(row[s]["mean"], row[s]["sd"]))
    parts = ["## Bimodal posterior with a hidden parent (the paper's §5.2, Figs. 14-16)", "",
             f"Child y with a hidden parent h and an observed parent x (entering as -1/+1), "
             f"weights 2 and -1, known biases (child 2, parents' means 0.6 and 0.5), "
             f"n = {config['bimodal_n']}, prior N({config['bimodal_prior_mean']:g}, "
             f"{config['bimodal_prior_variance']:g} I); exact posterior on a "
             f"{bi['grid_axis'][2]}² grid over [{bi['grid_axis'][0]:g}, {bi['grid_axis'][1]:g}]²; "
             f"{config['bimodal_n_mcmc']} iterations per chain from a draw of q, no burn-in, "
             f"random-walk variance {config['bimodal_rw_step']**2:g}, nu = {config['nu']:g}; "
             f"mean ± sd over {bi['n_chains']} chains.  Modes: basins of steepest ascent on the "
             f"grid, at ({fmt(ex['mode_location'][0])})"
             + (f" and ({fmt(ex['mode_location'][1])})" if len(ex["mode_location"]) > 1 else "")
             + f" ({ex['n_basins']} basins).  Kurtosis E[(w-m)^4]/var² (3 for a Gaussian).", ""]
    rows = [["exact (grid)", fmt(ex["mode_mass"]), fmt(ex["mean"]), fmt(ex["variance"]),
             fmt(ex["kurtosis"]), ""],
            ["VB q", f"all in mode {bi['q_summary']['mode'] + 1}", fmt(bi["q_summary"]["mean"]),
             fmt(bi["q_summary"]["variance"]), "3.00, 3.00", ""]]
    for name, row in bi["samplers"].items():
        rows.append([_BI_NAMES[name], pm(row, "mode_mass"), pm(row, "mean"), pm(row, "variance"),
                     pm(row, "kurtosis"),
                     ", ".join(f"{k} {v:.2f}" for k, v in row["acceptance"].items())])
    parts += [markdown_table(["method", "mass in modes 1, 2", "mean (w_h, w_x)",
                              "variance (w_h, w_x)", "kurtosis (w_h, w_x)", "acceptance"], rows),
              "", f"VB lower bound: {bi['lower_bound']:.3f} nats.", ""]
    plt = pyplot()
    lo, hi, n = bi["grid_axis"]
    axis = np.linspace(lo, hi, int(n))
    logp = np.array(bi["grid_log_p"])
    qm, qc = np.array(bi["q"]["mean"]), np.array(bi["q"]["cov"])
    A, B = np.meshgrid(axis, axis, indexing="ij")
    D = np.stack([A - qm[0], B - qm[1]], -1)
    qlog = -0.5 * np.einsum("...i,ij,...j->...", D, np.linalg.inv(qc), D)
    fig, axes = plt.subplots(1, len(bi["samples"]), figsize=(4 * len(bi["samples"]), 4),
                             sharex=True, sharey=True)
    levels = logp.max() - np.array([8.0, 4.0, 2.0, 0.5])
    for ax, (name, S) in zip(np.atleast_1d(axes), bi["samples"].items()):
        S = np.asarray(S)
        ax.contour(axis, axis, logp.T, levels=np.sort(levels), colors="k", linestyles="solid",
                   linewidths=0.8)
        ax.contour(axis, axis, qlog.T, levels=[-4.0, -2.0, -0.5], colors="r", linestyles="--",
                   linewidths=0.8)
        ax.plot(S[:, 0], S[:, 1], ".", ms=1.5, alpha=0.4, color="tab:blue")
        ax.set_title(_BI_NAMES[name], fontsize=9)
        ax.set_xlabel("w_h (hidden parent)")
    np.atleast_1d(axes)[0].set_ylabel("w_x (observed parent)")
    span = np.exp(logp) > 1e-6
    ii, jj = np.nonzero(span)
    np.atleast_1d(axes)[0].set_xlim(axis[ii.min()] - 0.5, axis[ii.max()] + 0.5)
    np.atleast_1d(axes)[0].set_ylim(axis[jj.min()] - 0.5, axis[jj.max()] + 0.5)
    parts += [save_figure(fig, out_dir, "vmcmc_bimodal.png"),
              "", "Black: exact posterior contours (ln p at 0.5, 2, 4 and 8 nats below the "
              "maximum); red dashed: q; dots: every 5th draw of the first chain.", ""]
    return parts


vmcmc = register(Experiment(
    name="vmcmc",
    description="de Freitas et al. (2001): variational MCMC on logistic belief networks "
                "(relative log-likelihood vs random walk, cost)",
    quick=QUICK, full=FULL, units=_units, run_unit=_run_unit, summarize=_summarize,
    report=_report,
    options=(Option("repeats", int, "data sets per number of parents"),
             Option("bimodal_repeats", int, "chains per sampler in the bimodal experiment "
                    "(0: skip it)")),
    resume_ignores=("repeats",)))
