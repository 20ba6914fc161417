"""Calibration of the reported Monte Carlo error bars against exact evidences.

For each estimator that reports a standard error, on a tiny problem whose evidence is
known exactly, over ``N_SEEDS`` seeds (more where the coverage sits near the floor): a
run is honest when ``+- 2 stderr`` covers the exact value or when the run is flagged
(``diagnostics["stderr_reliable"]`` False) and an :class:`UnreliableEstimateWarning` was
raised.  At least 90 % of the runs must be honest.
Cases marked ``flagged`` must be flagged in every run: their error bars are known not to
cover (Beal's Dirichlet proposal with floor 0 under a sparse prior, the harmonic-mean
estimators, a proposal or annealing start from q alone on a model whose posterior has
several relabelled copies).

With ``SKLEARN_VB_CALIBRATION_RESULTS=<path>`` the measured coverages are written to that
markdown file (``benchmarks/results/calibration.md``).
"""

import os
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import UnreliableEstimateWarning, score, scoring_model_for
from tests.oracles import bdmc_instances as inst
from tests.oracles.reference_models import BayesianLinearRegression

N_SEEDS = 20
MIN_HONEST = 0.9


def _gaussian_mean():
    est, X, exact, _ = inst.gaussian_mean()
    return est, X, exact, {}


def _clustering():
    est, X, exact, _ = inst.clustering()
    return est, X, exact, {}


def _linear_regression():
    rng = np.random.default_rng(2)
    model = BayesianLinearRegression(3)
    X, _ = model.simulate(model.sample_prior(rng, 1), rng, 50)
    return model.fit_vb(X), X, model.log_evidence(model.prepare_data(X)), {}


def _sparse_hmm():
    """Two length-6 sequences, K = 2, V = 5, the estimator's sparse Dirichlet prior
    (concentrations 1/5 on the emission rows): 2^12 paths, exact by enumeration."""
    r = np.random.default_rng(1)
    from sklearn_vb.datasets import make_hmm_sequences

    A = 0.6 * np.eye(2) + 0.4 * r.dirichlet(np.ones(2), size=2)
    B = r.dirichlet(np.full(5, 0.3), size=2)
    X, _, L = make_hmm_sequences(np.ones(2) / 2, A, B, [6, 6], random_state=1)
    est = VBHiddenMarkov(n_components=2, n_symbols=5, n_init=3, random_state=0).fit(X, lengths=L)
    model = scoring_model_for(est)
    return est, X, model.log_evidence(model.prepare_data(X, lengths=L)), {"lengths": L}


def _tiny_dag():
    """A hidden node with 2 values and two observed children with 3, ten cases: 2 alias
    copies of the posterior, exact evidence by enumerating the hidden values."""
    from sklearn_vb import VBDiscreteDAG

    X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2], [1, 1], [0, 0], [2, 2],
                  [1, 0]])
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3, random_state=0).fit(X)
    model = scoring_model_for(est)
    return est, X, model.log_evidence(model.prepare_data(X)), {}


@dataclass(frozen=True)
class Case:
    name: str
    problem: object
    method: str
    options: dict
    flagged: bool = False  # the error bars are known to fail: every run must be flagged
    n_seeds: int = N_SEEDS


