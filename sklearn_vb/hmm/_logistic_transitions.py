r"""Input-driven transitions with continuous inputs: stick-breaking logistic transition
probabilities with Gaussian coefficients, made conjugate by the Jaakkola-Jordan bound
(``VBHiddenMarkov(transition_inputs="continuous")``; a GLM-HMM or input-output HMM).

The model
---------
Every frame t carries a real input u_t (P values, given as ``U``) and the design row
x_t = [u_t, 1] (D = P + 1, the bias last).  The transition into frame t (not the first
of its sequence) leaves state k by stick breaking over the K states: with the K - 1
logits psi_tki = w_ki . x_t of the row's sticks i = 0 .. K-2,

    p(s_t = j | s_{t-1} = k, u_t) = pi_kj(x_t)
        = sigma(psi_tkj) prod_{i<j} sigma(-psi_tki)        (j < K - 1)
        = prod_{i<K-1} sigma(-psi_tki)                       (j = K - 1),

so ln pi_kj = sum_{i <= min(j, K-2)} ln sigma(s_ji psi_tki) with s_ji = +1 for i = j
(the stick taken) and -1 for i < j (the sticks passed).  Every coefficient vector has
a Gaussian prior, w_ki ~ N(m0_ki, V0_ki), independent over (k, i); see
:func:`logistic_prior` for the default.

The bound
---------
Jaakkola & Jordan (2000): for every real z and xi,

    ln sigma(z) >= ln sigma(xi) + (z - xi) / 2 - lambda(xi) (z^2 - xi^2),
    lambda(xi) = tanh(xi / 2) / (4 xi)   (lambda(0) = 1/8),

and since the right side depends on z only through z and z^2, the same xi serves
ln sigma(-z) = ln sigma(z) - z.  With one xi_tki per frame, row and stick, therefore

    ln pi_kj(x_t) >= h_tkj(W, xi) = sum_{i <= min(j, K-2)} [ln sigma(xi_tki)
                     + (s_ji psi_tki - xi_tki) / 2 - lambda(xi_tki) (psi_tki^2 - xi_tki^2)]

for every W, so replacing every transition factor of p(X, S | U, theta) by exp h
lowers it, and the variational bound of that lower joint,

    F = E_q[ln p~(X, S | U, theta, xi)] + H[q(S)] - KL(q(theta) || p(theta)),

is a lower bound on ln p(X | U) for every xi and every q(S) q(pi) q(W) q(emissions).
This is VB with Polya-gamma augmentation (Linderman, Johnson & Adams 2015): the
expected Polya-gamma variable of stick (t, k, i) is 2 lambda(xi_tki) N_tki.

The updates, each maximising F over one factor with the others fixed:

* xi: F depends on xi_tki only through N_tki [ln sigma(xi) - xi/2 + lambda(xi) xi^2
  - lambda(xi) E psi^2] with N_tki >= 0, maximised by xi_tki^2 = E_q[psi_tki^2]
  = x_t' E[w_ki w_ki'] x_t whatever q(S) is.  The VBE step sets xi so before every
  forward-backward pass; xi is not stored (it is a function of q(W) and the inputs).
* q(S): the forward-backward pass with the per-step transition weights
  exp E_q[h_tkj] (sub-normalised: sum_j exp E h <= sum_j E exp h <= sum_j E pi = 1);
  at xi_tki^2 = E psi_tki^2 the quadratic term vanishes and

      E_q[h_tkj] = sum_{i <= min(j, K-2)} [ln sigma(xi_tki) + (s_ji E[psi_tki] - xi_tki) / 2].

  Its normaliser ln Z is E_q[ln p~] + H[q(S)] with q(S) optimal, so right after the
  VBE step

      F = sum_sequences ln Z - KL(q(pi) || p(pi)) - sum_{k,i} KL(q(w_ki) || p(w_ki))
          - KL(q(emissions) || p(emissions)),

  the JJ terms being inside ln Z.
* q(W): with the pair marginals zeta_tkj = q(s_{t-1} = k, s_t = j), the visits of
  stick (k, i), N_tki = sum_{j >= i} zeta_tkj, and kappa_tki = zeta_tki - N_tki / 2,
  E_q(S)[ln p~] is quadratic in every w_ki, so q(w_ki) = N(mu_ki, Lambda_ki^-1) with

      Lambda_ki = V0_ki^-1 + sum_t 2 lambda(xi_tki) N_tki x_t x_t',
      Lambda_ki mu_ki = V0_ki^-1 m0_ki + sum_t kappa_tki x_t,

  the prior's natural parameters plus the statistics of q(S) (:class:`LogisticStats`),
  collected with the xi of the VBE step that produced q(S).  F after this step, with
  the entropy of q(S) and xi kept, changes by
  sum_{k,i} [b_ki . (mu' - mu) - tr(A_ki (E'[ww'] - E[ww'])) / 2] (A, b the
  statistics) minus the change of the KL: :func:`expected_loglik` gives that part.

Starts that build q(theta) from responsibilities (no q(W) yet) collect the statistics
at xi = 0, where lambda = 1/8 (the bound then has the fixed curvature of Boehning's
bound, valid for every W).

Prediction (``score``, ``predict``, ``sample``) plugs in the posterior means mu_ki:
:func:`stick_breaking_log_probs`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from scipy.special import digamma, polygamma

from .._core.distributions import gaussian_kl

__all__ = [
    "CoefficientMoments", "LogisticCoefficients", "LogisticStats", "add_stats",
    "expected_loglik", "expected_moments", "jj_log_weights", "kl", "logistic_prior",
    "pack", "random_posterior", "stats_from_pairs", "stats_from_resp",
    "stick_breaking_log_probs", "stick_breaking_transitions", "unpack", "vbm",
]


class LogisticCoefficients(NamedTuple):
    """p(W) or q(W): a Gaussian over the coefficients w_ki of every stick i of every
    transition row k, independent over (k, i)."""

    mean: np.ndarray  # (K, K-1, D): mu_ki; the last of the D = P + 1 entries is the bias
    precision: np.ndarray  # (K, K-1, D, D): Lambda_ki


class CoefficientMoments(NamedTuple):
    """E[w_ki] and E[w_ki w_ki'] under q(W): what the VBE step reads of q(W) (the role
    E[ln A] plays for Dirichlet transitions)."""

    mean: np.ndarray  # (K, K-1, D)
    second: np.ndarray  # (K, K-1, D, D)


class LogisticStats(NamedTuple):
    """Statistics of q(S) for q(W) (at the xi of their VBE step): the sums that the VBM
    step adds to the prior's natural parameters."""

    precision: np.ndarray  # (K, K-1, D, D): A_ki = sum_t 2 lambda(xi_tki) N_tki x_t x_t'
    shift: np.ndarray  # (K, K-1, D): b_ki = sum_t kappa_tki x_t


