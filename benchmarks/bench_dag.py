"""Discrete DAGs with hidden nodes.

* ``dag-136-structures``: VBEM on all 136 structures of Beal's experiment class
  (2 binary hidden, 4 five-valued observed nodes), 3 restarts each, n = 480, tolerance
  1e-6 per case, max 1000 iterations, structures spread over 2 processes.  The thesis
  took 575 s for this in MATLAB on a 1 GHz PIII (2003).  The cold numba compilation
  time (empty cache, separate process) is reported as a metric.
* ``dag-draw-units``: every work unit of one draw of ``reproduce dag --draws`` (136
  structures x 20 sizes n = 10 ... 10240 of one nested data stream; per unit EM and VBEM
  with 3 restarts each, scored MAP, BIC, BICp, CS, CS† and VB), sequentially in one
  process.  Metrics: CPU seconds of the draw, per size, and the wall time 106 draws
  would take on 2 otherwise idle cores (the thesis's study).  Quick: 9 structures at
  n = 10, 80, 480.  Written to ``results/dag.*`` (other rows kept).
* ``dag-latent-class-vs-pgmpy``: ML EM on a latent-class model (one hidden node with 3
  states, 5 ternary children, N = 2000) against pgmpy's ExpectationMaximization,
  time per EM iteration.
"""

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

from .harness import workload

_COMPILE_SNIPPET = """
import time
t = time.perf_counter()
import numpy as np
from sklearn_vb import VBDiscreteDAG
X = np.array([[0, 1], [1, 1], [1, 0]])
for method in ("vb", "map"):
    m = VBDiscreteDAG({"h": [], "a": ["h"], "b": ["h"]}, 2, ["h"], method=method,
                      max_iter=3, n_init=1).fit(X)
    m.score(X); m.predict_proba(X)
print(time.perf_counter() - t)
"""


def cold_compile_seconds():
    """Time of a first tiny fit in a fresh process with an empty numba cache
    (import + compilation of every DAG kernel)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONWARNINGS="ignore")
        out = subprocess.run([sys.executable, "-c", _COMPILE_SNIPPET], env=env, check=True,
                             capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def _fit_structures(X, codes, n_init, seed):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import bipartite_structure

    bounds, iters = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for code in codes:
            m = VBDiscreteDAG(*bipartite_structure(code), n_init=n_init, max_iter=1000,
                              tol=1e-6 * X.shape[0], random_state=seed, bound_check="off").fit(X)
            bounds.append(m.lower_bound_)
            iters += m.n_iter_
    return bounds, iters


def score_all_structures(X, n_init=3, n_jobs=2, seed=0):
    """VB lower bound of every structure of the class; (codes, bounds, iterations of
    the kept runs)."""
    from joblib import Parallel, delayed

    from sklearn_vb.datasets import enumerate_bipartite_structures

    codes = enumerate_bipartite_structures()
    chunks = [codes[i::n_jobs] for i in range(n_jobs)]
    parts = Parallel(n_jobs=n_jobs)(delayed(_fit_structures)(X, c, n_init, seed) for c in chunks)
    bounds = {}
    iters = 0
    for chunk, (b, it) in zip(chunks, parts):
        bounds.update(zip(chunk, b))
        iters += it
    return codes, np.array([bounds[c] for c in codes]), iters


@workload("dag-136-structures", per="call")
def dag_136_structures(quick):
    from sklearn_vb.datasets import BEAL_TRUE_CODE, make_beal_dag_datasets

    X = make_beal_dag_datasets(random_state=0)[80 if quick else 480]
    compile_s = cold_compile_seconds()

    def ours():
        codes, bounds, iters = score_all_structures(X, n_init=3, n_jobs=2)
        rank = 1 + int(np.sum(bounds > bounds[codes.index(BEAL_TRUE_CODE)]))
        return {"n_iter": None, "structures": len(codes), "kept_run_iterations": iters,
                "rank_of_true": rank, "cold_numba_compile_s": compile_s, "thesis_matlab_s": 575.0}

    return {"sklearn_vb": ours}


@workload("dag-draw-units", per="call", repeats=1, warmup=False, stem="dag")
def dag_draw_units(quick):
    import importlib
    import time

    from sklearn_vb.reproduce._dag_units import STRUCTURES, code_name

    reproduce_dag = importlib.import_module("sklearn_vb.reproduce.dag")
    config = dict(reproduce_dag.FULL, draws=1, seed=0)
    sizes = [10, 80, 480] if quick else list(config["sizes"])
    codes = STRUCTURES[::17] if quick else STRUCTURES

    def ours():
        per_size = {}
        for n in sizes:
            t = time.process_time()
            for code in codes:  # the units of draw 0, with the seeds the study uses
                reproduce_dag._run_unit((0, n, code_name(code), "fit"), config, 0)
            per_size[str(n)] = round(time.process_time() - t, 3)
        cpu = sum(per_size.values()) * len(STRUCTURES) / len(codes)
        return {"n_iter": None, "units": len(sizes) * len(codes),
                "cpu_seconds_per_draw": round(cpu, 2),
                "projected_106_draws_wall_hours_2_idle_cores": round(106 * cpu / 2 / 3600, 3),
                "cpu_seconds_by_size": per_size}

    return {"sklearn_vb": ours}


@workload("dag-latent-class-vs-pgmpy", per="iteration")
def dag_latent_class(quick):
    rng = np.random.default_rng(0)
    n, k, d, r = (300 if quick else 2000), 3, 5, 3
    pi = rng.dirichlet(np.ones(k))
    emis = rng.dirichlet(np.ones(r), size=(d, k))
    z = rng.choice(k, size=n, p=pi)
    X = np.column_stack([[rng.choice(r, p=emis[j, zi]) for zi in z] for j in range(d)])
    names = [f"x{j}" for j in range(d)]
    n_iter = 10 if quick else 30

    def ours():
        from sklearn_vb import VBDiscreteDAG

        parents = {"h": [], **{c: ["h"] for c in names}}
        m = VBDiscreteDAG(parents, {"h": k, **{c: r for c in names}}, ["h"], method="ml",
                          max_iter=n_iter, tol=0.0, n_init=1, random_state=0, bound_check="off")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(X)
        return m.n_iter_

    def pgmpy_em():
        import pandas as pd
        from pgmpy.estimators import ExpectationMaximization
        from pgmpy.models import DiscreteBayesianNetwork

        model = DiscreteBayesianNetwork([("h", c) for c in names], latents={"h"})
        data = pd.DataFrame(X, columns=names)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # atol = 0 never declares convergence: exactly max_iter EM iterations
            ExpectationMaximization(model, data).get_parameters(
                latent_card={"h": k}, max_iter=n_iter, atol=0.0, seed=0, show_progress=False)
        return n_iter

    return {"sklearn_vb": ours, "pgmpy": pgmpy_em}