CASES = [
    Case("is", _gaussian_mean, "is", {"n_samples": 500}),
    Case("is-linear-regression", _linear_regression, "is", {"n_samples": 500}),
    Case("ais", _clustering, "ais", {"n_temperatures": 100, "n_chains": 16}),
    Case("ais-floor-0-sparse-prior", _sparse_hmm, "ais",
         {"n_temperatures": 30, "n_chains": 8, "start": "prior", "dirichlet_floor": 0.0},
         flagged=True),
    # q(theta) sits on one of the K! relabelled copies of the HMM posterior: the proposal
    # is q's mixture over the state permutations, and the weights' Pareto k-hat flags
    # the runs where q, narrower than the posterior, gives too heavy a tail
    Case("is-hmm", _sparse_hmm, "is", {"n_samples": 500}),
    Case("is-hmm-no-alias-mixture", _sparse_hmm, "is", {"n_samples": 500, "aliases": "none"},
         flagged=True),
    # annealing from q alone lands near ln Z - ln 2 with error bars that do not show it
    Case("ais-from-q-hmm-no-alias-mixture", _sparse_hmm, "ais",
         {"n_temperatures": 30, "n_chains": 8, "start": "q", "aliases": "none"}, flagged=True),
    # the defaults (the start and the schedule chosen automatically).  Their
    # coverage sits near the nominal 95 %; over 20 seeds a miss more or less decides the
    # 90 % floor, so it runs 40, on which another floating-point path can move a couple
    Case("ais-hmm", _sparse_hmm, "ais", {}, n_seeds=40),
    Case("is-dag", _tiny_dag, "is", {"n_samples": 500}),
    Case("ais-from-q-dag", _tiny_dag, "ais", {"n_temperatures": 1000, "n_chains": 16,
                                             "start": "q"}),
    Case("ais-joint", _clustering, "ais",
         {"anneal": "joint", "n_temperatures": 50, "n_chains": 16}),
    Case("rais", _gaussian_mean, "rais", {"n_temperatures": 200, "n_chains": 16}),
    Case("smc", _gaussian_mean, "smc", {"n_particles": 16}),
    Case("shme", _gaussian_mean, "shme", {"n_particles": 16}, flagged=True),
    Case("hme", _gaussian_mean, "hme", {"n_samples": 50}, flagged=True),
    Case("nested-sampling", _gaussian_mean, "nested_sampling",
         {"n_live": 8, "n_steps": 10, "n_runs": 8}),
    Case("vmcmc", _linear_regression, "vmcmc", {"n_iter": 100, "n_samples": 500}),
]

_RESULTS = {}


def _run(case):
    est, X, exact, fit = case.problem()
    rows = []
    t0 = time.perf_counter()
    for seed in range(case.n_seeds):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            r = score(est, X, case.method, random_state=seed, **fit, **case.options)
        warned = any(issubclass(w.category, UnreliableEstimateWarning) for w in rec)
        flagged = r.diagnostics.get("stderr_reliable") is False
        covered = r.stderr is not None and abs(r.log_evidence - exact) <= 2 * r.stderr
        rows.append((covered, flagged, warned, r.log_evidence - exact, r.stderr))
    return rows, time.perf_counter() - t0


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_two_stderr_covers_the_exact_evidence_or_the_run_is_flagged(case):
    rows, seconds = _run(case)
    covered = np.array([r[0] for r in rows])
    flagged = np.array([r[1] for r in rows])
    warned = np.array([r[2] for r in rows])
    # a flag is always accompanied by a warning, and a warning by a flag
    assert np.array_equal(flagged, warned), (flagged, warned)
    honest = covered | (flagged & warned)
    _RESULTS[case.name] = (case, covered.mean(), flagged.sum(), honest.mean(), seconds, rows)
    if case.flagged:
        assert flagged.all(), [r for r in rows if not r[1]]
    assert honest.mean() >= MIN_HONEST, [r for r in rows if not (r[0] or r[1])]


@pytest.fixture(scope="module", autouse=True)
def _write_results():
    yield
    path = os.environ.get("SKLEARN_VB_CALIBRATION_RESULTS")
    if not path or not _RESULTS:
        return
    lines = ["# Calibration of the Monte Carlo error bars", "",
             f"Written by `SKLEARN_VB_CALIBRATION_RESULTS={path} pytest "
             "tests/scoring/test_scoring_calibration.py`.  Each row: one estimator on a tiny problem "
             f"with exact evidence, {N_SEEDS} seeds unless the seeds column says "
             "otherwise; coverage = fraction of runs whose "
             "+- 2 stderr holds the exact value; flagged = runs with "
             "`stderr_reliable` False and an `UnreliableEstimateWarning`; honest = covered "
             "or flagged (the test asks for at least 90 %).", "",
             "| case | method | problem | options | seeds | coverage | flagged | honest "
             "| mean error | rms error | median stderr | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, (case, cov, nflag, honest, seconds, rows) in _RESULTS.items():
        err = np.array([r[3] for r in rows])
        se = np.array([np.nan if r[4] is None else r[4] for r in rows])
        opts = ", ".join(f"{k}={v}" for k, v in case.options.items())
        lines.append(f"| {name} | {case.method} | {case.problem.__name__.strip('_')} | {opts} "
                     f"| {len(rows)} | {cov:.2f} | {nflag} | {honest:.2f} | {err.mean():+.3f} "
                     f"| {np.sqrt(np.mean(err ** 2)):.3f} | {np.nanmedian(se):.3f} "
                     f"| {seconds:.1f} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
