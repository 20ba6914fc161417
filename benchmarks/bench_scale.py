"""One very long sequence: online VB over subchains against batch VBEM (``results/scale.*``).

* ``scale-hmm-long-sequence``: a Gaussian HMM (K = 8 well separated states in two
  dimensions, sticky transitions) generates one training sequence of T = 10^7 frames
  and a held-out sequence of 10^6; ``VBHiddenMarkov`` is fitted once by subchain SVI
  (``learning_method="online"``, ``subchain_length=100``, ``batch_size=20``, automatic
  buffer, two epochs) and once by batch VBEM (to ``tol`` or 100 iterations), both from
  the same k-means start.  Reported: wall time of the fit, held-out log-likelihood per
  frame, iterations (epochs for SVI), for SVI the steps taken and the buffer settled
  on, the CPU time of the fit (``cpu_s``, which a loaded machine slows less than the
  wall time) and the peak resident memory of the process during the fit (``peak_rss_mb``;
  ``start_rss_mb`` before it, the training and held-out frames included).  Quick mode:
  T = 20 000, K = 3, held-out 5 000.

Each fit runs once (``repeats=1``); a tiny fit of both kinds compiles the kernels
first, so the times exclude numba compilation.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .harness import workload


def _problem(K, T, T_test, seed=0):
    from sklearn_vb.datasets import make_hmm_sequences

    angles = 2 * np.pi * np.arange(K) / K
    means = 6.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    covars = np.tile(np.eye(2), (K, 1, 1))
    transmat = np.where(np.eye(K, dtype=bool), 0.95, 0.05 / (K - 1))
    startprob = np.full(K, 1.0 / K)
    X, _, _ = make_hmm_sequences(startprob, transmat, (means, covars), [T],
                                 random_state=seed)
    X_test, _, _ = make_hmm_sequences(startprob, transmat, (means, covars), [T_test],
                                      random_state=seed + 1)
    return X, X_test


#: T and the held-out T of a full run
LONG_SEQUENCE_FULL = (10_000_000, 1_000_000)


def _fit(model, X, X_test):
    import os

    from .capped_call import _mb, _reset_peak_memory, _status_kb

    _reset_peak_memory()
    start_kb = _status_kb(os.getpid(), "VmRSS")
    cpu = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an SVI run of a fixed number of epochs
        model.fit(X)
    cpu = time.process_time() - cpu
    peak_kb = _status_kb(os.getpid(), "VmHWM")
    metrics = {"n_iter": int(model.n_iter_), "cpu_s": cpu,
               "heldout_loglik_per_frame": float(model.score(X_test)),
               "peak_rss_mb": _mb(peak_kb), "start_rss_mb": _mb(start_kb)}
    if model.learning_method == "online":
        metrics.update(steps=int(model.n_batch_iter_ - 1), buffer=int(model.buffer_length_))
    return metrics


@workload("scale-hmm-long-sequence", per="call", repeats=1, warmup=False, stem="scale")
def long_sequence(quick):
    from sklearn_vb import VBHiddenMarkov

    K, T, T_test = (3, 20_000, 5_000) if quick else (8, *LONG_SEQUENCE_FULL)
    X, X_test = _problem(K, T, T_test)
    common = dict(n_components=K, emission="gaussian", init_params="kmeans", random_state=0)
    svi = dict(learning_method="online", subchain_length=100, batch_size=20, max_iter=2)
    batch = dict(max_iter=100)
    small, small_test = _problem(K, 2_000, 500, seed=1)
    for kw in (svi, batch):  # compile the kernels outside the timed calls
        _fit(VBHiddenMarkov(**common, **kw), small, small_test)
    sizes = {"T": T, "T_test": T_test, "n_components": K}
    return {
        "sklearn_vb subchain SVI": lambda: sizes | _fit(VBHiddenMarkov(**common, **svi), X, X_test),
        "sklearn_vb batch VBEM": lambda: sizes | _fit(VBHiddenMarkov(**common, **batch), X,
                                                      X_test),
    }


# ---------------------------------------------------------------------------
# many sequences: batch VBEM, online VB from a memmap, hmmlearn EM
# ---------------------------------------------------------------------------

#: the sizes of a full run: 10^5 sequences of 100 symbols.  Batch VBEM and hmmlearn's EM
#: are capped at a number of iterations (an iteration over 10^7 symbols takes tens of
#: seconds), online VB at a number of epochs; ``cap_s`` bounds each fit's wall time
CATEGORICAL_FULL = dict(n_sequences=100_000, length=100, n_test=1_000, K=20,
                        batch_max_iter=80, online_epochs=5, batch_size=100,
                        hmmlearn_max_iter=10, cap_s=14_400.0)
CATEGORICAL_QUICK = dict(n_sequences=100, length=100, n_test=20, K=20, batch_max_iter=8,
                         online_epochs=2, batch_size=25, hmmlearn_max_iter=5, cap_s=300.0)


#: a faster step schedule than the defaults (tau0 = 10, kappa = 0.7): the steps stay
#: long enough for the states to leave the symmetric start within a few epochs
FAST_STEPS = dict(learning_offset=1.0, learning_decay=0.5)


def _capped_metrics(call, cap_s):
    """``call()`` in a forked child: its metrics with the child's peak resident memory."""
    from .capped_call import run_capped
    from .harness import OverCap

    outcome = run_capped(call, cap_s, memory_cap_mb=8_000.0)
    memory = {"peak_rss_mb": outcome.peak_rss_mb, "start_rss_mb": outcome.start_rss_mb}
    if outcome.status == "over time cap":
        raise OverCap(cap_s, memory)
    if outcome.status != "ok":
        raise RuntimeError(f"{outcome.status}: {outcome.message}")
    metrics = dict(outcome.values[0])
    metrics["elapsed_s"] = metrics.pop("fit_s")  # the fit alone, not the held-out passes
    return {**metrics, **memory}


