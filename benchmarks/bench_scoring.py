"""Evidence scorers on Beal's DAG class (thesis Chapter 6).

Workloads (``python -m benchmarks scoring-*``):

* ``scoring-dag-ais``: a few structures of the class (the true one, the fully connected
  one and a sparse one) on data generated from the true model: VB bound, BIC, CS and
  theta-only AIS (the compiled joint Dirichlet kernel, Beal's schedule).  Reports the
  scores, the AIS standard error and acceptance, and whether AIS falls below VB.
* ``scoring-dag-ais136``: the thesis's AIS experiment on all 136 structures (quick mode:
  8 structures, 1024 temperatures), structures spread over 2 processes.

Script mode (the full thesis experiment, written to ``benchmarks/results/dag_ais136.*``)::

    python -m benchmarks.bench_scoring [--quick] [--n-temperatures 16384] [--n-runs 5]
                                       [--n-jobs 2] [--n 480] [--seed 0]

AIS with K = 16384 temperatures of Beal's schedule (e_tau = 0.2), 5 runs (= 5 chains of
one vectorised call, pooled by log-mean-exp as the thesis's AIS^(5)), one Metropolis–Hastings
move of every CPT row per temperature with the proposal Dir(alpha(beta) theta + floor),
alpha(beta) = alpha0 + kappa n beta.  The thesis needed about 75 hours for this
(136 structures x 5 runs at n = 480).  The report lists, per structure, AIS (and the
per-run log-weights), VB, BIC and CS (raw and alias-corrected), seconds per structure per
run, and the MH acceptance profile along the schedule; the rank of the true structure
under every score (1 + number of structures with a strictly higher score).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .harness import RESULTS_DIR, workload

# (code, label): true structure, everything connected, only one edge per observed node
_STRUCTURES = [((1, 3, 3, 2), "true"), ((3, 3, 3, 3), "full"), ((1, 1, 2, 2), "sparse")]


def score_structure(code, X, n_temperatures, n_runs, seed, strength=None, floor="prior",
                    e_tau=0.2):
    """VB, BIC, CS (raw and + ln S) and AIS of one structure; timings in seconds."""
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import bipartite_structure
    from sklearn_vb.scoring import score

    n = X.shape[0]
    out = {"code": list(code)}
    cpu0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        est = VBDiscreteDAG(*bipartite_structure(code), n_init=3, max_iter=1000, tol=1e-6 * n,
                            random_state=seed, bound_check="off").fit(X)
        out["vb_seconds"] = time.perf_counter() - t
        vb = score(est, X, "vb", alias_correction=True)
        bic = score(est, X, "bic", alias_correction=True, random_state=seed)
        cs = score(est, X, "cs", alias_correction=True, random_state=seed)
        t = time.perf_counter()
        c = time.process_time()
        ais = score(est, X, "ais", n_temperatures=n_temperatures, n_chains=n_runs,
                    schedule="beal", e_tau=e_tau, kernel="compiled", dirichlet_strength=strength,
                    dirichlet_floor=floor, random_state=seed)
        t_ais = time.perf_counter() - t
        c_ais = time.process_time() - c
    out.update({
        "d": int(bic.diagnostics["d"]),
        "log_alias": vb.log_alias_correction,
        "vb": vb.log_evidence, "bic": bic.log_evidence, "cs": cs.log_evidence,
        "ais": ais.log_evidence, "ais_stderr": ais.stderr,
        "ais_stderr_reliable": bool(ais.diagnostics["stderr_reliable"]),
        "ais_log_weights": [float(v) for v in ais.diagnostics["log_weights"]],
        "ais_below_vb": bool(ais.log_evidence < vb.log_evidence),
        "ais_seconds": t_ais,
        "ais_seconds_per_run": t_ais / n_runs,
        "ais_cpu_seconds": c_ais,
        "ais_cpu_seconds_per_run": c_ais / n_runs,
        "acceptance_by_quarter": ais.diagnostics["acceptance_by_quarter"],
        "acceptance_profile": ais.diagnostics["acceptance_profile"]["acceptance"],
        "acceptance_beta_start": ais.diagnostics["acceptance_profile"]["beta_start"],
        "cpu_seconds": time.process_time() - cpu0,
    })
    return out


def _rank(values, i):
    v = np.asarray(values, dtype=float)
    return int(1 + np.sum(v > v[i]))


def run_dag_ais136(n=480, n_temperatures=16384, n_runs=5, n_jobs=2, seed=0, codes=None,
                   strength=None, floor="prior", verbose=1):
    """Score every structure of the class; returns the result dict (see module doc)."""
    from joblib import Parallel, delayed

    from sklearn_vb.datasets import BEAL_TRUE_CODE, enumerate_bipartite_structures, make_beal_dag

    X = make_beal_dag(n, random_state=seed)
    codes = [tuple(c) for c in (enumerate_bipartite_structures() if codes is None else codes)]
    true = tuple(BEAL_TRUE_CODE)
    if true not in codes:
        codes = [true] + codes
    # warm the numba cache once in this process so workers only load it
    score_structure(true, X[:40], 8, 1, seed)
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=n_jobs, verbose=10 if verbose else 0)(
        delayed(score_structure)(c, X, n_temperatures, n_runs, seed + i, strength, floor)
        for i, c in enumerate(codes))
    wall = time.perf_counter() - t0
    it = codes.index(true)
    ranks = {}
    for key in ("ais", "vb", "bic", "cs"):
        raw = [r[key] for r in rows]
        ranks[key] = _rank(raw, it)
        if key != "ais":
            ranks[key + "+lnS"] = _rank([r[key] + r["log_alias"] for r in rows], it)
    per_run = np.array([r["ais_seconds_per_run"] for r in rows])
    cpu_per_run = np.array([r["ais_cpu_seconds_per_run"] for r in rows])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    prof = np.array([r["acceptance_profile"] for r in rows])

    res = {
        "n": n, "n_temperatures": n_temperatures, "n_runs": n_runs, "n_jobs": n_jobs,
        "schedule": "beal, e_tau = 0.2", "seed": seed,
        "kernel": "joint Dirichlet MH, one move per temperature, strength alpha0 + kappa n beta",
        "strength": list(strength) if strength is not None else "default (10, 3)",
        "floor": floor,
        "n_structures": len(rows), "cpu_count": os.cpu_count(),
        "wall_seconds_total": wall,
        "load_average_at_end": load,
        "ais_seconds_total": float(sum(r["ais_seconds"] for r in rows)),
        "ais_cpu_seconds_total": float(cpu_per_run.sum() * n_runs),
        "cpu_seconds_total": float(sum(r["cpu_seconds"] for r in rows)),
        "ais_seconds_per_structure_per_run": {
            "mean": float(per_run.mean()), "min": float(per_run.min()), "max": float(per_run.max())},
        "ais_cpu_seconds_per_structure_per_run": {
            "mean": float(cpu_per_run.mean()), "min": float(cpu_per_run.min()),
            "max": float(cpu_per_run.max())},
        "true_code": list(true), "true_ranks": ranks,
        "true_scores": {k: rows[it][k] for k in ("ais", "ais_stderr", "vb", "bic", "cs")},
        "best_by_ais": rows[int(np.argmax([r["ais"] for r in rows]))]["code"],
        "ais_below_vb_count": int(sum(r["ais_below_vb"] for r in rows)),
        "acceptance_profile_true": rows[it]["acceptance_profile"],
        "acceptance_profile_mean": prof.mean(axis=0).tolist(),
        "acceptance_profile_beta_start": rows[it]["acceptance_beta_start"],
        "acceptance_by_quarter_true": rows[it]["acceptance_by_quarter"],
        "structures": rows,
    }
    res["beal_kernel_true"] = beal_kernel_comparison(X, n_temperatures, n_runs, seed)
    res["hysteresis_true"] = hysteresis_true(X, n_temperatures, n_runs, seed, strength, floor)
    return res


def hysteresis_true(X, n_temperatures, n_runs, seed, strength=None, floor="prior", e_tau=0.2):
    """Beal's forward/backward hysteresis check on the true structure."""
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import BEAL_TRUE_CODE, bipartite_structure
    from sklearn_vb.scoring import score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBDiscreteDAG(*bipartite_structure(tuple(BEAL_TRUE_CODE)), n_init=3, max_iter=1000,
                            tol=1e-6 * X.shape[0], random_state=seed, bound_check="off").fit(X)
    r = score(est, X, "ais", n_temperatures=n_temperatures, n_chains=n_runs, schedule="beal",
              e_tau=e_tau, kernel="compiled", dirichlet_strength=strength, dirichlet_floor=floor,
              random_state=seed, hysteresis=True)
    h = r.diagnostics["hysteresis"]
    return {"forward": h["forward_estimate"], "backward": h["backward_estimate"], "gap": h["gap"],
            "ratio_difference_profile": h["ratio_difference_profile"]}


