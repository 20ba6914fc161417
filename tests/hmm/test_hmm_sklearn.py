"""VBHiddenMarkov inside scikit-learn: grid search over sequences, pipelines (the
estimator checks are in tests/contract/test_estimator_checks.py)."""

import numpy as np
import sklearn
import pytest
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.hmm import VBHiddenMarkov


def gaussian_sequences(n_seq=12, length=60, seed=0):
    startprob = np.array([0.6, 0.4, 0.0])
    transmat = np.array([[0.9, 0.1, 0.0], [0.0, 0.9, 0.1], [0.1, 0.0, 0.9]])
    means = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    covars = np.tile(np.eye(2), (3, 1, 1))
    return make_hmm_sequences(startprob, transmat, (means, covars), [length] * n_seq, random_state=seed)


def test_grid_search_over_states_with_group_kfold():
    X, _, lengths = gaussian_sequences()
    ids = np.repeat(np.arange(len(lengths)), lengths)
    # test folds are scored sequence by sequence only when their sequence_ids are routed
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            VBHiddenMarkov(emission="gaussian", covariance_type="diag", max_iter=100, random_state=0)
            .set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True),
            {"n_components": [1, 3]},
            cv=GroupKFold(n_splits=3),
        )
        search.fit(X, groups=ids, sequence_ids=ids)
        assert search.best_params_["n_components"] == 3
        assert search.best_estimator_.n_features_in_ == 2
        scores = cross_val_score(
            VBHiddenMarkov(3, emission="gaussian", max_iter=50, random_state=0)
            .set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True),
            X, cv=GroupKFold(n_splits=3), params={"sequence_ids": ids, "groups": ids},
        )
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_pipeline_with_scaler_gaussian():
    X, states, lengths = gaussian_sequences(n_seq=6)
    X_scaled_input = X * [100.0, 0.01] + [5.0, -3.0]  # badly scaled features
    pipe = make_pipeline(
        StandardScaler(), VBHiddenMarkov(3, emission="gaussian", max_iter=200, n_init=2, random_state=0)
    )
    pipe.fit(X_scaled_input, vbhiddenmarkov__lengths=lengths)
    hmm = pipe[-1]
    assert hmm.n_effective_components_ == 3
    pred = pipe.predict(X_scaled_input)
    # every true state maps to one predicted label (up to relabelling)
    agreement = sum(np.bincount(pred[states == k]).max() for k in range(3)) / len(states)
    assert agreement > 0.95
    assert np.isfinite(pipe.score(X_scaled_input))


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_gaussian_recovers_structure(covariance_type):
    X, states, lengths = gaussian_sequences()
    model = VBHiddenMarkov(
        6, emission="gaussian", covariance_type=covariance_type, max_iter=500, n_init=5, tol=1e-4, init_params="random",
        random_state=0,
    ).fit(X, lengths=lengths)
    assert model.n_effective_components_ == 3
    used = np.argsort(model.occupancy_)[::-1][:3]
    np.testing.assert_allclose(
        np.sort(model.means_[used], axis=0), np.sort(np.array([[0, 0], [4, 0], [0, 4.0]]), axis=0), atol=0.3
    )
    Xs, zs = model.sample(200, random_state=0)
    assert Xs.shape == (200, 2)
    # switched-off states keep a small posterior-mean probability, so they are rarely visited
    assert np.isin(zs, used).mean() > 0.9