# ---------------------------------------------------------------------------
# the prior
# ---------------------------------------------------------------------------


def logistic_prior(dirichlet_rows, coef_variance):
    """The Gaussian prior p(W) (a :class:`LogisticCoefficients`).

    Input coefficients: mean 0 and variance ``coef_variance`` ((P,), one per input
    column).  Bias of stick i of row k: the mean and variance of the logit of that stick
    under the Dirichlet row ``dirichlet_rows[k]`` (K,) written by stick breaking, where
    the stick is Beta(a, b) with a = alpha_ki and b = sum_{j>i} alpha_kj and its logit
    has mean digamma(a) - digamma(b) and variance trigamma(a) + trigamma(b).  The
    default Dirichlet (1/K per entry) gives for K = 2 the bias N(0, pi^2) (the logit of
    a Beta(1/2, 1/2)); the bias prior is thus the Gaussian with the moments of the plain
    HMM's row prior, and with no input effect the two models differ only in that shape.
    """
    alpha = np.asarray(dirichlet_rows, dtype=float)
    K = alpha.shape[0]
    var_u = np.asarray(coef_variance, dtype=float)
    P = var_u.shape[0]
    D = P + 1
    a = alpha[:, :K - 1]
    b = np.cumsum(alpha[:, ::-1], axis=1)[:, ::-1][:, 1:]  # sum_{j > i} alpha_kj
    mean = np.zeros((K, K - 1, D))
    mean[:, :, P] = digamma(a) - digamma(b)
    var = np.empty((K, K - 1, D))
    var[:, :, :P] = var_u
    var[:, :, P] = polygamma(1, a) + polygamma(1, b)
    precision = np.zeros((K, K - 1, D, D))
    idx = np.arange(D)
    precision[:, :, idx, idx] = 1.0 / var
    return LogisticCoefficients(mean, precision)


# ---------------------------------------------------------------------------
# q(W): moments, VBM step, KL, expected log-likelihood, coordinates
# ---------------------------------------------------------------------------


def _covariance(q):
    return np.linalg.inv(q.precision)


def expected_moments(q):
    """E[w] and E[w w'] under q(W)."""
    mean = q.mean
    return CoefficientMoments(mean, _covariance(q) + mean[..., :, None] * mean[..., None, :])


def vbm(prior, stats):
    """q(W) given the statistics of q(S): the prior's natural parameters plus them."""
    precision = prior.precision + stats.precision
    shift = np.einsum("kide,kie->kid", prior.precision, prior.mean) + stats.shift
    return LogisticCoefficients(np.linalg.solve(precision, shift[..., None])[..., 0],
                                precision)


