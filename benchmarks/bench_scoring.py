"""Evidence scorers on Beal's DAG class (thesis Chapter 6).

* ``scoring-dag-ais``: for a few structures of the class (the true one, the fully
  connected one and a sparse one) on data generated from the true model, the VB bound,
  BIC, CS and theta-only AIS (Dirichlet MH kernels with the n beta strength scaling,
  sigmoid schedule, chains in parallel through joblib).  Reports the scores, the AIS
  standard error and acceptance, and whether AIS falls below VB (schedule too short).
  The thesis used 16384 temperatures and 5 pooled runs; the default here is shorter.
"""

import time
import warnings

import numpy as np

from .harness import workload

# (code, label): true structure, everything connected, only one edge per observed node
_STRUCTURES = [((1, 3, 3, 2), "true"), ((3, 3, 3, 3), "full"), ((1, 1, 2, 2), "sparse")]


@workload("scoring-dag-ais", per="call")
def scoring_dag_ais(quick):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import bipartite_structure, make_beal_dag_datasets
    from sklearn_vb.scoring import score

    n = 80 if quick else 480
    K = 200 if quick else 4000
    C = 4 if quick else 16
    X = make_beal_dag_datasets(random_state=0)[n]

    def ours():
        metrics = {"n": n, "n_temperatures": K, "n_chains": C}
        t_ais = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for code, label in _STRUCTURES:
                est = VBDiscreteDAG(*bipartite_structure(code), n_init=3, max_iter=1000,
                                    tol=1e-6 * n, random_state=0).fit(X)
                vb = score(est, X, "vb").log_evidence
                bic = score(est, X, "bic", random_state=0).log_evidence
                cs = score(est, X, "cs", random_state=0).log_evidence
                t = time.perf_counter()
                ais = score(est, X, "ais", n_temperatures=K, n_chains=C, n_jobs=2, random_state=0)
                t_ais += time.perf_counter() - t
                metrics[label] = {
                    "vb": round(vb, 3), "bic": round(bic, 3), "cs": round(cs, 3),
                    "ais": round(ais.log_evidence, 3), "ais_stderr": round(ais.stderr, 3),
                    "ais_below_vb": bool(ais.diagnostics.get("vb_violation")),
                    "acceptance_by_quarter": [round(a, 3) for a in
                                              ais.diagnostics["acceptance_by_quarter"]],
                }
        metrics["ais_seconds_total"] = round(t_ais, 2)
        return {"n_iter": None, **metrics}

    return {"sklearn_vb": ours}
