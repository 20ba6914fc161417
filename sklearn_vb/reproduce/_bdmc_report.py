"""The report of ``reproduce bdmc`` on the paper's three models: the comparison with
Grosse, Ghahramani & Adams (2015), the ground truth, every estimator per model (single
trials and the trials pooled), VB from the simulating latents, and Table 1."""

from __future__ import annotations

import numpy as np

from ._report import Verdict, markdown_table, pyplot, save_figure, verdict_table

__all__ = ["report_paper_protocol", "PAPER_TABLE1"]

#: the paper's Table 1 (AIS, 30 000 temperatures, hyperparameters integrated out):
#: data model -> fitted model -> log-ML
PAPER_TABLE1 = {
    "clustering": {"clustering": -2377.5, "low_rank": -2390.6, "binary": -2383.2},
    "low_rank": {"clustering": -2214.2, "low_rank": -2145.1, "binary": -2171.4},
    "binary": {"clustering": -2268.6, "low_rank": -2241.7, "binary": -2219.4},
}

_PAPER = {
    "clustering": "SMC reached RMSE 4.6 nats in 9.7 s, AIS 7.0 in 37.8 s, NS 5.7 in 51.2 s; "
                  "VB stayed about 15 nats below the truth even with the symmetry correction; "
                  "LW far below, HME far above; CMS far off.",
    "low_rank": "only AIS got under 10 nats RMSE (8.6 after 1.6 s); CMS was over 1000 nats off.",
    "binary": "NS, AIS and SMC got under 10 nats (AIS 7.5 in 16.5 min, NS 9.0 in 15.1 min, "
              "SMC 11.9 and 4.7 in 20.5 and 69 min); VB was far below the truth.",
}

#: the paper's finding per model: which of AIS, SMC and NS got an RMSE under 10 nats
_PAPER_UNDER_10 = {"clustering": {"smc_paper": True, "nested_sampling": True},
                   "low_rank": {"smc_paper": False, "nested_sampling": False},
                   "binary": {"smc_paper": True, "nested_sampling": True}}


def _label(methods, key):
    return methods.get(key, (None, None, None, "VB+sym"))[3]


def _best(rows, field="rmse"):
    return min(rows, key=lambda r: abs(r[field]))


def _agreement(hits):
    if all(hits):
        return "yes"
    return "partly" if any(hits) else "no"


def _verdict_under_10(summary, method, paper_text, settings_text):
    """Where the single trials (RMSE) and the pooled trials (error) of ``method`` get under
    10 nats, against the models where the paper's did (clustering, binary attributes):
    "yes" if the single trials get there on all of those and on no other, "partly" if
    single or pooled trials get there on some of them, "no" otherwise."""
    single, pooled, parts = [], [], []
    for m, per in summary["methods"].items():
        r = _best(per[method])
        p = _best(per[method], "pooled_error")
        if r["rmse"] < 10:
            single.append(m)
        if abs(p["pooled_error"]) < 10:
            pooled.append(m)
        parts.append(f"{m} {r['rmse']:.1f} at {r['budget']} ({r['seconds']:.2g} s), pooled "
                     f"{p['pooled_error']:+.1f} at {p['budget']}")
    wanted = [m for m in summary["methods"] if _PAPER_UNDER_10[m][method]]
    if sorted(single) == sorted(wanted):
        agree = "yes: under 10 nats on the same models as in the paper"
    elif any(m in single or m in pooled for m in wanted):
        agree = "partly: under 10 nats on " + ", ".join(
            f"{m} ({'single trials' if m in single else 'pooled trials only'})"
            for m in wanted if m in single or m in pooled) + ", not on " + (", ".join(
                m for m in wanted if m not in single and m not in pooled) or "–")
    else:
        agree = ("no: under 10 nats on none of the paper's models ("
                 + ", ".join(wanted) + ")")
    ours = (f"{settings_text}; best single-trial RMSE and pooled error: " + "; ".join(parts))
    return Verdict(paper_text, ours, agree)


def _verdict_ais(summary):
    parts = []
    ok = []
    for m, per in summary["methods"].items():
        first = next((r for r in per["ais"] if r["rmse"] < 10), None)
        ok.append(first is not None)
        parts.append(f"{m} " + ("never" if first is None else
                                f"{first['rmse']:.1f} at {first['budget']} temperatures "
                                f"({first['seconds']:.2g} s)"))
    return Verdict("AIS gets under 10 nats RMSE on all three models (clustering 7.0 in 37.8 s, "
                   "low rank 8.6 in 1.6 s, binary attributes 7.5 in 16.5 min); on low rank it "
                   "is the only estimator that does",
                   "first AIS setting under 10 nats: " + ", ".join(parts),
                   _agreement(ok) + (": AIS is reliable on every model" if all(ok) else ""))


