"""Batch VBEM of VBHiddenMarkov on a dask array, on a local cluster of two workers.

The E step runs one task per row chunk (whole sequences) and sums the statistics in
chunk order; the in-memory fit sums inside one forward-backward pass, so the two agree
to rounding (rtol 1e-10), not bit for bit.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.hmm import sequence_chunks
from tests.dask_cluster import lose_a_worker_at_pass

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

RTOL = 1e-10


def _categorical():
    X, _, lengths = make_hmm_sequences(
        [0.6, 0.4], [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]],
        [40, 60, 50, 30, 70, 50], random_state=0)
    return X, np.asarray(lengths)


def _gaussian():
    rng = np.random.RandomState(1)
    lengths = np.array([30, 50, 40, 40, 60])
    states = np.concatenate([np.repeat(rng.randint(2, size=n // 10), 10) for n in lengths])
    X = rng.normal(size=(states.size, 2)) + 3.0 * states[:, None] + 100.0
    return X, lengths


def _fit(X, lengths, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: not converged
        return VBHiddenMarkov(random_state=0, **params).fit(X, lengths=lengths)


def _fit_on_cluster(client, Xd, lengths, **params):
    """The fit, checked to have run its VBE steps as tasks on the cluster."""
    with distributed.get_task_stream(client) as stream:
        fit = _fit(Xd, lengths, **params)
    n_vbe = sum(str(task["key"]).startswith("vbe_statistics") for task in stream.data)
    assert n_vbe >= fit.n_iter_ * Xd.numblocks[0]
    return fit


def _assert_same_fit(a, b):
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.lower_bounds_, b.lower_bounds_, rtol=RTOL)
    for name in ("startprob_posterior_", "transmat_posterior_") + tuple(
            f"{n}_posterior_" for n in a._family.hyper_names):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=RTOL,
                                   err_msg=name)
    for name, value in a.lower_bound_terms_.items():
        np.testing.assert_allclose(value, b.lower_bound_terms_[name], rtol=RTOL,
                                   err_msg=name)


CATEGORICAL = dict(n_components=3, max_iter=25)
GAUSSIAN = dict(n_components=2, emission="gaussian", max_iter=15)


@pytest.mark.parametrize("init_params", ["auto", "random_marginals", "context"])
def test_categorical_dask_fit_equals_in_memory(dask_client, init_params):
    X, lengths = _categorical()
    X_before = X.copy()
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, 100), 1))
    assert Xd.numblocks[0] == 3
    ref = _fit(X, lengths, init_params=init_params, **CATEGORICAL)
    fit = _fit_on_cluster(dask_client, Xd, lengths, init_params=init_params, **CATEGORICAL)
    _assert_same_fit(fit, ref)
    assert fit.n_symbols_ == ref.n_symbols_ == 3
    np.testing.assert_array_equal(X, X_before)


@pytest.mark.parametrize("init_params", ["kmeans", "random"])
def test_gaussian_dask_fit_equals_in_memory(dask_client, init_params):
    X, lengths = _gaussian()
    X_before = X.copy()
    # columns in two chunks too: the fit joins them
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, 70), 1))
    ref = _fit(X, lengths, init_params=init_params, **GAUSSIAN)
    fit = _fit_on_cluster(dask_client, Xd, lengths, init_params=init_params, **GAUSSIAN)
    _assert_same_fit(fit, ref)
    # the data-dependent prior, from moments merged over the chunks
    np.testing.assert_allclose(fit.means_prior_, ref.means_prior_, rtol=RTOL)
    np.testing.assert_allclose(fit.scale_prior_, ref.scale_prior_, rtol=RTOL)
    np.testing.assert_array_equal(X, X_before)


def _with_missing(X, lengths, rows, seed):
    """X as floats with NaN at some entries of ``rows`` (the first sequence, its own
    chunk, is left complete: chunks with and without missing values are summed)."""
    X = np.asarray(X, dtype=float).copy()
    rng = np.random.RandomState(seed)
    rows = np.asarray(rows) + lengths[0]
    X[rows, rng.randint(X.shape[1], size=rows.size)] = np.nan
    return X


@pytest.mark.parametrize("case, init_params", [
    ("categorical", "auto"), ("diag", "kmeans"), ("diag", "random"), ("full", "kmeans"),
    ("poisson", "kmeans")])
def test_missing_values_dask_fit_equals_in_memory(dask_client, case, init_params):
    if case == "categorical":
        X, lengths = _categorical()
        params = dict(CATEGORICAL)
    elif case in ("diag", "full"):
        X, lengths = _gaussian()
        params = dict(GAUSSIAN, covariance_type=case)
    else:
        X, lengths = _gaussian()
        X = np.random.RandomState(2).poisson(np.abs(X - 100.0) + 0.5).astype(float)
        params = dict(n_components=2, emission="poisson", max_iter=15)
    X = _with_missing(X, lengths, [0, 3, 17, 60, 61, 90, 130], seed=0)
    X_before = X.copy()
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, lengths[0]), X.shape[1]))
    assert Xd.numblocks[0] >= 3
    ref = _fit(X, lengths, init_params=init_params, **params)
    fit = _fit_on_cluster(dask_client, Xd, lengths, init_params=init_params, **params)
    _assert_same_fit(fit, ref)
    # the data-dependent default prior ignores the missing entries as in memory
    for name in ("means_prior_", "scale_prior_", "rate_shape_prior_", "rate_rate_prior_"):
        if hasattr(ref, name):
            np.testing.assert_allclose(getattr(fit, name), getattr(ref, name), rtol=RTOL,
                                       err_msg=name)
    if case == "categorical":
        assert fit.n_symbols_ == ref.n_symbols_ == 3
    elif case != "full":  # per state and dimension: the counts of the chunks were added
        attr = "beta_posterior_" if case == "diag" else "rate_rate_posterior_"
        assert getattr(fit, attr).shape == (2, X.shape[1])
    np.testing.assert_array_equal(X, X_before)


def test_missing_values_refused_on_dask_as_in_memory(dask_client):
    X, lengths = _gaussian()
    X = _with_missing(X, lengths, [5], seed=0)
    X[:, 1] = np.nan
    with pytest.raises(ValueError, match="X: feature 1 is missing"):
        _fit(da.from_array(X, chunks=(sequence_chunks(lengths, 70), 2)), lengths,
             covariance_type="diag", **GAUSSIAN)


def test_without_a_client_the_local_scheduler_runs_the_chunks():
    X, lengths = _categorical()
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, 100), 1))
    _assert_same_fit(_fit(Xd, lengths, init_params="random_params", **CATEGORICAL),
                     _fit(X, lengths, init_params="random_params", **CATEGORICAL))


def test_a_worker_lost_mid_fit_changes_nothing(dask_cluster, monkeypatch):
    """One of the two workers is closed while the tasks of an iteration's VBE step are
    on the cluster: its chunks and tasks are recomputed on the other worker and the
    fit ends as the undisturbed one."""
    X, lengths = _categorical()
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, 100), 1))
    ref = _fit(X, lengths, init_params="random_params", **CATEGORICAL)

    calls = lose_a_worker_at_pass(8, dask_cluster, monkeypatch)
    with distributed.Client(dask_cluster) as client:
        fit = _fit(Xd, lengths, init_params="random_params", **CATEGORICAL)
        assert len(client.scheduler_info()["workers"]) == 1  # the worker was lost
    assert len(calls) > 8
    _assert_same_fit(fit, ref)


def test_a_chunk_that_splits_a_sequence_is_refused():
    X, lengths = _categorical()
    Xd = da.from_array(X, chunks=(120, 1))  # 120 is inside the third sequence (100-150)
    with pytest.raises(ValueError, match=r"whole sequences.*rows 0-120 ends inside sequence 2 \(rows 100-150\)"):
        VBHiddenMarkov(random_state=0).fit(Xd, lengths=lengths)
    with pytest.raises(ValueError, match="lengths must sum"):
        VBHiddenMarkov(random_state=0).fit(Xd, lengths=lengths[:-1])


def test_what_a_dask_fit_does_not_combine_with():
    X, lengths = _categorical()
    Xd = da.from_array(X, chunks=(sequence_chunks(lengths, 100), 1))
    with pytest.raises(ValueError, match="batch VBEM"):
        VBHiddenMarkov(method="ml").fit(Xd, lengths=lengths)
    with pytest.raises(ValueError, match="batch VBEM"):
        VBHiddenMarkov(learning_method="online").fit(Xd, lengths=lengths)
    with pytest.raises(ValueError, match="not available for a dask array"):
        VBHiddenMarkov(init_params="random").fit(Xd, lengths=lengths)
    G, glengths = _gaussian()
    Gd = da.from_array(G, chunks=(sequence_chunks(glengths, 70), 1))
    with pytest.raises(ValueError, match="init_params='context' on a dask array"):
        VBHiddenMarkov(emission="gaussian", init_params="context").fit(Gd, lengths=glengths)


def test_sequence_chunks():
    assert sequence_chunks([3, 4, 2, 6, 1], 6) == (7, 8, 1)
    assert sequence_chunks([10, 1], 3) == (10, 1)
    assert sum(sequence_chunks(np.arange(1, 50), 100)) == np.arange(1, 50).sum()


def test_the_package_imports_without_dask():
    code = "import sys, sklearn_vb, sklearn_vb.hmm; assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _stream_equals(a, b):
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    for name in ("startprob_posterior_", "transmat_posterior_", "emissionprob_posterior_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_partial_fit_takes_the_chunks_of_a_dask_array_one_by_one():
    """Every block of a dask array of sequences given to partial_fit in turn (as dask
    arrays) makes the steps that partial_fit on all the rows in memory makes, when a
    block is one minibatch: the first call starts from its first minibatch either way."""
    X, _, lengths = make_hmm_sequences(
        [0.6, 0.4], [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]],
        [50] * 12, random_state=0)
    Xd = da.from_array(X, chunks=(100, 1))  # two sequences a block
    params = dict(n_components=2, random_state=0, batch_size=2, total_samples=12)
    streamed = VBHiddenMarkov(**params)
    for block in Xd.blocks:
        streamed.partial_fit(block, lengths=[50, 50])
    _stream_equals(streamed, VBHiddenMarkov(**params).partial_fit(X, lengths=lengths))
    assert streamed.n_iter_ == 6


def test_dask_ml_incremental_feeds_partial_fit():
    """dask-ml's Incremental wrapper calls partial_fit on every block in order: each
    block is one sequence (Incremental passes the same keyword arguments to every
    block) and y one entry per row (Incremental passes y blocks)."""
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, _, _ = make_hmm_sequences(
        [0.6, 0.4], [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]],
        [80] * 5, random_state=1)
    Xd = da.from_array(X, chunks=(80, 1))
    params = dict(n_components=2, random_state=0, batch_size=1, total_samples=5)
    inc = wrappers.Incremental(VBHiddenMarkov(**params), shuffle_blocks=False)
    inc.fit(Xd, da.zeros(Xd.shape[0], chunks=Xd.chunks[0]))
    loop = VBHiddenMarkov(**params)
    for block in Xd.blocks:
        loop.partial_fit(block)
    _stream_equals(inc.estimator_, loop)
