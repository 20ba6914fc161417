"""keep_restarts=True: every restart's final state and bound in ``restarts_``, and the
restart-mixture importance-sampling proposal (``proposal="vb_mixture"``) built from them
on the four package estimators.

Oracles: the kept fit is the restart with the highest bound and equals, number for
number, the fit without ``keep_restarts``; the estimator rebuilt from that restart
predicts exactly as the kept one; on a tiny categorical HMM the restart-mixture estimate
of ln p(X) agrees with the exact value by enumeration of all state paths.
"""

import warnings

import numpy as np
import pytest

from sklearn_vb import (VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem,
                        VBMixtureFactorAnalysers)
from sklearn_vb.base import Restart
from sklearn_vb.emissions import CategoricalPoint
from sklearn_vb.hmm._state import PointParameters
from sklearn_vb.scoring import UnreliableEstimateWarning, score, scoring_model_for

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    "ignore::sklearn_vb.scoring.UnreliableEstimateWarning")


def _cases():
    rng = np.random.default_rng(0)
    sym = rng.integers(0, 3, size=150).reshape(-1, 1)
    lds_y = np.cumsum(rng.normal(size=(50, 2)), axis=0) * 0.3 + rng.normal(size=(50, 2))
    blobs = np.vstack([rng.normal(size=(50, 3)), rng.normal(size=(50, 3)) + 4.0])
    table = rng.integers(0, 2, size=(80, 3))
    return {
        "hmm": (lambda **kw: VBHiddenMarkov(2, random_state=0, **kw), sym),
        "lds": (lambda **kw: VBLinearDynamicalSystem(2, random_state=0, max_iter=40, **kw), lds_y),
        "mfa": (lambda **kw: VBMixtureFactorAnalysers(random_state=0, **kw), blobs),
        "dag": (lambda **kw: VBDiscreteDAG(n_components=2, random_state=0, **kw), table),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_restarts_are_kept_and_the_best_one_is_the_fit(name):
    make, X = CASES[name]
    plain = make(n_init=3).fit(X)
    kept = make(n_init=3, keep_restarts=True).fit(X)
    assert not hasattr(plain, "restarts_")
    assert kept.lower_bound_ == plain.lower_bound_  # keeping them changes nothing
    np.testing.assert_array_equal(kept.lower_bounds_, plain.lower_bounds_)
    # one run per start of a restart (the categorical HMM's default restart has two)
    assert len(kept.restarts_) == 3 * len(kept._restart_starts())
    assert all(isinstance(r, Restart) for r in kept.restarts_)
    bounds = [r.lower_bound for r in kept.restarts_]
    assert kept.lower_bound_ == max(bounds)
    for r in kept.restarts_:
        assert r.lower_bounds[-1] == pytest.approx(r.lower_bound) or name == "dag"
    best = kept.restart_estimator(int(np.argmax(bounds)))
    assert best.score(X) == pytest.approx(kept.score(X), rel=1e-12)
    assert not hasattr(best, "restarts_")


@pytest.mark.parametrize("name", sorted(CASES))
def test_restart_mixture_importance_sampling_runs(name):
    make, X = CASES[name]
    est = make(n_init=2, keep_restarts=True).fit(X)
    res = score(est, X, "is", proposal="vb_mixture", n_samples=300, n_runs=2, random_state=0)
    assert np.isfinite(res.log_evidence)
    assert res.diagnostics["n_finite"] > 0
    without = make(n_init=2).fit(X)
    with pytest.raises(NotImplementedError, match="keep_restarts"):
        score(without, X, "is", proposal="vb_mixture", n_samples=10, n_runs=1)


def test_restart_mixture_estimate_matches_exact_evidence_on_a_tiny_hmm():
    X = np.array([0, 0, 1, 1, 0, 2, 2, 2, 1, 0, 0, 2, 1, 1]).reshape(-1, 1)
    est = VBHiddenMarkov(2, n_init=4, keep_restarts=True, random_state=1,
                         startprob_prior=1.0, transmat_prior=1.0, emissionprob_prior=1.0).fit(X)
    model = scoring_model_for(est)
    exact = model.log_evidence(model.prepare_data(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = score(est, X, "is", proposal="vb_mixture", n_samples=4000, n_runs=3,
                    random_state=0)
    vb_gap = exact - est.lower_bound_
    assert vb_gap > 1.0
    # the mixture over the restarts' q closes all but a tenth of the VB gap
    assert abs(res.log_evidence - exact) < 0.1 * vb_gap
    # and its error bar covers the exact value, or the result says it cannot be trusted
    flagged = res.diagnostics["stderr_reliable"] is False and any(
        issubclass(w.category, UnreliableEstimateWarning) for w in caught)
    assert abs(res.log_evidence - exact) < 4 * res.stderr or flagged


def test_point_fits_keep_their_restarts_too():
    X = CASES["hmm"][1]
    est = VBHiddenMarkov(3, method="ml", n_init=3, keep_restarts=True, random_state=0,
                         max_iter=100).fit(X)
    assert est.lower_bound_ == max(r.lower_bound for r in est.restarts_)
    # every restart keeps its own point estimate, a typed point of the family
    assert all(isinstance(r.state["_theta_"], PointParameters)
               and isinstance(r.state["_theta_"].emission, CategoricalPoint)
               for r in est.restarts_)


def test_printing_the_restarts_shows_one_short_line_each():
    X = np.array([[0], [0], [1], [1], [0], [2], [2], [1]] * 5)
    hmm = VBHiddenMarkov(n_components=2, n_init=2, keep_restarts=True, random_state=0).fit(X)
    for restart in hmm.restarts_:
        text = repr(restart)
        assert len(text) < 160 and "\n" not in text
        assert f"{restart.lower_bound:.6g}" in text and "converged" in text
