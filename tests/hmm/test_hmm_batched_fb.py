"""The batched forward-backward (all sequences' steps as one matrix product) against the
per-sequence recursion: the same outputs to round-off on ragged problems, and the same
fits."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.hmm import _vbem
from sklearn_vb.hmm._blas_threads import forward_backward_blas
from sklearn_vb.hmm._clamp import clamp_table
from sklearn_vb.hmm._inputs import forward_backward_inputs
from sklearn_vb.hmm.forward_backward import (forward_backward, forward_backward_levels,
                                             forward_backward_scaled_levels_as)
from sklearn_vb.hmm.forward_backward_batched import (BATCH_MIN_ROWS, BATCH_MIN_STATES,
                                                     BATCH_MIN_STATES_FRAME_TABLE,
                                                     batch_pays_off, length_groups)
from sklearn_vb.hmm.kernels import scale_rows

RTOL = 1e-12


def _problem(K, lengths, L=1, rows=None, counted=False, impossible=False, seed=0):
    """Arguments of ``forward_backward_scaled_levels_as`` (without the last two) for
    sequences of ``lengths``: a per-frame emission table (``rows`` None) or one of
    ``rows`` shared rows, ``L`` input levels, counted ranges that leave out a frame at
    either end of some sequences, and with ``impossible`` emission rows no state (or
    only some states) can produce."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    T = int(lengths.sum())
    ends = np.cumsum(lengths)
    starts = ends - lengths
    log_pi = np.log(rng.dirichlet(np.ones(K)))
    log_A = np.log(rng.dirichlet(np.ones(K), size=(L, K)))
    if rows is None:
        log_b = 3.0 * rng.normal(size=(T, K))
        index = np.arange(T, dtype=np.int64)
    else:
        log_b = np.log(rng.dirichlet(np.ones(K), size=rows))
        index = rng.integers(rows, size=T).astype(np.int64)
    if impossible:
        log_b[rng.random(log_b.shape) < 0.3] = -np.inf
        log_b[rng.random(log_b.shape[0]) < 0.05] = -np.inf  # whole rows
    emis, shift = scale_rows(log_b)
    level = rng.integers(L, size=T).astype(np.int64)
    if counted:
        inner = lengths > 1
        c0 = starts + rng.integers(0, 2, size=lengths.size) * inner
        c1 = np.maximum(c0 + 1, ends - rng.integers(0, 2, size=lengths.size) * inner)
    else:
        c0, c1 = starts, ends
    return log_pi, log_A, level, emis, shift, index, starts, ends, c0, c1


def _assert_same(a, b):
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape
        finite = np.isfinite(x)
        np.testing.assert_array_equal(finite, np.isfinite(y))
        np.testing.assert_array_equal(x[~finite], y[~finite])
        scale = max(1.0, float(np.max(np.abs(x[finite]), initial=0.0)))
        np.testing.assert_allclose(x[finite], y[finite], rtol=RTOL, atol=RTOL * scale)


RAGGED = [[1], [9], [1, 1, 1], [5, 1, 3, 9, 1, 2], [4] * 12,
          list(np.random.default_rng(3).integers(1, 40, size=50))]


@pytest.mark.parametrize("K", [1, 2, 5, 13])
@pytest.mark.parametrize("lengths", RAGGED)
@pytest.mark.parametrize("L", [1, 3])
@pytest.mark.parametrize("rows", [None, 6])
def test_batched_equals_per_sequence(K, lengths, L, rows):
    args = _problem(K, lengths, L, rows, seed=K + len(lengths))
    for want in (True, False):
        _assert_same(forward_backward_scaled_levels_as(*args, want, True),
                     forward_backward_scaled_levels_as(*args, want, False))


@pytest.mark.parametrize("lengths", RAGGED[3:])
@pytest.mark.parametrize("L", [1, 2])
def test_batched_equals_per_sequence_on_counted_ranges(lengths, L):
    """The counted ranges of subchain SVI (statistics of the inner frames only)."""
    args = _problem(6, lengths, L, counted=True, seed=len(lengths))
    _assert_same(forward_backward_scaled_levels_as(*args, True, True),
                 forward_backward_scaled_levels_as(*args, True, False))


