"""Dense references for linear dynamical systems with missing outputs (NaN).

Nothing here runs a Kalman recursion: every quantity is a Gaussian integral over the
stacked states ``z = [x_0; x_1; ...; x_T]`` of one sequence, assembled as one quadratic
form ``-z'Jz/2 + h'z + c`` and integrated in closed form.

Model (the library's): ``x_0 ~ N(mu0, Sigma0)``, ``x_t = A x_{t-1} + B us_t + w_t``,
``w_t ~ N(0, I)``, ``y_t = C x_t + D uo_t + v_t``, ``v_t ~ N(0, diag(1/rho))``.  Under a
q(theta) the potentials are the parameter-averaged log densities (Beal 2003, Chapter 5):
rows of ``[A B]`` ``N(M_AB[j], Sigma_AB)``, row s of ``[C D]`` ``N(M_CD[s], Sigma_s /
rho_s)``; at a point the covariances are 0 and ``<ln rho> = ln rho``, so the integral is
the likelihood of the observed entries.
"""

import numpy as np

LOG_2PI = np.log(2.0 * np.pi)


def log_normaliser(Y, Us, Uo, M_AB, Sigma_AB, M_CD, Sigma_CD, rho, log_rho, mu0, Sigma0):
    """ln of the integral over the states of one sequence of
    ``N(x_0 | mu0, Sigma0) prod_t exp<ln p(x_t | x_{t-1})> prod_{t, s observed}
    exp<ln p(y_ts | x_t)>``; ``Sigma_CD`` (m, m) shared by the rows or (p, m, m)."""
    T, p = Y.shape
    k = M_AB.shape[0]
    n = k * (T + 1)
    J = np.zeros((n, n))
    h = np.zeros(n)
    c = 0.0
    if np.ndim(Sigma_CD) == 2:
        Sigma_CD = np.broadcast_to(Sigma_CD, (p,) + np.shape(Sigma_CD))

    def block(t):
        return slice(k * t, k * (t + 1))

    # x_0
    P0 = np.linalg.inv(Sigma0)
    J[block(0), block(0)] += P0
    h[block(0)] += P0 @ mu0
    c += -0.5 * mu0 @ P0 @ mu0 - 0.5 * k * LOG_2PI - 0.5 * np.linalg.slogdet(Sigma0)[1]
    A, B = M_AB[:, :k], M_AB[:, k:]
    for t in range(1, T + 1):
        u = Us[t - 1]
        # <|x_t - [A B][x_{t-1}; u]|^2> = |x_t - A x_{t-1} - B u|^2 + k z'Sigma_AB z
        # in the variables (x_{t-1}, x_t); z = [x_{t-1}; u]
        a, b = block(t - 1), block(t)
        J[b, b] += np.eye(k)
        J[a, b] -= A.T
        J[b, a] -= A
        J[a, a] += A.T @ A + k * Sigma_AB[:k, :k]
        bu = B @ u
        h[b] += bu
        h[a] += -A.T @ bu - k * Sigma_AB[:k, k:] @ u
        c += -0.5 * bu @ bu - 0.5 * k * u @ Sigma_AB[k:, k:] @ u - 0.5 * k * LOG_2PI
        # the observed outputs of step t
        x = block(t)
        uo = Uo[t - 1]
        for s in range(p):
            y = Y[t - 1, s]
            if np.isnan(y):
                continue
            cs, ds = M_CD[s, :k], M_CD[s, k:]
            S = Sigma_CD[s]
            r = y - ds @ uo
            J[x, x] += rho[s] * np.outer(cs, cs) + S[:k, :k]
            h[x] += rho[s] * cs * r - S[:k, k:] @ uo
            c += (-0.5 * rho[s] * r * r - 0.5 * uo @ S[k:, k:] @ uo + 0.5 * log_rho[s]
                  - 0.5 * LOG_2PI)
    L = np.linalg.cholesky(J)
    v = np.linalg.solve(L, h)
    return float(c + 0.5 * v @ v + 0.5 * n * LOG_2PI - np.sum(np.log(np.diag(L))))
