"""One very long sequence: online VB over subchains against batch VBEM (``results/scale.*``).

* ``scale-hmm-long-sequence``: a Gaussian HMM (K = 8 well separated states in two
  dimensions, sticky transitions) generates one training sequence of T = 10^7 frames
  and a held-out sequence of 10^6; ``VBHiddenMarkov`` is fitted once by subchain SVI
  (``learning_method="online"``, ``subchain_length=100``, ``batch_size=20``, automatic
  buffer, two epochs) and once by batch VBEM (to ``tol`` or 100 iterations), both from
  the same k-means start.  Reported: wall time of the fit, held-out log-likelihood per
  frame, iterations (epochs for SVI) and, for SVI, the steps taken and the buffer
  settled on.  Quick mode: T = 20 000, K = 3, held-out 5 000.

Each fit runs once (``repeats=1``); a tiny fit of both kinds compiles the kernels
first, so the times exclude numba compilation.
"""

from __future__ import annotations

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


def _fit(model, X, X_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an SVI run of a fixed number of epochs
        model.fit(X)
    metrics = {"n_iter": int(model.n_iter_),
               "heldout_loglik_per_frame": float(model.score(X_test))}
    if model.learning_method == "online":
        metrics.update(steps=int(model.n_batch_iter_ - 1), buffer=int(model.buffer_length_))
    return metrics


@workload("scale-hmm-long-sequence", per="call", repeats=1, warmup=False, stem="scale")
def long_sequence(quick):
    from sklearn_vb import VBHiddenMarkov

    K, T, T_test = (3, 20_000, 5_000) if quick else (8, 10_000_000, 1_000_000)
    X, X_test = _problem(K, T, T_test)
    common = dict(n_components=K, emission="gaussian", init_params="kmeans", random_state=0)
    svi = dict(learning_method="online", subchain_length=100, batch_size=20, max_iter=2)
    batch = dict(max_iter=100)
    small, small_test = _problem(K, 2_000, 500, seed=1)
    for kw in (svi, batch):  # compile the kernels outside the timed calls
        _fit(VBHiddenMarkov(**common, **kw), small, small_test)
    return {
        "sklearn_vb subchain SVI": lambda: _fit(VBHiddenMarkov(**common, **svi), X, X_test),
        "sklearn_vb batch VBEM": lambda: _fit(VBHiddenMarkov(**common, **batch), X, X_test),
    }
