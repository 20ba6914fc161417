"""``reproduce dag``: Beal (2003) Chapter 6, structure scoring of discrete DAGs with
hidden variables (§6.4).

* Single instance (default, §6.4.1): the thesis's printed true parameters, one nested
  data stream, all 136 structures at all 20 sizes, scored by MAP, BIC, BICp, CS, CS† and
  VB (raw, marked *, and alias-corrected) and AIS^(5); Table 6.1 beside the thesis's,
  Fig. 6.2 (score against parameter count) and Fig. 6.4 (score of the truth minus the
  best score).
  With it: Fig. 6.3 (the rank of the truth against n), Tables 6.3 and 6.4 and Figs.
  6.11–6.12 from the AIS runs, Fig. 6.13 and the forward / backward AIS hysteresis study
  (§6.5.1, :mod:`._dag_hysteresis`) and the effective dimensions of the structures
  (§6.5.2, :mod:`._dag_dimension`).
* ``draws=N`` (``--draws N``, §6.4.2): N true parameter sets drawn from the prior, each
  with its own nested data, EM- and VB-based scores only; Tables 6.2 and 6.5 and
  Figs. 6.5–6.9.

``extras=True`` (``--extras 1``) also scores VB without the iteration cap and VB started
from the Cheeseman–Stutz point (beyond the thesis; see :func:`fit_scores`).
"""

from __future__ import annotations

import numpy as np

from . import _thesis_dag as thesis
from ._dag_units import (
    SINGLE,
    STRUCTURES,
    TRUE_CODE,
    ais_scores,
    code_name,
    draw_data,
    fit_scores,
    rank_of_truth,
)
from ._dag_dimension import (DIMENSION_FULL, DIMENSION_QUICK, dimension_report,
                             dimension_units, dimension_verdicts, run_dimension_unit,
                             summarize_dimension)
from ._dag_hysteresis import (HYSTERESIS_FULL, HYSTERESIS_QUICK, hysteresis_report,
                              hysteresis_units, hysteresis_verdicts, schedule_verdicts,
                              summarize_hysteresis)
from ._experiment import Experiment, Option, register
from ._report import Verdict, markdown_table, pyplot, save_figure, verdict_table

__all__ = ["dag", "score_columns", "EM_VB_COLUMNS", "COMPARED_WITH_VB"]

#: column name -> (result key, alias-corrected?)
EM_VB_COLUMNS = {
    "MAP": ("map", False),
    "BIC*": ("bic", False), "BICp*": ("bicp", False), "CS*": ("cs", False),
    "CS†*": ("cs_dagger", False), "VB*": ("vb", False),
    "BIC": ("bic", True), "BICp": ("bicp", True), "CS": ("cs", True),
    "CS†": ("cs_dagger", True), "VB": ("vb", True),
}
EXTRA_COLUMNS = {
    "VBu*": ("vb_uncapped", False), "VBu": ("vb_uncapped", True),
    "VBcs*": ("vb_from_cs", False), "VBcs": ("vb_from_cs", True),
}
#: Table 6.2: VB* against the starred scores, VB against the corrected ones
COMPARED_WITH_VB = ("BIC*", "BICp*", "CS*", "CS†*", "BIC", "BICp", "CS", "CS†")
CODES = [code_name(c) for c in STRUCTURES]
TRUE = code_name(TRUE_CODE)
I_TRUE = CODES.index(TRUE)

_BASE = {
    "draws": 0, "n_init": 3, "max_iter": 1000, "tol_per_case": 1e-6,
    "ais_temperatures": 16384, "ais_runs": 5, "ais_strength": [3000.0, 0.0],
    "ais_floor": 0.0, "ais_e_tau": 0.2, "extras": 0, **HYSTERESIS_FULL, **DIMENSION_FULL,
}
FULL = dict(_BASE, sizes=list(thesis.SIZES))
QUICK = dict(_BASE, sizes=[10, 80, 480], ais_temperatures=512, **HYSTERESIS_QUICK,
             **DIMENSION_QUICK)


def _ais_kind(config):
    """The unit kind of the AIS runs: it names the schedule length, so runs with another
    K never mix in a resumed journal."""
    return f"ais{int(config['ais_temperatures'])}"


def _is_ais(key):
    """Whether ``key`` is an AIS unit ``(draw, n, code, "ais<K>")``."""
    return len(key) == 4 and isinstance(key[3], str) and key[3].startswith("ais")


def _units(config):
    draws = [SINGLE] if not config["draws"] else list(range(int(config["draws"])))
    kinds = ["fit"]
    if not config["draws"] and config["ais_temperatures"]:
        kinds.append(_ais_kind(config))
    units = [(d, int(n), c, k) for d in draws for n in config["sizes"] for c in CODES
             for k in kinds]
    if not config["draws"]:  # §6.5.1 and §6.5.2 go with the single instance
        units += hysteresis_units(config) + dimension_units(config, CODES)
    return units