def beal_kernel_comparison(X, n_temperatures, n_runs, seed):
    """The true structure with Beal's own kernel (fixed strength 3000, no floor): its
    acceptance profile is the one to compare with the thesis's Fig. 6.12."""
    from sklearn_vb.datasets import BEAL_TRUE_CODE

    r = score_structure(tuple(BEAL_TRUE_CODE), X, n_temperatures, n_runs, seed,
                        strength=(3000.0, 0.0), floor=0.0)
    return {k: r[k] for k in ("ais", "ais_stderr", "ais_log_weights", "acceptance_by_quarter",
                              "acceptance_profile", "ais_cpu_seconds_per_run")}


def write_report(res, stem="dag_ais136"):
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    jpath = RESULTS_DIR / f"{stem}.json"
    mpath = RESULTS_DIR / f"{stem}.md"
    jpath.write_text(json.dumps(res, indent=1))
    L = [f"# AIS on the {res['n_structures']} structures of Beal's DAG class (n = {res['n']})", ""]
    L.append(f"K = {res['n_temperatures']} temperatures ({res['schedule']}), {res['n_runs']} runs "
             f"pooled by log-mean-exp; kernel: {res['kernel']}, strength {res['strength']}, "
             f"floor {res['floor']}; {res['n_jobs']} worker processes on a "
             f"{res['cpu_count']}-core machine shared with other jobs.")
    L.append("")
    s = res["ais_seconds_per_structure_per_run"]
    cs_ = res["ais_cpu_seconds_per_structure_per_run"]
    L.append(f"* total wall time: **{res['wall_seconds_total']:.1f} s** (VB, BIC, CS and AIS of every "
             f"structure; load average {res['load_average_at_end']:.1f} at the end); CPU time of all "
             f"jobs {res['cpu_seconds_total']:.1f} s, of which AIS {res['ais_cpu_seconds_total']:.1f} s "
             f"(so about {res['cpu_seconds_total'] / max(1, res['n_jobs']):.0f} s of wall time on "
             f"{res['n_jobs']} otherwise idle cores)")
    L.append(f"* AIS CPU seconds per structure per run: mean {cs_['mean']:.3f}, min {cs_['min']:.3f}, "
             f"max {cs_['max']:.3f}; wall seconds (with the machine's load) mean {s['mean']:.3f}, "
             f"max {s['max']:.3f} (the thesis: about 75 h for all, i.e. ~400 s per structure per run)")
    L.append(f"* rank of the true structure {tuple(res['true_code'])}: " + ", ".join(
        f"{k} {v}" for k, v in res["true_ranks"].items()))
    L.append(f"* structure ranked first by AIS: {tuple(res['best_by_ais'])}; structures with AIS "
             f"below their VB bound: {res['ais_below_vb_count']} of {res['n_structures']}")
    ts = res["true_scores"]
    L.append(f"* true structure: AIS {ts['ais']:.2f} (stderr {ts['ais_stderr']:.2f}), VB {ts['vb']:.2f}, "
             f"BIC {ts['bic']:.2f}, CS {ts['cs']:.2f}")
    L.append("")
    L.append("MH acceptance along the schedule (16 equal stretches of k; beta at the start of each):")
    L.append("")
    L.append("| stretch | beta start | acceptance (true) | acceptance (mean of all) |")
    L.append("|---|---|---|---|")
    for i, (b, a, m) in enumerate(zip(res["acceptance_profile_beta_start"],
                                      res["acceptance_profile_true"],
                                      res["acceptance_profile_mean"])):
        L.append(f"| {i + 1} | {b:.4f} | {a:.3f} | {m:.3f} |")
    bk = res.get("beal_kernel_true")
    if bk:
        L.append("")
        L.append(f"Beal's kernel on the true structure (fixed strength 3000, no floor): AIS "
                 f"{bk['ais']:.2f} (stderr {bk['ais_stderr']:.2f}); acceptance by quarter of the "
                 "schedule " + ", ".join(f"{a:.3f}" for a in bk["acceptance_by_quarter"])
                 + "; by sixteenth " + ", ".join(f"{a:.2f}" for a in bk["acceptance_profile"]) + ".")
    hy = res.get("hysteresis_true")
    if hy:
        L.append("")
        L.append(f"Hysteresis check on the true structure (backward pass from the final states, same "
                 f"forward ratios): forward {hy['forward']:.2f}, backward {hy['backward']:.2f}, gap "
                 f"{hy['gap']:.2f} nats; backward-minus-forward log-ratio sums over the 16 stretches: "
                 + ", ".join(f"{v:.2f}" for v in hy["ratio_difference_profile"]) + ".")
    L.append("")
    L.append("Per structure (sorted by AIS):")
    L.append("")
    L.append("| code | d | AIS | stderr | VB | BIC | CS | ln S | AIS CPU s/run |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(res["structures"], key=lambda r: -r["ais"]):
        L.append(f"| {tuple(r['code'])} | {r['d']} | {r['ais']:.2f} | {r['ais_stderr']:.2f} | "
                 f"{r['vb']:.2f} | {r['bic']:.2f} | {r['cs']:.2f} | {r['log_alias']:.2f} | "
                 f"{r['ais_cpu_seconds_per_run']:.3f} |")
    mpath.write_text("\n".join(L) + "\n")
    return jpath, mpath


@workload("scoring-dag-ais", per="call")
def scoring_dag_ais(quick):
    from sklearn_vb.datasets import make_beal_dag

    n = 80 if quick else 480
    K = 256 if quick else 4096
    X = make_beal_dag(n, random_state=0)

    def ours():
        metrics = {"n": n, "n_temperatures": K, "n_runs": 5}
        for code, label in _STRUCTURES:
            r = score_structure(code, X, K, 5, 0)
            metrics[label] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
                              if k in ("vb", "bic", "cs", "ais", "ais_stderr", "ais_below_vb",
                                       "ais_seconds_per_run", "acceptance_by_quarter")}
        return {"n_iter": None, **metrics}

    return {"sklearn_vb": ours}


