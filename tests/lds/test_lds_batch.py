"""The batched VB Kalman smoother (sequences sharing one covariance recursion) against
the per-sequence kernel: the same results to round-off, the same E step, the same fit."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import kalman_batch
from sklearn_vb.lds.inference import hidden_statistics, missing_outputs, smooth_states

from .test_lds_kernel import point_posterior, random_posterior

RTOL = 1e-10


@pytest.fixture
def per_sequence(monkeypatch):
    """Turn the batched path off (every sequence through the per-sequence kernel)."""
    def off():
        monkeypatch.setattr(kalman_batch, "BATCH_MIN_SEQUENCES", 10**9)
    return off


def _problem(seed, k=9, p=5, ds=2, do=1, lengths=(40,) * 9 + (17,) * 8 + (40,) * 2 + (5, 17)):
    rng = np.random.default_rng(seed)
    q = random_posterior(rng, k, p, ds, do)
    lengths = np.asarray(lengths)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    N = int(ends[-1])
    Y = rng.standard_normal((N, p))
    Us = rng.standard_normal((N, ds))
    Uo = rng.standard_normal((N, do))
    mu0 = rng.standard_normal(k)
    Sigma0 = 0.5 * np.eye(k) + 0.1
    return q, Y, Us, Uo, starts, ends, mu0, Sigma0


def _smooth(q, Y, Us, Uo, starts, ends, mu0, Sigma0, point=False, smooth=True):
    spread = {} if point else dict(Sigma_AB=q.Sigma_AB, Sigma_CD=q.Sigma_CD,
                                   log_rho=q.log_rho)
    return smooth_states(Y, Us, Uo, starts, ends, q.M_AB, q.M_CD, q.rho, mu0, Sigma0,
                         smooth=smooth, **spread)


def _assert_same(a, b, rtol=RTOL):
    for name, x, y in zip(a._fields, a, b):
        if y is None:
            assert x is None, name
            continue
        scale = max(np.max(np.abs(y)), 1.0) if np.size(y) else 1.0
        np.testing.assert_allclose(x, y, rtol=0, atol=rtol * scale, err_msg=name)


def test_groups_of_equal_length_fully_observed_sequences():
    _, Y, _, _, starts, ends, _, _ = _problem(0)
    observed = np.ones(Y.shape[0], dtype=bool)
    no_mask = np.zeros((0, Y.shape[1]), dtype=bool)
    groups = kalman_batch.batch_groups(observed, no_mask, starts, ends, 9)
    assert sorted(g.tolist() for g in groups) == [list(range(9)) + [17, 18],
                                                   list(range(9, 17)) + [20]]
    # too few states, or too few sequences of a length: the per-sequence kernel
    assert kalman_batch.batch_groups(observed, no_mask, starts, ends, 4) == []
    assert kalman_batch.batch_groups(observed, no_mask, starts, ends, 9,
                                     min_sequences=12) == []
    # a sequence with a missing entry or an unobserved step leaves its group
    mask = np.ones_like(Y, dtype=bool)
    mask[starts[3] + 5, 1] = False
    observed[starts[10] + 2] = False
    groups = kalman_batch.batch_groups(observed, mask, starts, ends, 9)
    assert len(groups) == 2 and not any(i in g for g in groups for i in (3, 10))


@pytest.mark.parametrize("point", [False, True])
@pytest.mark.parametrize("smooth", [True, False])
def test_batched_smoother_equals_per_sequence(per_sequence, point, smooth):
    args = _problem(1)
    batched = _smooth(*args, point=point, smooth=smooth)
    per_sequence()
    reference = _smooth(*args, point=point, smooth=smooth)
    _assert_same(batched, reference)
    # the covariance recursion is the per-sequence kernel's, step for step
    for name in ("pred_cov", "filt_cov", "ups", "cross", "ups0", "entropy"):
        assert np.array_equal(getattr(batched, name), getattr(reference, name)), name


def test_batched_smoother_in_the_steady_state(per_sequence):
    """Long sequences reach the covariance recursion's fixed point, where both paths
    copy the covariances of the step before."""
    args = _problem(2, k=8, p=12, ds=0, do=0, lengths=(600,) * 8 + (350,) * 9)
    batched = _smooth(*args)
    per_sequence()
    reference = _smooth(*args)
    _assert_same(batched, reference)
    assert np.array_equal(batched.ups, reference.ups)
    # the steady state was reached: the last covariances repeat
    assert np.array_equal(batched.filt_cov[598], batched.filt_cov[599])


def test_batched_e_step_statistics(per_sequence):
    """The expected sufficient statistics and ``ln Z'`` of the E step, with inputs to
    the states and the outputs (one of them the previous output: output feedback)."""
    q, Y, Us, Uo, starts, ends, mu0, Sigma0 = _problem(3, ds=2, do=2)
    feedback = np.zeros(Y.shape[0])
    feedback[1:] = Y[:-1, 0]
    feedback[starts] = 0.0
    Uo = np.column_stack([Uo[:, 0], feedback])
    args = (q, Y, Us, Uo, starts, ends, mu0, Sigma0)

    def statistics():
        r = _smooth(*args)
        return r, hidden_statistics(r.omega, r.ups, r.cross, r.omega0, r.ups0, starts,
                                    ends, Y, Us, Uo)

    r_b, s_b = statistics()
    per_sequence()
    r_s, s_s = statistics()
    for name, x, y in zip(s_b._fields, s_b, s_s):
        if isinstance(y, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=RTOL * np.max(np.abs(y)),
                                       err_msg=name)
        else:
            assert x == y, name
    np.testing.assert_allclose(r_b.ln_z, r_s.ln_z, rtol=RTOL)
    np.testing.assert_array_equal(r_b.entropy, r_s.entropy)


def test_missing_values_fall_back_to_the_per_sequence_kernel(per_sequence):
    q, Y, Us, Uo, starts, ends, mu0, Sigma0 = _problem(4)
    Y = Y.copy()
    Y[starts[2] + 3, 0] = np.nan  # one entry of a 40-step sequence
    Y[starts[12]:starts[12] + 4] = np.nan  # whole steps of a 17-step sequence
    args = (q, Y, Us, Uo, starts, ends, mu0, Sigma0)
    _, obs_mask = missing_outputs(Y)
    groups = kalman_batch.batch_groups(np.ones(len(Y), bool), obs_mask, starts, ends, q.k)
    assert len(groups) == 2 and not any(i in g for g in groups for i in (2, 12))
    batched = _smooth(*args)
    per_sequence()
    reference = _smooth(*args)
    _assert_same(batched, reference)
    # the sequences with missing values went through the per-sequence kernel alone
    for i in (2, 12):
        rows = slice(starts[i], ends[i])
        np.testing.assert_array_equal(batched.omega[rows], reference.omega[rows])
        np.testing.assert_array_equal(batched.log_terms[rows], reference.log_terms[rows])


def test_point_posterior_of_random_q_batched(per_sequence):
    """The exact smoother (no parameter spread) through the batched path."""
    q, *rest = _problem(5)
    q = point_posterior(q)
    batched = _smooth(q, *rest, point=True)
    per_sequence()
    _assert_same(batched, _smooth(q, *rest, point=True))


def _fit(k, lengths, X, U):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBLinearDynamicalSystem(n_states=k, max_iter=25, tol=0.0,
                                       random_state=0).fit(X, U=U, lengths=lengths)


def test_fit_end_to_end_equals_per_sequence(per_sequence):
    k = 8
    params = make_lds_params(n_states=4, n_outputs=6, n_inputs=1, random_state=0)
    lengths = np.array([60] * 10 + [45] * 9)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((lengths.sum(), 1))
    X, _ = make_lds(params, lengths, U=U, random_state=0)
    batched = _fit(k, lengths, X, U)
    per_sequence()
    reference = _fit(k, lengths, X, U)
    np.testing.assert_allclose(batched.lower_bound_, reference.lower_bound_, rtol=RTOL)
    np.testing.assert_allclose(batched.score(X, U=U, lengths=lengths),
                               reference.score(X, U=U, lengths=lengths), rtol=RTOL)


def test_shared_covariance_tables(per_sequence):
    """``shared_covariances``: each distinct covariance once; the tables expanded by
    ``cov_rows`` are the per-row results, and the statistics computed from the tables
    those of the per-row arrays, also after a rotation and a removal of states."""
    from sklearn_vb.lds._moves import rotate_hidden_posterior
    from sklearn_vb.lds._state import HiddenPosterior

    q, Y, Us, Uo, starts, ends, mu0, Sigma0 = _problem(6)
    Y = Y.copy()
    Y[starts[1] + 2, 3] = np.nan  # one sequence through the per-sequence kernel
    Y0, obs_mask = missing_outputs(Y)
    spread = dict(Sigma_AB=q.Sigma_AB, Sigma_CD=q.Sigma_CD, log_rho=q.log_rho)
    shared = smooth_states(Y, Us, Uo, starts, ends, q.M_AB, q.M_CD, q.rho, mu0, Sigma0,
                           shared_covariances=True, **spread)
    rows = smooth_states(Y, Us, Uo, starts, ends, q.M_AB, q.M_CD, q.rho, mu0, Sigma0,
                         **spread)
    assert rows.cov_rows is None
    # the per-row covariances of the sequence with a missing entry and of the one
    # sequence of length 5, then one per step of the groups of lengths 40 and 17
    n_distinct = (ends[1] - starts[1]) + 5 + 40 + 17
    assert shared.ups.shape[0] == n_distinct < Y.shape[0]
    for name in ("pred_cov", "filt_cov", "ups", "cross"):
        np.testing.assert_array_equal(getattr(shared, name)[shared.cov_rows],
                                      getattr(rows, name), err_msg=name)
    for name in ("omega", "omega0", "log_terms", "entropy"):
        np.testing.assert_array_equal(getattr(shared, name), getattr(rows, name))

    def statistics(q_x):
        return hidden_statistics(q_x.omega, q_x.ups, q_x.cross, q_x.omega0, q_x.ups0,
                                 starts, ends, Y0, Us, Uo, obs_mask, q_x.cov_rows)

    q_shared = HiddenPosterior.from_smoother(shared)
    q_rows = HiddenPosterior.from_smoother(rows)
    R = np.eye(q.k) + 0.1 * np.random.default_rng(0).standard_normal((q.k, q.k))
    lengths = ends - starts
    for a, b in ((q_shared, q_rows),
                 (rotate_hidden_posterior(q_shared, R, lengths),
                  rotate_hidden_posterior(q_rows, R, lengths)),
                 (q_shared.keep_states(np.array([0, 2, 5])),
                  q_rows.keep_states(np.array([0, 2, 5])))):
        for name, x, y in zip(HiddenStatisticsFields, statistics(a), statistics(b)):
            if isinstance(y, np.ndarray):
                np.testing.assert_allclose(x, y, rtol=RTOL, atol=RTOL * np.max(np.abs(y)),
                                           err_msg=name)


HiddenStatisticsFields = (
    "W_A", "S_A", "G_A", "M", "W_C", "S_C", "G_C", "ups_sum", "prev", "ups_prev_sum",
    "cross_sum", "T", "n_seq", "ups_sum_d")