@workload("scale-hmm-categorical", per="call", repeats=1, warmup=False, stem="scale")
def categorical_many_sequences(quick):
    import tempfile

    from . import scale_categorical as sc

    size = CATEGORICAL_QUICK if quick else CATEGORICAL_FULL
    directory = tempfile.mkdtemp(prefix="bench_scale_")
    path, X_test = sc.make_data(directory, size["n_sequences"], size["length"],
                                size["n_test"])
    L, K = size["length"], size["K"]
    sizes = {"n_symbols": size["n_sequences"] * L, "n_sequences": size["n_sequences"],
             "length": L, "n_components": K, "file_mb": path.stat().st_size / 2**20,
             "heldout_symbols": int(X_test.size)}
    small_path, small_test = sc.make_data(tempfile.mkdtemp(prefix="bench_scale_"), 40, L, 5)
    # compile the kernels outside the timed calls; one OpenMP thread, because the fits
    # run in forked children and a child of a process whose OpenMP threads have run
    # (scikit-learn's pairwise_distances_argmin in the context start) hangs in its
    # first OpenMP call
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        sc.batch_vbem(small_path, small_test, L, K, 3, 1e-4)
        sc.online_vb(small_path, small_test, L, K, 1, 20, chunk_sequences=20)
        sc.online_fit(small_path, small_test, L, K, 1, 20)
    chunk = min(sc.CHUNK_SEQUENCES, size["n_sequences"])
    candidates = {
        "sklearn_vb batch VBEM": lambda: {**sizes, **_capped_metrics(
            lambda: sc.batch_vbem(path, X_test, L, K, size["batch_max_iter"], 1e-4),
            size["cap_s"])},
        "sklearn_vb online VB (partial_fit from memmap)": lambda: {
            **sizes, "batch_size": size["batch_size"], "chunk_sequences": chunk,
            **_capped_metrics(lambda: sc.online_vb(path, X_test, L, K, size["online_epochs"],
                                                   size["batch_size"], chunk),
                              size["cap_s"])},
        "sklearn_vb online VB, learning_offset=1, learning_decay=0.5": lambda: {
            **sizes, "batch_size": size["batch_size"], "chunk_sequences": chunk,
            **_capped_metrics(lambda: sc.online_vb(path, X_test, L, K, size["online_epochs"],
                                                   size["batch_size"], chunk,
                                                   **FAST_STEPS), size["cap_s"])},
        "sklearn_vb online VB (fit, learning_method='online')": lambda: {
            **sizes, "batch_size": size["batch_size"], **_capped_metrics(
                lambda: sc.online_fit(path, X_test, L, K, size["online_epochs"],
                                      size["batch_size"]), size["cap_s"])},
        "hmmlearn CategoricalHMM EM": lambda: {**sizes, **_capped_metrics(
            lambda: sc.hmmlearn_em(path, X_test, L, K, size["hmmlearn_max_iter"],
                                   0.8 * size["cap_s"]), size["cap_s"])},
    }

    def summarize(measurements):
        batch = measurements[0]
        if batch.status != "ok":
            return
        target = batch.metrics["heldout_loglik_per_symbol"]
        batch.metrics["heldout_true_model"] = sc.held_out(*sc.known_hmm(), X_test, L)
        # when batch VBEM itself first came within 0.5 % of its final value
        batch.metrics["time_within_0.5pct_of_final_s"] = sc.within(batch.trace, target, 0.005)
        batch.metrics["cpu_within_0.5pct_of_final_s"] = sc.within(batch.trace, target, 0.005,
                                                                  "cpu_seconds")
        for online in measurements[1:4]:
            if online.status != "ok":
                continue
            reached = sc.within(online.trace, target, 0.005)
            reached_cpu = sc.within(online.trace, target, 0.005, "cpu_seconds")
            online.metrics["time_within_0.5pct_of_batch_s"] = reached
            online.metrics["cpu_within_0.5pct_of_batch_s"] = reached_cpu
            if reached is not None:
                online.ratios["time to within 0.5 % / batch time"] = reached / batch.median_s
                online.ratios["CPU time to within 0.5 % / batch CPU time"] = (
                    reached_cpu / batch.metrics["cpu_s"])
            online.ratios["time / batch time"] = online.median_s / batch.median_s
            online.ratios["peak rss / batch peak rss"] = (online.metrics["peak_rss_mb"]
                                                          / batch.metrics["peak_rss_mb"])
        for m in measurements[1:]:
            if m.status == "ok":
                m.metrics["heldout_rel_gap_to_batch"] = (
                    (target - m.metrics["heldout_loglik_per_symbol"]) / abs(target))

    return candidates, summarize