def kl(q, prior):
    """sum_{k,i} KL(q(w_ki) || p(w_ki))."""
    if q.mean.size == 0:
        return 0.0
    return float(np.sum(gaussian_kl(q.mean, _covariance(q), prior.mean,
                                    _covariance(prior))))


def expected_loglik(stats, moments):
    """The part of E_q(S) q(W)[ln p~(S | U, W, xi)] that depends on q(W):
    sum_{k,i} b_ki . E[w_ki] - tr(A_ki E[w_ki w_ki']) / 2 (the rest depends on q(S) and
    xi only, which a VBM step keeps)."""
    return float(np.sum(stats.shift * moments.mean)
                 - 0.5 * np.sum(stats.precision * moments.second))


def add_stats(a, b):
    """The statistics of the data of ``a`` and of ``b`` together."""
    return LogisticStats(a.precision + b.precision, a.shift + b.shift)


def pack(q):
    """q(W) as its natural parameters (precision, precision @ mean), flattened: the
    coordinates of the SQUAREM extrapolation."""
    shift = np.einsum("kide,kie->kid", q.precision, q.mean)
    return np.concatenate([q.precision.ravel(), shift.ravel()])


def unpack(vector, like):
    """The q(W) of :func:`pack` coordinates, shaped as ``like``; None when a precision
    is not symmetric positive definite."""
    n = like.precision.size
    precision = vector[:n].reshape(like.precision.shape)
    shift = vector[n:].reshape(like.mean.shape)
    if not np.all(np.isfinite(vector)):
        return None
    try:
        np.linalg.cholesky(precision)
    except np.linalg.LinAlgError:
        return None
    return LogisticCoefficients(np.linalg.solve(precision, shift[..., None])[..., 0],
                                precision)


def random_posterior(prior, rows):
    """A random q(W) for the ``"random_params"`` start, as that start draws a Dirichlet
    row with 10 pseudo-counts: the bias means are the stick logits of the random rows
    ``rows`` (K, K) (positive, rows summing to one), the input coefficients keep their
    prior means, and the precision of every bias grows by 10/4 (the information of ten
    binary observations at probability one half)."""
    K = rows.shape[0]
    P = prior.mean.shape[-1] - 1
    left = np.cumsum(rows[:, ::-1], axis=1)[:, ::-1]  # sum_{j >= i} rows_kj
    taken = np.clip(rows[:, :K - 1] / left[:, :K - 1], 1e-6, 1 - 1e-6)
    mean = prior.mean.copy()
    mean[:, :, P] = np.log(taken) - np.log1p(-taken)
    precision = prior.precision.copy()
    precision[:, :, P, P] += 2.5
    return LogisticCoefficients(mean, precision)


# ---------------------------------------------------------------------------
# numba kernels: per-step weights and statistics
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _log_sigmoid(z):
    if z >= 0.0:
        return -np.log1p(np.exp(-z))
    return z - np.log1p(np.exp(z))


@njit(cache=True, nogil=True, inline="always")
def _jj_lambda(xi):
    if xi < 1e-6:
        return 0.125 - xi * xi / 96.0
    return np.tanh(0.5 * xi) / (4.0 * xi)


@njit(cache=True, nogil=True)
def jj_log_weights(mean, second, X):
    """The VBE step's per-step transition log-weights E_q[h_tkj] (T, K, K) at the
    optimal xi, and xi (T, K, K-1).

    ``mean`` (K, K-1, D) and ``second`` (K, K-1, D, D) are E[w] and E[w w'], ``X``
    (T, D) the design rows.  xi_tki = sqrt(x_t' E[w_ki w_ki'] x_t); the weight of
    k -> j adds ln sigma(xi) - xi/2 - m/2 for every stick passed (i < j) and
    ln sigma(xi) - xi/2 + m/2 for the stick taken (i = j < K - 1), m = E[w_ki] . x_t.
    """
    T, D = X.shape
    K = mean.shape[0]
    out = np.zeros((T, K, K))
    xi = np.zeros((T, K, max(K - 1, 0)))
    for t in range(T):
        for k in range(K):
            passed = 0.0  # sum over the sticks passed so far
            for i in range(K - 1):
                m = 0.0
                e2 = 0.0
                for d in range(D):
                    xd = X[t, d]
                    m += mean[k, i, d] * xd
                    acc = 0.0
                    for e in range(D):
                        acc += second[k, i, d, e] * X[t, e]
                    e2 += xd * acc
                x = np.sqrt(e2) if e2 > 0.0 else 0.0
                xi[t, k, i] = x
                base = _log_sigmoid(x) - 0.5 * x
                out[t, k, i] = passed + base + 0.5 * m
                passed += base - 0.5 * m
            out[t, k, K - 1] = passed
    return out, xi


