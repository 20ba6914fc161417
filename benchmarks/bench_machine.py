"""How close the two hottest kernels run to what this machine sustains (``results/machine.*``).

Beating other libraries says nothing about how much speed is left.  Each workload
times one of our kernels and, in the same run on the same operation shapes,

* a **same-shape loop**: the kernel's dense arithmetic and nothing else (no emission
  lookups, scaling bookkeeping, penalties, log-determinants or output arrays), written
  as plain numba loops in this file — the speed of the recursion itself;
* **BLAS**: one matrix product with the same number of floating-point operations
  (single-threaded), i.e. the rate the machine sustains when the sequential dependence
  of the recursion is removed (many sequences batched into one product);
* **peak**: a 512 × 512 matrix product, the single-core ceiling.

All rows report a nominal rate, ``gflops`` = nominal operations ÷ time, so the ratios
column "ours / theirs" is the fraction of each reference's speed that we reach
(> 1: we are slower).  Nominal operations per time step, counting only the dense work:

* forward–backward with K states: ``6 K²`` (forward vector-matrix product, ``2 K²``;
  backward product fused with the expected transition counts, ``4 K²``);
* VB Kalman filter and RTS smoother with k states: ``15 k³`` (five symmetric positive
  definite inverses through Cholesky, ``k³`` each, and five k × k products, ``2 k³``
  each); the ``O(k p)`` output terms are left out, which flatters us a little at large p.

The **batched forward–backward** workloads (``machine-fb-batched-*``) run S sequences of
1000 frames at once (:mod:`sklearn_vb.hmm.forward_backward_batched`: each step of all
sequences one matrix product) on the same ``6 K²`` operations per frame, against the
per-sequence kernel on the same data and the peak; their ``peak_fraction`` is the
batched rate over the peak measured in the same run.  The emission table has 20 rows
shared by the frames (categorical emissions), or one row per frame (``frame-table``:
continuous emissions, whose rows the batched order reads far apart in memory).  The
``machine-hmm-fit-*`` workloads time a whole ``VBHiddenMarkov.fit`` (the default start,
then 30 VBEM iterations) on 256 sequences of 1000 frames with the batched pass and with
the per-sequence one (``allow_batched=False``).

Times are CPU seconds of the calling thread (every kernel and product here runs on one
thread, BLAS limited to one), so that the time other processes of a shared machine hold
the core does not count; the fits report the process's CPU seconds, their wall seconds
beside.
"""

from __future__ import annotations

import time
import warnings
from contextlib import nullcontext
from unittest import mock

import numpy as np
from numba import njit
from scipy.linalg import cython_blas

from .harness import workload

#: the BLAS that compiled code calls (numba's np.dot): loaded before the BLAS threads
#: are limited, so that the limit reaches it too
_NUMBA_BLAS = cython_blas

PEAK_N = 512


def _single_thread_blas():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the ratios are then against however many threads BLAS uses
        return None
    return threadpool_limits(limits=1)


def _best_of(func, repeats=3, clock=time.thread_time):
    """The least time by ``clock`` (CPU time of this thread unless told) over ``repeats``
    calls of ``func``."""
    best = np.inf
    for _ in range(repeats):
        start = clock()
        func()
        best = min(best, clock() - start)
    return best


def _rate(func, flops, clock=time.thread_time):
    """``{"n_iter": None, "elapsed_s": s, "gflops": ...}`` for one timed call of ``func``."""
    seconds = _best_of(func, clock=clock)
    return {"n_iter": None, "elapsed_s": seconds, "gflops": flops / seconds / 1e9}


def _blas_rate(flops, clock=time.thread_time):
    """A square product of about ``flops`` operations (at least 64 × 64)."""
    n = max(int(round((flops / 2.0) ** (1.0 / 3.0))), 64)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))
    limits = _single_thread_blas()
    try:
        seconds = _best_of(lambda: a @ b, clock=clock)
    finally:
        if limits is not None:
            limits.unregister()
    # report the rate on our operation count, so "ours / theirs" is a ratio of rates
    return {"n_iter": None, "elapsed_s": seconds * flops / (2.0 * n**3),
            "gflops": 2.0 * n**3 / seconds / 1e9, "matrix_size": n}


