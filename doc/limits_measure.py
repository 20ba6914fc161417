"""Measure the sizes quoted in ``limits.rst``: time per VBEM iteration and peak memory of
long sequences.  Run from the repository root (a few minutes on one core)::

    NUMBA_NUM_THREADS=1 python doc/limits_measure.py [hmm-1e5 hmm-1e6 lds-1e5 ...]

Each case runs in a fresh process after a compiling fit on small data; it reports the
CPU time (robust to a loaded machine) and wall time per iteration and the peak resident memory above the starting
one (``ru_maxrss`` of the child), and whether the bound is finite.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import sys
import time
import warnings

import numpy as np


def _hmm(T, K=20, M=30):
    from sklearn_vb import VBHiddenMarkov

    rng = np.random.default_rng(0)
    X = rng.integers(0, M, size=(T, 1))
    small = X[:2000]
    make = lambda it: VBHiddenMarkov(K, n_symbols=M, max_iter=it, tol=0.0, random_state=0)  # noqa: E731
    return make, X, small, {}


def _lds(T, p=10, k=4):
    from sklearn_vb import VBLinearDynamicalSystem

    rng = np.random.default_rng(0)
    X = np.cumsum(rng.normal(size=(T, p)), axis=0) * 0.01 + rng.normal(size=(T, p))
    make = lambda it: VBLinearDynamicalSystem(n_states=k, max_iter=it, tol=0.0, random_state=0,  # noqa: E731
                                              ard_check=False)
    return make, X, X[:500], {}


CASES = {
    "hmm-1e5": (_hmm, 10**5, 3),
    "hmm-1e6": (_hmm, 10**6, 2),
    "lds-1e4": (_lds, 10**4, 3),
    "lds-1e5": (_lds, 10**5, 2),
}


def _run(name, queue):
    builder, T, iters = CASES[name]
    make, X, small, kw = builder(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(2).fit(small, **kw)  # compile and load the kernels
        start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0, c0 = time.perf_counter(), time.process_time()
        est = make(iters).fit(X, **kw)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put({
        "case": name, "T": T, "iterations": int(est.n_iter_),
        "cpu_seconds_per_iteration": cpu / max(1, int(est.n_iter_)),
        "wall_seconds_per_iteration": elapsed / max(1, int(est.n_iter_)),
        "peak_rss_mb": peak / 1024, "extra_rss_mb": (peak - start_rss) / 1024,
        "data_mb": X.nbytes / 2**20, "bound_finite": bool(np.isfinite(est.lower_bound_)),
    })


def main(names):
    ctx = mp.get_context("fork")
    for name in names or list(CASES):
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(name, queue))
        proc.start()
        proc.join()
        print(json.dumps(queue.get() if not queue.empty() else {"case": name, "failed": proc.exitcode}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
