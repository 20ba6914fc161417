"""Long sequences: the sizes quoted on the documentation's limits page (``results/limits.*``).

Each row fits one long sequence for a few VBEM iterations (``tol=0``) in a forked child
(:mod:`benchmarks.capped_call`) that first builds the data and compiles the kernels on a
short piece of it, so the row reports the fit alone: wall and CPU seconds per iteration
(CPU time is robust to a loaded machine), the peak resident memory above the child's
size before the fit (``extra_peak_mb``), that memory per T·K (HMM) or T·k² (LDS) unit
(``bytes_per_unit``: equal rows show O(T·K) memory), and whether every bound of the
trace is finite (a row with a non-finite bound is an error).  The harness's time column
is wall seconds per iteration.

* ``limits-hmm``: categorical HMM, K = 20 states, 30 symbols, T = 10^5 and 10^6 frames;
* ``limits-lds``: LDS with k = 4 states and p = 10 outputs, T = 10^4 and 10^5 steps.

Quick mode uses T = 10^3 and 10^4 (HMM) and 10^3 and 3·10^3 (LDS).  A full run takes
about two minutes on one core; ``doc/limits.rst`` quotes its results.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .capped_call import run_capped
from .harness import OverCap, workload

TIME_CAP_S = {False: 900.0, True: 60.0}
MEMORY_CAP_MB = 12000.0


def hmm_case(T, K=20, M=30):
    """(estimator factory ``make(n_iter)``, X, fit parameters, memory unit T·K)."""
    from sklearn_vb import VBHiddenMarkov

    X = np.random.default_rng(0).integers(0, M, size=(T, 1))
    # one start per fit (the default runs two), so that the time is that of n iterations
    return (lambda n: VBHiddenMarkov(K, n_symbols=M, max_iter=n, tol=0.0,
                                     init_params="random_marginals", random_state=0),
            X, {}, T * K)


def lds_case(T, k=4, p=10):
    """(estimator factory, X, fit parameters, memory unit T·k²): a slow random walk
    under unit noise."""
    from sklearn_vb import VBLinearDynamicalSystem

    rng = np.random.default_rng(0)
    X = np.cumsum(rng.normal(size=(T, p)), axis=0) * 0.01 + rng.normal(size=(T, p))
    return (lambda n: VBLinearDynamicalSystem(n_states=k, max_iter=n, tol=0.0, ard_check=False,
                                              random_state=0),
            X, {}, T * k * k)


def measure(case, T, iterations, quick=False):
    """One row: the fit of ``case(T)`` for ``iterations`` iterations in a capped child."""
    state = {}

    def warm():
        make, X, fit_params, units = case(T)
        state.update(make=make, X=X, fit_params=fit_params, units=units)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make(2).fit(X[: min(T, 2000)], **fit_params)  # compile and load the kernels

    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu = time.process_time()
            est = state["make"](iterations).fit(state["X"], **state["fit_params"])
            cpu = time.process_time() - cpu
        bounds = np.asarray(est.lower_bounds_, dtype=float)
        return {"n_iter": int(est.n_iter_), "cpu_s": cpu, "units": state["units"],
                "data_mb": state["X"].nbytes / 2**20,
                "bound_finite": bool(np.all(np.isfinite(bounds))),
                "lower_bound": float(est.lower_bound_)}

    outcome = run_capped(call, TIME_CAP_S[quick], warm=warm, memory_cap_mb=MEMORY_CAP_MB)
    metrics = {"x": T, "peak_rss_mb": outcome.peak_rss_mb}
    if not outcome.seconds:
        if outcome.status == "error":
            raise RuntimeError(outcome.message)
        raise OverCap(TIME_CAP_S[quick], {**metrics, "cap": outcome.status})
    value = outcome.values[0]
    if not value["bound_finite"]:
        raise RuntimeError(f"a bound of the T = {T} fit is not finite")
    n_iter = max(1, value["n_iter"])
    metrics.update(iterations=value["n_iter"], cpu_s_per_iteration=value["cpu_s"] / n_iter,
                   data_mb=value["data_mb"], bound_finite=True,
                   lower_bound_per_step=value["lower_bound"] / T)
    if outcome.peak_rss_mb is not None and outcome.start_rss_mb is not None:
        extra = max(outcome.peak_rss_mb - outcome.start_rss_mb, 0.0)
        metrics["extra_peak_mb"] = extra
        metrics["bytes_per_unit"] = extra * 2**20 / value["units"]
    return {**metrics, "n_iter": None, "elapsed_s": outcome.seconds[0] / n_iter}


def _rows(case, sizes, iterations, quick):
    return {f"T={T}": (lambda T=T: measure(case, T, iterations, quick)) for T in sizes}


@workload("limits-hmm", per="call", repeats=1, warmup=False, stem="limits", compare=False)
def limits_hmm(quick):
    return _rows(hmm_case, [1_000, 10_000] if quick else [100_000, 1_000_000], 2, quick)


@workload("limits-lds", per="call", repeats=1, warmup=False, stem="limits", compare=False)
def limits_lds(quick):
    return _rows(lds_case, [1_000, 3_000] if quick else [10_000, 100_000], 2, quick)