def _peak_rate(flops, clock=time.thread_time):
    result = _blas_rate(2.0 * PEAK_N**3, clock=clock)
    result["elapsed_s"] = flops / (result["gflops"] * 1e9)
    return result


# ---------------------------------------------------------------- forward-backward
@njit(cache=True)
def _fb_same_shape(A, E, index, alpha, counts):
    """Forward matrix-vector products, then backward ones fused with the counts."""
    T, K = alpha.shape
    v = np.full(K, 1.0 / K)
    w = np.empty(K)
    for t in range(T):
        total = 0.0
        for j in range(K):
            acc = 0.0
            for i in range(K):
                acc += v[i] * A[i, j]
            w[j] = acc * E[index[t], j]
            total += w[j]
        for j in range(K):
            v[j] = w[j] / total
            alpha[t, j] = v[j]
    b = np.ones(K)
    tmp = np.empty(K)
    for t in range(T - 1, 0, -1):
        total = 0.0
        for j in range(K):
            tmp[j] = E[index[t], j] * b[j]
        for i in range(K):
            acc = 0.0
            ai = alpha[t - 1, i]
            for j in range(K):
                x = A[i, j] * tmp[j]
                acc += x
                counts[i, j] += ai * x
            b[i] = acc
            total += acc
        for i in range(K):
            b[i] /= total


def _hmm_problem(K, M, T, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.ones(K), size=K)
    E = rng.dirichlet(np.ones(K), size=M)  # rows: symbols, as the kernel's table
    index = rng.integers(M, size=T).astype(np.int64)
    return A, E, index


def _hmm_candidates(K, quick):
    from sklearn_vb.hmm.forward_backward import forward_backward_scaled

    M, T = 20, (20_000 if quick else 1_000_000)
    A, E, index = _hmm_problem(K, M, T)
    flops = 6.0 * K * K * T
    starts, ends = np.array([0]), np.array([T])
    log_pi, log_A = np.full(K, -np.log(K)), np.log(A)
    shift = np.zeros(M)

    def ours():
        forward_backward_scaled(log_pi, log_A, E, shift, index[:50], starts, np.array([50]), True)
        return _rate(lambda: forward_backward_scaled(log_pi, log_A, E, shift, index, starts, ends,
                                                     True), flops)

    def same_shape():
        alpha, counts = np.empty((T, K)), np.zeros((K, K))
        _fb_same_shape(A, E, index[:50], alpha[:50], counts)
        return _rate(lambda: _fb_same_shape(A, E, index, alpha, counts), flops)

    return {"sklearn_vb forward_backward_scaled": ours, "same-shape numba loop": same_shape,
            "BLAS product of equal size": lambda: _blas_rate(flops),
            f"peak ({PEAK_N}x{PEAK_N} product)": lambda: _peak_rate(flops)}


@workload("machine-forward-backward-K10", per="call", repeats=1, warmup=False, stem="machine")
def fb_k10(quick):
    return _hmm_candidates(10, quick)


@workload("machine-forward-backward-K50", per="call", repeats=1, warmup=False, stem="machine")
def fb_k50(quick):
    return _hmm_candidates(50, quick)


# ---------------------------------------------------------------- batched forward-backward
def _sequences_problem(K, S, N, frame_table, seed=0):
    """Scaled arguments of ``forward_backward_scaled_levels_as`` (up to the counted
    ranges) for S sequences of N frames."""
    rng = np.random.default_rng(seed)
    T = S * N
    log_A = np.log(rng.dirichlet(np.ones(K), size=K))[None]
    rows = T if frame_table else 20
    emis = rng.dirichlet(np.ones(K), size=rows)
    index = np.arange(T) if frame_table else rng.integers(rows, size=T).astype(np.int64)
    starts = np.arange(S, dtype=np.int64) * N
    ends = starts + N
    return (np.full(K, -np.log(K)), log_A, np.zeros(T, dtype=np.int64), emis, np.zeros(rows),
            index, starts, ends, starts, ends)