def _verdict_vb(summary):
    parts, gaps = [], {}
    for m, per in summary["methods"].items():
        sym = per["vb_sym"]
        gaps[m] = (sym[-1]["bias"], max(r["pooled_error"] for r in sym))
        parts.append(f"{m} {gaps[m][0]:.1f} (a trial's best of {sym[-1]['budget']}), "
                     f"{gaps[m][1]:.1f} (the best of all)")
    c_trial, c_all = gaps["clustering"]
    if abs(c_all + 15) < 5:
        agree = "yes: about 15 nats below with the best optimum found"
    elif abs(c_trial + 15) < 5:
        agree = (f"partly: a trial's best of {summary['methods']['clustering']['vb'][-1]['budget']} "
                 f"restarts is {-c_trial:.0f} nats below as in the paper, but the best of "
                 f"all restarts is only {-c_all:.1f} below: on these data the mean-field "
                 "approximation itself is close, the trials' gap is local optima")
    else:
        agree = "no: the gap differs from the paper's 15 nats"
    return Verdict("VB stays about 15 nats below the truth on clustering even with the "
                   "symmetry correction, after many random restarts",
                   "VB+sym − truth (nats): " + "; ".join(parts), agree)


def _pooling_agreement(improve, little):
    """Agreement with the paper's finding on pooling: it helps AIS and SMC where single
    trials are within 10 nats (``improve``), and not elsewhere (``little``); a finding
    counts as reproduced when it holds at 80 % of the settings it concerns."""
    checks = [np.mean(x) >= 0.8 for x in (improve, little) if x]
    if not checks:
        return "not run: no setting to compare"
    agree = _agreement(checks)
    return agree + {"yes": ": both halves of the finding hold",
                    "partly": ": one half of the finding holds (see the counts)",
                    "no": ": neither half holds (see the counts)"}[agree]


def _verdicts(summary, config):
    v = [_verdict_ais(summary), _verdict_under_10(
        summary, "smc_paper",
        "SMC with one particle, the weights integrated out (clustering, binary attributes; "
        "low rank: V sampled, U integrated), the MCMC sweeps per case varied: under 10 nats "
        "on clustering (4.6 in 9.7 s) and binary attributes, not on low rank",
        f"SMC-1, the same construction, {config['budgets']['smc_paper']} collapsed Gibbs "
        "sweeps per case (data augmentation on low rank)"), _verdict_vb(summary)]
    v.append(_verdict_under_10(
        summary, "nested_sampling",
        "nested sampling with 2 live points (the paper found 2 the most accurate for modest "
        "time, §6.2), the MCMC steps per replacement varied, stopping when an update adds "
        "less than a factor 1 + e^-10: under 10 nats on clustering (5.7 in 51 s) and binary "
        "attributes (9.0 in 15 min), not on low rank",
        f"2 live points, {config['budgets']['nested_sampling']} random-walk steps per "
        "replacement on the parameters (latents summed out), the same stopping rule"))
    wins, margins, paper_margins = [], [], []
    for d, row in summary["cross_hyper"].items():
        vals = {f: r["ais"] for f, r in row.items()}
        others = [x for f, x in vals.items() if f != d]
        wins.append(vals[d] > max(others))
        margins.append(vals[d] - max(others))
        p = PAPER_TABLE1[d]
        paper_margins.append(p[d] - max(x for f, x in p.items() if f != d))
    v.append(Verdict(
        "Table 1: every model on every data set, hyperparameters integrated out under "
        "inverse-gamma, Dirichlet and beta priors, AIS with 30 000 temperatures; the "
        "generating model wins each data set, by "
        + ", ".join(f"{x:.1f}" for x in paper_margins) + " nats",
        f"the same, hyperpriors {config['hyperprior']}, AIS with {config['cross_hyper_K']} "
        f"temperatures ({config['cross_chains']} chains): the generating model wins "
        f"{sum(wins)} of {len(wins)} data sets, by "
        + ", ".join(f"{x:.1f}" for x in margins) + " nats",
        _agreement(wins) + (": the generating model has the highest evidence on every data "
                            "set" if all(wins) else ": the generating model wins on "
                            f"{sum(wins)} of {len(wins)} data sets only")
        + f"; margins {min(margins):.1f}–{max(margins):.1f} nats here, "
        f"{min(paper_margins):.1f}–{max(paper_margins):.1f} in the paper (other data sets)"))
    improve, little = [], []
    for per in summary["methods"].values():
        for meth, rows in per.items():
            for r in rows:
                if meth in ("ais", "smc_paper") and r["rmse"] < 10:
                    improve.append(abs(r["pooled_error"]) < r["rmse"])
                elif meth not in ("vb", "vb_sym", "bic") and r["rmse"] >= 10:
                    little.append(abs(r["pooled_error"]) > 0.5 * r["rmse"])
    v.append(Verdict(
        "the 25 trials combined (mean of Z, harmonic mean for the reverse estimators, best "
        "VB, mean log for NS): better than single trials for AIS and SMC where those are "
        "within 10 nats, little difference for everything else (Figs. 2-3)",
        f"pooled estimates of all {config['trials']} trials against their total CPU time "
        f"(tables and right panels below): pooling beats the single-trial RMSE at "
        f"{sum(improve)} of {len(improve)} AIS and SMC-1 settings under 10 nats; at "
        f"{sum(little)} of {len(little)} settings at or over 10 nats the pooled error stays "
        "above half the single-trial RMSE",
        _pooling_agreement(improve, little)))
    gaps = {m: h["vb"] - max(r["pooled"] for r in summary["methods"][m]["vb"])
            for m, h in summary["hint"].items()}
    same = [g < 0.5 for g in gaps.values()]
    v.append(Verdict(
        "VB from a hint (a point estimate at the simulating sample): random restarts found "
        "the same optimum or a slightly better one, so VB's gap is the approximation's, not "
        "local optima",
        "VB from the simulating latents minus the best of all random restarts: "
        + ", ".join(f"{m} {g:+.1f} nats" for m, g in gaps.items()),
        _agreement(same) + (": the restarts reach the hint's optimum" if all(same) else
                            ": the hint's optimum is higher where the difference is "
                            "positive, so the random restarts miss it there")))
    return v