def _run_unit(key, config, seed):
    if key[0] == "hysteresis":
        _, n, e_tau, K, _ = key
        X = draw_data(config["seed"], SINGLE, n, max(max(config["sizes"]), int(n)))
        return ais_scores(TRUE_CODE, X, seed, K, config["ais_runs"],
                          tuple(config["ais_strength"]), config["ais_floor"], e_tau,
                          hysteresis=True)
    if key[0] == "dimension":
        return run_dimension_unit(key, config, seed)
    draw, n, code, kind = key
    X = draw_data(config["seed"], draw, n, max(config["sizes"]))
    code = tuple(int(ch) for ch in code)
    # EM and VBEM of a structure start from the same prior draws (the fit seed depends on
    # the data set and the structure, not on the kind of unit)
    fit_seed = int(np.random.SeedSequence([config["seed"], 7, n, int(code_name(code)),
                                           0 if draw == SINGLE else 1 + int(draw)])
                   .generate_state(1)[0])
    if kind == "fit":
        return fit_scores(code, X, fit_seed, config["n_init"], config["max_iter"],
                          config["tol_per_case"], extras=bool(config["extras"]))
    return ais_scores(code, X, seed, config["ais_temperatures"], config["ais_runs"],
                      tuple(config["ais_strength"]), config["ais_floor"], config["ais_e_tau"])


def score_columns(results, draw, n, with_ais=True, extras=False, ais_kind=None):
    """``{column: scores of the 136 structures}`` for one data set (order of ``CODES``);
    ``ais_kind`` (``"ais<K>"``) selects the AIS runs (default: any found)."""
    fits = [results[(draw, n, c, "fit")] for c in CODES]
    cols = dict(EM_VB_COLUMNS, **(EXTRA_COLUMNS if extras else {}))
    out = {}
    for name, (key, corrected) in cols.items():
        out[name] = np.array([f[key] + (f["ln_S"] if corrected else 0.0) for f in fits])
    if with_ais and ais_kind is None:
        ais_kind = next((k[3] for k in results if _is_ais(k)), None)
    if with_ais and (draw, n, CODES[0], ais_kind) in results:
        ais = [results[(draw, n, c, ais_kind)] for c in CODES]
        out["AIS(5)"] = np.array([a["ais"] for a in ais])
        for r in range(len(ais[0]["ais_runs"])):
            out[f"AIS#{r + 1}"] = np.array([a["ais_runs"][r] for a in ais])
    return out


def _ais_diagnostics(results, sizes, extras):
    """Table 6.4 and Figs. 6.11–6.12: how often AIS falls below VB, and MH acceptance."""
    out = {}
    for n in sizes:
        cols = score_columns(results, SINGLE, n, extras=extras)
        runs = [k for k in cols if k.startswith("AIS#")]
        ais = [results[k] for k in results if k[:2] == (SINGLE, n) and _is_ais(k)]
        acc = np.array([a["acceptance"] for a in ais])
        quarters = np.array([a["acceptance_by_quarter"] for a in ais])
        out[n] = {
            "single_below_vb_raw": 100 * float(np.mean([cols[r] < cols["VB*"] for r in runs])),
            "single_below_vb": 100 * float(np.mean([cols[r] < cols["VB"] for r in runs])),
            "pooled_below_vb_raw": 100 * float(np.mean(cols["AIS(5)"] < cols["VB*"])),
            "pooled_below_vb": 100 * float(np.mean(cols["AIS(5)"] < cols["VB"])),
            "rejection": 100 * (1 - float(acc.mean())),
            "acceptance_mean": float(acc.mean()), "acceptance_std": float(acc.std()),
            "acceptance_by_quarter": quarters.mean(axis=0).tolist(),
        }
    return out


def _gap(values):
    return float(values[I_TRUE] - np.nanmax(values))


