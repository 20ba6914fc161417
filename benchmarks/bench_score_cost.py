"""What an evidence score of a fitted model costs, as a multiple of the fit.

For each model family the estimator is fitted once with its defaults (the first row,
"fit", timed by the harness after a compiling fit on small data), then
``sklearn_vb.scoring.score(est, X, method)`` is timed for every method in
:data:`METHODS` with the scorers' default options and no ``random_state``.  The
"ratios" column holds score time / fit time.

Every score runs in a forked child process (:mod:`benchmarks.capped_call`) which
first scores a small fitted model of the same family (compilation and cache loading,
reported as ``child_warmup_s``, not timed), then the real one.  A score that takes
longer than the time cap (10 minutes, or ``BENCH_SCORE_TIME_CAP_S`` seconds when that
environment variable is set; 20 s in quick mode) or whose resident memory
exceeds the memory cap (8 GB; 2 GB in quick mode) is stopped and reported as "over
cap" with the cap as its time (its ratio is then a lower bound).  ``peak_rss_mb`` is
the child's peak resident memory during the call (including the forked process
image, ``start_rss_mb``).  A score that took at most half the cap is called a second
time in the same process: ``same_value_twice`` says whether the two calls agreed
(the package promises that a seeded estimator gives the same score).

Families (full / quick sizes):

* ``score-cost-hmm-categorical``: ``VBHiddenMarkov(8)`` on 30 000 characters of English
  text (39 symbols, sequences of 100; quick: 3 states, 600 characters);
* ``score-cost-hmm-gaussian``: ``VBHiddenMarkov(5, emission="gaussian")``, full
  covariances, on 20 000 frames of a 5-state, 5-dimensional Gaussian HMM (quick: 3
  states, 600 frames);
* ``score-cost-mfa``: ``VBMixtureFactorAnalysers()`` on scikit-learn's 1797 digits
  (quick: every fourth pixel of 100 digits, at most 100 iterations);
* ``score-cost-lds``: ``VBLinearDynamicalSystem(4)`` on p = 10 outputs, T = 300 steps of
  a random 4-state LDS (quick: p = 4, T = 80, 2 states);
* ``score-cost-dag``: ``VBDiscreteDAG`` with Beal's true structure on n = 1280 / 160
  cases.

The HMM workloads add a row "bic+bicp+cs": the three scores of the same fitted model
in a row in one child, as a user ranking by several scores runs them (they share one
point-estimate EM, see :mod:`sklearn_vb.scoring._point_cache`).

Run ``python -m benchmarks 'score-cost-*'`` (results in ``results/score_cost.*``).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .capped_call import run_capped
from .harness import OverCap, workload
from .workload_data import english_text, gaussian_hmm_data, lds_data

METHODS = ("vb", "bic", "bicp", "cs", "cs_dagger", "laplace", "is", "ais")
#: the HMM workloads also time the three point scores of one fitted model in a row
#: (they share one point-estimate EM)
HMM_METHODS = METHODS + ("bic+bicp+cs",)
#: per-score time cap; ``BENCH_SCORE_TIME_CAP_S`` in the environment overrides the full-mode
#: value (a shorter cap turns the slowest scores' ratios into lower bounds, marked "≥")
TIME_CAP_S = {False: float(os.environ.get("BENCH_SCORE_TIME_CAP_S", 600.0)), True: 20.0}
MEMORY_CAP_MB = {False: 8192.0, True: 2048.0}
_ROW_METRICS = ("log_evidence", "stderr", "n_eff", "d")


def _quietly(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _summary(result):
    """Picklable summary of a ScoreResult: the estimate and its scalar diagnostics."""
    out = {"log_evidence": float(result.log_evidence), "bound": result.bound}
    if result.stderr is not None:
        out["stderr"] = float(result.stderr)
    if result.n_eff is not None:
        out["n_eff"] = float(result.n_eff)
    for key, value in result.diagnostics.items():
        if isinstance(value, (bool, np.bool_)):
            out[key] = bool(value)
        elif isinstance(value, (int, np.integer)):
            out[key] = int(value)
        elif isinstance(value, (float, np.floating)):
            out[key] = float(value)
    return out


def _score_all(est, X, method, params):
    """``score(est, X, method)``; a method "a+b+c" scores the same fitted estimator by
    each in turn (what a user ranking by several scores pays: the point-estimate EM is
    shared), with the first one's summary and the others' values."""
    from sklearn_vb.scoring import score

    first, *rest = method.split("+")
    out = _summary(_quietly(score, est, X, first, **params))
    for other in rest:
        out[f"log_evidence_{other}"] = float(_quietly(score, est, X, other, **params).log_evidence)
    return out


def _same(a, b):
    x, y = a["log_evidence"], b["log_evidence"]
    return bool(x == y or (np.isnan(x) and np.isnan(y)))


def _score_candidate(state, method, quick):
    """A callable timing ``score(est, X, method)`` in a capped child process."""

    def run():
        if "est" not in state:
            raise RuntimeError("no fitted model (the fit failed)")
        est, X, params = state["est"], state["X"], state["fit_params"]
        small, X_small, params_small = state["small"]
        outcome = run_capped(
            lambda: _score_all(est, X, method, params),
            TIME_CAP_S[quick],
            warm=lambda: _score_all(small, X_small, method, params_small),
            n_calls=2,
            memory_cap_mb=MEMORY_CAP_MB[quick],
        )
        metrics = {"child_warmup_s": outcome.warmup_s, "peak_rss_mb": outcome.peak_rss_mb,
                   "start_rss_mb": outcome.start_rss_mb}
        if not outcome.seconds:
            if outcome.status == "error":
                raise RuntimeError(outcome.message)
            raise OverCap(TIME_CAP_S[quick], {**metrics, "cap": outcome.status})
        first = outcome.values[0]
        metrics.update({k: first[k] for k in _ROW_METRICS if k in first})
        if len(outcome.values) > 1:
            metrics["same_value_twice"] = _same(first, outcome.values[1])
            metrics["second_minus_first"] = (outcome.values[1]["log_evidence"]
                                             - first["log_evidence"])
        else:
            metrics["same_value_twice"] = None
            metrics["second_call"] = (outcome.status if outcome.status != "ok"
                                      else "not run (first call over half the cap)")
        return {**metrics, "n_iter": None, "elapsed_s": outcome.seconds[0],
                "trace": {"first": first, "all_seconds": outcome.seconds,
                          "second": outcome.values[1] if len(outcome.values) > 1 else None}}

    return run


def _candidates(make_estimator, X, fit_params, small, quick, methods=METHODS):
    """The "fit" row and one row per score in ``methods``.  ``small`` is
    ``(estimator, X, fit_params)`` of a small problem of the same family: fitting it
    here compiles the estimator's kernels, scoring it in each child compiles (or loads)
    the scorer's."""
    est_small, X_small, params_small = small
    _quietly(est_small.fit, X_small, **params_small)
    state = {"X": X, "fit_params": fit_params, "small": (est_small, X_small, params_small)}

    def fit():
        est = _quietly(make_estimator().fit, X, **fit_params)
        state["est"] = est
        return {"n_iter": int(est.n_iter_), "bound": float(est.lower_bound_),
                "converged": bool(est.converged_)}

    rows = {"fit": fit}
    for method in methods:
        rows[method] = _score_candidate(state, method, quick)
    return rows