def _batched_candidates(K, S, quick, frame_table=False):
    from sklearn_vb.hmm.forward_backward import forward_backward_scaled_levels_as

    N = 100 if quick else 1000
    args = _sequences_problem(K, S, N, frame_table)
    flops = 6.0 * K * K * S * N

    def kernel(batched):
        def rate():
            limits = _single_thread_blas()
            try:
                run = lambda: forward_backward_scaled_levels_as(*args, True, batched)  # noqa: E731
                run()  # compiled (or loaded) outside the timing
                return _rate(run, flops)
            finally:
                if limits is not None:
                    limits.unregister()
        return rate

    def summarize(measurements):
        ours, per_sequence, peak = (m.metrics.get("gflops") for m in measurements)
        if ours and peak:
            measurements[0].metrics["peak_fraction"] = ours / peak
        if ours and per_sequence:
            measurements[0].metrics["speedup"] = ours / per_sequence

    return {"sklearn_vb batched forward-backward": kernel(True),
            "per-sequence forward-backward": kernel(False),
            f"peak ({PEAK_N}x{PEAK_N} product)": lambda: _peak_rate(flops)}, summarize


def _register_batched(K, S, frame_table):
    name = f"machine-fb-batched-{'frame-table-' if frame_table else ''}K{K}-S{S}"
    workload(name, per="call", repeats=1, warmup=False, stem="machine")(
        lambda quick: _batched_candidates(K, S, quick, frame_table))


for _K in (20, 50, 100):
    for _S in (64, 256):
        _register_batched(_K, _S, False)
        if _K < 100:
            _register_batched(_K, _S, True)


def _speedup_point(batched, single, clock=time.thread_time):
    """CPU time of ``batched()`` (best of five, one BLAS thread, both compiled first) and
    ``speedup``, the time of ``single()`` over it: one point of a crossover workload."""
    limits = _single_thread_blas()
    try:
        batched()
        single()
        t_batched = _best_of(batched, repeats=5, clock=clock)
        t_single = _best_of(single, repeats=5, clock=clock)
    finally:
        if limits is not None:
            limits.unregister()
    return {"n_iter": None, "elapsed_s": t_batched, "speedup": t_single / t_batched}


@workload("machine-fb-batch-crossover", per="call", repeats=1, warmup=False,
          stem="machine", compare=False)
def fb_batch_crossover(quick):
    """Where the batched forward-backward starts to pay: per table kind, K and S, the CPU
    time of the batched pass and ``speedup``, the per-sequence pass's time over it, on S
    sequences of 200 frames (the thresholds of ``sklearn_vb.hmm.forward_backward_batched``)."""
    from sklearn_vb.hmm.forward_backward import forward_backward_scaled_levels_as

    N = 50 if quick else 200

    def point(K, S, frame_table):
        args = _sequences_problem(K, S, N, frame_table)
        return _speedup_point(lambda: forward_backward_scaled_levels_as(*args, True, True),
                              lambda: forward_backward_scaled_levels_as(*args, True, False))

    return {f"{'frame table' if f else 'categorical'} K={K} S={S}":
            (lambda K=K, S=S, f=f: point(K, S, f))
            for f in (False, True) for K in (4, 6, 8, 10, 12, 16) for S in (16, 64, 256)}


def _hmm_fit_candidates(emission, quick):
    from sklearn_vb import VBHiddenMarkov
    from sklearn_vb.datasets import make_hmm_sequences
    from sklearn_vb.hmm import _inputs, _vbem

    K, S, N = 20, (32 if quick else 256), (100 if quick else 1000)
    rng = np.random.default_rng(0)
    transmat = 0.8 * np.eye(K) + 0.2 * rng.dirichlet(np.ones(K), size=K)
    if emission == "categorical":
        params = rng.dirichlet(0.3 * np.ones(30), size=K)
        options = dict(n_symbols=30)
    else:
        params = (3.0 * rng.normal(size=(K, 3)), np.tile(np.eye(3), (K, 1, 1)))
        options = dict(emission="gaussian", covariance_type="diag")
    X, _, lengths = make_hmm_sequences(np.ones(K) / K, transmat, params, np.full(S, N),
                                       random_state=0)

    def per_sequence(*args):
        return _inputs.forward_backward_inputs(*args, allow_batched=False)

    def fit(batched, X, lengths, max_iter):
        est = VBHiddenMarkov(n_components=K, max_iter=max_iter, tol=0.0, random_state=0,
                             **options)
        unbatched = mock.patch.object(_vbem, "forward_backward_inputs", per_sequence)
        with nullcontext() if batched else unbatched, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tol=0: never converged, by design
            est.fit(X, lengths=lengths)
        return est

    def timed(batched):
        def run():
            wall, cpu = time.perf_counter(), time.process_time()
            est = fit(batched, X, lengths, 3 if quick else 30)
            return {"n_iter": est.n_iter_, "elapsed_s": time.process_time() - cpu,
                    "wall_s": time.perf_counter() - wall, "lower_bound": est.lower_bound_}
        return run

    for batched in (True, False):  # compiled (or loaded) before the timing
        fit(batched, X[:16 * 50], np.full(16, 50), 2)
    return {"VBHiddenMarkov.fit, batched forward-backward": timed(True),
            "VBHiddenMarkov.fit, per-sequence forward-backward": timed(False)}