def _summarize(results, config):
    extras = bool(config["extras"])
    sizes = [int(n) for n in config["sizes"]]
    if not config["draws"]:
        table, gaps, scores = {}, {}, {}
        for n in sizes:
            cols = score_columns(results, SINGLE, n, extras=extras)
            table[n] = {k: rank_of_truth(v, I_TRUE) for k, v in cols.items()}
            gaps[n] = {k: _gap(v) for k, v in cols.items()}
            scores[n] = {k: v.tolist() for k, v in cols.items()}
        fits = [results[(SINGLE, n, c, "fit")] for n in sizes for c in CODES]
        ais = _ais_diagnostics(results, sizes, extras) if "AIS(5)" in scores[sizes[0]] else None
        vb_true = {n: results[(SINGLE, n, TRUE, "fit")]["vb"] for n in sizes}
        return {"mode": "single", "ais": ais, "sizes": sizes, "table_6_1": table, "score_gap": gaps,
                "hysteresis": summarize_hysteresis(results, config, vb_true),
                "dimension": summarize_dimension(results, config, CODES),
                "scores": scores, "codes": CODES,
                "param_counts": [results[(SINGLE, sizes[0], c, "fit")]["d"] for c in CODES],
                "vb_capped": int(sum(not f["vb_converged"] for f in fits)),
                "n_fits": len(fits),
                "vb_below_cs": int(sum(f["vb"] < f["cs"] for f in fits))}
    draws = list(range(int(config["draws"])))
    ranks, gaps = {}, {}
    for d in draws:
        for n in sizes:
            cols = score_columns(results, d, n, with_ais=False, extras=extras)
            ranks[(d, n)] = {k: rank_of_truth(v, I_TRUE) for k, v in cols.items()}
            gaps[(d, n)] = {k: _gap(v) for k, v in cols.items()}
    names = list(ranks[(0, sizes[0])])
    R = {k: np.array([[ranks[(d, n)][k] for n in sizes] for d in draws]) for k in names}
    G = {k: np.array([[gaps[(d, n)][k] for n in sizes] for d in draws]) for k in names}
    t62 = {}
    for other in COMPARED_WITH_VB:
        vb = R["VB*" if other.endswith("*") else "VB"]
        o = R[other]
        t62[other] = {"worse": 100 * float(np.mean(vb > o)), "same": 100 * float(np.mean(vb == o)),
                      "better": 100 * float(np.mean(vb < o))}
    if extras:
        for vbx in ("VBu", "VBcs"):
            for other in ("BIC", "BICp", "CS", "CS†"):
                v, o = R[vbx], R[other]
                t62[f"{vbx} vs {other}"] = {"worse": 100 * float(np.mean(v > o)),
                                            "same": 100 * float(np.mean(v == o)),
                                            "better": 100 * float(np.mean(v < o))}
    success = {k: (R[k] == 1).sum(axis=0).tolist() for k in names}
    fits = [results[(d, n, c, "fit")] for d in draws for n in sizes for c in CODES]
    return {
        "mode": "draws", "sizes": sizes, "draws": len(draws),
        "ranks": {k: v.tolist() for k, v in R.items()},
        "table_6_2": t62,
        "table_6_5": {n: {k: success[k][j] for k in names} for j, n in enumerate(sizes)},
        "median_rank": {k: np.median(v, axis=0).tolist() for k, v in R.items()},
        "best_rank": {k: v.min(axis=0).tolist() for k, v in R.items()},
        "median_gap": {k: np.median(v, axis=0).tolist() for k, v in G.items()},
        "gap_40": {k: np.percentile(v, 40, axis=0).tolist() for k, v in G.items()},
        "gap_60": {k: np.percentile(v, 60, axis=0).tolist() for k, v in G.items()},
        "max_gap": {k: v.max(axis=0).tolist() for k, v in G.items()},
        "vb_capped": int(sum(not f["vb_converged"] for f in fits)), "n_fits": len(fits),
        "vb_below_cs": int(sum(f["vb"] < f["cs"] for f in fits)),
    }


# ----------------------------------------------------------------------------- report
_PLOT_COLUMNS = ("BIC", "BICp", "CS", "VB", "AIS(5)")


#: Fig. 6.3's scores (alias-corrected, as the thesis's figure) and the rank that counts
#: as "near the top" in its reading
FIG_6_3_COLUMNS = ("BIC", "BICp", "CS", "VB", "AIS(5)")
NEAR_TOP = 20


def _settles(ranks, sizes, top=NEAR_TOP):
    """The smallest n from which every rank (at that n and all larger ones) is at most
    ``top``; None if the rank at the largest n is not."""
    first = None
    for n, r in zip(reversed(sizes), reversed(ranks)):
        if r is None or r > top:
            break
        first = n
    return first


def _fig_6_3_settles(summary):
    """``{column: (ours, thesis's)}``: from which n each score keeps the truth near the top."""
    sizes = summary["sizes"]
    t = summary["table_6_1"]
    out = {}
    for c in FIG_6_3_COLUMNS:
        if c not in t[sizes[0]]:
            continue
        ours = _settles([t[n][c] for n in sizes], sizes)
        i = thesis.TABLE_6_1_COLUMNS.index(c)
        th_sizes = [n for n in sizes if n in thesis.TABLE_6_1]
        th = _settles([thesis.TABLE_6_1[n][i] for n in th_sizes], th_sizes) if th_sizes else None
        out[c] = (ours, th)
    return out