@pytest.mark.parametrize("L", [1, 2])
def test_batched_equals_per_sequence_on_impossible_frames(L):
    """Steps that no state can produce (zeta_t = 0, ln zeta_t = -inf) go on from uniform
    forward variables in both."""
    args = _problem(4, RAGGED[-1], L, impossible=True, seed=11)
    assert np.isneginf(forward_backward_scaled_levels_as(*args, False, False)[1]).any()
    for want in (True, False):
        _assert_same(forward_backward_scaled_levels_as(*args, want, True),
                     forward_backward_scaled_levels_as(*args, want, False))


@pytest.mark.parametrize(("L", "counted"), [(1, False), (2, True)])
def test_batched_equals_per_sequence_over_several_groups(L, counted):
    """Long sequences run in several groups (each some megabytes of forward variables),
    which share the statistics."""
    K = 13
    lengths = np.random.default_rng(4).integers(1, 2500, size=300)
    order = np.argsort(-lengths, kind="mergesort")
    bounds = length_groups(lengths, order, K * 8)
    assert bounds.size > 3 and np.all(np.diff(bounds)[:-1] >= 32)
    args = _problem(K, lengths, L, rows=9, counted=counted, seed=8)
    for want in (True, False):
        _assert_same(forward_backward_scaled_levels_as(*args, want, True),
                     forward_backward_scaled_levels_as(*args, want, False))


def test_log_weight_kernels_choose_the_batch_and_agree_with_known_states():
    """The entry points from log-weights run batched where it pays off; with known
    states clamped (rows of their own, other states at -inf) the results are those of
    the per-sequence recursion."""
    K, lengths = 12, [30] * 20
    args = _problem(K, lengths, rows=7, seed=5)
    log_pi, log_A, level, _, _, index, starts, ends, _, _ = args
    rng = np.random.default_rng(6)
    table = np.log(rng.dirichlet(np.ones(K), size=7))
    known = np.where(rng.random(index.size) < 0.1, rng.integers(K, size=index.size), -1)
    table, index, _ = clamp_table(table, index, known)
    assert batch_pays_off(starts, ends, K, table.shape[0], index.size)
    _assert_same(forward_backward(log_pi, log_A[0], table, index, starts, ends, True),
                 forward_backward(log_pi, log_A[0], table, index, starts, ends, True, False))
    log_A3 = np.log(rng.dirichlet(np.ones(K), size=(3, K)))
    level = rng.integers(3, size=index.size).astype(np.int64)
    _assert_same(
        forward_backward_levels(log_pi, log_A3, level, table, index, starts, ends, True),
        forward_backward_levels(log_pi, log_A3, level, table, index, starts, ends, True,
                                False))


def test_batch_pays_off_only_for_many_sequences_and_states():
    def starts_ends(lengths):
        ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
        return ends - np.asarray(lengths), ends

    many = starts_ends([100] * BATCH_MIN_ROWS)
    T = 100 * BATCH_MIN_ROWS
    assert batch_pays_off(*many, BATCH_MIN_STATES, 30, T)
    assert not batch_pays_off(*many, BATCH_MIN_STATES - 1, 30, T)
    assert batch_pays_off(*many, BATCH_MIN_STATES_FRAME_TABLE, T, T)
    assert not batch_pays_off(*many, BATCH_MIN_STATES_FRAME_TABLE - 1, T, T)
    # one long sequence and a few short ones: the steps average under the minimum
    assert not batch_pays_off(*starts_ends([1000] + [10] * 50), 50, 30, 1500)
    assert not batch_pays_off(*starts_ends([100] * (BATCH_MIN_ROWS - 1)), 50, 30, T)
    assert not batch_pays_off(*starts_ends([100] * 10 + [0]), 50, 30, 1000)


