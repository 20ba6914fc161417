"""Rotation (parameter-expansion) moves of the variational LDS.

The model ``x_t = A x_{t-1} + B u_t + w_t`` (``w_t ~ N(0, I)``), ``y_t = C x_t + D u_t
+ v_t`` is unchanged, as a model of the outputs, by a change of basis of the hidden
state ``x -> R x`` with ``A -> R A R^-1``, ``B -> R B``, ``C -> C R^-1``, ``D -> D``,
except for the unit innovation covariance and the priors.  VBEM moves along such
directions very slowly (the scale and orientation of the states against those of C
are fixed by weak couplings), so after each sweep a move transforms the whole
variational posterior by the R that maximises the bound (Luttinen and Ilin 2010,
"Transformations in variational Bayesian factor analysis to speed up learning";
Luttinen 2013, "Fast variational Bayesian linear state-space model").

The transformed posterior is the push-forward of ``q(x) q(A, B) q(C, D, rho)``
through the change of basis, with the ARD precisions (and the initial-state prior)
that the estimator optimises at their optimum for it.  Its bound, as a function of
R, changes only through these terms (everything else, in particular the expected
output log-likelihood, is invariant):

* the entropies: ``q(x_{0:T})`` gains ``(T + n) ln|det R|`` (n sequences with their
  auxiliary ``x_0``), ``q([A B])`` gains ``d_s ln|det R|`` (the linear map
  ``Z -> R Z diag(R^-1, I)`` of the ``k x (k + d_s)`` matrix), ``q([C D] | rho)``
  gains ``-p ln|det R|``;
* the expected dynamics term ``-1/2 tr(R E_e R')`` with ``E_e = sum_t <e_t e_t'>``,
  ``e_t = x_t - A x_{t-1} - B u_t`` under the untransformed posterior;
* the priors of A, B and C: with ``<A'A>`` becoming ``R^-T (M_A' P M_A + tr(P)
  Sigma_A) R^-1`` (``P = R'R``; rows of A share the covariance ``Sigma_A``),
  ``<B'B>`` becoming ``M_B' P M_B + tr(P) Sigma_B`` and ``sum_s <rho_s c_s c_s'>``
  becoming ``R^-T E_C R^-1``, each column's term ``1/2 n ln a_i - 1/2 a_i e_i``
  at its ARD optimum ``a_i = n / e_i`` (or at the fixed ``a_i``);
* the initial-state prior ``<ln N(R x_0 | mu0, Sigma0)>``, with (mu0, Sigma0) at
  their optimum of the estimator's form (full, diagonal, spherical) or fixed.

This closed form and its gradient (derived in the comments of
:meth:`RotationObjective.value_and_grad`) cost ``O(k^3 + k^2 d_s)`` per
evaluation, independent of T; L-BFGS optimises it from ``R = I``.  The estimator
accepts a move only when the bound it recomputes from scratch after the move (and
after re-optimising q(theta), which can only raise it) exceeds the bound before.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._state import HiddenPosterior
from .inference import dynamics_moments

__all__ = ["RotationObjective", "TranslationObjective", "optimise_rotation",
           "optimise_translation", "rotate_hidden_posterior", "translate_hidden_posterior"]


def _ard_term(e, n, fixed, cap):
    """``sum_i 1/2 n ln a_i - 1/2 a_i e_i`` and its derivative in ``e`` (the
    derivative is ``-a_i / 2`` also at the optimum ``a_i = min(n / e_i, cap)``,
    by the envelope theorem), with the precisions ``a`` they use."""
    if fixed is not None:
        a = fixed
    else:
        a = np.minimum(n / np.maximum(e, 1e-300), cap)
    return 0.5 * n * np.sum(np.log(a)) - 0.5 * np.sum(a * e), -0.5 * a, a


class RotationObjective:
    """The bound of the transformed posterior as a function of R, up to a constant.

    Parameters
    ----------
    stats : HiddenStatistics
        The estimator's hidden-state statistics (``W_A, S_A, G_A, M, W_C`` are read).
    q_theta : ParameterPosterior
        The estimator's ``q(A, B)`` and ``q(C, D, rho)`` (``M_AB, Sigma_AB, E_CD`` are
        read).
    UUs : array (d_s, d_s)
        ``sum_t u_t u_t'`` of the state inputs.
    omega0, ups0 : arrays (n, k), (n, k, k)
        Posterior moments of the initial states.
    n_steps : int
        Total number of time steps T.
    n_outputs : int
    alpha, beta, gamma : arrays or None
        Fixed ARD precisions of the columns of A, B, C, or None where the estimator
        optimises them.
    init_state : {"fixed", "full", "diag", "spherical"}
        Whether (mu0, Sigma0) are fixed or optimised in that form.
    mu0, Sigma0 : arrays
        The fixed initial-state prior (used with ``init_state="fixed"``).
    cap : float
        Upper limit of an optimised ARD precision.
    """

    def __init__(self, stats, q_theta, UUs, omega0, ups0, n_steps, n_outputs, *,
                 alpha, beta, gamma, init_state, mu0, Sigma0, cap):
        k = stats.W_A.shape[0]
        M_AB, Sigma_AB = q_theta.M_AB, q_theta.Sigma_AB
        self.k = k
        self.ds = M_AB.shape[1] - k
        self.p = n_outputs
        n_seq = omega0.shape[0]
        self.n_seq = n_seq
        W_z, R_AB = dynamics_moments(stats, UUs)
        # sum_t <e_t e_t'> with e_t = x_t - [A B] z_t, rows of [A B] independent with
        # the shared covariance Sigma_AB
        cross = M_AB @ R_AB
        E_e = (stats.W_C - cross - cross.T + M_AB @ W_z @ M_AB.T
               + np.sum(Sigma_AB * W_z) * np.eye(k))
        self.E_e = 0.5 * (E_e + E_e.T)
        self.M_A, self.M_B = M_AB[:, :k], M_AB[:, k:]
        self.Sigma_A, self.Sigma_B = Sigma_AB[:k, :k], Sigma_AB[k:, k:]
        self.E_C = q_theta.E_CD[:k, :k]
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self.cap = cap
        # ln|det R| coefficient: q(x_{0:T}), q([A B]), q([C D] | rho)
        self.logdet_coef = n_steps + n_seq + self.ds - self.p
        self.init_state = init_state
        if init_state == "fixed":
            self.Sigma0_inv = np.linalg.inv(Sigma0)
            self.x0_second = ups0.sum(axis=0) + omega0.T @ omega0
            self.x0_first = omega0.sum(axis=0)
            self.mu0 = mu0
        else:
            mean = omega0.mean(axis=0)
            dev = omega0 - mean
            self.x0_cov = ups0.mean(axis=0) + dev.T @ dev / n_seq

    # ------------------------------------------------------------------ pieces
    def _transformed(self, R, V):
        """Second moments of the transformed A, B, C (their diagonals enter the
        priors): ``<A'A>``, ``<B'B>``, ``sum_s <rho_s c_s c_s'>``."""
        P = R.T @ R
        G_A = self.M_A.T @ P @ self.M_A + np.trace(P) * self.Sigma_A
        E_A = V.T @ G_A @ V
        E_B = self.M_B.T @ P @ self.M_B + np.trace(P) * self.Sigma_B
        E_C = V.T @ self.E_C @ V
        return E_A, E_B, E_C

    def hyperparameters(self, R):
        """The ARD precisions of the transformed posterior (fixed ones unchanged)."""
        V = np.linalg.inv(R)
        E_A, E_B, E_C = self._transformed(R, V)
        _, _, alpha = _ard_term(np.diag(E_A), self.k, self.alpha, self.cap)
        _, _, beta = _ard_term(np.diag(E_B), self.k, self.beta, self.cap)
        _, _, gamma = _ard_term(np.diag(E_C), self.p, self.gamma, self.cap)
        return alpha, beta, gamma

    def value_and_grad(self, R):
        """The R-dependent part of the bound and its gradient ``d value / d R``.

        Derivatives (``V = R^-1``, ``dV = -V dR V``; a term ``tr(K dR)`` has
        gradient ``K'``):

        * ``c ln|det R|``: ``c V'``.
        * ``-1/2 tr(R E_e R')``: ``-R E_e``.
        * a prior ``sum_i f(e_i)`` with ``e = diag(V' G V)`` and weights
          ``w_i = f'(e_i)`` (``W = diag(w)``, ``H = V W V'``, ``E' = V' G V``):
          ``tr(W dE') = 2 tr(W V' G dV) + tr(H dG)`` gives ``-2 E' W V'`` plus
          the part through G; for A, ``G = M_A' R'R M_A + tr(R'R) Sigma_A`` adds
          ``2 R M_A H M_A' + 2 tr(H Sigma_A) R``; for C (G constant) nothing.
        * the prior of B (no V): ``2 R M_B W M_B' + 2 tr(W Sigma_B) R``.
        * the initial state: fixed (mu0, Sigma0):
          ``-1/2 tr(S0^-1 R X2 R') + mu0' S0^-1 R x1`` gives
          ``-S0^-1 R X2 + S0^-1 mu0 x1'``; optimised full covariance:
          ``-n ln|det R|``; diagonal: ``-n/2 sum_i ln (R F R')_ii`` gives
          ``-n diag(R F R')^-1 R F``; spherical:
          ``-n k/2 ln tr(R F R')`` gives ``-n k R F / tr(R F R')``.
        """
        k = self.k
        sign, logdet = np.linalg.slogdet(R)
        if sign <= 0:
            return -np.inf, np.zeros_like(R)
        V = np.linalg.inv(R)
        value = self.logdet_coef * logdet
        grad = self.logdet_coef * V.T
        RE = R @ self.E_e
        value -= 0.5 * np.sum(RE * R)
        grad -= RE
        E_A, E_B, E_C = self._transformed(R, V)
        # A
        f, w, _ = _ard_term(np.diag(E_A), k, self.alpha, self.cap)
        value += f
        H = (V * w) @ V.T
        grad += (-2.0 * (E_A * w) @ V.T + 2.0 * R @ self.M_A @ H @ self.M_A.T
                 + 2.0 * np.sum(H * self.Sigma_A) * R)
        # B
        if self.ds:
            f, w, _ = _ard_term(np.diag(E_B), k, self.beta, self.cap)
            value += f
            grad += (2.0 * R @ (self.M_B * w) @ self.M_B.T
                     + 2.0 * np.sum(w * np.diag(self.Sigma_B)) * R)
        # C
        f, w, _ = _ard_term(np.diag(E_C), self.p, self.gamma, self.cap)
        value += f
        grad -= 2.0 * (E_C * w) @ V.T
        # initial state
        n = self.n_seq
        if self.init_state == "fixed":
            S0i = self.Sigma0_inv
            RX = R @ self.x0_second
            value += -0.5 * np.sum((S0i @ RX) * R) + self.mu0 @ S0i @ R @ self.x0_first
            grad += -S0i @ RX + np.outer(S0i @ self.mu0, self.x0_first)
        elif self.init_state == "full":
            value -= n * logdet
            grad -= n * V.T
        else:
            RF = R @ self.x0_cov
            d = np.maximum(np.sum(RF * R, axis=1), 1e-300)
            if self.init_state == "diag":
                value -= 0.5 * n * np.sum(np.log(d))
                grad -= n * RF / d[:, None]
            else:  # spherical
                tr = np.sum(d)
                value -= 0.5 * n * k * np.log(tr)
                grad -= n * k * RF / tr
        return float(value), grad


