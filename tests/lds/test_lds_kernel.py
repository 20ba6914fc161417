"""VB Kalman filter / RTS smoother against exact oracles."""

import dataclasses

import numpy as np
import pytest
from scipy.special import digamma

from sklearn_vb.lds._state import ParameterPosterior
from sklearn_vb.lds.inference import smooth_states

LOG_2PI = np.log(2 * np.pi)


def _random_spd(rng, n, scale=1.0):
    M = rng.standard_normal((n, n))
    return scale * (M @ M.T / n + 0.3 * np.eye(n))


def random_posterior(rng, k, p, ds, do, spread=0.3):
    """A random q(theta) as the estimator holds it."""
    shape = 3.0 + rng.random()
    rate = shape / (0.5 + rng.random(p))
    return ParameterPosterior(
        M_AB=0.5 * rng.standard_normal((k, k + ds)),
        Sigma_AB=_random_spd(rng, k + ds, spread / k),
        M_CD=rng.standard_normal((p, k + do)),
        Sigma_CD=_random_spd(rng, k + do, spread / p),
        rho=shape / rate,
        log_rho=digamma(shape) - np.log(rate),
        rho_shape=shape,
        rho_rate=rate,
    )


def point_posterior(q):
    """The same means with the parameter uncertainty removed (a point mass)."""
    return dataclasses.replace(q, Sigma_AB=np.zeros_like(q.Sigma_AB),
                               Sigma_CD=np.zeros_like(q.Sigma_CD), log_rho=np.log(q.rho))


def expected_log_joint(q, x, Y, Us, Uo, mu0, Sigma0, observed=None):
    """<ln p(x_{0:T}, y_{1:T} | theta)>_q(theta) for one sequence, from the expected
    natural parameters <A'A>, <A'B>, ... (not from the mean + penalty split), vectorised
    over time; rows with ``observed`` False contribute no output term."""
    k, p = q.k, Y.shape[1]
    MAB, MCD, rho = q.M_AB, q.M_CD, q.rho
    E_AB = MAB.T @ MAB + k * q.Sigma_AB
    E_CD = (MCD.T * rho) @ MCD + p * q.Sigma_CD
    A, B = MAB[:, :k], MAB[:, k:]
    C, D = MCD[:, :k], MCD[:, k:]
    xp, xt = x[:-1], x[1:]
    d0 = x[0] - mu0
    val = -0.5 * (k * LOG_2PI + np.linalg.slogdet(Sigma0)[1] + d0 @ np.linalg.solve(Sigma0, d0))
    val += np.sum(-0.5 * k * LOG_2PI - 0.5 * (
        np.sum(xt * xt, 1) - 2 * np.sum(xt * (xp @ A.T), 1) - 2 * np.sum(xt * (Us @ B.T), 1)
        + np.sum(xp * (xp @ E_AB[:k, :k]), 1) + 2 * np.sum(xp * (Us @ E_AB[k:, :k]), 1)
        + np.sum(Us * (Us @ E_AB[k:, k:]), 1)))
    obs = (-0.5 * p * LOG_2PI + 0.5 * np.sum(q.log_rho) - 0.5 * (
        np.sum(Y * Y * rho, 1) - 2 * np.sum((Y * rho) @ C * xt, 1)
        - 2 * np.sum((Y * rho) @ D * Uo, 1) + np.sum(xt * (xt @ E_CD[:k, :k]), 1)
        + 2 * np.sum(xt * (Uo @ E_CD[k:, :k]), 1) + np.sum(Uo * (Uo @ E_CD[k:, k:]), 1)))
    return val + np.sum(obs if observed is None else obs[observed])


