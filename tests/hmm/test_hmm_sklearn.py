"""VBHiddenMarkov inside scikit-learn: estimator checks, grid search over sequences,
pipelines."""

import numpy as np
import sklearn
import pytest
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.hmm import VBHiddenMarkov

_INDEXES_1D_AS_2D = (
    "scikit-learn's check converts X to the 1-D symbol array that the categorical "
    "instance's one_d_array tag asks for, then itself indexes it as 2-D (X[:, 0] or "
    "X.shape[1]) before the estimator is called"
)
CATEGORICAL_EXPECTED_FAILURES = {
    name: _INDEXES_1D_AS_2D
    for name in (
        "check_dont_overwrite_parameters",
        "check_n_features_in_after_fitting",
        "check_dtype_object",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_n_features_in",
        "check_fit2d_predict1d",
    )
}
CATEGORICAL_EXPECTED_FAILURES["check_estimator_sparse_array"] = (
    "scikit-learn's check converts the 1-D symbol array to a 1-D sparse array and fails "
    "in scipy ('Cannot convert a 1d sparse array to lil format') before the estimator is "
    "called; sparse matrices are rejected with a clear TypeError (check_estimator_sparse_matrix "
    "and check_estimator_sparse_tag pass)"
)


def expected_failed_checks(estimator):
    return CATEGORICAL_EXPECTED_FAILURES if estimator.emission == "categorical" else {}


@parametrize_with_checks(
    [
        VBHiddenMarkov(2, emission="gaussian", covariance_type="full", max_iter=5, random_state=0),
        VBHiddenMarkov(3, emission="gaussian", covariance_type="diag", max_iter=5, random_state=0),
        VBHiddenMarkov(2, max_iter=5, random_state=0),  # categorical: X is a 1-D array of symbols
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


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