def _lbfgs_maximise(fun, x0, max_iter, memory=8):
    """Maximise a smooth function by L-BFGS (two-loop recursion) with a
    backtracking Armijo line search; every accepted step raises the value.

    ``fun(x) -> (value, grad)``, value ``-inf`` outside the domain.  Returns the
    last accepted point and its value.  (A few dozen variables: a plain Python
    implementation costs far less per call than a general-purpose optimiser.)
    """
    x = x0.copy()
    value, grad = fun(x)
    s_hist, y_hist = [], []
    for _ in range(max_iter):
        # two-loop recursion for the ascent direction H grad
        q = grad.copy()
        coeffs = []
        for s, y in zip(reversed(s_hist), reversed(y_hist)):
            r = 1.0 / (y @ s)
            a = r * (s @ q)
            coeffs.append((r, a))
            q -= a * y
        if s_hist:
            q *= (s_hist[-1] @ y_hist[-1]) / (y_hist[-1] @ y_hist[-1])
        else:
            q /= max(np.sqrt(grad @ grad), 1.0)
        for (s, y), (r, a) in zip(zip(s_hist, y_hist), reversed(coeffs)):
            q += (a - r * (y @ q)) * s
        slope = grad @ q
        if not slope > 0.0:
            q, slope = grad / max(np.sqrt(grad @ grad), 1.0), np.sqrt(grad @ grad)
            s_hist.clear()
            y_hist.clear()
        step = 1.0
        for _ in range(30):
            x_new = x + step * q
            v_new, g_new = fun(x_new)
            if np.isfinite(v_new) and v_new >= value + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break
        s_vec, y_vec = x_new - x, grad - g_new  # y: curvature of the negative
        gain = v_new - value
        x, value, grad = x_new, v_new, g_new
        if s_vec @ y_vec > 1e-12 * np.sqrt((s_vec @ s_vec) * (y_vec @ y_vec)):
            s_hist.append(s_vec)
            y_hist.append(y_vec)
            if len(s_hist) > memory:
                s_hist.pop(0)
                y_hist.pop(0)
        if gain <= 1e-12 * max(abs(value), 1.0):
            break
    return x, value