def gaussian_from_quadratic(f, n, band=None):
    """Mean, covariance and ln ∫ exp f of a Gaussian whose log density ``f`` (up to the
    constant) is an exact quadratic in R^n, recovered from evaluations: ``f(e_i)``,
    ``f(-e_i)`` and ``f(e_i + e_j)`` for ``j - i < band`` (all pairs without ``band``;
    with it the precision is taken to vanish outside the band)."""
    c0 = f(np.zeros(n))
    E = np.eye(n)
    fp = np.array([f(E[i]) for i in range(n)])
    fm = np.array([f(-E[i]) for i in range(n)])
    h = 0.5 * (fp - fm)
    diag = -(fp + fm - 2 * c0)
    J = np.diag(diag)
    for i in range(n):
        for j in range(i + 1, n if band is None else min(n, band(i))):
            fij = f(E[i] + E[j])
            # f(ei+ej) = c0 + hi + hj - (Jii + Jjj)/2 - Jij
            J[i, j] = J[j, i] = -(fij - c0 - h[i] - h[j] + 0.5 * (diag[i] + diag[j]))
    cov = np.linalg.inv(J)
    mean = cov @ h
    ln_z = c0 + 0.5 * h @ mean - 0.5 * np.linalg.slogdet(J)[1] + 0.5 * n * LOG_2PI
    # guard the oracle: the quadratic reproduces f at a random point
    v = np.random.default_rng(1).standard_normal(n)
    assert np.isclose(f(v), c0 + h @ v - 0.5 * v @ J @ v, rtol=1e-9, atol=1e-8)
    return mean, cov, ln_z


def brute_force(q, Y, Us, Uo, mu0, Sigma0):
    """Dense Gaussian over the stacked x_{0:T}: mean, covariance, ln Z'."""
    k = q.k
    T = Y.shape[0]
    f = lambda v: expected_log_joint(q, v.reshape(T + 1, k), Y, Us, Uo, mu0, Sigma0)
    mean, cov, ln_z = gaussian_from_quadratic(f, (T + 1) * k)
    return mean.reshape(T + 1, k), cov, ln_z


def smooth_q(q, Y, Us, Uo, starts, ends, mu0, Sigma0, point=False, observed=None):
    """The package's smoother under the q(theta) moments of ``q`` (or at their means)."""
    moments = {} if point else {"Sigma_AB": q.Sigma_AB, "Sigma_CD": q.Sigma_CD,
                                "log_rho": q.log_rho}
    return smooth_states(Y, Us, Uo, starts, ends, q.M_AB, q.M_CD, q.rho, mu0, Sigma0,
                         smooth=True, observed=observed, **moments)


def run_kernel(q, Y, Us, Uo, mu0, Sigma0, lengths=None, point=False):
    lengths = [Y.shape[0]] if lengths is None else lengths
    ends = np.cumsum(lengths)
    starts = ends - np.asarray(lengths)
    return smooth_q(q, Y, Us, Uo, starts, ends, mu0, Sigma0, point=point)


def kalman_reference(A, B, C, D, R, mu0, Sigma0, Y, Us, Uo):
    """Textbook (covariance form) Kalman filter and RTS smoother with Q = I,
    including the auxiliary x_0.  Returns smoothed means/covs of x_0..x_T,
    Cov(x_{t-1}, x_t) and the log-likelihood."""
    T, k = Y.shape[0], A.shape[0]
    mf, Pf, mp, Pp = [mu0], [Sigma0], [None], [None]
    ll = 0.0
    for t in range(T):
        m = A @ mf[-1] + B @ Us[t]
        P = A @ Pf[-1] @ A.T + np.eye(k)
        S = C @ P @ C.T + R
        e = Y[t] - C @ m - D @ Uo[t]
        ll += -0.5 * (len(e) * LOG_2PI + np.linalg.slogdet(S)[1] + e @ np.linalg.solve(S, e))
        K = P @ C.T @ np.linalg.inv(S)
        mp.append(m)
        Pp.append(P)
        mf.append(m + K @ e)
        Pf.append(P - K @ S @ K.T)
    ms, Ps, cross = [None] * (T + 1), [None] * (T + 1), [None] * (T + 1)
    ms[T], Ps[T] = mf[T], Pf[T]
    for t in range(T - 1, -1, -1):
        G = Pf[t] @ A.T @ np.linalg.inv(Pp[t + 1])
        ms[t] = mf[t] + G @ (ms[t + 1] - mp[t + 1])
        Ps[t] = Pf[t] + G @ (Ps[t + 1] - Pp[t + 1]) @ G.T
        cross[t + 1] = G @ Ps[t + 1]
    return np.array(ms), np.array(Ps), np.array(cross[1:]), ll