def _blas_threads():
    return sorted(info["num_threads"] for info in threadpool_info()
                  if info["user_api"] == "blas")


def test_batched_pass_runs_blas_on_one_thread_and_restores_it():
    table, index = np.zeros((600, 20)), np.arange(600)
    starts = np.arange(0, 600, 30)
    ends = starts + 30
    with forward_backward_blas(table, index, starts, ends):  # loads the BLAS it limits
        pass
    before = _blas_threads()
    with forward_backward_blas(table, index, starts, ends):
        assert set(_blas_threads()) == {1}
        with forward_backward_blas(table, index, starts, ends):
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before
    inside = []

    def other_thread():
        with forward_backward_blas(table, index, starts, ends):
            inside.append(_blas_threads())

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert set(inside[0]) == {1}
    assert _blas_threads() == before
    with forward_backward_blas(table, index, starts[:1], ends[:1]):  # not batched
        assert _blas_threads() == before


@pytest.fixture
def per_sequence_fits(monkeypatch):
    """Fits whose VBE steps run the sequences one after another."""
    def unbatched(*args):
        return forward_backward_inputs(*args, allow_batched=False)

    def fit(make):
        with monkeypatch.context() as patch:
            patch.setattr(_vbem, "forward_backward_inputs", unbatched)
            return make()

    return fit


def _categorical_data(K, n_sequences, length, seed=0):
    rng = np.random.default_rng(seed)
    transmat = 0.7 * np.eye(K) + 0.3 * rng.dirichlet(np.ones(K), size=K)
    emission = rng.dirichlet(0.3 * np.ones(8), size=K)
    X, states, lengths = make_hmm_sequences(np.ones(K) / K, transmat, emission,
                                            np.full(n_sequences, length), random_state=seed)
    return X, states, lengths


def test_fit_with_many_sequences_unchanged(per_sequence_fits):
    """The fit's bound, posteriors and marginals are those of per-sequence passes."""
    K = BATCH_MIN_STATES + 2
    X, _, lengths = _categorical_data(K, 3 * BATCH_MIN_ROWS, 40)
    ends = np.cumsum(lengths)
    assert batch_pays_off(ends - lengths, ends, K, 9, X.shape[0])

    def make():
        est = VBHiddenMarkov(n_components=K, n_symbols=8, max_iter=40, tol=0.0,
                             random_state=0)
        return est.fit(X, lengths=lengths)

    with pytest.warns(Warning):  # does not converge with tol=0
        batched = make()
        reference = per_sequence_fits(make)
    np.testing.assert_allclose(batched.lower_bound_, reference.lower_bound_, rtol=1e-10)
    np.testing.assert_allclose(batched.transmat_, reference.transmat_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(batched.predict_proba(X, lengths=lengths),
                               reference.predict_proba(X, lengths=lengths), atol=1e-9)


def test_gaussian_and_input_driven_fits_with_many_sequences_unchanged(per_sequence_fits):
    K = BATCH_MIN_STATES_FRAME_TABLE
    rng = np.random.default_rng(1)
    _, states, lengths = _categorical_data(K, 2 * BATCH_MIN_ROWS, 30, seed=1)
    X = rng.normal(size=(K, 2))[states] * 3.0 + rng.normal(size=(states.size, 2))
    U = rng.integers(2, size=states.size)

    def make_gaussian():
        return VBHiddenMarkov(n_components=K, emission="gaussian", covariance_type="diag",
                              max_iter=15, tol=0.0, random_state=0).fit(X, lengths=lengths)

    def make_inputs():
        return VBHiddenMarkov(n_components=K, emission="gaussian", covariance_type="diag",
                              transition_inputs="categorical", max_iter=15, tol=0.0,
                              random_state=0).fit(X, lengths=lengths, U=U)

    with pytest.warns(Warning):
        for make in (make_gaussian, make_inputs):
            np.testing.assert_allclose(make().lower_bound_,
                                       per_sequence_fits(make).lower_bound_, rtol=1e-10)
