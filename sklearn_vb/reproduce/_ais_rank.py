"""The screened ranking study of ``reproduce ais`` (beyond the thesis): does a precise
AIS give the true structure the same rank across independent seeds?

Screen: every structure's VB bound, alias-corrected (``F + ln S``), from ``rank_restarts``
VBEM restarts run to convergence, and, when a ``reproduce dag`` journal is given
(``rank_journal``), its AIS^(5) from the prior.  A structure gets the precise runs when
either cheap score lies within ``rank_margin`` nats of the best structure's by the same
score; the others are ranked below every screened one.  The
precise estimator is AIS along the geometric path from the alias-symmetrised mixture of
the distinct VB optima (those within ``rank_window`` nats of the best restart; every
relabelled copy of each, ``start="q_aliases"`` of the AIS score) to the posterior, with
the compiled DAG kernel, ``rank_K`` temperatures (sigmoid schedule) and ``rank_chains``
chains per estimate; ``rank_repeats`` independent seeds per structure.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from ..scoring import scoring_model_for
from ..scoring.schedules import make_schedule
from ._dag_units import (SINGLE, STRUCTURES, TRUE_CODE, _fit, _fit_data, _patterns, _starts,
                         _structure_constants, _vbem, code_name, draw_data, parse_code,
                         rank_of_truth)

__all__ = ["rank_units", "run_rank_unit", "summarize_rank", "report_rank", "distinct_optima"]

CODES = [code_name(c) for c in STRUCTURES]
TRUE = code_name(TRUE_CODE)


def _tag(config):
    """The settings a precise unit's result depends on, as one key entry."""
    return (f"K{int(config['rank_K'])}C{int(config['rank_chains'])}"
            f"R{int(config['rank_restarts'])}W{float(config['rank_window']):g}"
            f"M{float(config['rank_margin']):g}")


def rank_codes(config):
    return CODES if config["rank_codes"] is None else list(config["rank_codes"])


def rank_units(config):
    tag = _tag(config)
    if config.get("rank_journal"):
        tag += "J"  # the screen also uses the journal's AIS
    return [("rank", int(n), c, r, tag) for n in config["rank_sizes"] for c in rank_codes(config)
            for r in range(int(config["rank_repeats"]))]


def _row_means(model, conc):
    conc = np.atleast_2d(conc)
    rp = model.layout.row_ptr
    return conc / np.repeat(np.add.reduceat(conc, rp[:-1], axis=1), np.diff(rp), axis=1)


def distinct_optima(model, concentrations, bounds, window, tol=0.02):
    """The VB optima (flat concentrations, best first) within ``window`` nats of the best
    bound, one per optimum up to relabelling: an optimum whose posterior means differ
    from a kept one's relabelled copy by less than ``tol`` (largest entry) is the same."""
    order = np.argsort(-np.asarray(bounds))
    kept = []
    for i in order:
        if bounds[i] < bounds[order[0]] - window:
            break
        copies = _row_means(model, model.alias_mixture(concentrations[i]))
        if not any(np.abs(copies - _row_means(model, k)).max(axis=1).min() < tol for k in kept):
            kept.append(np.asarray(concentrations[i], dtype=float))
    return np.array(kept)


@lru_cache(maxsize=4)
def _data(seed, n):
    return draw_data(seed, SINGLE, n, max(n, 480))


@lru_cache(maxsize=1024)
def _vb_restarts(seed, n, code, n_restarts):
    """Bounds and concentrations of ``n_restarts`` VBEM runs (each from its own prior
    draw of the tables, run to convergence) of one structure: ``(bounds, conc, ln S)``."""
    X = _data(seed, n)
    U, w = _patterns(X)
    data, est = _fit_data(parse_code(code), U, w)
    fit_seed = int(np.random.SeedSequence([seed, 29, n, int(code)]).generate_state(1)[0])
    starts = _starts(est, data, fit_seed, n_restarts)
    runs = [_vbem(data, starts[i:i + 1], 100000, 1e-6 * n) for i in range(n_restarts)]
    _, ln_S = _structure_constants(parse_code(code))
    return (np.array([r[0] for r in runs]), np.array([r[3] for r in runs]), float(ln_S))