# ---------------------------------------------------------------------------
# data larger than the memory the process may use
# ---------------------------------------------------------------------------

#: (symbols, sequence length, address space the child may add after its warm-up, MB)
MEMORY_LIMIT_FULL = (20_000_000, 1000, 150)
MEMORY_LIMIT_QUICK = (1_000_000, 1000, 150)

_MEMORY_LIMIT_CHILD = """
import json, resource, sys, time
import numpy as np
from sklearn_vb import VBHiddenMarkov
from sklearn_vb._core.memory import _proc_kb

path, T, L, K, budget_mb, chunk_sequences = sys.argv[1], *map(int, sys.argv[2:])
small = np.random.RandomState(1).randint(4, size=(400, 1))
VBHiddenMarkov(n_components=K, max_iter=2).fit(small, lengths=[200, 200])  # compiled
VBHiddenMarkov(n_components=K).partial_fit(small, lengths=[200, 200])
used = _proc_kb("/proc/self/status", "VmSize")
resource.setrlimit(resource.RLIMIT_AS, (used + budget_mb * 2**20, resource.RLIM_INFINITY))
out = {"vmsize_before_limit_mb": used / 2**20, "limit_above_it_mb": budget_mb,
       "rss_before_limit_mb": _proc_kb("/proc/self/status", "VmRSS") / 2**20}
# the peak from here on (ru_maxrss would keep the peak of the process that started this one)
open("/proc/self/clear_refs", "w").write("5")
X = np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, 1)
start = time.perf_counter()
try:
    VBHiddenMarkov(n_components=K).fit(X, lengths=np.full(T // L, L))
    out["batch"] = "completed"
except MemoryError as exc:
    out["batch"], out["batch_message"] = "refused", str(exc)
out["batch_s"] = time.perf_counter() - start
del X
# one start: the default's context start builds window features of the first minibatch
# (frames x 3 symbols), more than the budget holds
model = VBHiddenMarkov(n_components=K, random_state=0, total_samples=T // L,
                       batch_size=100, init_params="random_marginals")
start = time.perf_counter()
rows = chunk_sequences * L
for first in range(0, T, rows):
    X = np.memmap(path, dtype=np.uint8, mode="r", offset=first, shape=(min(rows, T - first), 1))
    model.partial_fit(X, lengths=np.full(X.shape[0] // L, L))
    del X
out["online_s"] = time.perf_counter() - start
out["online_steps"] = int(model.n_batch_iter_ - 1)
out["online_bound_estimate"] = float(model.lower_bound_)
out["peak_rss_mb"] = _proc_kb("/proc/self/status", "VmHWM") / 2**20
print(json.dumps(out))
"""