@njit(cache=True, nogil=True)
def stats_from_pairs(pairs, xi, X):
    """The statistics (A, b) of q(W) from the pair marginals ``pairs`` (T, K, K) (row t:
    q(s_{t-1} = k, s_t = j); zero at the first frame of a sequence) and the ``xi``
    (T, K, K-1) of their VBE step (zeros: lambda = 1/8)."""
    T, D = X.shape
    K = pairs.shape[1]
    A = np.zeros((K, max(K - 1, 0), D, D))
    b = np.zeros((K, max(K - 1, 0), D))
    for t in range(T):
        for k in range(K):
            left = 0.0  # sum_{j >= i} pairs[t, k, j]: all of the row, less each stick passed
            for j in range(K):
                left += pairs[t, k, j]
            if left == 0.0:
                continue
            for i in range(K - 1):
                n = left
                kappa = pairs[t, k, i] - 0.5 * n
                w = 2.0 * _jj_lambda(xi[t, k, i]) * n
                for d in range(D):
                    b[k, i, d] += kappa * X[t, d]
                    wd = w * X[t, d]
                    for e in range(D):
                        A[k, i, d, e] += wd * X[t, e]
                left -= pairs[t, k, i]
    return A, b


@njit(cache=True, nogil=True)
def _resp_pairs(resp, starts):
    """q(s_{t-1} = k) q(s_t = j) for every frame that is not a sequence's first."""
    T, K = resp.shape
    pairs = np.zeros((T, K, K))
    first = np.zeros(T, dtype=np.bool_)
    for s in starts:
        first[s] = True
    for t in range(1, T):
        if first[t]:
            continue
        for k in range(K):
            for j in range(K):
                pairs[t, k, j] = resp[t - 1, k] * resp[t, j]
    return pairs


def stats_from_resp(resp, starts, X):
    """The statistics of a labelling ``resp`` (T, K) (a start): the pairs of
    consecutive frames' responsibilities, at xi = 0."""
    K = resp.shape[1]
    pairs = _resp_pairs(np.ascontiguousarray(resp, dtype=float), starts)
    A, b = stats_from_pairs(pairs, np.zeros((resp.shape[0], K, max(K - 1, 0))), X)
    return LogisticStats(A, b)


@njit(cache=True, nogil=True)
def stick_breaking_log_probs(coef, X):
    """ln pi_kj(x_t) (T, K, K) of the coefficients ``coef`` (K, K-1, D) at the design
    rows ``X`` (T, D): exact stick-breaking logistic transition log-probabilities."""
    T, D = X.shape
    K = coef.shape[0]
    out = np.zeros((T, K, K))
    for t in range(T):
        for k in range(K):
            passed = 0.0
            for i in range(K - 1):
                psi = 0.0
                for d in range(D):
                    psi += coef[k, i, d] * X[t, d]
                out[t, k, i] = passed + _log_sigmoid(psi)
                passed += _log_sigmoid(-psi)
            out[t, k, K - 1] = passed
    return out


def design_matrix(U):
    """The design rows [u_t, 1] (T, P + 1) of validated inputs ``U`` (T, P)."""
    U = np.asarray(U, dtype=float)
    return np.ascontiguousarray(np.hstack([U, np.ones((U.shape[0], 1))]))


def stick_breaking_transitions(coef, U):
    """Transition matrices of stick-breaking logistic transitions at every input.

    Parameters
    ----------
    coef : array-like of shape (K, K - 1, P + 1)
        Coefficients of every stick i of every row k, the bias last (for a fitted
        ``VBHiddenMarkov(transition_inputs="continuous")``, its ``transition_coef_``:
        the posterior means, the plug-in of its predictions).
    U : array-like of shape (n_frames, P)
        Inputs.

    Returns
    -------
    ndarray of shape (n_frames, K, K)
        ``out[t, k, j]`` = p(s_t = j | s_{t-1} = k, u_t) = sigma(psi_tkj)
        prod_{i<j} sigma(-psi_tki) (the last state takes what the K - 1 sticks leave),
        psi_tki = coef[k, i] . [u_t, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.hmm import stick_breaking_transitions
    >>> coef = np.array([[[0.0, 2.0]], [[0.0, -2.0]]])  # K = 2, one input, no effect
    >>> stick_breaking_transitions(coef, np.zeros((1, 1))).round(3)
    array([[[0.881, 0.119],
            [0.119, 0.881]]])
    """
    coef = np.ascontiguousarray(coef, dtype=float)
    U = np.asarray(U, dtype=float)
    if U.ndim == 1:
        U = U[:, None]
    if coef.ndim != 3 or coef.shape[1] != coef.shape[0] - 1 or U.ndim != 2 \
            or coef.shape[2] != U.shape[1] + 1:
        raise ValueError(f"coef must have shape (K, K - 1, P + 1) for U of shape "
                         f"(n_frames, P); got coef {coef.shape} and U {U.shape}.")
    return np.exp(stick_breaking_log_probs(coef, design_matrix(U)))
