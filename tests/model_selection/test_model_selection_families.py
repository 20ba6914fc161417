"""StructureSearch with the package estimators: the true size is picked on data drawn
from a known model of each family; pipelines; sequence-aware cross-validation."""

import warnings

import numpy as np
import sklearn
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_vb import VBHiddenMarkov, VBLinearDynamicalSystem, VBMixtureFactorAnalysers
from sklearn_vb.datasets import (
    make_hmm_sequences,
    make_lds,
    make_lds_params,
    make_mixed_dimension_clusters,
)
from sklearn_vb.model_selection import (
    SequenceKFold,
    StructureSearch,
    lengths_to_sequence_ids,
    sequence_ids_to_lengths,
)

SEEDS = [0, 1, 2]


def hmm_data(seed, K=3, M=6, lengths=(100,) * 6):
    trans = np.full((K, K), 0.05) + np.eye(K) * (1 - 0.05 * K)
    emis = np.full((K, M), 0.02)
    for k in range(K):
        emis[k, 2 * k : 2 * k + 2] = 0.47
    emis /= emis.sum(axis=1, keepdims=True)
    X, _, lengths = make_hmm_sequences(np.ones(K) / K, trans, emis, list(lengths), random_state=seed)
    return X, lengths


def _assert_table_sorted_and_complete(search, size_param, grid):
    table = search.results_table()
    assert len(table) == len(grid)
    assert sorted(table[f"param_{size_param}"]) == sorted(grid)
    scores = table["score_vb"].to_numpy(dtype=float)
    assert np.all(np.isfinite(scores)) and np.all(np.diff(scores) <= 0)
    assert list(table["rank"]) == list(range(1, len(grid) + 1))
    assert not table["fit_failed"].any()
    assert (table["fit_time"] > 0).all() and (table["n_iter"] > 0).all()
    assert set(table["bound_vb"]) == {"lower"}


@pytest.mark.parametrize("seed", SEEDS)
def test_hmm_number_of_states(seed):
    X, lengths = hmm_data(seed)
    grid = [1, 2, 3, 4, 5]
    search = StructureSearch(VBHiddenMarkov(n_init=3, max_iter=200), {"n_components": grid},
                             random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, lengths=lengths)
    assert search.best_params_ == {"n_components": 3}
    _assert_table_sorted_and_complete(search, "n_components", grid)
    assert search.predict(X, lengths=lengths).shape == (len(X),)


@pytest.mark.parametrize("seed", SEEDS)
def test_mfa_number_of_components(seed):
    X, _ = make_mixed_dimension_clusters(n_samples_per_cluster=50, dims=(1, 2, 1), n_features=5,
                                         random_state=seed)
    grid = [2, 3, 4]
    search = StructureSearch(VBMixtureFactorAnalysers(search=False, max_iter=100, tol=1e-1),
                             {"n_components": grid}, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X)
    assert search.best_params_ == {"n_components": 3}
    _assert_table_sorted_and_complete(search, "n_components", grid)


@pytest.mark.parametrize("seed", SEEDS)
def test_lds_state_dimension(seed):
    params = make_lds_params(n_states=2, n_outputs=5, random_state=seed)
    X, _ = make_lds(params, [80, 80], random_state=seed)
    grid = [1, 2, 3]
    search = StructureSearch(VBLinearDynamicalSystem(ard=False, max_iter=100, tol=1e-2),
                             {"n_states": grid}, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, lengths=[80, 80])
    assert search.best_params_ == {"n_states": 2}
    _assert_table_sorted_and_complete(search, "n_states", grid)
    assert search.transform(X, lengths=[80, 80]).shape == (160, 2)


def test_pipeline_with_mixture_of_factor_analysers():
    X, labels = make_mixed_dimension_clusters(n_samples_per_cluster=50, dims=(1, 2, 1),
                                              n_features=5, random_state=0)
    X = X * np.array([1.0, 10.0, 0.1, 5.0, 1.0])  # badly scaled features
    pipe = make_pipeline(
        StandardScaler(),
        StructureSearch(VBMixtureFactorAnalysers(search=False, max_iter=100, tol=1e-1),
                        {"n_components": [2, 3, 4]}, random_state=0),
    )
    assert clone(pipe).get_params()["structuresearch__param_grid"] == {"n_components": [2, 3, 4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X)
    search = pipe[-1]
    assert search.best_params_ == {"n_components": 3}
    pred = pipe.predict(X)
    # the clusters are recovered up to relabelling
    agree = max(np.mean(pred[labels == c] == np.bincount(pred[labels == c]).argmax())
                for c in range(3))
    assert agree > 0.95
    Xs = pipe[0].transform(X)
    assert pipe.score(X) == pytest.approx(search.best_estimator_.score(Xs))
    assert pipe.transform(X).shape[0] == len(X)


# --------------------------------------------------------------------------- splitting
def test_sequence_kfold_never_cuts_a_sequence():
    lengths = np.array([5, 9, 3, 7, 4, 6, 8])
    ids = lengths_to_sequence_ids(lengths)
    np.testing.assert_array_equal(sequence_ids_to_lengths(ids), lengths)
    X = np.arange(ids.size, dtype=float)[:, None]
    seen = np.zeros(ids.size, dtype=int)
    for train, test in SequenceKFold(n_splits=3).split(X, groups=ids):
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)  # time order kept
        assert not set(ids[train]) & set(ids[test])
        for part in (train, test):
            for s in np.unique(ids[part]):
                assert np.sum(ids[part] == s) == lengths[s]  # whole sequences only
            # the sliced ids still describe contiguous sequences
            np.testing.assert_array_equal(
                np.sort(sequence_ids_to_lengths(ids[part])), np.sort(lengths[np.unique(ids[part])])
            )
        seen[test] += 1
    assert np.all(seen == 1)