def _register(name):
    return workload(name, per="call", repeats=1, warmup=False, ratio_to_first=True,
                    stem="score_cost")


@_register("score-cost-hmm-categorical")
def hmm_categorical(quick):
    from sklearn_vb import VBHiddenMarkov

    X, lengths, M, _ = english_text(600 if quick else 30000)
    X_small, lengths_small = X[:300], lengths[:3]

    def make(K=3 if quick else 8):
        return VBHiddenMarkov(K, n_symbols=M, random_state=0)

    return _candidates(make, X, {"lengths": lengths},
                       (make(2), X_small, {"lengths": lengths_small}), quick, HMM_METHODS)


@_register("score-cost-hmm-gaussian")
def hmm_gaussian(quick):
    from sklearn_vb import VBHiddenMarkov

    X, lengths = gaussian_hmm_data(n_frames=600 if quick else 20000,
                                   seq_len=300 if quick else 1000)
    X_small, lengths_small = X[:200], [200]

    def make(K=3 if quick else 5):
        return VBHiddenMarkov(K, emission="gaussian", covariance_type="full", random_state=0)

    return _candidates(make, X, {"lengths": lengths},
                       (make(2), X_small, {"lengths": lengths_small}), quick, HMM_METHODS)


@_register("score-cost-mfa")
def mfa(quick):
    from sklearn.datasets import load_digits

    from sklearn_vb import VBMixtureFactorAnalysers

    X = load_digits().data.astype(float)
    if quick:  # every fourth pixel of 100 digits
        X = X[:100, ::4]
    rng = np.random.default_rng(0)
    X_small = rng.standard_normal((60, 3))

    def make():
        if quick:
            return VBMixtureFactorAnalysers(random_state=0, max_iter=100, polish_iter=20)
        return VBMixtureFactorAnalysers(random_state=0)

    small = VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=20, random_state=0)
    return _candidates(make, X, {}, (small, X_small, {}), quick)


@_register("score-cost-lds")
def lds(quick):
    from sklearn_vb import VBLinearDynamicalSystem

    p, T, k = (4, 80, 2) if quick else (10, 300, 4)
    X = lds_data(p, T, k)
    X_small = lds_data(2, 40, 1, seed=1)

    def make():
        return VBLinearDynamicalSystem(k, random_state=0)

    small = VBLinearDynamicalSystem(1, max_iter=40, random_state=0)
    return _candidates(make, X, {}, (small, X_small, {}), quick)


@_register("score-cost-dag")
def dag(quick):
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import beal_true_structure, make_beal_dag

    X = make_beal_dag(160 if quick else 1280, random_state=0)
    X_small = make_beal_dag(40, random_state=1)

    def make(**kwargs):
        return VBDiscreteDAG(*beal_true_structure(), random_state=0, **kwargs)

    return _candidates(make, X, {}, (make(n_init=1, max_iter=20), X_small, {}), quick)