@workload("machine-hmm-fit-K20-categorical", per="call", repeats=1, warmup=False,
          stem="machine")
def fit_categorical(quick):
    return _hmm_fit_candidates("categorical", quick)


@workload("machine-hmm-fit-K20-gaussian", per="call", repeats=1, warmup=False,
          stem="machine")
def fit_gaussian(quick):
    return _hmm_fit_candidates("gaussian", quick)


# ---------------------------------------------------------------- Kalman smoother
@njit(cache=True)
def _spd_inverse_plain(M, out, L):
    k = M.shape[0]
    for j in range(k):
        s = M[j, j]
        for m in range(j):
            s -= L[j, m] * L[j, m]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, k):
            s = M[i, j]
            for m in range(j):
                s -= L[i, m] * L[j, m]
            L[i, j] = s / L[j, j]
        for i in range(j):
            L[i, j] = 0.0
    # out = L^{-T} L^{-1} through the inverse of L (stored in out's lower triangle)
    for j in range(k):
        out[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, k):
            s = 0.0
            for m in range(j, i):
                s -= L[i, m] * out[m, j]
            out[i, j] = s / L[i, i]
    for i in range(k):
        for j in range(i + 1):
            s = 0.0
            for m in range(i, k):
                s += out[m, i] * out[m, j]
            L[i, j] = s
    for i in range(k):
        for j in range(i + 1):
            out[i, j] = L[i, j]
            out[j, i] = L[i, j]


@njit(cache=True)
def _mm_plain(X, Y, out):
    n, m = X.shape
    q = Y.shape[1]
    for i in range(n):
        for j in range(q):
            s = 0.0
            for r in range(m):
                s += X[i, r] * Y[r, j]
            out[i, j] = s


@njit(cache=True)
def _kalman_same_shape(A, Q, T):
    """Per step five SPD inverses, each feeding the next, and five products of the
    orthogonal ``Q`` (so nothing decays towards denormals)."""
    k = A.shape[0]
    P = np.eye(k)
    W = np.eye(k)
    W2 = np.empty((k, k))
    L = np.empty((k, k))
    inv = np.empty((k, k))
    for _ in range(T):
        for _ in range(5):
            _spd_inverse_plain(P, inv, L)
            for a in range(k):
                for b in range(k):
                    P[a, b] = inv[a, b]
                P[a, a] += 1.0
        for _ in range(5):
            _mm_plain(Q, W, W2)
            W, W2 = W2, W
    return P[0, 0] + W[0, 0]


def _kalman_candidates(k, p, quick):
    from sklearn_vb.lds.kalman import vb_kalman_smoother

    T = 5_000 if quick else 200_000
    flops = 15.0 * k**3 * T
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(k, k)))
    A = 0.9 * q
    C = rng.normal(size=(p, k))

    def args(n):
        return (rng.normal(size=(n, p)), np.zeros((n, k)), np.zeros((n, k)), np.zeros(n),
                np.zeros((n, k)), np.zeros(n), np.ones(n, dtype=np.bool_),
                np.zeros((0, p), dtype=np.bool_), np.array([0]), np.array([n]), A, C,
                np.ones(p), 0.01 * np.eye(k), 0.01 * np.eye(k), np.zeros((0, k, k)), 0.0,
                np.zeros(0), np.zeros(k), np.eye(k), True)

    def ours():
        vb_kalman_smoother(*args(50))
        full = args(T)
        return _rate(lambda: vb_kalman_smoother(*full), flops)

    def same_shape():
        _kalman_same_shape(A, q, 5)
        return _rate(lambda: _kalman_same_shape(A, q, T), flops)

    return {"sklearn_vb vb_kalman_smoother": ours, "same-shape numba loop": same_shape,
            "BLAS product of equal size": lambda: _blas_rate(flops),
            f"peak ({PEAK_N}x{PEAK_N} product)": lambda: _peak_rate(flops)}


