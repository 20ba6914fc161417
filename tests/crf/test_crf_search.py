"""Structure search over the features of LinearChainCRF."""

import itertools

import numpy as np
import pytest

from sklearn_vb import LinearChainCRF
from sklearn_vb.datasets import make_faq_like_sequences
from sklearn_vb.model_selection import CRFFeatureSearch, crf_feature_sequence
from sklearn_vb.scoring import score


def test_feature_sequence_is_nested():
    seq = crf_feature_sequence(5, random_state=0)
    assert len(seq) == 10
    sizes = [len(s["state_features"]) + len(s["transition_features"]) for s in seq]
    assert sizes == list(range(1, 11))
    for a, b in zip(seq[:-1], seq[1:]):
        assert set(a["state_features"]) <= set(b["state_features"])
        assert set(a["transition_features"]) <= set(b["transition_features"])
    assert seq[4] == {"state_features": [0, 1, 2, 3, 4], "transition_features": []}
    assert crf_feature_sequence(5, random_state=0) == seq


@pytest.fixture(scope="module")
def small():
    X, y, lengths = make_faq_like_sequences(n_documents=3, n_lines=40, random_state=1)
    return X[:, [4, 8]], y, lengths  # an answer feature and a continuation feature


def test_list_search_scores_every_structure(small):
    X, y, lengths = small
    search = CRFFeatureSearch(LinearChainCRF(), random_state=0).fit(X, y, lengths=lengths)
    assert search.n_candidates_ == 4
    seq = crf_feature_sequence(2, random_state=0)
    for s, r in zip(seq, search.score_results_):
        est = LinearChainCRF(**s).fit(X, y, lengths=lengths)
        ref = score(est, X, "bethe_laplace", y=y, lengths=lengths).log_evidence
        assert r["bethe_laplace"].log_evidence == pytest.approx(ref, abs=1e-8)
    assert search.best_score_ == pytest.approx(max(
        r["bethe_laplace"].log_evidence for r in search.score_results_))


def test_greedy_finds_the_exhaustive_optimum(small):
    X, y, lengths = small
    structures = [{"state_features": list(s), "transition_features": list(t)}
                  for s in itertools.chain.from_iterable(
                      itertools.combinations(range(2), k) for k in range(3))
                  for t in itertools.chain.from_iterable(
                      itertools.combinations(range(2), k) for k in range(3))]
    exhaustive = CRFFeatureSearch(LinearChainCRF(), structures=structures).fit(
        X, y, lengths=lengths)
    assert exhaustive.n_candidates_ == 16
    greedy = CRFFeatureSearch(LinearChainCRF("none", "none"), search="greedy").fit(
        X, y, lengths=lengths)
    assert greedy.best_structure_ == exhaustive.best_structure_
    assert greedy.best_score_ == pytest.approx(exhaustive.best_score_, abs=1e-9)
    # the climb improves at every step
    scores = [p["score"] for p in greedy.path_]
    assert all(b > a for a, b in zip(scores[:-1], scores[1:]))
    best = greedy.best_estimator_
    assert list(best.state_features_) == list(greedy.best_structure_[0])