@workload("scoring-dag-ais136", per="call")
def scoring_dag_ais136(quick):
    from sklearn_vb.datasets import enumerate_bipartite_structures

    codes = list(enumerate_bipartite_structures())
    if quick:
        codes = codes[:: max(1, len(codes) // 8)][:8]
    K = 1024 if quick else 16384

    def ours():
        res = run_dag_ais136(n_temperatures=K, codes=codes, verbose=0)
        return {"n_iter": None, "structures": res["n_structures"], "n_temperatures": K,
                "wall_seconds_total": round(res["wall_seconds_total"], 2),
                "ais_seconds_per_structure_per_run": round(
                    res["ais_seconds_per_structure_per_run"]["mean"], 4),
                "true_ranks": res["true_ranks"]}

    return {"sklearn_vb": ours}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_scoring",
                                description="AIS on all 136 structures of Beal's DAG class.")
    p.add_argument("--quick", action="store_true", help="8 structures, 1024 temperatures")
    p.add_argument("--n-temperatures", type=int, default=None)
    p.add_argument("--n-runs", type=int, default=5)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--n", type=int, default=480)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=None, help="results stem (default dag_ais136[_quick])")
    a = p.parse_args(argv)
    from sklearn_vb.datasets import enumerate_bipartite_structures

    codes = list(enumerate_bipartite_structures())
    if a.quick:
        codes = codes[:: max(1, len(codes) // 8)][:8]
    K = a.n_temperatures or (1024 if a.quick else 16384)
    res = run_dag_ais136(n=a.n, n_temperatures=K, n_runs=a.n_runs, n_jobs=a.n_jobs, seed=a.seed,
                         codes=codes)
    stem = a.output or ("dag_ais136_quick" if a.quick else "dag_ais136")
    j, m = write_report(res, stem)
    print(Path(m).read_text())
    print(f"written: {j} and {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
