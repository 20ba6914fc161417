"""The categorical-HMM scale workload of ``bench_scale.py``: data, the three fits and
their held-out traces.

A known HMM (K = 20 sticky states, 40 symbols, each state favouring a few) generates
the training sequences, written to a file of uint8 symbols, and a held-out set.  Each
fit runs in a forked child (:func:`benchmarks.capped_call.run_capped`: its peak resident
memory is measured and it has a time cap) and records, as it goes, the wall time and a
copy of its parameters (not timed: copies of a few small arrays); the held-out
log-likelihood per symbol of every copy is computed after the fit by one forward pass
(:func:`held_out`, the same for every method, at the posterior-mean or point
parameters).  Every record also holds the CPU time of the fit's process so far, which
a loaded machine slows less than the wall time.

* batch VBEM: ``VBHiddenMarkov`` on all the symbols loaded in memory, a snapshot after
  every iteration (the ``stop`` hook of the base class's loop);
* online VB: ``partial_fit`` on consecutive slices of the file opened as ``np.memmap``
  (``CHUNK_SEQUENCES`` sequences each, minibatches of ``batch_size``), epochs over the
  file, a snapshot after every ``1 / SNAPSHOTS_PER_EPOCH`` of an epoch, from the
  default start (the start's VBEM on the first minibatch is inside the timed fit);
* online VB by ``fit(learning_method="online")`` on the symbols in memory (epochs of
  minibatches in random orders, each restart from the same kind of start as
  ``partial_fit``'s, on a random minibatch), a snapshot after every fifth of an epoch;
* hmmlearn's ``CategoricalHMM`` (EM), continued ``HMMLEARN_BLOCK`` iterations at a time
  (``init_params=""``), a snapshot after every block.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

K_TRUE, N_SYMBOLS = 20, 40
CHUNK_SEQUENCES = 1000
SNAPSHOTS_PER_EPOCH = 5
HMMLEARN_BLOCK = 5


def known_hmm(K=K_TRUE, M=N_SYMBOLS, seed=0):
    rng = np.random.RandomState(seed)
    startprob = rng.dirichlet(np.ones(K))
    transmat = 0.1 * rng.dirichlet(np.full(K, 0.3), size=K) + 0.9 * np.eye(K)
    # every state puts most of its mass on 4 symbols of its own
    emis = rng.dirichlet(np.full(M, 0.05), size=K)
    for k in range(K):
        emis[k, rng.choice(M, 4, replace=False)] += 2.0
    return startprob, transmat, emis / emis.sum(axis=1, keepdims=True)


def make_data(directory, n_sequences, length, n_test_sequences, seed=0):
    """Write the training symbols to ``directory/train.u1``; return its path and the
    held-out symbols (in memory)."""
    from sklearn_vb.datasets import make_hmm_sequences

    params = known_hmm()
    path = Path(directory) / "train.u1"
    with open(path, "wb") as out:  # in pieces: the generator holds one piece at a time
        piece = 10_000
        for i, first in enumerate(range(0, n_sequences, piece)):
            n = min(piece, n_sequences - first)
            X, _, _ = make_hmm_sequences(*params, [length] * n, random_state=seed + 1000 + i)
            out.write(np.asarray(X, dtype=np.uint8).ravel().tobytes())
    X_test, _, _ = make_hmm_sequences(*params, [length] * n_test_sequences,
                                      random_state=seed + 1)
    return path, np.asarray(X_test, dtype=np.int64).ravel()


def held_out(startprob, transmat, emissionprob, X_test, length):
    """Mean log-likelihood per held-out symbol under the given parameters."""
    from sklearn_vb.hmm.forward_backward import forward_backward

    with np.errstate(divide="ignore"):
        log_emis = np.ascontiguousarray(np.log(emissionprob).T)
    starts = np.arange(0, X_test.size, length, dtype=np.int64)
    out = forward_backward(np.log(startprob), np.log(transmat), log_emis, X_test, starts,
                           starts + length, False)
    return float(out[0].sum() / X_test.size)


def _means(model):
    return (model.startprob_posterior_ / model.startprob_posterior_.sum(),
            model.transmat_posterior_ / model.transmat_posterior_.sum(axis=1, keepdims=True),
            model.emissionprob_posterior_ / model.emissionprob_posterior_.sum(axis=1,
                                                                              keepdims=True))


class _Clock:
    """Wall and CPU seconds of this process since it was made (the CPU time is that of
    the fit alone, whatever else the machine runs)."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def now(self):
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def _trace(snapshots, X_test, length):
    return {"seconds": [t for t, _, _ in snapshots],
            "cpu_seconds": [c for _, c, _ in snapshots],
            "heldout": [held_out(*p, X_test, length) for _, _, p in snapshots]}


