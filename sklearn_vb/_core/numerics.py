"""Log-space numerical helpers shared by the scorers.

Every stochastic evidence estimate is built from log-weights ``a_i``; the weights
``w_i = exp(a_i)`` are never formed.  ``-inf`` log-weights are allowed (zero weight);
NaN log-weights always raise, because a NaN silently dropped would bias the estimate.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm
from scipy.stats import t as student_t

__all__ = [
    "log_sum_exp",
    "log_mean_exp",
    "importance_effective_sample_size",
    "delta_method_stderr",
    "between_run_stderr",
    "interval_stderr",
    "student_t_factor",
    "split_runs",
    "combine_unbiased_for_z",
    "combine_unbiased_for_inverse_z",
    "normalised_weights",
    "spawn_generators",
    "as_seed_sequence",
    "pareto_khat",
    "pareto_khat_threshold",
]


def _check_log_weights(a, name="log_weights"):
    a = np.asarray(a, dtype=float).ravel()
    if a.size == 0:
        raise ValueError(f"{name} must not be empty.")
    if np.any(np.isnan(a)):
        raise ValueError(f"{name} contains NaN.")
    if np.any(a == np.inf):
        raise ValueError(f"{name} contains +inf.")
    return a


def log_sum_exp(a):
    """LSE(a) = ln sum_i exp(a_i); ``-inf`` entries contribute nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.scoring import log_sum_exp
    >>> bool(np.isclose(log_sum_exp(np.log([1.0, 2.0, 3.0])), np.log(6.0)))
    True
    """
    a = _check_log_weights(a)
    if np.all(a == -np.inf):
        return -np.inf
    return float(logsumexp(a))


def log_mean_exp(a):
    """``LME(a) = LSE(a) - ln len(a)``: the log of the mean of the weights ``exp(a)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.scoring import log_mean_exp
    >>> bool(np.isclose(log_mean_exp(np.log([1.0, 2.0, 3.0])), np.log(2.0)))
    True
    """
    a = _check_log_weights(a)
    return log_sum_exp(a) - np.log(a.size)


def normalised_weights(a):
    """Weights ``exp(a_i) / sum_j exp(a_j)`` computed in log space."""
    a = _check_log_weights(a)
    if np.all(a == -np.inf):
        return np.full(a.size, np.nan)
    return np.exp(a - log_sum_exp(a))


def importance_effective_sample_size(a):
    """ESS = exp(2 LSE(a) - LSE(2a)) of the importance weights ``exp(a)`` (Kish's
    effective sample size); 0 if all weights vanish.  For the effective sample size of
    a Markov chain see :func:`sklearn_vb.mcmc.effective_sample_size`.

    Examples
    --------
    Equal weights count fully; one dominant weight counts once:

    >>> import numpy as np
    >>> from sklearn_vb.scoring import importance_effective_sample_size as ess
    >>> round(ess(np.zeros(10)), 6), round(ess(np.log([1, 1e-3, 1e-3])), 3)
    (10.0, 1.004)
    """
    a = _check_log_weights(a)
    if np.all(a == -np.inf):
        return 0.0
    return float(np.exp(2.0 * log_sum_exp(a) - log_sum_exp(2.0 * a)))


def delta_method_stderr(a):
    """Standard error of ``LME(a)`` by the delta method.

    With normalised weights ``w~``, ``Var(ln Z^) ~ sum w~^2 - 1/M = 1/ESS - 1/M``.
    Returns ``(stderr, reliable)``; the value is unreliable when ``ESS < 10``.

    Examples
    --------
    Equal weights give an exact estimate; one dominant weight makes it unreliable:

    >>> import numpy as np
    >>> from sklearn_vb.scoring import delta_method_stderr
    >>> delta_method_stderr(np.zeros(100))
    (0.0, True)
    >>> stderr, reliable = delta_method_stderr(np.array([0.0, -20.0, -20.0, -20.0]))
    >>> reliable
    False
    """
    a = _check_log_weights(a)
    M = a.size
    ess = importance_effective_sample_size(a)
    if ess == 0.0:
        return np.inf, False
    var = max(1.0 / ess - 1.0 / M, 0.0)
    return float(np.sqrt(var)), bool(ess >= 10.0)


def between_run_stderr(estimates):
    """``sd(ln Z_r) / sqrt(R)`` over ``R`` independent run estimates (None if R < 2)."""
    e = np.asarray(estimates, dtype=float).ravel()
    if e.size < 2 or not np.all(np.isfinite(e)):
        return None
    return float(np.std(e, ddof=1) / np.sqrt(e.size))


def interval_stderr(estimates):
    """A standard error of the mean of ``R`` independent run estimates such that ``mean
    +- 2 stderr`` is an interval of the normal ``+- 2 sigma`` coverage (95.4 %) even for few
    runs: ``sd / sqrt(R)`` times ``t_{R-1}(Phi(2)) / 2``, the Student-t quantile of the
    ``R - 1`` degrees of freedom of ``sd`` over the normal one (1.65 for R = 4, 1.09 for
    R = 16).  ``sd / sqrt(R)`` alone gives ``+- 2`` intervals that cover 86 % of the time
    with R = 4.  None if R < 2."""
    se = between_run_stderr(estimates)
    if se is None:
        return None
    return se * student_t_factor(np.size(estimates) - 1)


def student_t_factor(dof):
    """``t_dof(Phi(2)) / 2``: how much wider a ``+- 2`` interval must be when the standard
    deviation is itself estimated with ``dof`` degrees of freedom."""
    return float(student_t.ppf(norm.cdf(2.0), int(dof)) / 2.0)


def split_runs(a, n_runs):
    """Split pooled log-weights ``a`` (chains or draws, in order) into ``n_runs``
    contiguous, equally large (up to one) independent runs; at most ``len(a)`` runs."""
    a = np.asarray(a, dtype=float).ravel()
    n_runs = int(n_runs)
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}.")
    return [r for r in np.array_split(a, min(n_runs, a.size)) if r.size]


def combine_unbiased_for_z(log_weight_sets):
    """Pool the log-weights of independent runs of an estimator unbiased for Z.

    IS, AIS and likelihood weighting: pool every weight and take LME.
    """
    pooled = np.concatenate([np.asarray(a, dtype=float).ravel() for a in log_weight_sets])
    return log_mean_exp(pooled)


def combine_unbiased_for_inverse_z(log_u_sets):
    """Pool reverse log-weights ``ln u`` (unbiased for 1/Z): returns ``-LME(ln u)``."""
    pooled = np.concatenate([np.asarray(a, dtype=float).ravel() for a in log_u_sets])
    return -log_mean_exp(pooled)


def as_seed_sequence(random_state):
    """A :class:`numpy.random.SeedSequence` from an int, None, SeedSequence or Generator.

    A Generator is consumed once (one 63-bit draw) to derive the entropy, so passing
    the same Generator twice gives different but reproducible streams.
    """
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(0, 2**31 - 1)))
    if random_state is None or isinstance(random_state, (int, np.integer)):
        if random_state is not None and random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return np.random.SeedSequence(random_state)
    raise ValueError(
        "random_state must be None, an int, a numpy SeedSequence or Generator, "
        f"got {type(random_state).__name__}."
    )


def spawn_generators(random_state, n):
    """``n`` independent Generators from ``SeedSequence.spawn`` (one per chain or run)."""
    ss = as_seed_sequence(random_state)
    return [np.random.default_rng(child) for child in ss.spawn(int(n))]


def _gpd_fit_shape(x):
    """Shape ``k`` of a generalised Pareto distribution fitted to the positive
    exceedances ``x`` (sorted ascending) by the empirical-Bayes method of Zhang &
    Stephens (2009), with the weakly informative prior on ``k`` of Vehtari et al.
    (2024, PSIS), which pulls it towards 0.5 by the weight of 10 observations."""
    n = x.size
    m = 30 + int(np.sqrt(n))
    b = 1.0 - np.sqrt(m / (np.arange(1, m + 1) - 0.5))
    b = b / (3.0 * x[int(n / 4 + 0.5) - 1]) + 1.0 / x[-1]
    k = np.mean(np.log1p(-b[:, None] * x[None, :]), axis=1)
    log_lik = n * (np.log(-b / k) - k - 1.0)
    w = 1.0 / np.sum(np.exp(log_lik[None, :] - log_lik[:, None]), axis=1)
    keep = w >= 10 * np.finfo(float).eps
    w, b = w[keep], b[keep]
    b_post = np.sum(b * w) / np.sum(w)
    k_post = float(np.mean(np.log1p(-b_post * x)))
    return (n * k_post + 10 * 0.5) / (n + 10)


def pareto_khat(a):
    """Pareto ``k-hat`` of the largest importance weights ``exp(a)`` (Vehtari, Simpson,
    Gelman, Yao & Gabry 2024, "Pareto smoothed importance sampling"): the shape of a
    generalised Pareto distribution fitted to the ``min(M/5, 3 sqrt(M))`` largest
    weights.  The weights have a finite variance only for ``k < 1/2``; above
    :func:`pareto_khat_threshold` the mean of the weights is not trustworthy at this
    sample size and neither is any standard error computed from them.  The fit sees
    only the draws, so a tail no draw has reached yet goes unseen.  ``inf`` when too
    few draws have a positive weight to fit a tail, ``-inf`` when the largest weights
    are tied (equal weights: no tail)."""
    a = _check_log_weights(a)
    finite = a[np.isfinite(a)]
    M = a.size
    n_tail = int(np.ceil(min(0.2 * M, 3.0 * np.sqrt(M))))
    if finite.size <= n_tail + 1 or n_tail < 5:
        return np.inf
    x = np.sort(finite - finite.max())
    cutoff = x[-n_tail - 1]
    tail = np.exp(x[-n_tail:]) - np.exp(cutoff)
    tail = tail[tail > 0]
    if tail.size < 5:  # the largest weights are tied: no tail at all
        return -np.inf
    return float(_gpd_fit_shape(tail))


def pareto_khat_threshold(M, limit=0.7):
    """``min(1 - 1/log10 M, limit)``: the largest ``k-hat`` at which ``M`` importance
    weights estimate their mean reliably (Vehtari et al. 2024, section 3: 0.7 for
    Pareto-smoothed weights; raw weights need a finite variance, ``limit=0.5``)."""
    return float(min(1.0 - 1.0 / np.log10(max(int(M), 11)), limit))