@workload("scale-hmm-memory-limit", per="call", repeats=1, warmup=False, stem="scale")
def memory_limit(quick):
    """A child process whose address space may grow by ``budget`` MB after its warm-up
    (``RLIMIT_AS``): a batch fit on a ``np.memmap`` of ``T`` uint8 symbols is refused up
    front (its forward-backward arrays are counted before any is allocated), and
    ``partial_fit`` over memmap slices of ``CHUNK_SEQUENCES`` sequences of the same file
    completes one pass.  The data decoded to int64 (what a batch fit holds) are larger
    than the budget; the file itself must be smaller, since under RLIMIT_AS a mapping
    of the whole file counts against the limit."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from sklearn_vb.hmm._working_set import batch_fit_bytes

    from . import scale_categorical as sc

    T, L, budget = MEMORY_LIMIT_QUICK if quick else MEMORY_LIMIT_FULL
    K = 20
    path = Path(tempfile.mkdtemp(prefix="bench_scale_")) / "symbols.u1"
    rng = np.random.RandomState(0)
    with open(path, "wb") as out:
        for first in range(0, T, 10_000_000):
            out.write(rng.randint(sc.N_SYMBOLS, size=min(10_000_000, T - first))
                      .astype(np.uint8).tobytes())
    chunk = min(sc.CHUNK_SEQUENCES, T // L)
    root = Path(__file__).resolve().parents[1]

    def run():
        env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", _MEMORY_LIMIT_CHILD, str(path), str(T),
                               str(L), str(K), str(budget), str(chunk)],
                              capture_output=True, text=True, env=env, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        out = json.loads(done.stdout.strip().splitlines()[-1])
        return {"elapsed_s": out.pop("online_s"), "n_symbols": T, "length": L,
                "n_components": K, "file_mb": path.stat().st_size / 2**20,
                "int64_data_mb": 8 * T / 2**20,
                "batch_needs_mb": batch_fit_bytes(T, 1, K, True, sc.N_SYMBOLS) / 2**20,
                "chunk_sequences": chunk, **out}

    return {"sklearn_vb partial_fit over memmap slices under RLIMIT_AS": run}


# ---------------------------------------------------------------------------
# a dask cluster of two workers against in memory
# ---------------------------------------------------------------------------

def _cluster(quick):
    import distributed

    # in-process workers in quick mode (started in a fraction of a second); two worker
    # processes of one thread each in a full run
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=not quick,
                                    dashboard_address=None)


def _dask_pair(quick, make_model, X, Xd, fit_kwargs, bag=None):
    """In-memory fit and the same fit of the dask array on a two-worker cluster (and,
    given ``bag``, of that dask bag of the same sequences, without ``fit_kwargs``)."""
    import distributed

    def fit(data, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model = make_model().fit(data, **kwargs)
            return model, time.perf_counter() - start

    fit(X, **fit_kwargs)  # compiled
    memory, memory_s = fit(X, **fit_kwargs)
    fits = []
    with _cluster(quick) as cluster, distributed.Client(cluster):
        fit(Xd, **fit_kwargs)  # the workers load the kernels
        fits.append(fit(Xd, **fit_kwargs))
        if bag is not None:
            fits.append(fit(bag))
    rows = [{"elapsed_s": memory_s, "n_iter": int(memory.n_iter_),
             "n_iter_in_memory": int(memory.n_iter_),
             "bound_in_memory": float(memory.lower_bound_), "n_chunks": int(Xd.numblocks[0])}]
    for model, seconds in fits:
        rel = abs(model.lower_bound_ - memory.lower_bound_) / abs(memory.lower_bound_)
        rows.append({**rows[0], "elapsed_s": seconds, "n_iter": int(model.n_iter_),
                     "n_iter_dask": int(model.n_iter_), "bound_dask": float(model.lower_bound_),
                     "bound_rel_diff": rel})
    # the in-memory row carries the comparison with the (array) fit on the cluster
    rows[0].update({k: rows[1][k] for k in ("n_iter_dask", "bound_dask", "bound_rel_diff")})
    return rows


def _dask_workload(pair, labels=("dask LocalCluster, 2 workers",)):
    cache = {}

    def get(i):
        if not cache:
            cache["pair"] = pair()
        return cache["pair"][i]

    candidates = {"in memory": lambda: get(0)}
    for i, label in enumerate(labels, start=1):
        candidates[label] = lambda i=i: get(i)

    def summarize(measurements):
        memory = measurements[0]
        for row in measurements[1:]:
            if memory.status == "ok" and row.status == "ok":
                row.ratios["dask time / in-memory time"] = row.median_s / memory.median_s

    return candidates, summarize


@workload("scale-dask-hmm", per="call", repeats=1, warmup=False, stem="scale",
          compare=False)
def dask_hmm(quick):
    import dask.array as da

    from sklearn_vb import VBHiddenMarkov
    from sklearn_vb.datasets import make_hmm_sequences
    from sklearn_vb.hmm import sequence_chunks

    from . import scale_categorical as sc

    import dask.bag as db

    n_seq, rows = (200, 5_000) if quick else (10_000, 100_000)
    X, _, lengths = make_hmm_sequences(*sc.known_hmm(), [100] * n_seq, random_state=3)
    X = np.asarray(X)
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, rows), 1))
    # the same sequences as the items of a bag, in as many partitions as X has chunks
    bag = db.from_sequence(np.split(X, np.cumsum(lengths)[:-1]), npartitions=Xd.numblocks[0])
    make = lambda: VBHiddenMarkov(n_components=8, max_iter=10 if quick else 30,  # noqa: E731
                                  init_params="random_marginals", random_state=0)
    return _dask_workload(lambda: _dask_pair(quick, make, X, Xd, {"lengths": lengths}, bag),
                          ("dask LocalCluster, 2 workers",
                           "dask bag of sequences, LocalCluster, 2 workers"))


@workload("scale-dask-dag", per="call", repeats=1, warmup=False, stem="scale",
          compare=False)
def dask_dag(quick):
    import dask.array as da

    from sklearn_vb import VBDiscreteDAG

    n, rows = (5_000, 1_000) if quick else (1_000_000, 100_000)
    rng = np.random.RandomState(0)
    z = rng.randint(4, size=n)
    X = np.column_stack([np.minimum(2, (rng.rand(n) < 0.1 + 0.25 * z)
                                    + (rng.rand(n) < 0.1 + 0.2 * (z % 2)))
                         for _ in range(8)]).astype(float)
    X[rng.rand(*X.shape) < 0.02] = np.nan
    Xd = da.from_array(X, chunks=(rows, 8))
    make = lambda: VBDiscreteDAG(n_components=4, n_init=1,  # noqa: E731
                                 max_iter=20 if quick else 100, random_state=0)
    return _dask_workload(lambda: _dask_pair(quick, make, X, Xd, {}))