def _figure(plt, m, per, methods, out_dir):
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    tab = plt.get_cmap("tab20").colors
    for ax in axes:  # twelve estimators: ten colours of tab10 would repeat
        ax.set_prop_cycle(color=list(tab[::2]) + list(tab[1::2]))
    for meth, rows in per.items():
        label = _label(methods, meth)
        t = [max(r["seconds"], 1e-4) for r in rows]
        axes[0].plot(t, [r["bias"] for r in rows], "o-", ms=3, label=label)
        axes[1].plot(t, [r["rmse"] for r in rows], "o-", ms=3, label=label)
        axes[2].plot([max(r["pooled_seconds"], 1e-4) for r in rows],
                     [max(abs(r["pooled_error"]), 1e-2) for r in rows], "o-", ms=3, label=label)
    for ax in axes:
        ax.set_xscale("log")
    axes[0].set_xlabel("CPU seconds per estimate")
    axes[1].set_xlabel("CPU seconds per estimate")
    axes[2].set_xlabel("CPU seconds of all trials")
    axes[0].axhline(0, color="k", lw=0.8)
    axes[0].set_ylabel("mean estimate − truth (nats)")
    axes[0].set_yscale("symlog", linthresh=10)
    for ax in axes[1:]:
        ax.set_yscale("log")
        ax.axhline(10, color="k", ls="--", lw=0.8)
    axes[1].set_ylabel("RMSE of single trials (nats)")
    axes[2].set_ylabel("|pooled estimate − truth| (nats)")
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle(f"{m}: single trials (Figs. 2–5) and the trials pooled (Fig. 3, right)",
                 fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out_dir, f"bdmc_{m}.png")


def _model_section(summary, m, per, methods, plt, out_dir):
    L = [f"## {m}", "", _figure(plt, m, per, methods, out_dir), ""]
    rows = [[_label(methods, meth), r["budget"], r["mean"], r["bias"], r["rmse"], r["sd"],
             r["seconds"]] for meth, rs in per.items() for r in rs]
    L += ["Single trials:", "", markdown_table(
        ["estimator", "budget", "mean estimate", "bias", "RMSE", "sd", "CPU seconds"], rows,
        digits=2), ""]
    rows = [[_label(methods, meth), r["budget"], r["pooled"], r["pooled_error"],
             r["pooled_seconds"]] for meth, rs in per.items() for r in rs]
    L += ["The trials pooled into one estimate (the paper's footnote 5):", "", markdown_table(
        ["estimator", "budget", "pooled estimate", "error", "CPU seconds of all trials"], rows,
        digits=2), ""]
    fmt = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
    L += ["CPU seconds to an RMSE under 10 nats: " + ", ".join(
              f"{_label(methods, k)} {fmt(v)}" for k, v in summary["to_10_nats"][m].items()),
          "", "CPU seconds of all trials to a pooled error under 10 nats: " + ", ".join(
              f"{_label(methods, k)} {fmt(v)}" for k, v in summary["pooled_to_10_nats"][m].items()),
          "", f"The paper: {_PAPER[m]}", ""]
    return L


