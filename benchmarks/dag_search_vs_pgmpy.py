"""Greedy DAG structure search on fully observed data: DAGStructureSearch against
pgmpy's HillClimbSearch on networks of pgmpy's example repository.

For each network, sample size and seed: data sampled from the network, every search
started from the empty graph; reported per search are the structural Hamming distance
to the true DAG (missing + extra + reversed edges), the BIC of the graph found (the
textbook BIC, the same for both libraries), the held-out log-likelihood per row on
5000 fresh rows (each structure fitted by VBDiscreteDAG with its default prior; none
for a graph with more than ``MAX_CELLS`` CPT entries, whose BIC then comes from sparse
counts) and the time.  ``ours-hc`` is DAGStructureSearch as plain hill climbing (``tabu_steps=0,
n_restarts=0``), ``ours`` its defaults.

Times: ``time`` is wall-clock, ``cpu`` the process's CPU time over the same search (the
steadier of the two on a shared machine).  The garbage collector runs a full
collection before every timed search, so that no search pays for a collection of
the objects the previous ones left (pgmpy's imports make that heap large).

pgmpy at large sizes: every pgmpy search runs in a child process and is stopped after
``PGMPY_CAP`` seconds of CPU time (or ``WALL_CAP`` seconds of wall-clock time; its
row then reads ``> cap`` and has no graph); above
``SMALL`` rows only seed 0 is run and only pgmpy's BIC search (the like-for-like
comparison), K2 and BDeu only up to ``SMALL`` rows on the networks other than alarm.

Results: every row (one search on one sample) is appended to ``--rows`` (JSON lines) as
it finishes, so a run can be cut and resumed (``--resume`` skips the samples done);
``--reuse-pgmpy`` re-runs only our searches and keeps pgmpy's rows from the file (its
searches do not depend on our code).  ``--write`` turns the rows into
``results/dag_search.json`` (one workload per network and size, CPU seconds as the
time, ratios ours / theirs on the CPU time, in the format of :mod:`benchmarks.harness`,
so that ``python -m benchmarks.figures`` draws its figure) and ``results/dag_search.md``
(a summary per network and size, then every row).

Run: ``PYTHONHASHSEED=0 OMP_NUM_THREADS=1 python -m benchmarks.dag_search_vs_pgmpy
[--networks asia,sachs] [--sizes 500,2000] [--resume] [--reuse-pgmpy] [--write]``.
"""

import argparse
import gc
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

NETWORKS = ("asia", "sachs", "child", "alarm")
SIZES = (500, 2000, 5000, 20000, 100000)
SMALL = 5000  # above: seed 0 only, pgmpy's BIC search only
PGMPY_CAP = 600.0  # seconds of CPU time
WALL_CAP = 3600.0  # seconds of wall-clock time
# graphs with more CPT entries than this (pgmpy's K2 search grows nodes with a dozen
# parents) get their BIC from sparse counts and no held-out value: dense tables of
# that size need gigabytes
MAX_CELLS = 2_000_000
RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROWS = RESULTS_DIR / "dag_search_rows.jsonl"
OURS = ("ours", "ours-hc")
PEERS = ("pgmpy-bic", "pgmpy-k2", "pgmpy-bdeu")


def _load(name):
    from pgmpy.utils import get_example_model

    m = get_example_model(name)
    names = list(m.nodes())
    return m, names, {v: int(m.get_cardinality(v)) for v in names}


def _sample(m, names, n, seed):
    import pandas as pd

    df = m.simulate(n, seed=seed, show_progress=False)
    X = np.empty((n, len(names)), dtype=np.int64)
    for j, v in enumerate(names):
        X[:, j] = pd.Categorical(df[v], categories=m.get_cpds(v).state_names[v]).codes
    return X


def shd(found, true):
    """Missing + extra + reversed edges between two DAGs given as {child: [parents]}."""
    F = {(p, c) for c, ps in found.items() for p in ps}
    T = {(p, c) for c, ps in true.items() for p in ps}
    d = len({frozenset(e) for e in F} ^ {frozenset(e) for e in T})
    return d + sum(1 for p, c in F if (c, p) in T)


def _fit(structure, cards, X, method="vb"):
    from sklearn_vb import VBDiscreteDAG

    return VBDiscreteDAG(structure=structure, cardinalities=cards, method=method, n_init=1,
                         random_state=0).fit(X)


def _n_cells(structure, cards):
    """The number of CPT entries of a graph (``sum_j r_j q_j``)."""
    return sum(cards[c] * int(np.prod([cards[p] for p in ps])) for c, ps in structure.items())