def test_sequence_kfold_errors():
    X = np.zeros((6, 1))
    with pytest.raises(ValueError, match="groups=sequence_ids"):
        list(SequenceKFold(2).split(X))
    with pytest.raises(ValueError, match="contiguous"):
        list(SequenceKFold(2).split(X, groups=[0, 0, 1, 1, 0, 0]))
    with pytest.raises(ValueError, match="number of sequences"):
        list(SequenceKFold(3).split(X, groups=[0, 0, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match="lengths must be positive"):
        lengths_to_sequence_ids([3, 0])



def test_sequence_id_checks_agree_with_the_estimators_checks():
    """The splitter helpers and ``check_sequences`` share one check, and each message
    names the argument it was given."""
    from sklearn_vb._core.validation import check_sequences

    ids = np.array([4, 4, 4, 9, 9, 2, 2, 2, 2])
    np.testing.assert_array_equal(sequence_ids_to_lengths(ids), [3, 2, 4])
    np.testing.assert_array_equal(check_sequences(ids.size, sequence_ids=ids), [3, 2, 4])
    X = np.zeros((6, 1))
    split = [0, 0, 7, 7, 0, 1]  # id 0 appears in two separate blocks
    for call, argname in [
        (lambda: sequence_ids_to_lengths(split), "sequence_ids"),
        (lambda: check_sequences(6, sequence_ids=split), "sequence_ids"),
        (lambda: list(SequenceKFold(2).split(X, groups=split)), r"groups \(sequence ids\)"),
    ]:
        with pytest.raises(ValueError, match=rf"^{argname} must label contiguous blocks of rows: id 0 "):
            call()
    for bad, what in [([2, 0], "positive"), ([1.5, 2], "integers"), ([], "non-empty")]:
        with pytest.raises(ValueError, match=f"^lengths must be .*{what}"):
            lengths_to_sequence_ids(bad)
        with pytest.raises(ValueError, match=f"^lengths must be .*{what}"):
            check_sequences(3, lengths=bad)

def test_grid_search_and_cross_val_score_with_sequence_ids():
    X, lengths = hmm_data(0, lengths=(60,) * 6)
    ids = lengths_to_sequence_ids(lengths)
    cv = SequenceKFold(n_splits=3)
    with warnings.catch_warnings(), sklearn.config_context(enable_metadata_routing=True):
        warnings.simplefilter("ignore")
        gs = GridSearchCV(VBHiddenMarkov(n_init=2, max_iter=100, random_state=0)
                          .set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True),
                          {"n_components": [1, 3]}, cv=cv).fit(X, groups=ids, sequence_ids=ids)
        scores = cross_val_score(VBHiddenMarkov(n_components=3, max_iter=100, random_state=0)
                                 .set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True),
                                 X, cv=cv, params={"sequence_ids": ids, "groups": ids})
    assert gs.best_params_ == {"n_components": 3}
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_two_stage_with_annealed_importance_sampling():
    from sklearn_vb.scoring import get_scorer

    X, lengths = hmm_data(0, lengths=(50,) * 4)
    # annealing from the prior (not from q, the default here) with 200 temperatures
    ais = get_scorer("ais", n_temperatures=200, n_chains=4, start="prior")
    search = StructureSearch(VBHiddenMarkov(n_init=3, max_iter=200), {"n_components": [2, 3, 4]},
                             rescoring=ais, rescore_top_k=2, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, lengths=lengths)
    r = search.results_
    assert search.selection_score_ == "ais" and search.scorer_names_ == ["vb", "ais"]
    top2 = np.argsort(-r["score_vb"])[:2]
    np.testing.assert_array_equal(np.flatnonzero(r["rescored"]), np.sort(top2))
    assert np.isfinite(r["raw_score_ais"][top2]).all() and np.isfinite(r["stderr_ais"][top2]).all()
    assert set(r["bound_ais"][top2]) == {"stochastic_lower"}
    # "auto": AIS is ranked raw, while ln K! is still reported
    np.testing.assert_allclose(r["score_ais"][top2], r["raw_score_ais"][top2])
    assert search.best_index_ in top2
    assert search.best_score_ == pytest.approx(np.nanmax(r["score_ais"]))
    # 200 temperatures are far too few here: AIS falls below the VB bound, and says so
    below = r["raw_score_ais"][top2] < r["raw_score_vb"][top2]
    assert below.any()
    assert any("below the vb lower bound" in str(w.message) for w in caught)