@workload("machine-kalman-smoother-k4", per="call", repeats=1, warmup=False, stem="machine")
def kalman_k4(quick):
    return _kalman_candidates(4, 10, quick)


@workload("machine-kalman-smoother-k16", per="call", repeats=1, warmup=False, stem="machine")
def kalman_k16(quick):
    return _kalman_candidates(16, 32, quick)


# ---------------------------------------------------------------- batched Kalman smoother
# Many equal-length sequences share one covariance recursion (sklearn_vb.lds.kalman_batch):
# the nominal count stays 15 k^3 per step and sequence, so the rows compare with the
# per-sequence ones above; ``actual_gflops`` counts the operations the batched path does
# (the covariance recursion once per step, 15 k^3, and per step and sequence the mean
# maps: ten k x k products, 20 k^2, and two with C, 4 p k).  Times are CPU seconds of
# one BLAS thread (steadier than wall time on a shared machine).
BATCH_T = 150


def _cpu_rate(func, flops):
    return _rate(func, flops, clock=time.process_time)


def _lds_batch_problem(k, p, S, T, seed=0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(k, k)))
    N = S * T
    ends = np.arange(1, S + 1, dtype=np.int64) * T
    return (rng.normal(size=(N, p)), 0.1 * rng.normal(size=(N, k)), np.zeros((N, k)),
            np.zeros(N), np.zeros((N, k)), np.zeros(N), np.ones(N, dtype=np.bool_),
            np.zeros((0, p), dtype=np.bool_), ends - T, ends, 0.9 * q,
            rng.normal(size=(p, k)), np.ones(p), 0.01 * np.eye(k), 0.01 * np.eye(k),
            np.zeros((0, k, k)), 0.0, np.zeros(0), np.zeros(k), np.eye(k), True)


def _batch_candidates(k, S, quick):
    from sklearn_vb.lds import kalman_batch as kb
    from sklearn_vb.lds.kalman import vb_kalman_smoother

    p = 2 * k
    T = 30 if quick else BATCH_T
    if quick:
        S = min(S, 16)
    args = _lds_batch_problem(k, p, S, T)
    nominal = 15.0 * k**3 * T * S
    actual = 15.0 * k**3 * T + (20.0 * k * k + 4.0 * p * k) * T * S
    groups = kb.batch_groups(args[6], args[7], args[8], args[9], k, min_sequences=S)
    y_res, bu, h_ab, c_ab, h_cd, c_cd = args[:6]
    A, C, rho, S_A, S_C, gap, mu0, Sigma0 = (args[10], args[11], args[12], args[13],
                                             args[14], args[16], args[18], args[19])
    starts = args[8]
    N = S * T

    def batched(shared):
        kb.vb_kalman_smoother_grouped(*args, groups=groups, shared=shared)  # compiles
        result = _cpu_rate(lambda: kb.vb_kalman_smoother_grouped(
            *args, groups=groups, shared=shared), nominal)
        result["actual_gflops"] = actual / result["elapsed_s"] / 1e9
        return result

    def compute_only():
        outs = (np.empty(N), np.empty((N, k)), np.empty((N, k)), np.empty((N, k)),
                np.empty((S, k)))

        def run():
            cov = kb.covariance_pass(T, A, C, rho, S_A, S_C, Sigma0, True)
            kb.batched_means(starts, y_res, bu, h_ab, c_ab, h_cd, c_cd, A, C, rho, S_A,
                             S_C, gap, mu0, *cov[:6], *cov[10:14], True, *outs)
        run()
        result = _cpu_rate(run, nominal)
        result["actual_gflops"] = actual / result["elapsed_s"] / 1e9
        return result

    def per_sequence():
        vb_kalman_smoother(*_lds_batch_problem(k, p, 2, T))  # compiles
        return _cpu_rate(lambda: vb_kalman_smoother(*args), nominal)

    def summarize(measurements):
        peak = measurements[-1].metrics["gflops"]
        for m in measurements[:-1]:
            if m.status == "ok":
                m.metrics["peak_fraction"] = m.metrics["gflops"] / peak
                if "actual_gflops" in m.metrics:
                    m.metrics["actual_peak_fraction"] = m.metrics["actual_gflops"] / peak

    return ({"sklearn_vb batched smoother, covariance tables (VB E step)":
             lambda: batched(True),
             "batched smoother, covariances copied to every row": lambda: batched(False),
             "batched means and shared covariances only": compute_only,
             "per-sequence kernel (vb_kalman_smoother)": per_sequence,
             "BLAS product of equal size": lambda: _blas_rate(nominal, clock=time.process_time),
             f"peak ({PEAK_N}x{PEAK_N} product)": lambda: _peak_rate(
                 nominal, clock=time.process_time)}, summarize)