def _bic(structure, cards, X):
    from sklearn_vb.scoring import score

    if _n_cells(structure, cards) <= MAX_CELLS:
        return score(_fit(structure, cards, X, "ml"), X, "bic").log_evidence
    # CPTs too large to hold densely: the same BIC from the counts of the parent
    # configurations that occur (the family terms the search itself scores)
    from sklearn_vb.model_selection._dag_families import FamilyScores

    names = list(structure)
    index = {v: j for j, v in enumerate(names)}
    codes, weights = np.unique(X, axis=0, return_counts=True)
    fam = FamilyScores(codes, weights, [cards[v] for v in names], ("bic",))
    return float(fam.total([tuple(sorted(index[p] for p in structure[v])) for v in names])[0])


def _heldout(structure, cards, X, Xte):
    """Held-out log-likelihood per row (VBDiscreteDAG with its default prior), None for
    CPTs too large to fit densely."""
    if _n_cells(structure, cards) > MAX_CELLS:
        return None
    return float(_fit(structure, cards, X).score(Xte))


def _ours(X, names, cards, **kw):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.model_selection import DAGStructureSearch

    est = VBDiscreteDAG(structure={v: [] for v in names}, cardinalities=cards, n_init=1,
                        random_state=0)
    gc.collect()
    t, c = time.perf_counter(), time.process_time()
    s = DAGStructureSearch(est, scoring="bic", random_state=0, **kw).fit(X)
    return s.best_structure_, time.perf_counter() - t, time.process_time() - c


def _pgmpy(X, names, score):
    import pandas as pd
    from pgmpy.estimators import HillClimbSearch

    df = pd.DataFrame(X, columns=names).astype(str).astype("category")
    gc.collect()
    t, c = time.perf_counter(), time.process_time()
    dag = HillClimbSearch(df).estimate(scoring_method=score, show_progress=False)
    t, c = time.perf_counter() - t, time.process_time() - c
    return {v: sorted(dag.get_parents(v)) if v in dag else [] for v in names}, t, c


def _pgmpy_child(queue, X, names, score, cap):
    import resource

    warnings.filterwarnings("ignore")
    # the cap counts the child's CPU time (the kernel stops it past the limit): on a
    # shared machine its wall-clock time depends on the load
    resource.setrlimit(resource.RLIMIT_CPU, (int(cap), int(cap) + 5))
    queue.put(_pgmpy(X, names, score))