@lru_cache(maxsize=16)
def _screen(seed, n, codes, n_restarts):
    """Alias-corrected best VB bound of every structure."""
    out = {}
    for c in codes:
        bounds, _, ln_S = _vb_restarts(seed, n, c, n_restarts)
        out[c] = float(bounds.max() + ln_S)
    return out


def _passes(code, scores, margin):
    return bool(code in scores and scores[code] >= max(scores.values()) - margin)


def run_rank_unit(key, config, seed):
    _, n, code, rep, _ = key
    t0 = time.process_time()
    R = int(config["rank_restarts"])
    codes = tuple(rank_codes(config))
    screen = _screen(int(config["seed"]), int(n), codes, R)
    journal = {c: v for c, v in _journal_ais(config.get("rank_journal"), int(n)).items()
               if c in codes}
    margin = float(config["rank_margin"])
    out = {"vb_corrected": screen[code], "best_vb_corrected": max(screen.values()),
           "journal_ais": journal.get(code),
           "screened": _passes(code, screen, margin) or _passes(code, journal, margin)}
    if not out["screened"]:
        out["seconds"] = time.process_time() - t0
        return out
    bounds, conc, _ = _vb_restarts(int(config["seed"]), int(n), code, R)
    X = _data(int(config["seed"]), int(n))
    holder = _fit(parse_code(code), X[:10], "vb", 0, 1, 1, 1e-6)  # its structure only
    model = scoring_model_for(holder)
    data = model.prepare_data(X)
    optima = distinct_optima(model, conc, bounds, float(config["rank_window"]))
    mix = model.alias_mixture(optima)
    betas = make_schedule("sigmoid", int(config["rank_K"]), 4.0, 0.2, 1e-4)
    chains = np.random.SeedSequence(seed).spawn(int(config["rank_chains"]))
    r = model.run_ais_compiled(data, betas, chains, start_mixture=mix)
    lw = r["log_weights"]
    out.update({"ais": float(logsumexp(lw) - np.log(lw.size)), "log_weights": lw.tolist(),
                "n_optima": int(len(optima)), "n_components": int(len(mix)),
                "acceptance": float(np.mean(r["acceptance"])),
                "seconds": time.process_time() - t0})
    return out


@lru_cache(maxsize=16)
def _journal_ais(path, n):
    """``{code: AIS^(5)}`` at size ``n`` from a ``reproduce dag`` journal (units
    ``("beal", n, code, "ais<K>")``), or {} when there is none."""
    if not path:
        return {}
    if not Path(path).exists():
        raise FileNotFoundError(f"rank_journal: no journal at {path!r}.")
    out = {}
    with open(path, encoding="utf-8") as fh:
        next(fh, None)
        for line in fh:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            k = d.get("key", [])
            if (len(k) == 4 and k[0] == SINGLE and k[1] == n and str(k[3]).startswith("ais")
                    and isinstance(d.get("result"), dict) and "ais" in d["result"]):
                out[k[2]] = float(d["result"]["ais"])
    return out


