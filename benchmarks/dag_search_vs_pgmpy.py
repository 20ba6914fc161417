"""Greedy DAG structure search on fully observed data: DAGStructureSearch against
pgmpy's HillClimbSearch on networks of pgmpy's example repository.

For each network, sample size and seed: data sampled from the network, every search
started from the empty graph; reported per search are the structural Hamming distance
to the true DAG (missing + extra + reversed edges), the BIC of the graph found (the
textbook BIC, the same for both libraries), the held-out log-likelihood per row on
5000 fresh rows (each structure fitted by VBDiscreteDAG with its default prior) and the
time.  ``ours-hc`` is DAGStructureSearch as plain hill climbing (``tabu_steps=0,
n_restarts=0``), ``ours`` its defaults.

Times: ``time`` is wall-clock, ``cpu`` the process's CPU time over the same search (the
steadier of the two on a shared machine).  The garbage collector runs a full
collection before every timed search, so that no search pays for a collection of
the objects the previous ones left (pgmpy's imports make that heap large).

pgmpy at large sizes: every pgmpy search runs in a child process and is stopped after
``PGMPY_CAP`` seconds (its row then reads ``> cap`` and has no graph); above
``SMALL`` rows only seed 0 is run and only pgmpy's BIC search (the like-for-like
comparison), K2 and BDeu only up to ``SMALL`` rows on the networks other than alarm.

Run: ``PYTHONHASHSEED=0 python -m benchmarks.dag_search_vs_pgmpy [networks] [sizes]``.
"""

import gc
import multiprocessing
import sys
import time
import warnings

import numpy as np

NETWORKS = ("asia", "sachs", "child", "alarm")
SIZES = (500, 2000, 5000, 20000, 100000)
SMALL = 5000  # above: seed 0 only, pgmpy's BIC search only
PGMPY_CAP = 600.0  # seconds


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


def _bic(structure, cards, X):
    from sklearn_vb.scoring import score

    return score(_fit(structure, cards, X, "ml"), X, "bic").log_evidence


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


def _pgmpy_child(queue, X, names, score):
    warnings.filterwarnings("ignore")
    queue.put(_pgmpy(X, names, score))


def _pgmpy_capped(X, names, score, cap=PGMPY_CAP):
    """:func:`_pgmpy` in a child process, stopped after ``cap`` seconds (then None)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_pgmpy_child, args=(queue, X, names, score))
    proc.start()
    try:
        return queue.get(timeout=cap)
    except Exception:
        return None
    finally:
        proc.terminate()
        proc.join()


def main(networks=NETWORKS, sizes=SIZES, seeds=(0, 1, 2)):
    import logging

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    # one untimed search of each library first: imports and compiled kernels loaded
    # (pgmpy's searches run in children forked from this process)
    m, names, cards = _load(networks[0])
    X = _sample(m, names, 200, 99)
    _ours(X, names, cards)
    _pgmpy(X, names, "bic-d")
    print("| network | n | seed | search | edges | SHD | BIC | held-out / row | time (s) "
          "| cpu (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for net in networks:
        m, names, cards = _load(net)
        true = {v: sorted(m.get_parents(v)) for v in names}
        for n in sizes:
            for seed in (seeds if n <= SMALL else seeds[:1]):
                X = _sample(m, names, n, seed)
                Xte = _sample(m, names, 5000, 1000 + seed)
                runs = {"true": (true, 0.0, 0.0),
                        "ours-hc": _ours(X, names, cards, tabu_steps=0, n_restarts=0),
                        "ours": _ours(X, names, cards)}
                scores = (("pgmpy-bic", "bic-d"), ("pgmpy-k2", "k2"), ("pgmpy-bdeu", "bdeu"))
                if n > SMALL or net == "alarm":
                    scores = scores[:1]
                for label, sc in scores:
                    runs[label] = _pgmpy_capped(X, names, sc)
                for label, run in runs.items():
                    if run is None:
                        print(f"| {net} | {n} | {seed} | {label} | | | | | > {PGMPY_CAP:.0f} | |",
                              flush=True)
                        continue
                    g, t, c = run
                    held = _fit(g, cards, X).score(Xte)
                    print(f"| {net} | {n} | {seed} | {label} | {sum(map(len, g.values()))} | "
                          f"{shd(g, true)} | {_bic(g, cards, X):.1f} | {held:.4f} | {t:.2f} "
                          f"| {c:.2f} |", flush=True)


if __name__ == "__main__":
    nets = sys.argv[1].split(",") if len(sys.argv) > 1 else NETWORKS
    sizes = tuple(int(s) for s in sys.argv[2].split(",")) if len(sys.argv) > 2 else SIZES
    main(nets, sizes)