def _pgmpy_capped(X, names, score, cap=PGMPY_CAP):
    """:func:`_pgmpy` in a child process, stopped after ``cap`` seconds of CPU time, or
    ``WALL_CAP`` seconds of wall-clock time (then None)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_pgmpy_child, args=(queue, X, names, score, cap))
    proc.start()
    try:
        return queue.get(timeout=WALL_CAP)
    except Exception:
        return None
    finally:
        proc.terminate()
        proc.join()


def _labels(net, n):
    scores = (("pgmpy-bic", "bic-d"), ("pgmpy-k2", "k2"), ("pgmpy-bdeu", "bdeu"))
    return scores[:1] if n > SMALL or net == "alarm" else scores


def _read_rows(path):
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(networks=NETWORKS, sizes=SIZES, seeds=(0, 1, 2), rows_path=ROWS, resume=False,
        reuse_pgmpy=False):
    """Run the searches and append one JSON row per search to ``rows_path``."""
    import logging

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    old = _read_rows(rows_path)
    done = {(r["network"], r["n"], r["seed"]) for r in old if r["search"] in OURS}
    peers = {(r["network"], r["n"], r["seed"], r["search"]): r for r in old
             if r["search"] in PEERS}
    if not resume:  # a fresh run: only pgmpy's rows may be kept
        kept = list(peers.values()) if reuse_pgmpy else []
        Path(rows_path).write_text("".join(json.dumps(r) + "\n" for r in kept))
        done = set()
    # one untimed search of each library first: imports and compiled kernels loaded
    # (pgmpy's searches run in children forked from this process)
    m, names, cards = _load(networks[0])
    X = _sample(m, names, 200, 99)
    _ours(X, names, cards)
    _pgmpy(X, names, "bic-d")
    print("| network | n | seed | search | edges | SHD | BIC | held-out / row | time (s) "
          "| cpu (s) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with open(rows_path, "a") as out:
        for net in networks:
            m, names, cards = _load(net)
            true = {v: sorted(m.get_parents(v)) for v in names}
            for n in sizes:
                for seed in (seeds if n <= SMALL else seeds[:1]):
                    if (net, n, seed) in done:
                        continue
                    X = _sample(m, names, n, seed)
                    Xte = _sample(m, names, 5000, 1000 + seed)
                    runs = {"true": (true, 0.0, 0.0),
                            "ours-hc": _ours(X, names, cards, tabu_steps=0, n_restarts=0),
                            "ours": _ours(X, names, cards)}
                    for label, sc in _labels(net, n):
                        if reuse_pgmpy and (net, n, seed, label) in peers:
                            continue
                        runs[label] = _pgmpy_capped(X, names, sc)
                    for label, run_ in runs.items():
                        row = {"network": net, "n": n, "seed": seed, "search": label,
                               "load": os.getloadavg()[0]}
                        if run_ is None:
                            row.update(capped=PGMPY_CAP)
                        else:
                            g, t, c = run_
                            row.update(edges=sum(map(len, g.values())), shd=shd(g, true),
                                       bic=float(_bic(g, cards, X)),
                                       heldout=_heldout(g, cards, X, Xte),
                                       wall_s=t, cpu_s=c, structure=g)
                        print(_md_row(row), flush=True)
                        out.write(json.dumps(row) + "\n")
                        out.flush()


def _md_row(r):
    head = f"| {r['network']} | {r['n']} | {r['seed']} | {r['search']} |"
    if "capped" in r:
        return head + f" | | | | > {r['capped']:.0f} | | {r['load']:.1f} |"
    held = "n/a (CPTs too large)" if r["heldout"] is None else f"{r['heldout']:.4f}"
    return (head + f" {r['edges']} | {r['shd']} | {r['bic']:.1f} | {held} | "
            f"{r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['load']:.1f} |")


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def summary(rows):
    """One entry per (network, n): per search the median CPU and wall seconds over the
    seeds, the mean SHD, BIC and held-out log-likelihood, and the CPU-time ratios of
    ours and ours-hc to each pgmpy search (median over the seeds of the per-seed
    ratios)."""
    out = {}
    for r in rows:
        out.setdefault((r["network"], r["n"]), {}).setdefault(r["search"], []).append(r)
    table = []
    for (net, n), by in out.items():
        entry = {"network": net, "n": n, "searches": {}}
        for label, rs in by.items():
            ok = [r for r in rs if "capped" not in r]
            entry["searches"][label] = {
                "seeds": len(rs), "capped": len(rs) - len(ok),
                "cpu_s": _median([r["cpu_s"] for r in ok]),
                "wall_s": _median([r["wall_s"] for r in ok]),
                "shd": _mean([r["shd"] for r in ok]), "bic": _mean([r["bic"] for r in ok]),
                "heldout": _mean([r["heldout"] for r in ok]),
                "load": _mean([r["load"] for r in rs]),
            }
        ratios = {}
        for ours in OURS:
            for peer in PEERS:
                per_seed = []
                for o in by.get(ours, []):
                    for p in by.get(peer, []):
                        if o["seed"] == p["seed"] and "capped" not in p and p["cpu_s"] > 0:
                            per_seed.append(o["cpu_s"] / p["cpu_s"])
                if per_seed:
                    ratios[f"{ours} / {peer}"] = _median(per_seed)
        entry["cpu_ratios"] = ratios
        table.append(entry)
    order = {v: i for i, v in enumerate(NETWORKS)}
    table.sort(key=lambda e: (order.get(e["network"], 99), e["n"]))
    return table


def _harness_results(table, stamp):
    """The summary as workloads of :mod:`benchmarks.harness` (CPU seconds as the time)."""
    results = []
    for e in table:
        ms = []
        ours_cpu = e["searches"].get("ours", {}).get("cpu_s")
        for label in ("ours", "ours-hc", *PEERS):
            s = e["searches"].get(label)
            if s is None:
                continue
            status = "ok" if s["cpu_s"] is not None else "over cap"
            cpu = s["cpu_s"] if s["cpu_s"] is not None else PGMPY_CAP
            m = {"label": label, "status": status, "warmup_s": None, "median_s": cpu,
                 "per_unit_ms": 1e3 * cpu, "n_iter": None, "ratio_ours_over_theirs": None,
                 "metrics": {k: s[k] for k in ("shd", "bic", "heldout", "wall_s", "seeds",
                                               "load") if s[k] is not None},
                 "message": "" if status == "ok" else f"over the cap of {PGMPY_CAP:g} s",
                 "ratios": {}, "trace": {}}
            if label in PEERS:
                m["ratio_ours_over_theirs"] = e["cpu_ratios"].get(f"ours / {label}")
                hc = e["cpu_ratios"].get(f"ours-hc / {label}")
                if hc is not None:
                    m["ratios"]["ours-hc / this"] = hc
            ms.append(m)
        if ours_cpu is None:
            continue
        results.append({"workload": f"dag-search-{e['network']}-n{e['n']}", "per": "call",
                        "quick": False, "stem": "dag_search", "time": stamp,
                        "measurements": ms})
    return results


def _fmt(v, spec):
    return "" if v is None else format(v, spec)


def write(rows_path=ROWS, directory=RESULTS_DIR, notes=""):
    """``dag_search.json`` and ``dag_search.md`` from the rows file."""
    rows = _read_rows(rows_path)
    table = summary(rows)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    payload = {"machine": {"python": platform.python_version(),
                           "platform": platform.platform(),
                           "processor": platform.processor()},
               "time": stamp, "results": _harness_results(table, stamp), "rows": rows}
    directory = Path(directory)
    (directory / "dag_search.json").write_text(json.dumps(payload, indent=1))
    lines = ["# DAGStructureSearch vs pgmpy HillClimbSearch (fully observed; "
             "python -m benchmarks.dag_search_vs_pgmpy, PYTHONHASHSEED=0)", ""]
    if notes:
        lines += [notes.strip(), ""]
    lines += ["## Summary per network and size", "",
              "CPU time of the search (median over the seeds), its ratio to pgmpy's BIC hill "
              "climbing (median of the per-seed ratios; the goal is at most 0.1), and the "
              "quality of the graph found (means over the seeds): structural Hamming distance "
              "to the true DAG, BIC of the graph (higher is better) and held-out "
              "log-likelihood per row on 5000 fresh rows.", "",
              "| network | n | seeds | ours cpu (s) | ours-hc cpu (s) | pgmpy-bic cpu (s) "
              "| ours / pgmpy-bic | ours-hc / pgmpy-bic | SHD ours / hc / pgmpy-bic "
              "| BIC ours − pgmpy-bic | held-out ours − pgmpy-bic | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in table:
        s = e["searches"]
        o, h, p = s.get("ours", {}), s.get("ours-hc", {}), s.get("pgmpy-bic", {})
        pc = (_fmt(p.get("cpu_s"), ".2f") if p.get("cpu_s") is not None
              else f"> {PGMPY_CAP:.0f}" if p else "")
        dbic = (o["bic"] - p["bic"]) if o.get("bic") is not None and p.get("bic") is not None else None
        dheld = (o["heldout"] - p["heldout"]) if (o.get("heldout") is not None
                                                  and p.get("heldout") is not None) else None
        shds = " / ".join(_fmt(x.get("shd"), ".1f") for x in (o, h, p))
        lines.append(
            f"| {e['network']} | {e['n']} | {o.get('seeds', '')} | {_fmt(o.get('cpu_s'), '.3f')} "
            f"| {_fmt(h.get('cpu_s'), '.3f')} | {pc} "
            f"| {_fmt(e['cpu_ratios'].get('ours / pgmpy-bic'), '.3f')} "
            f"| {_fmt(e['cpu_ratios'].get('ours-hc / pgmpy-bic'), '.3f')} | {shds} "
            f"| {_fmt(dbic, '+.1f')} | {_fmt(dheld, '+.4f')} | {_fmt(o.get('load'), '.1f')} |")
    lines += ["", "## Every search", "",
              "| network | n | seed | search | edges | SHD | BIC | held-out / row | time (s) "
              "| cpu (s) | load |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(NETWORKS)}
    labels = {v: i for i, v in enumerate(("true", "ours-hc", "ours", *PEERS))}
    for r in sorted(rows, key=lambda r: (order.get(r["network"], 99), r["n"], r["seed"],
                                         labels.get(r["search"], 99))):
        lines.append(_md_row(r))
    (directory / "dag_search.md").write_text("\n".join(lines) + "\n")
    return directory / "dag_search.json", directory / "dag_search.md"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dag_search_vs_pgmpy",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(NETWORKS))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rows", default=str(ROWS), help="the JSON-lines file of rows")
    parser.add_argument("--resume", action="store_true",
                        help="skip the samples whose rows are in --rows")
    parser.add_argument("--reuse-pgmpy", action="store_true",
                        help="keep pgmpy's rows from --rows, re-run only ours")
    parser.add_argument("--write", action="store_true",
                        help="write results/dag_search.{json,md} from --rows")
    parser.add_argument("--notes", default="", help="a file whose text heads the md file")
    parser.add_argument("--no-run", action="store_true", help="only --write")
    args = parser.parse_args(argv)
    if not args.no_run:
        run(tuple(args.networks.split(",")), tuple(int(s) for s in args.sizes.split(",")),
            rows_path=args.rows, resume=args.resume, reuse_pgmpy=args.reuse_pgmpy)
    if args.write:
        notes = Path(args.notes).read_text() if args.notes else ""
        for path in write(args.rows, notes=notes):
            print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
