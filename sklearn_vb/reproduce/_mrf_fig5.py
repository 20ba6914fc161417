"""Fig. 5 of Parise and Welling (2006): the conditional evidence of linear-chain CRFs
along a nested sequence of feature sets, on a synthetic stand-in for the newsgroup FAQ
data (documents of lines with 24 binary features, question/answer labels;
:func:`~sklearn_vb.datasets.make_faq_like_sequences`).

Models: the 24 state features added in a seeded random order, then the 24 transition
features (:func:`~sklearn_vb.model_selection.crf_feature_sequence`).  Scores: MAP (the
penalised likelihood at the MAP), BIC-MAP (``n`` = labelled lines), Laplace-Exact (exact
per-document ``ln Z`` and covariance; on a chain it equals BP with linear response) and
AIS over the weights with the exact conditional likelihood as the ground truth.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..crf import LinearChainCRF
from ..datasets import make_faq_like_sequences
from ..model_selection import crf_feature_sequence
from ..scoring import score
from ._report import markdown_table, save_figure

__all__ = ["FIG5_FULL", "FIG5_QUICK", "units", "run_unit", "summarize", "report"]

METHODS = {
    "MAP": ("bethe_laplace", {"gradient": "bp", "terms": "map"}),
    "BIC-MAP": ("bethe_laplace", {"gradient": "bp", "terms": "bic"}),
    "Laplace-Exact": ("bethe_laplace", {"gradient": "exact", "covariance": "exact"}),
}

FIG5_FULL = {"fig5_documents": 2, "fig5_lines": 100, "fig5_ais_K": 10000, "fig5_ais_runs": 10,
             "fig5_every": 1, "fig5_only": False}
FIG5_QUICK = dict(FIG5_FULL, fig5_ais_K=1000, fig5_ais_runs=2, fig5_every=8)


def _data(config):
    return make_faq_like_sequences(config["fig5_documents"], config["fig5_lines"],
                                   random_state=np.random.RandomState([config["seed"], 5]))


def _models(config):
    return crf_feature_sequence(24, random_state=np.random.RandomState([config["seed"], 55]))


def units(config):
    """One unit per scored model: ``("crf", 0, 0.0, 0, 0, k)``."""
    n = len(_models(config))
    ks = sorted(set(range(config["fig5_every"] - 1, n, config["fig5_every"])) | {0, n - 1})
    return [("crf", 0, 0.0, 0, 0, int(k)) for k in ks]


def run_unit(key, config, seed):
    k = key[5]
    X, y, lengths = _data(config)
    structure = _models(config)[k]
    out = {"k": k, "n_features": len(structure["state_features"])
           + len(structure["transition_features"])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the paper's features: no label bias, no constant transition weight
        crf = LinearChainCRF(**structure, bias=False).fit(X, y, lengths=lengths)
        for label, (method, opts) in METHODS.items():
            out[label] = float(score(crf, X, method, y=y, lengths=lengths, **opts).log_evidence)
        t0 = time.perf_counter()
        runs = config["fig5_ais_runs"]
        a = score(crf, X, "ais", y=y, lengths=lengths, n_temperatures=config["fig5_ais_K"],
                  n_chains=runs, n_runs=runs, start="q", random_state=seed)
        out["AIS"], out["AIS_stderr"] = float(a.log_evidence), float(a.stderr)
        est = a.diagnostics.get("run_estimates", [])
        out["AIS_run_sd"] = float(np.std(est, ddof=1)) if len(est) > 1 else float("nan")
        out["ais_seconds"] = time.perf_counter() - t0
        out["train_accuracy"] = float(crf.score(X, y, lengths=lengths))
    return out


def summarize(results, config):
    rows = sorted((r for key, r in results.items() if key[0] == "crf"), key=lambda r: r["k"])
    labels = list(METHODS)
    err = {lab: [abs(r[lab] - r["AIS"]) for r in rows] for lab in labels}
    within = [abs(r["Laplace-Exact"] - r["AIS"]) <= 3 * max(r["AIS_stderr"], 1e-12) for r in rows]
    best = {lab: int(rows[int(np.argmax([r[lab] for r in rows]))]["n_features"])
            for lab in labels + ["AIS"]}
    return {"rows": rows,
            "mean_abs_error": {lab: float(np.mean(e)) for lab, e in err.items()},
            "max_abs_error": {lab: float(np.max(e)) for lab, e in err.items()},
            "laplace_within_3_stderr": float(np.mean(within)),
            "mean_ais_stderr": float(np.mean([r["AIS_stderr"] for r in rows])),
            "best_n_features": best,
            "ais_seconds": float(np.sum([r["ais_seconds"] for r in rows]))}


def report(summary, config, out_dir, plt):
    rows = summary["rows"]
    labels = list(METHODS)
    x = [r["n_features"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for lab in labels:
        ax.plot(x, [r[lab] for r in rows], "o-", ms=3, label=lab)
    ax.errorbar(x, [r["AIS"] for r in rows], yerr=[r["AIS_stderr"] for r in rows], fmt="k.",
                label="AIS")
    ax.axvline(24.5, color="0.7", lw=0.8)
    ax.set_xlabel("features in the model (state, then transition)")
    ax.set_ylabel("ln p(labels | lines) (nats)")
    ax.legend(fontsize=6)
    me, mx = summary["mean_abs_error"], summary["max_abs_error"]
    every = config["fig5_every"]
    subset = "" if every == 1 else f" (every {every}th model scored, and the first and last)"
    table = [[r["n_features"]] + [r[lab] for lab in labels] + [r["AIS"], r["AIS_stderr"]]
             for r in rows]
    L = ["## Fig. 5: linear-chain CRF on FAQ-shaped data", "",
         f"{config['fig5_documents']} synthetic documents of {config['fig5_lines']} lines, 24 "
         "binary line features (8 label-informative, 8 carrying the transitions, 8 noise), "
         "question/answer labels; N(0, 1) priors; the nested sequence adds the 24 state "
         "features in a random order, then the 24 transition features"
         f"{subset}. "
         f"Truth: AIS over the weights ({config['fig5_ais_K']} temperatures, "
         f"{config['fig5_ais_runs']} runs, started from the Laplace Gaussian) with the exact "
         "conditional likelihood.", "",
         save_figure(fig, out_dir, "mrf_fig5.png"), "",
         f"Laplace-Exact tracks AIS: mean absolute difference from AIS {me['Laplace-Exact']:.3f} nats "
         f"(max {mx['Laplace-Exact']:.3f}; AIS standard error {summary['mean_ais_stderr']:.3f} "
         f"on average; within 3 standard errors for "
         f"{100 * summary['laplace_within_3_stderr']:.0f}% of the models), against "
         f"{me['MAP']:.1f} nats for MAP and {me['BIC-MAP']:.1f} for BIC-MAP. "
         "Best model by each score (number of features): "
         + ", ".join(f"{k} {v}" for k, v in summary["best_n_features"].items()) + ".", "",
         markdown_table(["features"] + labels + ["AIS", "AIS stderr"], table, digits=3), ""]
    return "\n".join(L)