def optimise_rotation(objective, max_iter=30):
    """Maximise the objective over invertible R by L-BFGS from the identity.

    Returns ``(R, gain)``: the best R found and its value minus the value at I
    (``gain <= 0`` means no improvement; R is then the identity).
    """
    k = objective.k
    eye = np.eye(k)
    start, _ = objective.value_and_grad(eye)

    def fun(r):
        value, grad = objective.value_and_grad(r.reshape(k, k))
        return value, grad.ravel()

    r, value = _lbfgs_maximise(fun, eye.ravel(), max_iter)
    if not np.isfinite(value) or value <= start:
        return eye, 0.0
    return r.reshape(k, k), value - start


def rotate_hidden_posterior(q_x, R, lengths):
    """The posterior of ``R x`` given that of ``x`` (moments and entropies): means
    ``R omega``, covariances ``R Ups R'`` and ``R Cov(x_{t-1}, x_t) R'``; each
    sequence's entropy of ``q(x_{0:T})`` gains ``(T_i + 1) ln|det R|``."""
    _, logdet = np.linalg.slogdet(R)
    Rt = R.T
    return HiddenPosterior(
        omega=np.ascontiguousarray(q_x.omega @ Rt),
        ups=np.ascontiguousarray(R @ q_x.ups @ Rt),
        cross=np.ascontiguousarray(R @ q_x.cross @ Rt),
        omega0=np.ascontiguousarray(q_x.omega0 @ Rt),
        ups0=np.ascontiguousarray(R @ q_x.ups0 @ Rt),
        entropy=q_x.entropy + (np.asarray(lengths) + 1.0) * logdet,
        ln_z=q_x.ln_z,
        cov_rows=q_x.cov_rows,
    )


