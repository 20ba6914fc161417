"""The hidden-unit study of ``reproduce mrf``: evidence of Boltzmann machines with hidden
units (what Parise and Welling 2006 leave open), and the choice of their number.

Data: restricted Boltzmann machines on ``p`` visible units with ``H_true`` hidden units
(couplings of random sign and magnitude ``U[w_low, w_high]``, biases ``U[-1, 1]``),
exact samples of the visible units.  For every data set each candidate ``H`` is fitted
(:class:`~sklearn_vb.BoltzmannMachine`, restricted connectivity) and scored: MAP
(``l + ln p``), BIC, the Laplace evidence of the visible marginal likelihood (exact
covariances), its Bethe-Laplace version (BP and linear response), Cheeseman-Stutz
(hidden units completed at the MAP, the completed model scored by Laplace), the
variational lower bound, and AIS over the parameters with the exact visible likelihood
(ground truth).  The exchangeable hidden units make ``H!`` equivalent posterior modes.
The local estimates see one of them, and so does AIS started from the Laplace Gaussian
(its chains stay in the mode they start in; a prior-started run with 20 000
temperatures on one data set came out ``ln 2`` higher for ``H = 2``), so the errors
compare the single-mode values and the selection adds ``ln H!`` to every score but MAP.
"""

from __future__ import annotations

import time
import warnings
from math import lgamma

import numpy as np
from scipy.special import logsumexp

from ..boltzmann import BoltzmannMachine, boltzmann_edges
from ..mrf.inference import ExactEngine
from ..mrf.layout import MRFLayout
from ..scoring import score, scoring_model_for
from ._experiment import Experiment
from ._report import markdown_table, pyplot, save_figure

__all__ = ["FULL", "QUICK", "units", "run_unit", "summarize", "report", "METHODS", "HIDDEN_STUDY"]

FULL = {
    "hidden_n_visible": 5, "hidden_true": [0, 1, 2], "hidden_candidates": [0, 1, 2, 3],
    "hidden_sizes": [50, 200, 1000], "hidden_n_datasets": 3, "hidden_w": [1.5, 2.5],
    "hidden_prior_variance": 1.0, "hidden_ais_K": 1500, "hidden_ais_chains": 8,
    "hidden_tiny_sizes": [10, 30, 100, 300], "hidden_tiny_reps": 3,
}
QUICK = dict(FULL, hidden_true=[1], hidden_candidates=[0, 1, 2], hidden_sizes=[200],
             hidden_n_datasets=1, hidden_ais_K=300, hidden_ais_chains=4,
             hidden_tiny_sizes=[30], hidden_tiny_reps=1)

#: label -> (method, options, add ln H!)
METHODS = {
    "MAP": ("hidden_laplace", {"terms": "map"}, False),
    "BIC": ("hidden_laplace", {"terms": "bic"}, True),
    "Laplace": ("hidden_laplace", {}, True),
    "Bethe-Laplace": ("hidden_laplace", {"inference": "bp"}, True),
    "CS": ("cs", {}, True),
    "VB": ("hidden_vb", {}, True),
}
#: the estimates of ln p(X) (compared with AIS); MAP and BIC are selection criteria only
ESTIMATES = ("Laplace", "Bethe-Laplace", "CS", "VB")


def dataset(config, h_true, n, d):
    """``n`` exact samples of the visible units of RBM number ``d`` with ``h_true`` hidden
    units."""
    p = int(config["hidden_n_visible"])
    ss = np.random.SeedSequence([int(config["seed"]), 13, int(h_true), int(d)])
    rng = np.random.default_rng(ss)
    layout = MRFLayout(np.full(p + h_true, 2), boltzmann_edges(p, h_true, "restricted"))
    lo, hi = config["hidden_w"]
    coef = np.concatenate([rng.uniform(-1, 1, p + h_true),
                           rng.choice([-1.0, 1.0], layout.n_edges) * rng.uniform(lo, hi, layout.n_edges)])
    n_max = max(config["hidden_sizes"])
    X = ExactEngine(layout).sample(coef, n_max, rng)[:, :p]
    return X[:n].astype(float)


