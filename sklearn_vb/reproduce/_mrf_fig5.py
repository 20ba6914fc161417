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
from ._report import Verdict, markdown_table, save_figure, verdict_table

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


def data_statistics(X, y, lengths):
    """What the paper states about its data, measured on ours, and the frequencies of
    the stand-in's features (which the paper does not state)."""
    runs = {0: [], 1: []}
    for doc in np.split(y, np.cumsum(lengths)[:-1]):
        edges = np.flatnonzero(np.diff(doc)) + 1
        for block in np.split(doc, edges):
            runs[int(block[0])].append(block.size)
    density = X.mean(axis=0)
    return {"documents": int(len(lengths)), "lines": [int(n) for n in lengths],
            "features": int(X.shape[1]),
            "binary": bool(np.all((X == 0) | (X == 1))),
            "labels": sorted(int(v) for v in np.unique(y)),
            "answer_fraction": float(np.mean(y == 1)),
            "question_block_mean": float(np.mean(runs[0])) if runs[0] else float("nan"),
            "answer_block_mean": float(np.mean(runs[1])) if runs[1] else float("nan"),
            "density": float(density.mean()),
            "density_groups": [float(density[a:a + 8].mean()) for a in (0, 8, 16)],
            "density_range": [float(density.min()), float(density.max())],
            "lines_without_features": float(np.mean(X.sum(axis=1) == 0))}


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
            "ais_seconds": float(np.sum([r["ais_seconds"] for r in rows])),
            "data": data_statistics(*_data(config))}


def _verdicts(summary, config):
    """The paper's statements about Fig. 5 and its data against ours."""
    d, me, rows = summary["data"], summary["mean_abs_error"], summary["rows"]
    by_n = {r["n_features"]: r for r in rows}
    n_state = 24
    gain = {}
    if {1, n_state, 2 * n_state} <= set(by_n):
        gain = {"state": by_n[n_state]["AIS"] - by_n[1]["AIS"],
                "transition": by_n[2 * n_state]["AIS"] - by_n[n_state]["AIS"]}
    others = min(me["MAP"], me["BIC-MAP"])
    out = [
        Verdict("data: the newsgroup FAQ files of McCallum et al., lines labelled header, "
                "question or answer, binarised by keeping the question and answer lines",
                "synthetic documents of question and answer lines "
                "(`sklearn_vb.datasets.make_faq_like_sequences`)",
                "no: a stand-in; the FAQ data set is not obtainable offline"),
        Verdict("N = 2 files, each truncated to 100 lines",
                f"{d['documents']} documents of {', '.join(map(str, d['lines']))} lines",
                "yes" if d["documents"] == 2 and d["lines"] == [100, 100] else "no"),
        Verdict("24 binary features g_a(x) per line, as provided with the data",
                f"{d['features']} features, {'all' if d['binary'] else 'not all'} 0/1; "
                f"labels {d['labels']} (1 = answer)",
                "yes" if d["features"] == 24 and d["binary"] else "no"),
        Verdict("the features' frequencies or sparsity",
                "not stated in the paper; ours: a feature is on in "
                f"{100 * d['density']:.0f}% of the lines on average "
                f"({100 * d['density_range'][0]:.0f}-{100 * d['density_range'][1]:.0f}% per "
                f"feature), {100 * d['answer_fraction']:.0f}% of the lines are answers",
                "not comparable: the paper gives no numbers"),
        Verdict("state features t_i g_a(x_i) and transition features t_i t_(i+1) g_a(x_i)",
                "the same 24 + 24 features, no label bias",
                "yes"),
        Verdict("a random sequence of models: some state features added, then some "
                "transition features",
                f"{len(rows)} models scored: the 24 state features in a seeded random order, "
                "then the 24 transition features",
                "yes (all of each kind added)"),
        Verdict("Laplace-Exact (equal to BP-LR on a chain) agrees very closely with AIS, "
                "MAP and BIC-MAP do not (Fig. 5)",
                f"mean absolute difference from AIS: Laplace-Exact {me['Laplace-Exact']:.3f} "
                f"nats, MAP {me['MAP']:.1f}, BIC-MAP {me['BIC-MAP']:.1f}",
                "yes" if me["Laplace-Exact"] < 0.1 * others else "no"),
    ]
    if gain:
        out.append(Verdict(
            "the scores flatten out around the point where the state features end",
            f"AIS rises by {gain['state']:.1f} nats over the 24 state features and "
            f"changes by {gain['transition']:+.1f} over the 24 transition features",
            "yes" if abs(gain["transition"]) < 0.1 * abs(gain["state"]) else "no"))
    return out


def _data_table(d):
    groups = ["label (1-4 questions, 5-8 answers)", "transition (9-16)", "noise (17-24)"]
    rows = [["documents × lines", f"{d['documents']} × {d['lines'][0]}"],
            ["binary features per line", d["features"]],
            ["lines that are answers", f"{100 * d['answer_fraction']:.0f}%"],
            ["mean length of a question block, an answer block (lines)",
             f"{d['question_block_mean']:.1f}, {d['answer_block_mean']:.1f}"],
            ["lines with a feature on, all features", f"{100 * d['density']:.0f}%"]]
    rows += [[f"lines with a feature on, {g} features", f"{100 * v:.0f}%"]
             for g, v in zip(groups, d["density_groups"])]
    rows.append(["lines with no feature on", f"{100 * d['lines_without_features']:.0f}%"])
    return markdown_table(["the stand-in (seed of the run)", "measured"], rows)


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
    L = [verdict_table(_verdicts(summary, config), title="Paper says / we get (Fig. 5)"),
         "The stand-in's data as generated for this run (the first two rows are what the "
         "paper states about its data; it states nothing about the rest):", "",
         _data_table(summary["data"]), "",
         "## Fig. 5: linear-chain CRF on FAQ-shaped data", "",
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
