"""Batch VBEM of VBDiscreteDAG on a dask array, on a local cluster of two workers.

The VBE step runs one task per row chunk and the client adds the expected counts, the
log normalisers and the entropies in chunk order; the in-memory fit adds them inside one
compiled pass, so the two agree to rounding (rtol 1e-10), not bit for bit.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG
from tests.dask_cluster import lose_a_worker_at_pass

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

RTOL = 1e-10
PARAMS = dict(n_components=3, random_state=0, max_iter=60)


def _latent_class(n=1200, seed=0):
    """Five binary-or-ternary columns driven by a three-state latent class, some entries
    missing; the value 2 of column 0 occurs only in the last rows (the last chunk)."""
    rng = np.random.RandomState(seed)
    z = rng.randint(3, size=n)
    X = np.column_stack([(rng.rand(n) < 0.15 + 0.35 * z).astype(float)
                         + (rng.rand(n) < 0.3) for _ in range(5)])
    X[:, 0] = np.minimum(X[:, 0], 1.0)
    X[-7:, 0] = 2.0
    X[rng.rand(*X.shape) < 0.05] = np.nan
    return X


def _fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a capped run: not converged
        return VBDiscreteDAG(**{**PARAMS, **params}).fit(X)


def _assert_same_fit(a, b):
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.lower_bounds_, b.lower_bounds_, rtol=RTOL)
    np.testing.assert_allclose(a.lower_bound_, b.lower_bound_, rtol=RTOL)
    np.testing.assert_allclose(a.log_likelihood_, b.log_likelihood_, rtol=RTOL)
    for x, y in zip(a.posterior_, b.posterior_):
        np.testing.assert_allclose(x, y, rtol=RTOL)
    for x, y in zip(a.expected_counts_, b.expected_counts_):
        np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-9)
    for x, y in zip(a.categories_, b.categories_):
        np.testing.assert_array_equal(x, y)


def test_dask_fit_equals_in_memory(dask_client):
    X = _latent_class()
    X_before = X.copy()
    Xd = da.from_array(X, chunks=(300, 2))  # columns in chunks too: the fit joins them
    ref = _fit(X)
    with distributed.get_task_stream(dask_client) as stream:
        fit = _fit(Xd)
    n_vbe = sum(str(t["key"]).startswith("vbe_statistics") for t in stream.data)
    assert n_vbe >= fit.n_iter_ * Xd.numblocks[0]  # the VBE steps ran on the cluster
    _assert_same_fit(fit, ref)
    assert fit.extrapolations_ == ref.extrapolations_  # the same SQUAREM decisions
    assert list(fit.categories_[0]) == [0.0, 1.0, 2.0]  # a value seen in one chunk only
    np.testing.assert_array_equal(X, X_before)


def test_dask_fit_with_a_declared_structure_equals_in_memory(dask_client):
    rng = np.random.RandomState(1)
    h = rng.rand(600) < 0.4
    a = h ^ (rng.rand(600) < 0.1)
    b = (h & a) ^ (rng.rand(600) < 0.1)
    c = b ^ (rng.rand(600) < 0.2)
    X = np.column_stack([a, b, c]).astype(float)
    params = dict(structure={"h": [], "a": ["h"], "b": ["h", "a"], "c": ["b"]},
                  hidden="h", cardinalities={"h": 2, "a": 2, "b": 2, "c": 2}, max_iter=40)
    ref = _fit(X, **params)
    fit = _fit(da.from_array(X, chunks=(250, 3)), **params)
    _assert_same_fit(fit, ref)


def test_without_a_client_the_local_scheduler_runs_the_chunks():
    X = _latent_class(500)
    _assert_same_fit(_fit(da.from_array(X, chunks=(200, 5)), n_init=2), _fit(X, n_init=2))


def test_a_worker_lost_mid_fit_changes_nothing(dask_cluster, monkeypatch):
    """One of the two workers is closed while the tasks of a VBE step are on the
    cluster: its chunks and tasks are recomputed on the other and the fit ends as the
    undisturbed one."""
    X = _latent_class(600)
    Xd = da.from_array(X, chunks=(200, 5))
    ref = _fit(X, n_init=1)
    calls = lose_a_worker_at_pass(6, dask_cluster, monkeypatch)
    with distributed.Client(dask_cluster) as client:
        fit = _fit(Xd, n_init=1)
        assert len(client.scheduler_info()["workers"]) == 1  # the worker was lost
    assert len(calls) > 6
    _assert_same_fit(fit, ref)


def test_what_a_dask_fit_does_not_combine_with():
    X = _latent_class(200)
    Xd = da.from_array(X, chunks=(100, 5))
    with pytest.raises(ValueError, match="batch VBEM"):
        VBDiscreteDAG(method="map").fit(Xd)
    with pytest.raises(ValueError, match="batch VBEM"):
        VBDiscreteDAG(learning_method="online").fit(Xd)
    with pytest.raises(ValueError, match="sample_weight"):
        VBDiscreteDAG().fit(Xd, sample_weight=np.ones(200))
    with pytest.raises(ValueError, match="must hold numbers"):
        VBDiscreteDAG().fit(da.from_array(np.array([["a", "b"]] * 4, dtype=object),
                                          chunks=(2, 2)))


def test_the_package_imports_without_dask():
    code = "import sys, sklearn_vb, sklearn_vb.dag; assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