def units(config):
    study = [("hidden", int(t), int(n), int(d), int(h), 0)
             for t in config["hidden_true"] for n in config["hidden_sizes"]
             for d in range(config["hidden_n_datasets"]) for h in config["hidden_candidates"]]
    tiny = [("hidden", -1, int(n), int(r), 1, 1) for n in config["hidden_tiny_sizes"]
            for r in range(config["hidden_tiny_reps"])]
    return sorted(study + tiny)


#: the estimates of the tiny-model oracle
TINY = {"Laplace": ("hidden_laplace", {}), "CS": ("cs", {}), "VB": ("hidden_vb", {}),
        "BIC": ("hidden_laplace", {"terms": "bic"})}


def _tiny_unit(config, n, r):
    """One visible and one hidden unit (3 parameters): every estimate against the
    evidence by quadrature on a 91^3 grid over [-6.5, 6.5]^3 (the prior has unit
    variance)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(config["seed"]), 17, n, r]))
    X = (rng.random((n, 1)) < rng.uniform(0.1, 0.9)).astype(float)
    est = BoltzmannMachine(1, prior_variance=1.0, random_state=0).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    g = np.linspace(-6.5, 6.5, 91)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    lj = model.log_prior({"coef": grid}) + model.log_likelihood({"coef": grid}, data)
    out = {"exact": float(logsumexp(lj) + 3 * np.log(g[1] - g[0]))}
    for label, (method, opts) in TINY.items():
        out[label] = float(score(est, X, method, **opts).log_evidence)
    return out


def run_unit(key, config, seed):
    _, h_true, n, d, h, tiny = key
    if tiny:
        return _tiny_unit(config, n, d)
    X = dataset(config, h_true, n, d)
    out = {"log_h_factorial": lgamma(h + 1)}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BoltzmannMachine(h, prior_variance=config["hidden_prior_variance"],
                               random_state=seed).fit(X)
        out["n_parameters"] = int(est.n_parameters_)
        for label, (method, opts, _) in METHODS.items():
            r = score(est, X, method, **opts)
            out[label] = float(r.log_evidence)
        out["fit_score_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        a = score(est, X, "ais", n_temperatures=config["hidden_ais_K"],
                  n_chains=config["hidden_ais_chains"], n_runs=config["hidden_ais_chains"],
                  start="q", random_state=seed)
        out["AIS"], out["AIS_stderr"] = float(a.log_evidence), float(a.stderr)
        out["ais_seconds"] = time.perf_counter() - t0
    return out


def _corrected(r, label):
    """The value with ``ln H!`` for the selection (AIS from the Laplace Gaussian too)."""
    v = r[label]
    return v + r["log_h_factorial"] if METHODS.get(label, (0, 0, True))[2] else v


def summarize(results, config):
    cands = [int(h) for h in config["hidden_candidates"]]
    rows = [(k, r) for k, r in results.items() if k[5] == 0]
    tiny = {}
    for n in config["hidden_tiny_sizes"]:
        rs = [r for k, r in results.items() if k[5] == 1 and k[2] == int(n)]
        if rs:
            tiny[str(n)] = {lab: {"mean_abs": float(np.mean([abs(r[lab] - r["exact"]) for r in rs])),
                                  "mean": float(np.mean([r[lab] - r["exact"] for r in rs]))}
                            for lab in TINY}
    tiny_vb_above = int(sum(r["VB"] > r["exact"] for k, r in results.items() if k[5] == 1))
    errors = {}
    for label in ESTIMATES:
        e = [r[label] - r["AIS"] for _, r in rows]
        errors[label] = {"mean_abs": float(np.nanmean(np.abs(e))), "mean": float(np.nanmean(e)),
                         "max_abs": float(np.nanmax(np.abs(e))),
                         "nan_fraction": float(np.mean(np.isnan(e)))}
    e_vb = [r["VB"] - r["AIS"] for _, r in rows]
    errors["VB"]["raw_above_ais"] = int(np.sum(np.array(e_vb) > 2 * np.array(
        [r["AIS_stderr"] for _, r in rows])))
    by_h = {str(h): {label: float(np.nanmean([abs(r[label] - r["AIS"])
                                              for k, r in rows if k[4] == h]))
                     for label in ESTIMATES} for h in cands}
    by_n = {str(n): {label: float(np.nanmean([abs(r[label] - r["AIS"])
                                              for k, r in rows if k[2] == n]))
                     for label in ESTIMATES} for n in config["hidden_sizes"]}
    labels = list(METHODS) + ["AIS"]
    out = {"tiny": tiny, "tiny_vb_above_exact": tiny_vb_above, "errors": errors,
           "errors_by_h": by_h, "errors_by_n": by_n,
           "ais_stderr_max": float(max(r["AIS_stderr"] for _, r in rows)),
           "seconds": {"fit_score": float(sum(r["fit_score_seconds"] for _, r in rows)),
                       "ais": float(sum(r["ais_seconds"] for _, r in rows))},
           "n_units": len(rows)}
    for suffix, value in (("", _corrected), ("_raw", lambda r, lab: r[lab])):
        picks, rate, agreement = _selection(results, config, cands, labels, value)
        out.update({"picks" + suffix: picks, "pick_rate" + suffix: rate,
                    "agreement_with_ais" + suffix: agreement})
    return out


def _selection(results, config, cands, labels, value):
    """Per (H_true, N) the fraction of data sets on which each score picks H_true, the
    overall rate and the agreement with the choice of AIS."""
    picks = {lab: {} for lab in labels}
    agree = {lab: [] for lab in labels}
    for t in config["hidden_true"]:
        for n in config["hidden_sizes"]:
            hits = {lab: [] for lab in labels}
            for d in range(config["hidden_n_datasets"]):
                rs = [results[("hidden", int(t), int(n), d, h, 0)] for h in cands]
                chosen = {}
                for lab in labels:
                    vals = np.array([value(r, lab) for r in rs])
                    vals = np.where(np.isnan(vals), -np.inf, vals)
                    chosen[lab] = cands[int(np.argmax(vals))]
                    hits[lab].append(chosen[lab] == t)
                for lab in labels:
                    agree[lab].append(chosen[lab] == chosen["AIS"])
            for lab in labels:
                picks[lab][f"{t}/{n}"] = float(np.mean(hits[lab]))
    overall = {lab: float(np.mean([v for v in picks[lab].values()])) for lab in labels}
    agreement = {lab: float(np.mean(agree[lab])) for lab in labels}
    return picks, overall, agreement


def report(summary, config, out_dir):
    """Markdown lines of the hidden-unit section."""
    labels = list(METHODS) + ["AIS"]
    e = summary["errors"]
    L = ["## Hidden units: evidence and the number of hidden units", "",
         f"RBM data on {config['hidden_n_visible']} visible units with H_true in "
         f"{config['hidden_true']} hidden units (|w| ~ U{tuple(config['hidden_w'])}), "
         f"N in {config['hidden_sizes']}, {config['hidden_n_datasets']} data sets each; "
         f"candidates H in {config['hidden_candidates']}; ground truth AIS over the parameters "
         f"({config['hidden_ais_K']} temperatures x {config['hidden_ais_chains']} chains, exact "
         f"visible likelihood; largest standard error {summary['ais_stderr_max']:.3f}).  "
         "AIS starts from the Laplace Gaussian and, like the local estimates, sees one of the "
         "H! equivalent modes: errors compare single-mode values; the selection adds ln H! to "
         "every score but MAP.", "",
         "### Tiny models against the exact evidence", "",
         "One visible and one hidden unit (3 parameters), Bernoulli data, the evidence by "
         "quadrature; mean absolute error (mean signed error) in nats over "
         f"{config['hidden_tiny_reps']} data sets per N:", "",
         markdown_table(["N"] + list(TINY),
                        [[n] + [f"{v[lab]['mean_abs']:.3f} ({v[lab]['mean']:+.3f})" for lab in TINY]
                         for n, v in summary["tiny"].items()]), "",
         f"The VB bound exceeds the exact evidence in {summary['tiny_vb_above_exact']} of "
         f"{sum(1 for _ in summary['tiny']) * config['hidden_tiny_reps']} data sets.", "",
         "### Error against AIS (nats, all fits)", "",
         markdown_table(["estimate", "mean abs. error", "mean error", "max abs. error", "nan fraction"],
                        [[lab, e[lab]["mean_abs"], e[lab]["mean"], e[lab]["max_abs"],
                          e[lab]["nan_fraction"]] for lab in ESTIMATES], digits=3), "",
         f"The VB bound lies above AIS by more than two standard errors in "
         f"{e['VB']['raw_above_ais']} of {summary['n_units']} fits (it is a lower bound).", "",
         "### Mean absolute error by candidate H", "",
         markdown_table(["H"] + list(ESTIMATES),
                        [[h] + [v[lab] for lab in ESTIMATES] for h, v in summary["errors_by_h"].items()],
                        digits=3), "",
         "### Mean absolute error by N", "",
         markdown_table(["N"] + list(ESTIMATES),
                        [[n] + [v[lab] for lab in ESTIMATES] for n, v in summary["errors_by_n"].items()],
                        digits=3), "",
         "### How often each score picks the true number of hidden units", "",
         markdown_table(["H_true / N"] + labels,
                        [[k] + [summary["picks"][lab][k] for lab in labels]
                         for k in summary["picks"]["AIS"]], digits=2), "",
         markdown_table(["", *labels],
                        [["overall", *[summary["pick_rate"][lab] for lab in labels]],
                         ["agrees with AIS", *[summary["agreement_with_ais"][lab] for lab in labels]],
                         ["overall, no ln H!", *[summary["pick_rate_raw"][lab] for lab in labels]],
                         ["agrees with AIS, no ln H!",
                          *[summary["agreement_with_ais_raw"][lab] for lab in labels]]],
                        digits=2), "",
         "The ln H! correction assumes the H! copies of the posterior are separated; for "
         "redundant hidden units (weights near 0) they overlap and the correction "
         "over-counts, which pushes every score, AIS from the Laplace Gaussian included, "
         "towards too many hidden units.  The rows without it bracket the choice.", ""]
    if out_dir is not None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5, 3.4))
        ns = list(summary["errors_by_n"])
        for lab in ESTIMATES:
            ax.plot([float(n) for n in ns], [summary["errors_by_n"][n][lab] for n in ns], "o-",
                    ms=3, label=lab)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N")
        ax.set_ylabel("mean |estimate − AIS| (nats)")
        ax.legend(fontsize=7)
        L += [save_figure(fig, out_dir, "mrf_hidden_error.png"), ""]
    s = summary["seconds"]
    L += [f"Compute: fits and local scores {s['fit_score']:.0f} s, AIS {s['ais']:.0f} s "
          f"({summary['n_units']} fits).", ""]
    return L


def _standalone_report(summary, config, out_dir):
    return "\n".join(["# Boltzmann machines with hidden units (the hidden-unit study of "
                      "`reproduce mrf`)", "", f"Seed {config['seed']}"
                      f"{' (quick mode)' if config['quick'] else ''}.", ""]
                     + report(summary, config, out_dir))


#: the study alone (not registered: ``reproduce mrf`` runs it with the paper's figures);
#: ``run_experiment(HIDDEN_STUDY, ...)`` runs only these units
HIDDEN_STUDY = Experiment(
    name="mrf_hidden", description="hidden-unit study of reproduce mrf", quick=QUICK, full=FULL,
    units=units, run_unit=run_unit, summarize=summarize, report=_standalone_report,
    resume_ignores=("hidden_tiny_sizes", "hidden_tiny_reps"))