def _fmt_n(v):
    return "never" if v is None else str(v)


def _verdicts_single(summary, config):
    rows = []
    settle = _fig_6_3_settles(summary)
    if settle:
        order_ok = (settle.get("VB", (None,))[0] is not None and all(
            settle["VB"][0] <= (o if o is not None else np.inf)
            for c, (o, _) in settle.items() if c in ("BIC", "BICp", "CS")))
        rows.append(Verdict(
            "Fig. 6.3: the rank of the truth against n: VB (and AIS^(5)) reach the top first, "
            "then CS, BICp and BIC only at n ≥ 2560 (from Table 6.1, thesis: top "
            f"{NEAR_TOP} from n = " + ", ".join(f"{c} {_fmt_n(th)}" for c, (_, th)
                                                 in settle.items()) + ")",
            f"top {NEAR_TOP} for good from n = " + ", ".join(
                f"{c} {_fmt_n(o)}" for c, (o, _) in settle.items()),
            "yes" if order_ok else "partly: see Table 6.1"))
    if summary.get("ais"):
        rows += _verdicts_ais(summary, config)
    if summary.get("hysteresis") is not None:
        rows += schedule_verdicts(config, Verdict)
        rows += hysteresis_verdicts(summary["hysteresis"], config, Verdict)
    rows += dimension_verdicts(summary.get("dimension"), config, Verdict)
    return rows


def _verdicts_ais(summary, config):
    """Tables 6.3 and 6.4 against the thesis's (at the K of this run)."""
    sizes, t, ais = summary["sizes"], summary["table_6_1"], summary["ais"]
    K = config["ais_temperatures"]
    runs = sorted(k for k in t[sizes[0]] if k.startswith("AIS#"))
    small = [n for n in sizes if n <= 1280]
    big = [n for n in sizes if n >= 2560]
    rows = []
    if small and runs:
        single = [t[n][r] for n in small for r in runs]
        th_single = [v for n in small if n in thesis.TABLE_6_3 for v in thesis.TABLE_6_3[n][:-1]]
        firsts = [n for n in sizes if t[n]["AIS(5)"] == 1]
        th_firsts = [n for n in sizes if thesis.TABLE_6_3.get(n, (0,) * 6)[-1] == 1]
        spread = max(single) - min(single)
        rows.append(Verdict(
            "Table 6.3: one AIS run ranks the truth anywhere (ranks "
            f"{min(th_single) if th_single else '–'} to {max(th_single) if th_single else '–'} "
            "for n ≤ 1280); pooling five runs, AIS^(5) ranks it first at n = "
            + (", ".join(map(str, th_firsts)) or "–"),
            f"K = {K}: single runs give ranks {min(single)} to {max(single)} for n ≤ 1280; "
            "AIS^(5) first at n = " + (", ".join(map(str, firsts)) or "none")
            + ("; its ranks at n ≥ 2560: " + ", ".join(
                f"{t[n]['AIS(5)']} at {n}" for n in big) if big else ""),
            _table_6_3_agreement(spread, [t[n]["AIS(5)"] for n in big])))
    th4 = dict(zip(thesis.TABLE_6_4_SIZES, zip(*thesis.TABLE_6_4.values())))
    names = list(thesis.TABLE_6_4)
    show = [n for n in (560, 2560, 5120, 10240) if n in ais]
    if show:
        def ours(key):
            return ", ".join(f"{ais[n][key]:.1f} at {n}" for n in show)

        def theirs(name):
            i = names.index(name)
            return ", ".join(f"{th4[n][i]} at {n}" for n in show if n in th4)

        upto = [n for n in sizes if n <= 960]
        pooled_small = max(ais[n]["pooled_below_vb_raw"] for n in upto) if upto else None
        rows.append(Verdict(
            "Table 6.4: single AIS runs fall below VB* more often as n grows ("
            + theirs("AIS(1) < VB*") + " %; ≤ 5.7 % up to n = 560); MH rejection rises ("
            + theirs("% MH rejection") + " %); AIS^(5) below VB* 0 % up to n ≈ 1000, "
            + theirs("AIS(5) < VB*") + " %",
            f"K = {K}: single runs below VB* " + ours("single_below_vb_raw")
            + " %; rejection " + ours("rejection") + " %; AIS^(5) below VB* at most "
            + (f"{pooled_small:.1f} % up to n = 960, " if pooled_small is not None else "")
            + ours("pooled_below_vb_raw") + " %",
            "yes" if (pooled_small is not None and pooled_small <= 2.0
                      and ais[show[-1]]["single_below_vb_raw"] > ais[show[0]]["single_below_vb_raw"]
                      and ais[show[-1]]["rejection"] > ais[show[0]]["rejection"])
            else "partly: see Table 6.4"))
    return rows