def _register_batch(k, S):
    @workload(f"machine-kalman-batch-k{k}-S{S}", per="call", repeats=1, warmup=False,
              stem="machine")
    def run(quick):
        return _batch_candidates(k, S, quick)
    return run


for _k in (8, 16, 32):
    for _S in (64, 256):
        _register_batch(_k, _S)


def _lds_fit_candidates(k, S, quick):
    """A whole VB fit (fixed iterations) with the batched smoother and without it."""
    import warnings

    from sklearn_vb import VBLinearDynamicalSystem
    from sklearn_vb.datasets import make_lds, make_lds_params
    from sklearn_vb.lds import kalman_batch as kb

    T, n_iter = (30, 3) if quick else (100, 10)
    if quick:
        S = min(S, 16)
    params = make_lds_params(n_states=k, n_outputs=2 * k, random_state=0)
    lengths = np.full(S, T)
    X, _ = make_lds(params, lengths, random_state=0)

    def fit(batched):
        saved = kb.BATCH_MIN_SEQUENCES
        kb.BATCH_MIN_SEQUENCES = saved if batched else 10**9
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = VBLinearDynamicalSystem(n_states=k, max_iter=n_iter, tol=0.0,
                                                random_state=0)
                limits = _single_thread_blas()
                try:
                    start = time.process_time()
                    model.fit(X, lengths=lengths)
                    seconds = time.process_time() - start
                finally:
                    if limits is not None:
                        limits.unregister()
        finally:
            kb.BATCH_MIN_SEQUENCES = saved
        return {"n_iter": model.n_iter_, "elapsed_s": seconds,
                "lower_bound": float(model.lower_bound_)}

    def summarize(measurements):
        ours, theirs = measurements
        if ours.status == "ok" and theirs.status == "ok":
            ours.metrics["bound_rel_diff"] = abs(
                ours.metrics["lower_bound"] - theirs.metrics["lower_bound"]) / abs(
                theirs.metrics["lower_bound"])

    return ({"VB fit, batched smoother": lambda: fit(True),
             "VB fit, per-sequence smoother": lambda: fit(False)}, summarize)


def _register_fit(k, S):
    @workload(f"machine-kalman-batch-fit-k{k}-S{S}", per="call", repeats=1, warmup=True,
              stem="machine")
    def run(quick):
        return _lds_fit_candidates(k, S, quick)
    return run


for _k, _S in ((8, 64), (8, 256), (16, 64), (16, 256), (32, 64)):
    _register_fit(_k, _S)


@workload("machine-kalman-batch-crossover", per="call", repeats=1, warmup=False,
          stem="machine", compare=False)
def kalman_batch_crossover(quick):
    """Where the batched smoother starts to pay: per (k, S), the CPU time of the batched
    path (covariance tables) and ``speedup``, the per-sequence kernel's time over it, on
    S sequences of length 150 (the thresholds of ``sklearn_vb.lds.kalman_batch``)."""
    from sklearn_vb.lds import kalman_batch as kb
    from sklearn_vb.lds.kalman import vb_kalman_smoother

    T = 30 if quick else BATCH_T

    def point(k, S):
        args = _lds_batch_problem(k, 2 * k, S, T)
        groups = [np.arange(S)]
        return _speedup_point(
            lambda: kb.vb_kalman_smoother_grouped(*args, groups=groups, shared=True),
            lambda: vb_kalman_smoother(*args), clock=time.process_time)

    return {f"k={k} S={S}": (lambda k=k, S=S: point(k, S))
            for k in (4, 8, 16) for S in (1, 2, 4, 8, 16)}