# ---------------------------------------------------------------- translations
class TranslationObjective:
    """The bound of the translated posterior as a function of the shift c.

    With a constant input (the intercept) driving both the states and the outputs,
    the shift of the hidden state ``x -> x + c`` leaves the model of the outputs
    unchanged when the intercept columns absorb it: ``b <- b + (I - A) c`` (column
    of B) and ``d <- d - C c`` (column of D), ``mu0 <- mu0 + c``.  Every innovation
    ``x_t - A x_{t-1} - B u_t`` and every output residual is then the same random
    variable as before, the maps of the rows of ``[A B]`` and ``[C D]`` are shears
    (unit Jacobian) and q(x) only moves, so the push-forward of the posterior has
    the same entropies and expected log-likelihood.  What changes are the priors
    of the two intercept columns, through

    * ``e_B(c) = sum_j <(b_j + c_j - a_j'c)^2>
      = |m_b + (I - M_A) c|^2 + k (s_bb - 2 s_Ab'c + c' S_AA c)``
      (``m_b`` the mean of the column, ``S`` the shared row covariance of [A B]),
    * ``e_D(c) = sum_s <rho_s (d_s - c_s'c)^2>
      = sum_s rhobar_s (m_ds - m_Cs'c)^2 + p (s_dd - 2 s_Cd'c + c' S_CC c)``,

    each entering as ``1/2 n ln a - 1/2 a e`` with its precision ``a`` at the
    optimum ``n / e`` or fixed, and, when the initial-state prior is fixed, the
    term ``<ln N(x_0 + c | mu0, Sigma0)>`` (an optimised mean moves with the
    states).  VBEM moves the level of the states against the intercepts only by
    small coupled steps, for hundreds of iterations when both intercepts carry
    weight; this closed form (``O(k^2 (k + p))`` per evaluation) lets the move
    take the whole step at once.

    Parameters
    ----------
    q_theta : ParameterPosterior
        The estimator's q(A, B) and q(C, D, rho) (``M_AB, Sigma_AB, M_CD, Sigma_CD,
        rho`` are read).
    state_col, output_col : int
        Positions of the intercept among the columns of B and of D.
    omega0 : array (n, k)
        Posterior means of the initial states.
    beta, delta : float or None
        Fixed precisions of the two intercept columns, or None where optimised.
    mu0, Sigma0 : arrays or None
        The fixed initial-state prior, or None when the estimator optimises it.
    cap : float
        Upper limit of an optimised precision.
    """

    def __init__(self, q_theta, state_col, output_col, omega0, *, beta, delta, mu0,
                 Sigma0, cap):
        k = q_theta.k
        self.k = k
        self.p = q_theta.M_CD.shape[0]
        ib, i_d = k + state_col, k + output_col
        M_AB, S_AB = q_theta.M_AB, q_theta.Sigma_AB
        self.m_b = M_AB[:, ib]
        self.K_b = np.eye(k) - M_AB[:, :k]
        self.s_bb, self.s_Ab, self.S_AA = S_AB[ib, ib], S_AB[:k, ib], S_AB[:k, :k]
        M_CD, S_CD = q_theta.M_CD, q_theta.Sigma_CD
        self.rho = q_theta.rho
        self.m_d = M_CD[:, i_d]
        self.M_C = M_CD[:, :k]
        self.s_dd, self.s_Cd, self.S_CC = S_CD[i_d, i_d], S_CD[:k, i_d], S_CD[:k, :k]
        self.beta, self.delta, self.cap = beta, delta, cap
        self.fixed_init_state = mu0 is not None
        if self.fixed_init_state:
            self.Sigma0_inv = np.linalg.inv(Sigma0)
            self.n_seq = omega0.shape[0]
            self.x0_dev = (omega0 - mu0).sum(axis=0)

    def second_moments(self, c):
        """``(e_B(c), e_D(c))`` and their gradients in c."""
        r_b = self.m_b + self.K_b @ c
        e_b = r_b @ r_b + self.k * (self.s_bb - 2.0 * self.s_Ab @ c + c @ self.S_AA @ c)
        g_b = 2.0 * self.K_b.T @ r_b + 2.0 * self.k * (self.S_AA @ c - self.s_Ab)
        r_d = self.m_d - self.M_C @ c
        e_d = (self.rho * r_d) @ r_d + self.p * (self.s_dd - 2.0 * self.s_Cd @ c
                                                 + c @ self.S_CC @ c)
        g_d = -2.0 * self.M_C.T @ (self.rho * r_d) + 2.0 * self.p * (self.S_CC @ c
                                                                      - self.s_Cd)
        return e_b, g_b, e_d, g_d

    def hyperparameters(self, c):
        """The precisions of the two intercept columns after the shift."""
        e_b, _, e_d, _ = self.second_moments(c)
        _, _, beta = _ard_term(np.array([e_b]), self.k, self.beta, self.cap)
        _, _, delta = _ard_term(np.array([e_d]), self.p, self.delta, self.cap)
        return float(np.ravel(beta)[0]), float(np.ravel(delta)[0])

    def value_and_grad(self, c):
        """The c-dependent part of the bound and its gradient."""
        e_b, g_b, e_d, g_d = self.second_moments(c)
        f_b, w_b, _ = _ard_term(np.array([e_b]), self.k, self.beta, self.cap)
        f_d, w_d, _ = _ard_term(np.array([e_d]), self.p, self.delta, self.cap)
        value = f_b + f_d
        grad = float(np.ravel(w_b)[0]) * g_b + float(np.ravel(w_d)[0]) * g_d
        if self.fixed_init_state:
            # -1/2 sum_i <(x_i0 + c - mu0)' S0^-1 (x_i0 + c - mu0)>, c-dependent part
            Sc = self.Sigma0_inv @ c
            value -= 0.5 * self.n_seq * c @ Sc + self.x0_dev @ Sc
            grad = grad - self.n_seq * Sc - self.Sigma0_inv @ self.x0_dev
        return float(value), grad


def optimise_translation(objective, max_iter=50):
    """Maximise the objective over the shift c by L-BFGS from 0.

    Returns ``(c, gain)`` (``gain <= 0``: no improvement, c is zero)."""
    zero = np.zeros(objective.k)
    start, _ = objective.value_and_grad(zero)
    c, value = _lbfgs_maximise(objective.value_and_grad, zero, max_iter)
    if not np.isfinite(value) or value <= start:
        return zero, 0.0
    return c, value - start


def translate_hidden_posterior(q_x, c):
    """The posterior of ``x + c`` given that of ``x``: the means move, covariances
    and entropies are unchanged."""
    return dataclasses.replace(q_x, omega=np.ascontiguousarray(q_x.omega + c),
                               omega0=np.ascontiguousarray(q_x.omega0 + c))
