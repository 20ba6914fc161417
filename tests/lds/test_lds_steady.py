"""The steady-state shortcut of the Kalman kernels: on sequences long enough for the
covariance recursion to reach its fixed point, the filter and smoother still equal
exact oracles, and the shortcut is actually taken."""

import numpy as np
import pytest

from sklearn_vb.lds import kalman

from tests.lds.test_lds_kernel import (_problem, expected_log_joint, gaussian_from_quadratic,
                                       kalman_reference, point_posterior, smooth_q)


def _dense_posterior(q, Y, Us, Uo, mu0, Sigma0, observed):
    """Mean, covariance and ln Z' of the Gaussian q(x_{0:T}) from the (quadratic) log
    joint, its block-tridiagonal precision read off by evaluations."""
    k, T = q.k, Y.shape[0]
    f = lambda v: expected_log_joint(q, v.reshape(T + 1, k), Y, Us, Uo, mu0, Sigma0, observed)
    mean, cov, ln_z = gaussian_from_quadratic(f, (T + 1) * k, band=lambda i: (i // k + 2) * k)
    return mean.reshape(T + 1, k), cov, ln_z


def _kernel(q, Y, Us, Uo, mu0, Sigma0, observed, point=False):
    starts, ends = np.array([0]), np.array([Y.shape[0]])
    return smooth_q(q, Y, Us, Uo, starts, ends, mu0, Sigma0, point=point, observed=observed)


def _steady_flags(q, Y, Us, Uo, mu0, Sigma0, observed):
    """``same[t]`` of the forward pass: step t reused the covariances of step t - 1."""
    k, N = q.k, Y.shape[0]
    A, B = q.M_AB[:, :k], q.M_AB[:, k:]
    C, D = q.M_CD[:, :k], q.M_CD[:, k:]
    K_AB, K_CD = k * q.Sigma_AB, Y.shape[1] * q.Sigma_CD
    rows, kk = np.zeros((N, k)), np.zeros((N, k, k))
    same = np.zeros(N, dtype=bool)
    kalman._kalman_filter(
        np.ascontiguousarray(Y - Uo @ D.T), np.ascontiguousarray(Us @ B.T), observed,
        np.zeros((0, Y.shape[1]), dtype=bool), np.array([0]), np.array([N]), np.ascontiguousarray(A), np.ascontiguousarray(C),
        q.rho, mu0, Sigma0, True, np.ascontiguousarray(Us @ K_AB[:k, k:].T),
        0.5 * np.einsum("tc,cd,td->t", Us, K_AB[k:, k:], Us),
        np.ascontiguousarray(Uo @ K_CD[:k, k:].T),
        0.5 * np.einsum("tc,cd,td->t", Uo, K_CD[k:, k:], Uo),
        np.ascontiguousarray(K_AB[:k, :k]), np.ascontiguousarray(K_CD[:k, :k]),
        np.zeros((0, k, k)), -0.1, np.zeros(0), True, True, True, np.zeros(N), rows.copy(), kk.copy(), rows.copy(), kk.copy(),
        np.zeros(N), kk.copy(), rows.copy(), np.zeros(N), same)
    return same


@pytest.mark.parametrize("seed, dims, gaps", [(0, (2, 3, 1, 1, 90), ()),
                                              (1, (3, 2, 2, 0, 80), (30, 31, 55)),
                                              (2, (1, 4, 0, 1, 100), (70,))])
def test_long_vb_smoother_matches_dense_posterior(seed, dims, gaps):
    k, p, ds, do, T = dims
    q, Y, Us, Uo, mu0, Sigma0 = _problem(seed, k, p, ds, do, T)
    observed = np.ones(T, dtype=bool)
    observed[list(gaps)] = False
    same = _steady_flags(q, Y, Us, Uo, mu0, Sigma0, observed)
    # the shortcut is taken, and never across a missing observation
    assert same.sum() > T // 3
    assert not np.any(same[list(gaps)])
    mean, cov, ln_z = _dense_posterior(q, Y, Us, Uo, mu0, Sigma0, observed)
    res = _kernel(q, Y, Us, Uo, mu0, Sigma0, observed)
    block = lambda i, j: cov[i * k:(i + 1) * k, j * k:(j + 1) * k]
    np.testing.assert_allclose(res.omega0[0], mean[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.omega, mean[1:], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.ups0[0], block(0, 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.ups, [block(t, t) for t in range(1, T + 1)],
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.cross, [block(t - 1, t) for t in range(1, T + 1)],
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(res.ln_z[0], ln_z, rtol=1e-9)
    H = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1]
    np.testing.assert_allclose(res.entropy[0], H, rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 3])
def test_long_point_smoother_matches_textbook_kalman(seed):
    k, p, ds, do, T = 2, 3, 2, 1, 300
    q, Y, Us, Uo, mu0, Sigma0 = _problem(seed, k, p, ds, do, T)
    A, B = q.M_AB[:, :k], q.M_AB[:, k:]
    C, D = q.M_CD[:, :k], q.M_CD[:, k:]
    ms, Ps, cross, ll = kalman_reference(A, B, C, D, np.diag(1.0 / q.rho), mu0, Sigma0,
                                         Y, Us, Uo)
    res = _kernel(point_posterior(q), Y, Us, Uo, mu0, Sigma0, np.ones(T, dtype=bool))
    np.testing.assert_allclose(res.omega, ms[1:], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.ups, Ps[1:], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.cross, cross, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.ln_z[0], ll, rtol=1e-10)
    # the batched likelihood kernel (the scoring layer's) agrees
    out = np.zeros((1, T))
    kalman.lds_log_likelihood_terms(A[None], B[None], C[None], D[None], q.rho[None], Y,
                                    Us, Uo, np.array([0]), np.array([T]),
                                    np.ones(T, dtype=bool), np.zeros((0, Y.shape[1]), dtype=bool),
                                    mu0, Sigma0, out)
    np.testing.assert_allclose(out.sum(), ll, rtol=1e-10)