def _hint_section(summary):
    rows = []
    for m, h in summary["hint"].items():
        vb = summary["methods"][m]["vb"]
        rows.append([m, summary["truth"][m]["truth"], h["vb"], h["gap"], h["gap_sym"],
                     vb[-1]["mean"], max(r["pooled"] for r in vb), h["n_iter"]])
    return ["## VB from a hint", "",
            "VB started from q(Z) at the simulating latents (the first update is q(W) given "
            "them), beside the best of the random restarts (per trial on average, and the "
            "best of all trials); the paper ran this to tell a local optimum from the "
            "approximation's own gap (§6.4).", "",
            markdown_table(["model", "truth", "VB from the hint", "hint − truth",
                            "hint + ln K! − truth", "best of a trial's restarts (mean)",
                            "best of all restarts", "iterations"], rows, digits=1), ""]


def _table1_section(summary, config):
    ms = list(summary["cross_hyper"])
    rows = []
    for d in ms:
        vals = {f: summary["cross_hyper"][d][f]["ais"] for f in ms}
        rows.append([d] + [f"{vals[f]:.1f}" + ("" if f == d else f" ({vals[d] - vals[f]:.1f})")
                           for f in ms])
    spread = max(np.ptp(summary["cross_hyper"][d][f]["chains"]) for d in ms for f in ms)
    paper = [[d] + [f"{PAPER_TABLE1[d][f]:.1f}"
                    + ("" if f == d else f" ({PAPER_TABLE1[d][d] - PAPER_TABLE1[d][f]:.1f})")
                    for f in ms] for d in ms]
    fixed = [[d] + [summary["cross"][d][f] for f in ms] for d in ms]
    return ["## Table 1: every model fitted to the data of every model", "",
            f"Joint AIS with {config['cross_hyper_K']} temperatures and "
            f"{config['cross_chains']} chains, the hyperparameters integrated out under "
            f"inverse-gamma (variances), Dirichlet (mixing proportions) and beta (attribute "
            f"probabilities) priors {config['hyperprior']} (the paper gives the families, "
            "not their parameters).  Rows: the model that simulated the data; columns: the "
            "model fitted; in brackets, how far below the generating model.  The estimates of "
            f"single chains of a cell spread over at most {spread:.1f} nats (the entry pools "
            "them by the mean of Z).", "",
            markdown_table(["data \\ model"] + ms, rows), "",
            "The paper's Table 1 (its own simulated data sets):", "",
            markdown_table(["data \\ model"] + ms, paper), "",
            f"Control: the hyperparameters fixed at the simulation's values (joint AIS, "
            f"{config['cross_K']} temperatures, 2 chains):", "",
            markdown_table(["data \\ model"] + ms, fixed, digits=1), ""]


def report_paper_protocol(summary, config, out_dir, methods):
    """The markdown report of the paper-protocol mode (figures written to ``out_dir``)."""
    plt = pyplot()
    L = ["# Grosse, Ghahramani & Adams (2015): evidence estimators against BDMC ground truth",
         "", f"Seed {config['seed']}{' (quick mode)' if config['quick'] else ''}; "
         f"{config['n_samples']} cases, {config['n_features']} dimensions, components "
         f"{config['n_components']}; hyperparameters fixed at {config['hyper']} (except in "
         f"Table 1); {config['trials']} trials per setting.  Ground truth: forward and "
         f"reverse joint AIS with {config['truth_K']} temperatures ({config['truth_chains']} "
         "chains).  Estimators' seconds are CPU seconds (one thread), the truth's wall "
         "seconds.  SMC is the package's (W explicit, the particles as the knob); SMC-1 the "
         "paper's (one particle, W integrated out where the model allows it, the MCMC sweeps "
         "per case as the knob).", "",
         verdict_table(_verdicts(summary, config), "Paper says / we get: the protocol")]
    rows = [[m, t["lower"], t["upper"], t["gap"], t["seconds"]] for m, t in summary["truth"].items()]
    L += ["## Ground truth (BDMC)", "", markdown_table(
        ["model", "forward AIS", "reverse AIS", "gap (nats)", "seconds"], rows, digits=2), ""]
    for m, per in summary["methods"].items():
        L += _model_section(summary, m, per, methods, plt, out_dir)
    L += _hint_section(summary)
    L += _table1_section(summary, config)
    return "\n".join(L)