def batch_vbem(path, X_test, length, K, max_iter, tol):
    """Batch VBEM on all the symbols; snapshots after every iteration."""
    from sklearn_vb import VBHiddenMarkov

    class Traced(VBHiddenMarkov):
        def _run_vbem(self, data):
            def record(iteration, trace, restarted):
                snapshots.append((*clock.now(), _means(self)))

            return self._iterate(data, range(1, self.max_iter + 1), stop=record)

    snapshots = []
    clock = _Clock()
    X = np.fromfile(path, dtype=np.uint8).astype(np.int64).reshape(-1, 1)
    model = Traced(n_components=K, max_iter=max_iter, tol=tol, n_init=1,
                   init_params="random_marginals", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, lengths=np.full(X.shape[0] // length, length))
    seconds, cpu = clock.now()
    return {"fit_s": seconds, "cpu_s": cpu, "n_iter": int(model.n_iter_), "converged": bool(model.converged_),
            **_final(_trace(snapshots, X_test, length))}


def online_vb(path, X_test, length, K, epochs, batch_size, chunk_sequences=CHUNK_SEQUENCES,
              **steps):
    """partial_fit on memmap slices of ``chunk_sequences`` sequences, ``epochs`` passes;
    ``steps``: ``learning_offset`` and ``learning_decay`` if not the defaults."""
    from sklearn_vb import VBHiddenMarkov

    n_frames = path.stat().st_size
    n_sequences = n_frames // length
    chunk = chunk_sequences * length
    starts = list(range(0, n_frames, chunk))
    every = max(1, len(starts) // SNAPSHOTS_PER_EPOCH)
    # the default start (init_params="auto"): for online learning the batch starts,
    # each run by VBEM on the first minibatch, the best by its bound
    model = VBHiddenMarkov(n_components=K, batch_size=batch_size,
                           total_samples=n_sequences, random_state=0, **steps)
    snapshots = []
    clock = _Clock()
    for _ in range(epochs):
        for i, first in enumerate(starts):
            rows = min(chunk, n_frames - first)
            X = np.memmap(path, dtype=np.uint8, mode="r", offset=first, shape=(rows, 1))
            model.partial_fit(X, lengths=np.full(rows // length, length))
            del X
            if (i + 1) % every == 0 or i + 1 == len(starts):
                snapshots.append((*clock.now(), _means(model)))
    seconds, cpu = clock.now()
    return {"fit_s": seconds, "cpu_s": cpu, "n_iter": epochs, "steps": int(model.n_batch_iter_ - 1),
            **_final(_trace(snapshots, X_test, length))}


def online_fit(path, X_test, length, K, epochs, batch_size):
    """``fit(learning_method="online")`` on the symbols in memory, at most ``epochs``
    epochs; snapshots after every ``1 / SNAPSHOTS_PER_EPOCH`` of an epoch."""
    from sklearn_vb import VBHiddenMarkov

    n_sequences = path.stat().st_size // length
    every = max(1, -(-n_sequences // batch_size) // SNAPSHOTS_PER_EPOCH)

    class Traced(VBHiddenMarkov):
        def _set_posterior(self, posterior):  # after the start and after every step
            super()._set_posterior(posterior)
            steps = getattr(self, "n_batch_iter_", 1)  # 1 + the steps before this one
            if steps % every == 0:
                snapshots.append((*clock.now(), _means(self)))

    snapshots = []
    clock = _Clock()
    X = np.fromfile(path, dtype=np.uint8).reshape(-1, 1)
    model = Traced(n_components=K, learning_method="online", batch_size=batch_size,
                   max_iter=epochs, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, lengths=np.full(n_sequences, length))
    seconds, cpu = clock.now()
    snapshots.append((seconds, cpu, _means(model)))
    return {"fit_s": seconds, "cpu_s": cpu, "n_iter": int(model.n_iter_),
            "converged": bool(model.converged_), "steps": int(model.n_batch_iter_ - 1),
            **_final(_trace(snapshots, X_test, length))}


def hmmlearn_em(path, X_test, length, K, max_iter, budget_s):
    """hmmlearn's CategoricalHMM EM, ``HMMLEARN_BLOCK`` iterations per call, until its
    own convergence test, ``max_iter`` or ``budget_s`` seconds of fitting."""
    from hmmlearn.hmm import CategoricalHMM

    X = np.fromfile(path, dtype=np.uint8).astype(np.int64).reshape(-1, 1)
    lengths = np.full(X.shape[0] // length, length)
    model = CategoricalHMM(n_components=K, n_features=N_SYMBOLS, n_iter=HMMLEARN_BLOCK,
                           tol=1e-2, random_state=0, implementation="scaling")
    snapshots, spent, cpu, n_iter, converged = [], 0.0, 0.0, 0, False
    while n_iter < max_iter and spent < budget_s and not converged:
        clock = _Clock()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, lengths)
        wall, cpu_block = clock.now()
        spent, cpu = spent + wall, cpu + cpu_block
        n_iter += model.monitor_.iter
        converged = bool(model.monitor_.converged)
        model.init_params = ""  # the next call continues from here
        snapshots.append((spent, cpu, (model.startprob_.copy(), model.transmat_.copy(),
                                       model.emissionprob_.copy())))
    return {"fit_s": spent, "cpu_s": cpu, "n_iter": n_iter, "converged": converged,
            **_final(_trace(snapshots, X_test, length))}


def _final(trace):
    return {"heldout_loglik_per_symbol": trace["heldout"][-1], "trace": trace}


def within(trace, target, rel, clock="seconds"):
    """The first time in ``trace`` (wall seconds, or ``clock="cpu_seconds"``) at which the
    held-out value is within ``rel`` of ``target`` (relative to |target|), or None."""
    for t, h in zip(trace[clock], trace["heldout"]):
        if h >= target - rel * abs(target):
            return t
    return None


__all__ = ["batch_vbem", "held_out", "hmmlearn_em", "known_hmm", "make_data", "online_fit",
           "online_vb", "within"]
