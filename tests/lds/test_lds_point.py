"""VBLinearDynamicalSystem(method="ml" | "map"): point-estimate EM in the estimator.

Oracles: a Kalman filter written here evaluates ln p(Y | theta) at the returned point;
the MAP prior term is evaluated with scipy's normal and Gamma densities; EM must never
decrease its objective (checked after every iteration by the loop and here).
"""

import numpy as np
import pytest
from scipy.stats import gamma, norm

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.scoring import scoring_model_for

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def simulate(T=90, seed=0):
    rng = np.random.default_rng(seed)
    A = np.array([[0.9, 0.2], [-0.2, 0.9]])
    C = rng.normal(size=(3, 2))
    x, Y = np.zeros(2), []
    for _ in range(T):
        x = A @ x + rng.normal(size=2)
        Y.append(C @ x + 0.5 * rng.normal(size=3) + 1.0)
    return np.array(Y)


def kalman_log_likelihood(est, Y, U):
    """x_0 ~ N(0, I); x_t = A x_{t-1} + B u_t + w_t, w ~ N(0, I); y_t = C x_t + D u_t + v_t."""
    A, B, C, D = est.A_mean_, est.B_mean_, est.C_mean_, est.D_mean_
    R = np.diag(1.0 / est.noise_precision_mean_)
    k = A.shape[0]
    m, P, total = np.zeros(k), np.eye(k), 0.0
    for t in range(Y.shape[0]):
        m = A @ m + B @ U[t]
        P = A @ P @ A.T + np.eye(k)
        S = C @ P @ C.T + R
        r = Y[t] - C @ m - D @ U[t]
        total += -0.5 * (r.size * np.log(2 * np.pi) + np.linalg.slogdet(S)[1]
                         + r @ np.linalg.solve(S, r))
        K = P @ C.T @ np.linalg.inv(S)
        m, P = m + K @ r, P - K @ C @ P
    return total


def climbs(values):
    values = np.asarray(values)
    return np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]) - 1e-7)


@pytest.mark.parametrize("method", ["ml", "map"])
def test_objective_climbs_and_the_likelihood_matches_a_kalman_filter(method):
    Y = simulate()
    est = VBLinearDynamicalSystem(2, method=method, random_state=0, n_init=2, max_iter=150,
                                  tol=1e-6).fit(Y)
    assert climbs(est.objectives_) and len(est.objectives_) > 10
    U = np.ones((Y.shape[0], 1))  # the intercept input
    ll = kalman_log_likelihood(est, Y, U)
    assert est.log_likelihood_ == pytest.approx(ll, abs=1e-7)
    assert est.score(Y) * Y.shape[0] == pytest.approx(ll, abs=1e-7)
    if method == "ml":
        assert est.objective_ == pytest.approx(ll, abs=1e-7)
        return
    # MAP in ln rho: ln p(Y | theta) + ln p(theta) + sum ln rho
    rho = est.noise_precision_mean_
    AB = np.hstack([est.A_mean_, est.B_mean_])
    CD = np.hstack([est.C_mean_, est.D_mean_])
    prior_ab = np.concatenate([est.alpha_, est.beta_])
    prior_cd = np.concatenate([est.gamma_, est.delta_])
    assert np.all(prior_ab == 1.0) and np.all(prior_cd == 1.0)  # held at ard_init
    lp = norm(0, 1 / np.sqrt(prior_ab)).logpdf(AB).sum()
    lp += norm(0, 1 / np.sqrt(rho[:, None] * prior_cd[None])).logpdf(CD).sum()
    lp += gamma(est.noise_prior_shape_, scale=1 / est.noise_prior_rate_).logpdf(rho).sum()
    assert est.objective_ == pytest.approx(ll + lp + np.log(rho).sum(), abs=1e-7)


def test_point_fit_predicts_and_refuses_what_needs_q():
    Y = simulate(60, seed=1)
    est = VBLinearDynamicalSystem(2, method="ml", random_state=0, max_iter=60).fit(Y)
    assert est.predict(Y).shape == Y.shape
    assert est.transform(Y).shape == (Y.shape[0], 2)
    # with no parameter spread the VBE pass is the exact smoother: bound == likelihood
    np.testing.assert_allclose(est.score_sequences(Y, method="bound"),
                               est.score_sequences(Y, method="mean"), rtol=1e-10)
    assert not hasattr(est, "Sigma_AB_")
    with pytest.raises(NotImplementedError, match="method='ml' or 'map'"):
        scoring_model_for(est)
    with pytest.raises(ValueError, match="method"):
        VBLinearDynamicalSystem(2, method="em").fit(Y)
    # restarts: the kept run is the best, and a refit by VB is scorable again
    est = VBLinearDynamicalSystem(2, method="ml", random_state=0, max_iter=40, n_init=3,
                                  keep_restarts=True).fit(Y)
    assert est.lower_bound_ == max(r.lower_bound for r in est.restarts_)
    est.set_params(method="vb", keep_restarts=False).fit(Y)
    assert scoring_model_for(est) is not None