def summarize_rank(results, config):
    codes = rank_codes(config)
    i_true = codes.index(TRUE)
    tag = rank_units(config)[0][4] if config["rank_sizes"] else _tag(config)
    reps = int(config["rank_repeats"])
    out = {}
    for n in config["rank_sizes"]:
        rows = {c: [results[("rank", int(n), c, r, tag)] for r in range(reps)] for c in codes}
        screened = [c for c in codes if rows[c][0]["screened"]]
        est = np.full((reps, len(codes)), -np.inf)
        for j, c in enumerate(codes):
            if c in screened:
                est[:, j] = [x["ais"] for x in rows[c]]
        ranks = [rank_of_truth(v, i_true) for v in est]
        mean = {c: float(np.mean(est[:, codes.index(c)])) for c in screened}
        sd = {c: float(np.std(est[:, codes.index(c)], ddof=1)) if reps > 1 else float("nan")
              for c in screened}
        top = sorted(screened, key=lambda c: -mean[c])
        vb = {c: rows[c][0]["vb_corrected"] for c in codes}
        excluded = [c for c in codes if c not in screened]
        entry = {
            "ranks": ranks, "agree": len(set(ranks)) == 1, "n_structures": len(codes),
            "n_screened": len(screened), "screened": screened,
            "margin": float(config["rank_margin"]),
            "best_excluded_vb_below_best": (float(max(vb.values()) - max(vb[c] for c in excluded))
                                            if excluded else None),
            "top": [{"code": c, "mean": mean[c], "sd": sd[c], "vb_corrected": vb[c],
                     "n_components": rows[c][0]["n_components"]} for c in top[:5]],
            "sd_true": sd.get(TRUE, float("nan")),
            "vb_gap_max": float(max(mean[c] - vb[c] for c in screened)) if screened else None,
            "cpu_seconds": float(sum(x["seconds"] for c in codes for x in rows[c])),
        }
        journal = _journal_ais(config.get("rank_journal"), int(n))
        entry["excluded_journal_ais_below_best"] = (
            float(max(journal.values()) - max(journal[c] for c in excluded))
            if journal and excluded and all(c in journal for c in excluded) else None)
        if journal and excluded and all(c in journal for c in excluded) and TRUE in mean:
            entry["journal_best_excluded_below_true"] = float(
                mean[TRUE] - max(journal[c] for c in excluded))
        out[int(n)] = entry
    return out


def report_rank(summary, config, markdown_table):
    if not summary:
        return []
    L = ["## Beyond the thesis: a precise AIS, screened ranking study", "",
         f"AIS from the alias-symmetrised mixture of the distinct VB optima (the best of "
         f"{config['rank_restarts']} VBEM restarts and those within {config['rank_window']:g} "
         f"nats of it, each with all its relabelled copies; the mixture density is exact, so "
         f"the estimate is unbiased for the evidence itself and needs no alias correction), "
         f"K = {config['rank_K']} temperatures, {config['rank_chains']} chains per estimate, "
         f"{config['rank_repeats']} independent seeds (the start mixture depends on the data "
         "only).  Screen: a structure gets the precise runs when its alias-corrected VB "
         f"bound lies within {config['rank_margin']:g} nats of the best structure's"
         + (", or its AIS^(5) from the prior in the journal of the `reproduce dag` run "
            "within as much of the best AIS^(5)" if config.get("rank_journal") else "")
         + "; the others rank below all of them.  Both cheap scores are (stochastic) lower "
         "bounds on a structure's evidence, so a screened-out structure could only outrank "
         "the truth if its evidence exceeded both by more than the margin plus the truth's "
         "lead; the largest evidence-minus-VB gap measured on the screened structures is "
         "given for comparison.", ""]
    rows = []
    for n, p in summary.items():
        top = p["top"]
        comp = "; ".join(f"{t['code']} {t['mean']:.2f} (sd {t['sd']:.2f})" for t in top[:3])
        rows.append([n, ", ".join(map(str, p["ranks"])), "yes" if p["agree"] else "no",
                     f"{p['n_screened']}/{p['n_structures']}", p["sd_true"], comp,
                     p["vb_gap_max"], _or_dash(p["best_excluded_vb_below_best"]),
                     _or_dash(p.get("excluded_journal_ais_below_best")),
                     _or_dash(p.get("journal_best_excluded_below_true")), p["cpu_seconds"]])
    L += [markdown_table(["n", "rank of truth per seed", "agree", "screened",
                          "sd of truth's estimate", "best three (mean over seeds, sd)",
                          "largest AIS − VB among screened", "best excluded: VB below best",
                          "best excluded: AIS^(5) below best", "truth above best excluded "
                          "AIS^(5)", "CPU s"],
                         rows, digits=2), ""]
    return L


def _or_dash(v):
    return "–" if v is None else v