def _problem(seed, k=2, p=3, ds=2, do=1, T=5):
    rng = np.random.default_rng(seed)
    q = random_posterior(rng, k, p, ds, do)
    Y = rng.standard_normal((T, p))
    Us = rng.standard_normal((T, ds))
    Uo = rng.standard_normal((T, do))
    mu0 = rng.standard_normal(k)
    Sigma0 = _random_spd(rng, k)
    return q, Y, Us, Uo, mu0, Sigma0


@pytest.mark.parametrize("seed, dims", [(0, (2, 3, 2, 1, 5)), (1, (3, 2, 0, 0, 4)),
                                        (2, (1, 4, 1, 2, 6)), (3, (3, 3, 2, 2, 3))])
def test_vb_smoother_matches_brute_force(seed, dims):
    k, p, ds, do, T = dims
    q, Y, Us, Uo, mu0, Sigma0 = _problem(seed, k, p, ds, do, T)
    mean, cov, ln_z = brute_force(q, Y, Us, Uo, mu0, Sigma0)
    res = run_kernel(q, Y, Us, Uo, mu0, Sigma0)
    np.testing.assert_allclose(res.omega0[0], mean[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.omega, mean[1:], rtol=1e-8, atol=1e-10)
    blocks = lambda i, j: cov[i * k:(i + 1) * k, j * k:(j + 1) * k]
    np.testing.assert_allclose(res.ups0[0], blocks(0, 0), rtol=1e-8, atol=1e-10)
    for t in range(1, T + 1):
        np.testing.assert_allclose(res.ups[t - 1], blocks(t, t), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(res.cross[t - 1], blocks(t - 1, t), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.ln_z[0], ln_z, rtol=1e-9)
    # entropy of q(x_{0:T}) from the backward factorisation
    H = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1]
    np.testing.assert_allclose(res.entropy[0], H, rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_mass_equals_kalman_filter_and_rts(seed):
    k, p, ds, do, T = 2, 3, 2, 1, 6
    q, Y, Us, Uo, mu0, Sigma0 = _problem(seed, k, p, ds, do, T)
    qp = point_posterior(q)
    A, B = q.M_AB[:, :k], q.M_AB[:, k:]
    C, D = q.M_CD[:, :k], q.M_CD[:, k:]
    R = np.diag(1.0 / q.rho)
    ms, Ps, cross, ll = kalman_reference(A, B, C, D, R, mu0, Sigma0, Y, Us, Uo)
    for res in (run_kernel(qp, Y, Us, Uo, mu0, Sigma0),
                run_kernel(q, Y, Us, Uo, mu0, Sigma0, point=True)):
        np.testing.assert_allclose(res.omega, ms[1:], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(res.omega0[0], ms[0], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(res.ups, Ps[1:], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(res.cross, cross, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(res.ln_z[0], ll, rtol=1e-10)
    # and the log-likelihood is the dense multivariate normal of the stacked outputs
    Phi = [np.eye(k)]
    for _ in range(T):
        Phi.append(A @ Phi[-1])
    mean_x = [mu0]
    for t in range(T):
        mean_x.append(A @ mean_x[-1] + B @ Us[t])
    cov_x = np.zeros(((T + 1) * k, (T + 1) * k))
    for s in range(T + 1):
        for t in range(T + 1):
            # Cov(x_s, x_t) = sum_r A^{s-r} Q_r (A^{t-r})'
            acc = Phi[s] @ Sigma0 @ Phi[t].T
            for r in range(1, min(s, t) + 1):
                acc = acc + Phi[s - r] @ Phi[t - r].T
            cov_x[s * k:(s + 1) * k, t * k:(t + 1) * k] = acc
    H = np.kron(np.eye(T), C)
    cy = H @ cov_x[k:, k:] @ H.T + np.kron(np.eye(T), R)
    my = np.concatenate([C @ mean_x[t + 1] + D @ Uo[t] for t in range(T)])
    e = Y.ravel() - my
    dense = -0.5 * (len(e) * LOG_2PI + np.linalg.slogdet(cy)[1] + e @ np.linalg.solve(cy, e))
    np.testing.assert_allclose(ll, dense, rtol=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_vb_log_normaliser_below_exact_likelihood_at_mean(seed):
    q, Y, Us, Uo, mu0, Sigma0 = _problem(seed, 3, 4, 2, 2, 40)
    vb = run_kernel(q, Y, Us, Uo, mu0, Sigma0).ln_z[0]
    exact = run_kernel(q, Y, Us, Uo, mu0, Sigma0, point=True).ln_z[0]
    assert vb < exact
    # shrinking the uncertainty closes the gap
    q_small = dataclasses.replace(q, Sigma_AB=1e-6 * q.Sigma_AB, Sigma_CD=1e-6 * q.Sigma_CD,
                                  log_rho=np.log(q.rho))
    vb_small = run_kernel(q_small, Y, Us, Uo, mu0, Sigma0).ln_z[0]
    assert vb < vb_small <= exact + 1e-9
    assert exact - vb_small < 1e-3 * (exact - vb)


def test_sequences_add_and_order_does_not_matter():
    q, Y, Us, Uo, mu0, Sigma0 = _problem(4, 2, 3, 1, 1, 12)
    single = [run_kernel(q, Y[a:b], Us[a:b], Uo[a:b], mu0, Sigma0).ln_z[0]
              for a, b in ((0, 5), (5, 12))]
    both = run_kernel(q, Y, Us, Uo, mu0, Sigma0, lengths=[5, 7])
    np.testing.assert_allclose(both.ln_z, single, rtol=1e-12)
    swapped = np.r_[np.arange(5, 12), np.arange(5)]
    rev = run_kernel(q, Y[swapped], Us[swapped], Uo[swapped], mu0, Sigma0, lengths=[7, 5])
    np.testing.assert_allclose(rev.ln_z[::-1], both.ln_z, rtol=1e-12)
    np.testing.assert_allclose(rev.omega, both.omega[swapped], rtol=1e-10)


def test_smoother_outputs_are_named_by_what_they_hold():
    """At a point the named outputs obey the Kalman recursions: the first prediction is
    the prior pushed through the dynamics, each later one the previous filtered belief
    pushed through them, the last smoothed marginal is the last filtered belief, and
    ``ln_z`` sums ``log_terms``."""
    k, T = 2, 6
    q, Y, Us, Uo, mu0, Sigma0 = _problem(5, k, 3, 2, 1, T)
    A, B = q.M_AB[:, :k], q.M_AB[:, k:]
    res = run_kernel(q, Y, Us, Uo, mu0, Sigma0, point=True)
    prior_mean = np.vstack([mu0, res.filt_mean[:-1]])
    prior_cov = np.concatenate([Sigma0[None], res.filt_cov[:-1]])
    np.testing.assert_allclose(res.pred_mean, prior_mean @ A.T + Us @ B.T, rtol=1e-10)
    np.testing.assert_allclose(res.pred_cov, A @ prior_cov @ A.T + np.eye(k), rtol=1e-10)
    np.testing.assert_allclose(res.omega[-1], res.filt_mean[-1], rtol=1e-12)
    np.testing.assert_allclose(res.ups[-1], res.filt_cov[-1], rtol=1e-12)
    np.testing.assert_allclose(res.ln_z, [res.log_terms.sum()], rtol=1e-12)
    assert res.entropy.shape == (1,) and res.omega0.shape == (1, k)


def test_smoother_takes_the_moments_of_q_together():
    q, Y, Us, Uo, mu0, Sigma0 = _problem(0)
    with pytest.raises(ValueError, match="together"):
        smooth_states(Y, Us, Uo, np.array([0]), np.array([len(Y)]), q.M_AB, q.M_CD,
                      q.rho, mu0, Sigma0, Sigma_AB=q.Sigma_AB)