def _report_single(summary, config, out_dir):
    sizes = summary["sizes"]
    t = summary["table_6_1"]
    ours = ["MAP", "BIC*", "BICp*", "CS*", "VB*", "BIC", "BICp", "CS", "VB", "AIS(5)"]
    have = [c for c in ours if c in t[sizes[0]]]
    header = ["n"] + [f"{c} ours / thesis" for c in have] + ["CS† ours"]
    rows = []
    for n in sizes:
        th = dict(zip(thesis.TABLE_6_1_COLUMNS, thesis.TABLE_6_1.get(n, [None] * 10)))
        rows.append([n] + [f"{t[n][c]} / {th.get(c, '–') if th.get(c) is not None else '–'}"
                           for c in have] + [t[n]["CS†"]])
    L = ["# Beal (2003) Chapter 6, single instance (§6.4.1)", "",
         _settings(config), "", verdict_table(_verdicts_single(summary, config)),
         "## Table 6.1: rank of the true structure (1 + number of strictly higher scores)", "",
         "Our rank / the thesis's rank.  Starred columns are not alias-corrected.  The "
         "thesis's data set is not available: ours is a new draw from the same true "
         "parameters, so ranks agree only in their trend (compare the multi-draw study, "
         "`reproduce dag --draws N`, for the spread between data sets).", "",
         markdown_table(header, rows), ""]
    if config["extras"]:
        ex = [c for c in ("VBu", "VBcs") if c in t[sizes[0]]]
        L += ["Beyond the thesis: rank by VB without the iteration cap (VBu) and VB started "
              "from the CS point (VBcs), alias-corrected:", "",
              markdown_table(["n"] + ex, [[n] + [t[n][c] for c in ex] for n in sizes]), ""]
    L += [f"VB hit the {config['max_iter']}-iteration cap in {summary['vb_capped']} of "
          f"{summary['n_fits']} fits; the raw VB bound fell below the raw CS bound in "
          f"{summary['vb_below_cs']} fits (EM and VBEM run independently, as in the thesis).",
          ""]
    L += _fig_6_2(summary, out_dir) + _fig_6_3(summary, out_dir) + _fig_6_4(summary, out_dir)
    if summary.get("ais"):
        L += _ais_tables(summary, out_dir)
    if summary.get("hysteresis") is not None:
        L += hysteresis_report(summary["hysteresis"], config, out_dir)
    L += dimension_report(summary.get("dimension"), config, out_dir, CODES)
    return "\n".join(L) + "\n" + _timing(summary)


def _table_6_3_agreement(spread, big_ranks):
    """Whether single AIS runs scatter the truth's rank (over at least 100 places) while
    the pooled AIS^(5) ranks it first at every n >= 2560 (yes), within the top 3 there
    (partly), or neither."""
    if spread < 100:
        return "no: single runs scatter the truth's rank over fewer than 100 places"
    if all(r == 1 for r in big_ranks):
        return "yes"
    if all(r <= 3 for r in big_ranks):
        return "partly: single runs scatter as in the thesis; AIS^(5) is in the top 3 " \
               "at every n ≥ 2560 but not first at all of them"
    return "partly: single runs scatter as in the thesis; AIS^(5) ranks the truth " \
           "below 3 at some n ≥ 2560"


def _ais_tables(summary, out_dir):
    sizes, t, ais = summary["sizes"], summary["table_6_1"], summary["ais"]
    runs = sorted(k for k in t[sizes[0]] if k.startswith("AIS#"))
    rows = []
    for n in sizes:
        th = thesis.TABLE_6_3.get(n)
        rows.append([n] + [f"{t[n][r]} / {th[i] if th else '–'}" for i, r in enumerate(runs)]
                    + [f"{t[n]['AIS(5)']} / {th[-1] if th else '–'}"])
    L = ["## Table 6.3: rank of the truth by each single AIS run and by AIS^(5)", "",
         "Ours / thesis.", "", markdown_table(["n"] + runs + ["AIS(5)"], rows), "",
         "## Table 6.4: AIS below the VB bound (% of the 136 structures) and MH rejection", "",
         "Single-run rows average the runs.  The thesis's table (garbled in extraction, its "
         "first column merges n = 10 … 560): single runs below VB* ≤ 5.7 % up to n = 560, then "
         "12.3, 8.5, 12.3, 10.4, 17.0, 25.5, 53.8, 71.7 %; rejection < 40.3 % up to n = 560 "
         "rising to 79.2 %; AIS^(5) below VB* 0 % up to n ≈ 1000, 50 % at the largest n.", ""]
    keys = [("single_below_vb_raw", "AIS(1) < VB*"), ("single_below_vb", "AIS(1) < VB"),
            ("rejection", "% MH rejection"), ("pooled_below_vb_raw", "AIS(5) < VB*"),
            ("pooled_below_vb", "AIS(5) < VB")]
    L += [markdown_table(["n"] + [k[1] for k in keys], [[n] + [ais[n][k[0]] for k in keys]
                                                        for n in sizes]), ""]
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.3))
    m = np.array([ais[n]["acceptance_mean"] for n in sizes])
    sd = np.array([ais[n]["acceptance_std"] for n in sizes])
    a1.errorbar(sizes, m, yerr=sd, fmt="o-", ms=3)
    a1.set_xscale("log")
    a1.set_xlabel("n")
    a1.set_ylabel("MH acceptance")
    a1.set_title("Fig. 6.11: acceptance (± sd over structures)", fontsize=9)
    q = np.array([ais[n]["acceptance_by_quarter"] for n in sizes])
    for i in range(q.shape[1]):
        a2.plot(sizes, q[:, i], "o-", ms=3, label=f"quarter {i + 1}")
    a2.set_xscale("log")
    a2.set_xlabel("n")
    a2.set_title("Fig. 6.12: acceptance by quarter of the schedule", fontsize=9)
    a2.legend(fontsize=7)
    L += ["## Figs. 6.11 and 6.12: Metropolis–Hastings acceptance", "",
          save_figure(fig, out_dir, "dag_fig6_11_12.png"), ""]
    return L


