"""Batch VBEM of VBHiddenMarkov on partitions of sequences: a dask bag whose items are
sequences, or a list of dask delayed objects (each one sequence or a list of them), on
a local cluster of two workers.

The E step runs one task per partition and sums the statistics in partition order;
the in-memory fit of the same sequences in the same order sums inside one
forward-backward pass, so the two agree to rounding (rtol 1e-10), not bit for bit.
"""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from tests.dask_cluster import lose_a_worker_at_pass

from .test_hmm_dask import CATEGORICAL, GAUSSIAN, RTOL, _assert_same_fit, _categorical, \
    _fit, _gaussian

dask = pytest.importorskip("dask")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")


def _sequences(X, lengths):
    return [s.copy() for s in np.split(np.asarray(X), np.cumsum(lengths)[:-1])]


def _fit_bag_on_cluster(client, bag, n_partitions, **params):
    """The fit of ``bag`` (no lengths), checked to have run its VBE steps as tasks on
    the cluster, one per partition."""
    with distributed.get_task_stream(client) as stream:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # few iterations: not converged
            fit = VBHiddenMarkov(random_state=0, **params).fit(bag)
    n_vbe = sum(str(task["key"]).startswith("vbe_statistics") for task in stream.data)
    assert n_vbe >= fit.n_iter_ * n_partitions
    return fit


@pytest.mark.parametrize("init_params", ["auto", "random_marginals", "context"])
def test_categorical_bag_fit_equals_in_memory(dask_client, init_params):
    X, lengths = _categorical()
    seqs = _sequences(X, lengths)
    before = [s.copy() for s in seqs]
    bag = db.from_sequence(seqs, npartitions=3)
    assert bag.npartitions == 3
    ref = _fit(X, lengths, init_params=init_params, **CATEGORICAL)
    fit = _fit_bag_on_cluster(dask_client, bag, 3, init_params=init_params, **CATEGORICAL)
    _assert_same_fit(fit, ref)
    assert fit.n_symbols_ == ref.n_symbols_ == 3
    assert fit.n_features_in_ == 1
    for s, b in zip(seqs, before):
        np.testing.assert_array_equal(s, b)


@pytest.mark.parametrize("init_params", ["kmeans", "random"])
def test_gaussian_bag_fit_equals_in_memory(dask_client, init_params):
    X, lengths = _gaussian()
    bag = db.from_sequence(_sequences(X, lengths), npartitions=2)
    ref = _fit(X, lengths, init_params=init_params, **GAUSSIAN)
    fit = _fit_bag_on_cluster(dask_client, bag, bag.npartitions, init_params=init_params,
                              **GAUSSIAN)
    _assert_same_fit(fit, ref)
    # the data-dependent prior, from moments merged over the partitions
    np.testing.assert_allclose(fit.means_prior_, ref.means_prior_, rtol=RTOL)
    np.testing.assert_allclose(fit.scale_prior_, ref.scale_prior_, rtol=RTOL)
    assert fit.n_features_in_ == 2


def test_missing_values_bag_fit_equals_in_memory(dask_client):
    X, lengths = _gaussian()
    X = X.copy()
    rng = np.random.RandomState(0)
    rows = lengths[0] + np.array([0, 3, 17, 60, 61, 90, 130])
    X[rows, rng.randint(2, size=rows.size)] = np.nan
    bag = db.from_sequence(_sequences(X, lengths), npartitions=3)
    params = dict(GAUSSIAN, covariance_type="diag")
    ref = _fit(X, lengths, init_params="kmeans", **params)
    fit = _fit_bag_on_cluster(dask_client, bag, bag.npartitions, init_params="kmeans",
                              **params)
    _assert_same_fit(fit, ref)


def test_list_of_delayed_objects_and_an_empty_partition(dask_client):
    # a delayed object is one sequence (an array) or a list of sequences; a partition
    # without sequences is left out
    X, lengths = _categorical()
    seqs = _sequences(X, lengths)
    parts = [dask.delayed(seqs[0]), dask.delayed(list)(seqs[1:4]), dask.delayed([]),
             dask.delayed(seqs[4]), dask.delayed(seqs[5].ravel())]
    ref = _fit(X, lengths, init_params="random_marginals", **CATEGORICAL)
    fit = _fit_bag_on_cluster(dask_client, parts, 4, init_params="random_marginals",
                              **CATEGORICAL)
    _assert_same_fit(fit, ref)
    # the same partitions as a bag
    bag = db.from_delayed([dask.delayed(list)(seqs[:1]), dask.delayed(list)(seqs[1:4]),
                           dask.delayed([]), dask.delayed(list)(seqs[4:])])
    _assert_same_fit(_fit(bag, None, init_params="random_marginals", **CATEGORICAL), ref)


