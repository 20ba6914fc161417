"""The default MRF structure score on real binary tables: exact Laplace wherever ln Z is
exact, and a warning with no value where BP-LR is found unreliable."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from sklearn_vb import PairwiseMRF
from sklearn_vb.model_selection import MRFStructureSearch
from sklearn_vb.scoring import UnreliableEstimateWarning, score


def median_table(columns):
    X = load_breast_cancer().data[:, columns]
    return (X > np.median(X, axis=0)).astype(int)


def halves(B):
    idx = np.random.RandomState(0).permutation(len(B))
    return B[idx[:len(B) // 2]], B[idx[len(B) // 2:]]


def complete(p):
    return [(i, j) for i in range(p) for j in range(i + 1, p)]


def test_default_is_exact_laplace_on_an_enumerable_graph():
    # strongly coupled features (radius, perimeter, area ... split at their medians): the
    # BP-MAP of the complete graph lies far from the exact MAP and BP-LR is >1000 nats off
    train, _ = halves(median_table(list(range(10))))
    est = PairwiseMRF(complete(10)).fit(train)
    exact = score(est, train, "bethe_laplace", gradient="exact", covariance="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        default = score(est, train, "bethe_laplace")
    assert default.log_evidence == pytest.approx(exact.log_evidence, abs=1e-8)
    assert default.log_evidence == pytest.approx(score(est, train, "laplace").log_evidence, abs=1e-3)


def test_default_refuses_an_unreliable_bp_lr_estimate():
    train, _ = halves(median_table(list(range(10))))
    # too many joint states for this estimator's enumeration limit: BP-LR, checked
    est = PairwiseMRF(complete(10), max_exact_states=256).fit(train)
    with pytest.warns(UnreliableEstimateWarning, match="pair tables"):
        r = score(est, train, "bethe_laplace")
    assert np.isnan(r.log_evidence) and r.diagnostics["unreliable_reasons"]
    # a single cycle, where BP is accurate, keeps its BP-LR value
    cycle = [(i, i + 1) for i in range(9)] + [(0, 9)]
    est = PairwiseMRF(cycle, max_exact_states=256).fit(train)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        r = score(est, train, "bethe_laplace")
    ref = score(PairwiseMRF(cycle).fit(train), train, "bethe_laplace").log_evidence
    assert r.diagnostics["inference"] == "bp" and abs(r.log_evidence - ref) < 0.1


def test_default_search_choice_generalises_at_least_as_well_as_bic():
    train, test = halves(median_table([4, 5, 6, 7, 8, 9]))

    def held_out(edges):  # exact log-likelihood per held-out row
        return PairwiseMRF(edges, inference="exact").fit(train).score(test)

    default = MRFStructureSearch(PairwiseMRF()).fit(train).best_structure_
    bic = MRFStructureSearch(PairwiseMRF(), scoring="bic").fit(train).best_structure_
    assert held_out(default) >= held_out(bic) - 0.01