def _settings(config):
    s = (f"Settings: sizes {config['sizes']}; EM and VBEM with {config['n_init']} restarts, "
         f"at most {config['max_iter']} iterations, tolerance {config['tol_per_case']:g}·n; ")
    if not config["draws"] and config["ais_temperatures"]:
        s += (f"AIS^({config['ais_runs']}) from the prior, K = {config['ais_temperatures']} "
              f"temperatures of Beal's schedule (e_τ = {config['ais_e_tau']}), proposal "
              f"strength α = {config['ais_strength'][0]:g} + {config['ais_strength'][1]:g}·nβ; ")
    if config["draws"]:
        s += f"{config['draws']} parameter draws from the prior; "
    s += f"seed {config['seed']}{' (quick mode)' if config['quick'] else ''}."
    return s


def _timing(summary):
    t = summary["timing"]
    return (f"\nTiming: {t['units']} work units ({t['computed']} computed in this call, "
            f"{t['cached']} from the journal), {t['unit_seconds_mean']:.3f} s per unit on "
            f"average, {t['unit_seconds_total']:.0f} s of unit time, {t['wall_seconds']:.0f} s "
            f"wall with n_jobs = {t['n_jobs']}.\n")


def _fig_6_2(summary, out_dir):
    plt = pyplot()
    sizes = summary["sizes"]
    show = sizes if len(sizes) <= 6 else [sizes[i] for i in np.linspace(0, len(sizes) - 1, 6).astype(int)]
    cols = [c for c in ("MAP", "BIC", "BICp", "CS", "VB", "AIS(5)") if c in summary["scores"][sizes[0]]]
    d = np.asarray(summary["param_counts"])
    i_true = CODES.index(TRUE)
    fig, axes = plt.subplots(len(show), len(cols), figsize=(2.3 * len(cols), 1.9 * len(show)),
                             squeeze=False)
    for r, n in enumerate(show):
        for c, name in enumerate(cols):
            ax = axes[r, c]
            v = np.asarray(summary["scores"][n][name])
            ax.plot(d, v, ".", ms=3, color="0.4")
            ax.plot(d[i_true], v[i_true], "o", mfc="none", mec="r", ms=7)
            if r == 0:
                ax.set_title(name, fontsize=9)
            if c == 0:
                ax.set_ylabel(f"n = {n}", fontsize=8)
            ax.tick_params(labelsize=6)
    for ax in axes[-1]:
        ax.set_xlabel("parameters d", fontsize=8)
    fig.suptitle("Fig. 6.2: score against parameter count (red: true structure)", fontsize=10)
    img = save_figure(fig, out_dir, "dag_fig6_2.png")
    return ["## Fig. 6.2: scores against the number of parameters", "", img, ""]