def test_without_a_client_the_local_scheduler_runs_the_partitions():
    X, lengths = _categorical()
    bag = db.from_sequence(_sequences(X, lengths), npartitions=3)
    _assert_same_fit(_fit(bag, None, init_params="random_params", **CATEGORICAL),
                     _fit(X, lengths, init_params="random_params", **CATEGORICAL))


def test_a_worker_lost_mid_fit_changes_nothing(dask_cluster, monkeypatch):
    """One of the two workers is closed while the tasks of an iteration's VBE step are
    on the cluster: its partitions and tasks are recomputed on the other worker and
    the fit ends as the undisturbed one."""
    X, lengths = _categorical()
    bag = db.from_sequence(_sequences(X, lengths), npartitions=3)
    ref = _fit(X, lengths, init_params="random_params", **CATEGORICAL)
    calls = lose_a_worker_at_pass(8, dask_cluster, monkeypatch)
    with distributed.Client(dask_cluster) as client:
        fit = _fit(bag, None, init_params="random_params", **CATEGORICAL)
        assert len(client.scheduler_info()["workers"]) == 1  # the worker was lost
    assert len(calls) > 8
    _assert_same_fit(fit, ref)


def test_what_a_bag_fit_does_not_combine_with():
    X, lengths = _categorical()
    seqs = _sequences(X, lengths)
    bag = db.from_sequence(seqs, npartitions=2)
    parts = [dask.delayed(s) for s in seqs]
    for data, name in ((bag, "a dask bag X"), (parts, "a list of dask delayed objects X")):
        with pytest.raises(ValueError, match=f"lengths is not used with {name}"):
            VBHiddenMarkov().fit(data, lengths=lengths)
        with pytest.raises(ValueError, match="batch VBEM"):
            VBHiddenMarkov(method="ml").fit(data)
        with pytest.raises(ValueError, match="batch VBEM"):
            VBHiddenMarkov(learning_method="online").fit(data)
        with pytest.raises(ValueError, match="sequence_ids is not supported"):
            VBHiddenMarkov().fit(data, sequence_ids=np.zeros(X.shape[0]))
        with pytest.raises(ValueError, match="states"):
            VBHiddenMarkov().fit(data, states=np.full(X.shape[0], -1))
        with pytest.raises(ValueError, match="transition_inputs"):
            VBHiddenMarkov(transition_inputs="categorical").fit(data, U=np.zeros(X.shape[0],
                                                                                  int))
        with pytest.raises(ValueError, match="U .transition inputs. is not supported"):
            VBHiddenMarkov().fit(data, U=np.zeros(X.shape[0], int))
        with pytest.raises(ValueError, match="not available for a dask array"):
            VBHiddenMarkov(init_params="random").fit(data)
        with pytest.raises(ValueError, match="partial_fit: a dask bag .* is read by fit only"):
            VBHiddenMarkov().partial_fit(data)
    model = _fit(X, lengths, **CATEGORICAL)
    for method in ("score", "predict", "predict_proba", "score_samples", "score_bound"):
        with pytest.raises(ValueError, match="X: a dask bag .* is read by fit only"):
            getattr(model, method)(bag)


@pytest.mark.parametrize("items, match", [
    ([np.zeros((0, 1), int)], "has no frames"),
    ([np.zeros((2, 2, 1), int)], r"1-D or \(n_frames, n_features\)"),
    ([np.zeros((3, 2)), np.zeros((3, 3))], "different numbers of features"),
    ([], "holds no sequence"),
])
def test_bad_partitions_are_named(items, match):
    with pytest.raises(ValueError, match=match):
        VBHiddenMarkov(emission="gaussian").fit(db.from_delayed([dask.delayed(list)(items)]))