def _fig_6_3(summary, out_dir):
    plt = pyplot()
    sizes = summary["sizes"]
    t = summary["table_6_1"]
    cols = [c for c in FIG_6_3_COLUMNS if c in t[sizes[0]]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    th_sizes = [n for n in sizes if n in thesis.TABLE_6_1]
    for k, c in enumerate(cols):
        axes[0].plot(sizes, [t[n][c] for n in sizes], "o-", ms=3, color=f"C{k}", label=c)
        if th_sizes:
            i = thesis.TABLE_6_1_COLUMNS.index(c)
            axes[1].plot(th_sizes, [thesis.TABLE_6_1[n][i] for n in th_sizes], "o-", ms=3,
                         color=f"C{k}", label=c)
    for ax, title in zip(axes, ("ours", "the thesis's (Table 6.1)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_title(title, fontsize=9)
        if ax.get_lines():
            ax.legend(fontsize=7)
    axes[0].invert_yaxis()  # shared: both panels have the best rank at the top
    axes[0].set_ylabel("rank of the true structure")
    fig.suptitle("Fig. 6.3: rank of the truth by BIC, BICp, CS, VB and AIS^(5)", fontsize=10)
    img = save_figure(fig, out_dir, "dag_fig6_3.png")
    settle = _fig_6_3_settles(summary)
    rows = [[c, _fmt_n(o), _fmt_n(th)] for c, (o, th) in settle.items()]
    return ["## Fig. 6.3: rank of the true structure against n", "", img, "",
            f"From which n each score keeps the truth in the top {NEAR_TOP} (alias-corrected "
            "scores, as in the figure):", "",
            markdown_table(["score", "ours", "thesis"], rows), ""]


def _fig_6_4(summary, out_dir):
    plt = pyplot()
    sizes = summary["sizes"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name in _PLOT_COLUMNS:
        if name in summary["score_gap"][sizes[0]]:
            ax.plot(sizes, [summary["score_gap"][n][name] for n in sizes], "o-", ms=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("symlog")
    ax.set_xlabel("n")
    ax.set_ylabel("score(true) − max score (nats)")
    ax.legend(fontsize=8)
    img = save_figure(fig, out_dir, "dag_fig6_4.png")
    rows = [[n] + [summary["score_gap"][n].get(c, float("nan")) for c in _PLOT_COLUMNS]
            for n in sizes]
    return ["## Fig. 6.4: score of the true structure minus the best score", "", img, "",
            markdown_table(["n"] + list(_PLOT_COLUMNS), rows), ""]


def _binomial_p(k1, n1, k2, n2):
    """Two-sided p-value of Fisher's exact test of equal success rates."""
    from scipy.stats import fisher_exact

    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]])[1])


def _report_draws(summary, config, out_dir):
    sizes, N = summary["sizes"], summary["draws"]
    t62 = summary["table_6_2"]
    L = [f"# Beal (2003) Chapter 6, averaged over {N} parameter draws (§6.4.2)", "",
         _settings(config), "",
         "## Table 6.2: VB against each other score, over all (draw, n) pairs", "",
         "Percentage of pairs in which VB ranks the true structure worse / the same / better "
         "than the other score (VB* against the starred scores).  Ours, then the thesis's "
         "(106 draws).", ""]
    header = ["VB ranks"] + list(COMPARED_WITH_VB)
    rows = []
    for what in ("worse", "same", "better"):
        rows.append([f"{what} (ours)"] + [t62[c][what] for c in COMPARED_WITH_VB])
        rows.append([f"{what} (thesis)"] + list(thesis.TABLE_6_2[what]))
    L += [markdown_table(header, rows), ""]
    extra_keys = [k for k in t62 if " vs " in k]
    if extra_keys:
        L += ["Beyond the thesis (alias-corrected; VBu = VB without the iteration cap, VBcs = "
              "VB started from the CS point):", "",
              markdown_table(["comparison", "worse", "same", "better"],
                             [[k, t62[k]["worse"], t62[k]["same"], t62[k]["better"]]
                              for k in extra_keys]), ""]
    t65 = summary["table_6_5"]
    names = list(thesis.TABLE_6_5_COLUMNS) + [c for c in ("VBu", "VBcs") if c in t65[sizes[0]]]
    L += ["## Table 6.5: how often each alias-corrected score ranks the truth first", "",
          f"Ours (out of {N}) / thesis (out of {thesis.TABLE_6_5_DRAWS}); p is Fisher's exact "
          "test of equal success rates (small p: a difference beyond binomial noise).", ""]
    rows = []
    for n in sizes:
        th = dict(zip(thesis.TABLE_6_5_COLUMNS, thesis.TABLE_6_5.get(n, [None] * 5)))
        row = [n]
        for c in names:
            if c in th and th[c] is not None:
                p = _binomial_p(t65[n][c], N, th[c], thesis.TABLE_6_5_DRAWS)
                row.append(f"{t65[n][c]} / {th[c]} (p={p:.2f})")
            else:
                row.append(t65[n][c])
        rows.append(row)
    L += [markdown_table(["n"] + names, rows), ""]
    L += _findings(summary) + _draw_figures(summary, out_dir)
    L += [f"VB hit the {config['max_iter']}-iteration cap in {summary['vb_capped']} of "
          f"{summary['n_fits']} fits; the raw VB bound fell below the raw CS bound in "
          f"{summary['vb_below_cs']} fits.", ""]
    return "\n".join(L) + "\n" + _timing(summary)


def _findings(summary):
    t62, t65, sizes, N = summary["table_6_2"], summary["table_6_5"], summary["sizes"], summary["draws"]
    L = ["## Checks against the thesis's findings", ""]
    for other, th in (("BIC", 73.2), ("BICp", 55.0), ("CS", 48.2)):
        b, w = t62[other]["better"], t62[other]["worse"]
        L.append(f"* VB ranks the truth better than {other} in {b:.1f} % of pairs and worse in "
                 f"{w:.1f} % (thesis: better {th} %) — "
                 f"{'better more often than worse' if b > w else 'NOT better more often than worse'}.")
    big = [n for n in sizes if n >= 960]
    if big:
        ok = all(t65[n]["VB"] >= t65[n]["CS"] for n in big)
        L.append(f"* VB ranks the truth first at least as often as CS at every n ≥ 960: "
                 f"{'yes' if ok else 'no'} ("
                 + ", ".join(f"n={n}: {t65[n]['VB']} vs {t65[n]['CS']}" for n in big) + ").")
    L.append(f"* Random-guess baseline for the best rank over {N} draws: "
             f"{sum(((137 - r) / 136) ** N for r in range(1, 137)):.3f}.")
    return L + [""]


def _draw_figures(summary, out_dir):
    plt = pyplot()
    sizes = summary["sizes"]
    names = ("BIC", "BICp", "CS", "CS†", "VB")
    L = []
    specs = [("median_rank", "Fig. 6.5: median rank of the truth", "rank", "dag_fig6_5.png", True),
             ("median_gap", "Fig. 6.6: median score(true) − max score (40–60 % band)", "nats",
              "dag_fig6_6.png", False),
             ("best_rank", "Fig. 6.7: best rank over the draws", "rank", "dag_fig6_7.png", True),
             ("max_gap", "Fig. 6.8: smallest score difference over the draws", "nats",
              "dag_fig6_8.png", False)]
    for key, title, ylabel, fname, log_y in specs:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for name in names:
            ax.plot(sizes, summary[key][name], "o-", ms=3, label=name)
            if key == "median_gap":
                ax.fill_between(sizes, summary["gap_40"][name], summary["gap_60"][name], alpha=0.15)
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
            ax.invert_yaxis()
        else:
            ax.set_yscale("symlog")
        ax.set_xlabel("n")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
        L += [f"## {title}", "", save_figure(fig, out_dir, fname), ""]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    N = summary["draws"]
    for name in names:
        ax.plot(sizes, [summary["table_6_5"][n][name] / N for n in sizes], "o-", ms=3, label=name)
    ax.plot(sizes, [thesis.TABLE_6_5.get(n, (np.nan,) * 5)[-1] / thesis.TABLE_6_5_DRAWS
                    for n in sizes], "k--", label="VB (thesis)")
    ax.set_xscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("fraction ranked first")
    ax.set_title("Fig. 6.9: success rate", fontsize=9)
    ax.legend(fontsize=8)
    L += ["## Fig. 6.9: success rate", "", save_figure(fig, out_dir, "dag_fig6_9.png"), ""]
    return L


def _report(summary, config, out_dir):
    if summary["mode"] == "single":
        return _report_single(summary, config, out_dir)
    return _report_draws(summary, config, out_dir)


dag = register(Experiment(
    name="dag",
    description="Beal (2003) ch. 6: 136 DAG structures scored by MAP/BIC/BICp/CS/CS†/VB/AIS "
                "(Table 6.1, Figs 6.2-6.4, Tables 6.3, 6.4), AIS hysteresis (Fig 6.13), "
                "effective dimensions (§6.5.2); --draws N: averaged study (Tables 6.2, 6.5)",
    quick=QUICK, full=FULL,
    units=_units, run_unit=_run_unit, summarize=_summarize, report=_report,
    options=(Option("draws", int, "number of parameter draws (0: the single thesis instance)"),
             Option("ais_temperatures", int, "AIS schedule length K (0: no AIS)"),
             Option("extras", int, "1: also VB without the iteration cap and VB from the CS point"),
             Option("n_init", int, "EM/VBEM restarts per structure"),
             Option("hysteresis_repeats", int, "seeds per cell of the AIS hysteresis study")),
    # a unit's result depends on its draw (its n, e_tau, K, repeat; its structure), not on
    # how many draws, schedule lengths, repeats or structures the run has
    resume_ignores=("draws", "ais_temperatures", "hysteresis_sizes", "hysteresis_temperatures",
                    "hysteresis_e_tau", "hysteresis_repeats", "dimension_codes")))
