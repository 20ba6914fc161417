"""Variational Bayesian hidden Markov models (Beal 2003, Chapter 3).

:class:`VBHiddenMarkov` fits an HMM with categorical or Gaussian emissions by
variational Bayesian EM.  The posterior over parameters factorises into Dirichlet
distributions for the initial distribution and for every row of the transition (and
categorical emission) matrix, and into Normal-Wishart (full covariance) or per-dimension
Normal-Gamma (diagonal covariance) distributions for Gaussian emissions.  The posterior
over the hidden path is computed by a scaled forward-backward pass run with the
sub-normalised parameters exp E[ln theta] (``sklearn_vb._kernels.hmm``).

The lower bound is recorded after each VBE step, for the stored pair (q(s), q(theta)):

    F = sum_i ln Z_i - KL[q(pi) || p(pi)] - sum_j KL[q(A_j) || p(A_j)] - sum_j KL[q(emission_j) || p]

with every constant included (also the -D/2 ln 2 pi per frame of Gaussian emissions).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy import sparse
from scipy.special import digamma, polygamma
from sklearn.base import DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._distributions import (
    dirichlet_expected_log,
    dirichlet_kl,
    log_multivariate_beta,
    normal_gamma_kl,
    normal_wishart_kl,
)
from ._kernels import hmm as _k
from ._kernels._constants import LOG_2PI
from ._validation import check_sequences, check_symbols, sequence_bounds
from .base import VBEMEstimator

__all__ = ["VBHiddenMarkov"]


# ---------------------------------------------------------------------------
# Dirichlet strength optimisation (spec hmm.md section 9)
# ---------------------------------------------------------------------------


def _strength_objective(lam, base, sum_elog):
    """G(lam) = sum_r -ln B(lam base_r) + lam sum_j base_rj S_rj  (the u-dependent part of -KL)."""
    u = lam * base
    return float(-np.sum(log_multivariate_beta(u)) + np.sum(u * sum_elog))


def optimize_dirichlet_scale(base, elog):
    """Scale factor lam > 0 maximising sum_r -KL(Dir(w_r) || Dir(lam base_r)).

    ``base`` (R, K) are the current prior rows, ``elog`` (R, K) the posterior E[ln theta].
    Only the part of -KL that depends on the prior matters, G(lam) above; it is concave
    in lam (ln B is convex), so its derivative is decreasing and the root is found by a
    bracketed Newton iteration in ln lam.  Returns 1.0 when G does not improve.
    """
    base = np.atleast_2d(base)
    elog = np.atleast_2d(elog)
    b0 = base.sum(axis=-1)
    c = np.sum(base * elog)

    def grad(lam):
        return float(np.sum(b0 * digamma(lam * b0)) - np.sum(base * digamma(lam * base)) + c)

    def hess(lam):
        return float(
            np.sum(b0**2 * polygamma(1, lam * b0)) - np.sum(base**2 * polygamma(1, lam * base))
        )

    lo, hi = 1.0, 1.0
    while grad(lo) < 0 and lo > 1e-12:
        lo *= 0.25
    while grad(hi) > 0 and hi < 1e12:
        hi *= 4.0
    x_lo, x_hi = np.log(lo), np.log(hi)
    x = 0.0 if x_lo <= 0.0 <= x_hi else 0.5 * (x_lo + x_hi)
    for _ in range(100):
        lam = np.exp(x)
        g = grad(lam)
        if g > 0:
            x_lo = x
        else:
            x_hi = x
        h = hess(lam)
        # Newton in x = ln lam: dG/dx = lam g, d2G/dx2 = lam g + lam^2 h
        d2 = lam * g + lam * lam * h
        step = -(lam * g) / d2 if d2 < 0 else np.inf
        x_new = x + step
        if not (x_lo < x_new < x_hi):
            x_new = 0.5 * (x_lo + x_hi)
        if abs(x_new - x) < 1e-13:
            x = x_new
            break
        x = x_new
    lam = float(np.exp(x))
    if _strength_objective(lam, base, elog) < _strength_objective(1.0, base, elog):
        return 1.0
    return lam


# ---------------------------------------------------------------------------
# forward-backward: scaled fast path, log-space fallback (spec section 5)
# ---------------------------------------------------------------------------

#: smallest per-step normaliser (in nats, relative to the shifts) that the scaled
#: recursion is trusted with; below it the step came within ~1e-260 of underflow.
_SCALED_LOG_FLOOR = -600.0

#: weight of the random-parameter state marginals in the "random_marginals" start
_MARGINAL_SHRINK = 0.3


def forward_backward(log_startprob, log_transmat, log_emis, index, starts, ends, want_posteriors):
    """Forward-backward over all sequences from log-weights, robust to underflow.

    Runs the scaled recursion (:func:`sklearn_vb._kernels.hmm.forward_backward`) and
    checks every step's normaliser without its shifts: the shifts make the largest
    weight of each factor one, so a step whose normaliser is below exp(-600) (or zero)
    multiplied weights that are, or nearly are, below the smallest double.  That happens
    with very weak Dirichlet priors (per-entry concentration below ~1e-3, where
    exp E[ln theta] = exp(psi(w) - psi(w_0)) ~ exp(-1/w) underflows) when the data need
    a transition or emission the posterior has (almost) no counts for.  The sequences
    are then recomputed by the log-space recursion
    (:func:`sklearn_vb._kernels.hmm.forward_backward_log`), which is exact at any scale.
    Returns the kernel's outputs (log_norm, frame_log_norm, start_counts, trans_counts,
    emis_counts).
    """
    emis, shift = _k.scale_rows(log_emis)
    out = _k.forward_backward(
        log_startprob, log_transmat, emis, shift, index, starts, ends, want_posteriors
    )
    step_shift = shift[index] + np.max(log_transmat)
    step_shift[starts] = shift[index[starts]] + np.max(log_startprob)
    with np.errstate(invalid="ignore"):
        log_step = out[1] - step_shift
    if np.all(np.isfinite(out[0])) and log_step.min() > _SCALED_LOG_FLOOR:
        return out
    return _k.forward_backward_log(
        log_startprob, log_transmat, log_emis, index, starts, ends, want_posteriors
    )


def _precheck_symbols(X):
    """Errors for categorical X worded as scikit-learn words them for feature arrays."""
    if sparse.issparse(X):
        raise TypeError(
            "VBHiddenMarkov does not accept sparse input: X must be a dense 1-D array "
            "(or one column) of integer symbols."
        )
    arr = np.asarray(X)
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported: X must hold integer symbols.")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is "
            "required: X must be one column of integer symbols."
        )
    if arr.dtype.kind in "iuf" and arr.size:
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError("X contains NaN or infinity; symbols must be integers.")
        if arr.min() < 0:
            raise ValueError(
                f"Negative values in data passed to X: symbol {arr.min()} is negative; "
                "symbols must be integers >= 0."
            )


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------


class VBHiddenMarkov(DensityMixin, VBEMEstimator):
    """Variational Bayesian hidden Markov model with categorical or Gaussian emissions.

    Parameters
    ----------
    n_components : int, default=2
        Number of hidden states K.  States that the data do not support are switched
        off by VB (their posterior equals the prior); see ``n_effective_components_``.
    emission : {"categorical", "gaussian"}, default="categorical"
        Emission model.  Categorical data ``X`` is one column (or 1-D) of integer
        symbols in ``[0, n_symbols)``; Gaussian data is a real (n_samples, n_features)
        array.
    covariance_type : {"full", "diag"}, default="full"
        Gaussian emissions only: Normal-Wishart (full) or per-dimension Normal-Gamma
        (diagonal) prior and posterior on the state means and precisions.
    n_symbols : int or None, default=None
        Alphabet size M for categorical emissions (default: largest symbol + 1).
    startprob_prior, transmat_prior : float, array-like or None
        Dirichlet prior of the initial distribution and of every transition row, as
        *per-entry* concentrations (a scalar is broadcast to every entry; arrays of shape
        (K,) or, for ``transmat_prior``, (K, K)).  Default None: 1/K per entry, total
        concentration 1 per row (Beal's and hmmlearn's convention).  The thesis's
        strength f corresponds to the scalar f/K.
    emissionprob_prior : float, array-like or None
        Dirichlet prior of every categorical emission row, per entry (shape (M,) or
        (K, M)).  Default 1/M per entry.
    means_prior : float, array-like of shape (n_features,) or None
        Gaussian prior mean m0 of every state (default: the data mean, data-dependent).
    beta_prior : float, default=1.0
        Gaussian prior precision scaling beta0: mu | Lambda ~ N(m0, (beta0 Lambda)^-1).
    dof_prior : float or None
        Wishart degrees of freedom nu0 (full; default n_features + 1) or, for diagonal
        covariances, twice the Gamma shape a0 = nu0/2 of each precision (default 2).
    scale_prior : float, array-like or None
        Inverse Wishart scale W0^-1 (full, (D, D)) or twice the Gamma rates, 2 b0
        ((D,), diag); a scalar means that multiple of the identity.  Default
        ``dof_prior * Cov(X)`` (or ``dof_prior * Var(X)``), so that the prior mean
        precision equals the data precision (data-dependent).
    optimize_prior_strengths : bool, default=False
        If True, before every VBM step the overall scale of each Dirichlet prior block
        (initial, transition, categorical emission) is set to maximise the bound
        (spec section 9); the bound then bounds p(X | optimised priors).
    init_params : {"auto", "random_marginals", "random_params", "random", "kmeans", "posterior"}, default="auto"
        Initial q(theta):

        * "random_params" (categorical; the thesis's scheme without its ML pre-run)
          draws every probability vector as normalised Uniform(0, 1) entries theta0 and
          sets w = u + 10 theta0;
        * "random_marginals" (categorical) computes the state marginals q(s_t) of one
          VBE pass under such random parameters, shrinks them towards uniform,
          r_t = 0.7 / K + 0.3 q(s_t), and takes one VBM step from r;
        * "random" is one VBM step from random soft state responsibilities of every
          frame (categorical) or from a hard assignment of the frames to the nearest of
          K random frames (Gaussian);
        * "kmeans" (Gaussian) starts from a k-means labelling;
        * "posterior" uses ``init_posterior``;
        * "auto" is "random_marginals" for categorical and "kmeans" for Gaussian
          emissions.

        The first recorded bound is that of the initial q(theta).

        Why "random_marginals" by default: per-frame random responsibilities ("random")
        aggregate to almost equal counts for every state (the differences shrink as
        1/sqrt(n_samples)), so q(theta) starts next to the symmetric saddle point where
        all states are copies of one another; VBEM leaves it only slowly (bound changes
        below 1e-3 nats for dozens of iterations) or stops there.  Random parameters
        ("random_params") break the symmetry decisively but commit every state to a
        random role, and with more states than the data support VB then prunes poorly
        (5-8 of 8 states kept on 3-state data, where the other starts keep 3-5).  The shrunk marginals
        start near the symmetric point, where pruning works, but displaced by a fixed
        amount in a direction the data define.  Over 12 seeds on six data sets (sticky,
        weakly separated and cyclic chains) and K = 2, 3, 8, the median shortfall from
        the best bound found was 16.1 nats for "random_marginals", 25.2 for
        "random_params" and 26.5 for "random", at about the same number of iterations
        (150-170 at tol=1e-3; the best of three starts: 12.1, 11.2 and 20.3 nats).
    init_posterior : dict or None
        Initial posterior parameters for ``init_params="posterior"``: keys
        ``startprob`` (K,), ``transmat`` (K, K) and ``emissionprob`` (K, M) (Dirichlet
        counts), or for Gaussian emissions ``means`` (K, D), ``beta`` (K,), ``dof`` (K,)
        and ``scale`` ((K, D, D) or (K, D)).
    max_iter, tol, n_init, random_state, warm_start, verbose, verbose_interval, bound_check
        See :class:`sklearn_vb.base.VBEMEstimator`.  ``max_iter`` defaults to 1000, the
        thesis's setting: VB-HMM runs typically need 100-300 iterations to reach
        ``tol``.  ``tol`` is in nats on the total
        bound (not per frame: a long data set needs as many iterations to reach it as a
        short one needs for the same relative precision).  Convergence is declared when
        the bound changed by less than ``tol`` *and* its increments are not growing: a
        run that is leaving a saddle point (e.g. symmetric states) shows tiny but
        accelerating increments and is continued.  At least three iterations run.
        ``warm_start`` continues on the same data.

    Attributes
    ----------
    startprob_posterior_, transmat_posterior_, emissionprob_posterior_ : ndarray
        Dirichlet posterior counts w = u + N.
    means_posterior_, beta_posterior_, dof_posterior_, scale_posterior_ : ndarray
        Gaussian emission posterior (scale = W^-1, or twice the Gamma rates for diag).
    startprob_prior_, transmat_prior_, emissionprob_prior_, means_prior_, beta_prior_,
    dof_prior_, scale_prior_ : ndarray or float
        The priors actually used (after any optimisation).
    startprob_, transmat_, emissionprob_ : ndarray
        Posterior means.
    means_, covars_ : ndarray
        Posterior mean of the state means and inverse of the posterior-mean precision.
    lower_bound_, lower_bounds_, n_iter_, converged_ : see the base class.
    lower_bound_terms_ : dict
        ``log_normaliser`` (sum of ln Z over sequences), ``kl_startprob``,
        ``kl_transmat``, ``kl_emission``; ``lower_bound_`` = log_normaliser - the KLs.
    occupancy_ : ndarray (K,)
        Expected number of frames spent in each state.
    n_effective_components_ : int
        Number of states with an expected occupancy of at least one frame (the others
        are switched off: their posterior is (nearly) the prior).
    n_features_in_ : int
    n_symbols_ : int (categorical only)

    Notes
    -----
    ``score``, ``score_samples``, ``predict``, ``decode`` and ``bic``/``aic`` use the
    posterior-mean parameters (plug-in, as the thesis's English-text experiment and
    BayesianGaussianMixture); ``predict_proba`` returns the variational state marginals
    q(s_t) (one VBE pass on the new data with q(theta) fixed); ``decode`` offers
    ``parameters="expected_log"``, Viterbi under exp E[ln theta], which is the most
    probable path under q(s).
    """

    _parameter_constraints: dict = {
        **VBEMEstimator._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "emission": [StrOptions({"categorical", "gaussian"})],
        "covariance_type": [StrOptions({"full", "diag"})],
        "n_symbols": [None, Interval(Integral, 1, None, closed="left")],
        "startprob_prior": [None, Real, "array-like"],
        "transmat_prior": [None, Real, "array-like"],
        "emissionprob_prior": [None, Real, "array-like"],
        "means_prior": [None, Real, "array-like"],
        "beta_prior": [Interval(Real, 0.0, None, closed="neither")],
        "dof_prior": [None, Interval(Real, 0.0, None, closed="neither")],
        "scale_prior": [None, Real, "array-like"],
        "optimize_prior_strengths": ["boolean"],
        "init_params": [
            StrOptions({"auto", "random_marginals", "random", "random_params", "kmeans", "posterior"})
        ],
        "init_posterior": [None, dict],
    }

    def __init__(
        self,
        n_components=2,
        *,
        emission="categorical",
        covariance_type="full",
        n_symbols=None,
        startprob_prior=None,
        transmat_prior=None,
        emissionprob_prior=None,
        means_prior=None,
        beta_prior=1.0,
        dof_prior=None,
        scale_prior=None,
        optimize_prior_strengths=False,
        max_iter=1000,
        tol=1e-3,
        n_init=1,
        init_params="auto",
        init_posterior=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
    ):
        super().__init__(
            max_iter=max_iter,
            tol=tol,
            n_init=n_init,
            init_params=init_params,
            random_state=random_state,
            warm_start=warm_start,
            verbose=verbose,
            verbose_interval=verbose_interval,
            bound_check=bound_check,
        )
        self.n_components = n_components
        self.emission = emission
        self.covariance_type = covariance_type
        self.n_symbols = n_symbols
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.means_prior = means_prior
        self.beta_prior = beta_prior
        self.dof_prior = dof_prior
        self.scale_prior = scale_prior
        self.optimize_prior_strengths = optimize_prior_strengths
        self.init_posterior = init_posterior

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        if self.emission == "categorical":
            # X is one sequence of non-negative integer symbols: a 1-D array or a
            # single column
            tags.input_tags.categorical = True
            tags.input_tags.positive_only = True
            tags.input_tags.one_d_array = True
        return tags

    # ------------------------------------------------------------------ data
    @property
    def _categorical(self):
        return self.emission == "categorical"

    def _validate_X(self, X, reset):
        if self._categorical:
            _precheck_symbols(X)
            n_symbols = None if reset else self.n_symbols_
            if reset and self.n_symbols is not None:
                n_symbols = self.n_symbols
            symbols = check_symbols(X, "X", n_symbols=n_symbols)
            if reset:
                self.n_features_in_ = 1
            return symbols
        return validate_data(self, X, reset=reset, dtype=np.float64, ensure_min_samples=1)

    def _sequence_data(self, X, lengths, sequence_ids, reset):
        Xv = self._validate_X(X, reset)
        lens = check_sequences(Xv.shape[0], lengths, sequence_ids)
        starts, ends = sequence_bounds(lens)
        data = {"lengths": lens, "starts": starts, "ends": ends, "n_frames": Xv.shape[0]}
        if self._categorical:
            data["symbols"] = Xv
            data["index"] = Xv
        else:
            data["X"] = Xv
            data["index"] = np.arange(Xv.shape[0], dtype=np.int64)
        return data

    def _check_fit_data(self, X, lengths=None, sequence_ids=None):
        data = self._sequence_data(X, lengths, sequence_ids, reset=True)
        if self._categorical:
            symbols = data["symbols"]
            self.n_symbols_ = int(self.n_symbols) if self.n_symbols else int(symbols.max()) + 1
        else:
            Xf = data["X"]
            data["mean"] = Xf.mean(axis=0)
            if Xf.shape[0] > 1:
                var = Xf.var(axis=0)
                cov = np.atleast_2d(np.cov(Xf, rowvar=False, bias=True))
            else:
                var = np.zeros(Xf.shape[1])
                cov = np.zeros((Xf.shape[1], Xf.shape[1]))
            # a floor keeps the default prior proper for constant or tiny data sets
            floor = 1e-6 * max(1.0, float(np.max(var)))
            data["var"] = np.maximum(var, floor)
            data["cov"] = cov + floor * np.eye(Xf.shape[1])
        return data

    # ------------------------------------------------------------------ priors
    def _dirichlet_prior(self, value, name, shape, default):
        if value is None:
            return np.full(shape, default)
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(f"{name} must contain positive finite values; got {value!r}.")
        try:
            return np.broadcast_to(arr, shape).copy()
        except ValueError:
            raise ValueError(
                f"{name} has shape {arr.shape}, which does not broadcast to {shape}."
            ) from None

    def _resolve_priors(self, data):
        K = self.n_components
        self.startprob_prior_ = self._dirichlet_prior(self.startprob_prior, "startprob_prior", (K,), 1.0 / K)
        self.transmat_prior_ = self._dirichlet_prior(self.transmat_prior, "transmat_prior", (K, K), 1.0 / K)
        if self._categorical:
            M = self.n_symbols_
            self.emissionprob_prior_ = self._dirichlet_prior(
                self.emissionprob_prior, "emissionprob_prior", (K, M), 1.0 / M
            )
            return
        D = data["X"].shape[1]
        full = self.covariance_type == "full"
        if self.means_prior is None:
            m0 = data["mean"].copy()
        else:
            m0 = np.asarray(self.means_prior, dtype=float)
            if not np.all(np.isfinite(m0)):
                raise ValueError("means_prior must be finite.")
            try:
                m0 = np.broadcast_to(m0, (D,)).copy()
            except ValueError:
                raise ValueError(
                    f"means_prior has shape {m0.shape}; expected a scalar or ({D},)."
                ) from None
        nu0 = float(self.dof_prior) if self.dof_prior is not None else (D + 1.0 if full else 2.0)
        if full and nu0 <= D - 1:
            raise ValueError(f"dof_prior must exceed n_features - 1 = {D - 1}; got {nu0}.")
        if self.scale_prior is None:
            s0 = nu0 * (data["cov"] if full else data["var"])
        else:
            s0 = np.asarray(self.scale_prior, dtype=float)
            if full:
                if s0.ndim == 0:
                    s0 = s0 * np.eye(D)
                if s0.shape != (D, D) or not np.all(np.isfinite(s0)):
                    raise ValueError(f"scale_prior must be a scalar or a finite ({D}, {D}) matrix.")
                if not np.allclose(s0, s0.T) or np.any(np.linalg.eigvalsh(s0) <= 0):
                    raise ValueError("scale_prior must be symmetric positive definite.")
            else:
                try:
                    s0 = np.broadcast_to(s0, (D,)).copy()
                except ValueError:
                    raise ValueError(f"scale_prior must be a scalar or of shape ({D},).") from None
                if not np.all(np.isfinite(s0)) or np.any(s0 <= 0):
                    raise ValueError("scale_prior must contain positive finite values.")
        self.means_prior_ = m0
        self.beta_prior_ = float(self.beta_prior)
        self.dof_prior_ = nu0
        self.scale_prior_ = np.array(s0, dtype=float)

    # ------------------------------------------------------------------ init
    def _initialize(self, data, random_state):
        self._resolve_priors(data)
        K = self.n_components
        how = self.init_params
        if how == "auto":
            how = "random_marginals" if self._categorical else "kmeans"
        if how == "posterior":
            self._init_from_posterior()
        elif how in ("random_params", "random_marginals"):
            if not self._categorical:
                raise ValueError(f"init_params={how!r} needs categorical emissions.")

            def draw(shape):
                theta = random_state.uniform(size=shape)
                return 10.0 * theta / theta.sum(axis=-1, keepdims=True)

            self.startprob_posterior_ = self.startprob_prior_ + draw(K)
            self.transmat_posterior_ = self.transmat_prior_ + draw((K, K))
            self.emissionprob_posterior_ = self.emissionprob_prior_ + draw((K, self.n_symbols_))
            if how == "random_marginals":
                resp = (1.0 - _MARGINAL_SHRINK) / K + _MARGINAL_SHRINK * self._frame_marginals(data)
                self._vbm_from_stats(self._stats_from_resp(resp, data))
        elif self._categorical:
            if how == "kmeans":
                raise ValueError("init_params='kmeans' needs Gaussian emissions; use 'random'.")
            # random soft responsibilities for every frame, counted as one VBE step would
            resp = random_state.dirichlet(np.ones(K), size=data["n_frames"])
            stats = self._stats_from_resp(resp, data)
            self._vbm_from_stats(stats)
        else:
            X = data["X"]
            n = X.shape[0]
            if n < K:
                raise ValueError(
                    f"init_params={how!r} needs at least n_components={K} samples; "
                    f"got n_samples={n}."
                )
            if how == "kmeans":
                from sklearn.cluster import KMeans

                labels = KMeans(
                    n_clusters=K, n_init=1, random_state=random_state.randint(2**31 - 1)
                ).fit_predict(X)
            else:
                centres = X[random_state.choice(n, K, replace=False)]
                d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
                labels = np.argmin(d2, axis=1)
            resp = np.zeros((n, K))
            resp[np.arange(n), labels] = 1.0
            stats = self._stats_from_resp(resp, data)
            self._vbm_from_stats(stats)
        self._fresh = True
        self._stats_ = None
        self._run_bounds = []

    def _init_from_posterior(self):
        post = self.init_posterior
        if post is None:
            raise ValueError("init_params='posterior' needs init_posterior (a dict of arrays).")
        K = self.n_components

        def get(key, shape):
            if key not in post:
                raise ValueError(f"init_posterior is missing the key {key!r}.")
            arr = np.array(post[key], dtype=float)
            if arr.shape != shape:
                raise ValueError(f"init_posterior[{key!r}] must have shape {shape}; got {arr.shape}.")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"init_posterior[{key!r}] must be finite.")
            return arr

        def positive(key, arr):
            if np.any(arr <= 0):
                raise ValueError(f"init_posterior[{key!r}] must be positive.")
            return arr

        self.startprob_posterior_ = positive("startprob", get("startprob", (K,)))
        self.transmat_posterior_ = positive("transmat", get("transmat", (K, K)))
        if self._categorical:
            self.emissionprob_posterior_ = positive("emissionprob", get("emissionprob", (K, self.n_symbols_)))
            return
        D = self.n_features_in_
        self.means_posterior_ = get("means", (K, D))
        self.beta_posterior_ = positive("beta", get("beta", (K,)))
        self.dof_posterior_ = positive("dof", get("dof", (K,)))
        shape = (K, D, D) if self.covariance_type == "full" else (K, D)
        self.scale_posterior_ = get("scale", shape)
        if self.covariance_type == "full":
            if np.any(np.linalg.eigvalsh(self.scale_posterior_) <= 0):
                raise ValueError("init_posterior['scale'] must be positive definite.")
        else:
            positive("scale", self.scale_posterior_)

    # ------------------------------------------------------------------ statistics
    def _stats_from_resp(self, resp, data):
        """Sufficient statistics of a hard or soft labelling (used for initialisation)."""
        starts = data["starts"]
        inner = np.ones(data["n_frames"], dtype=bool)
        inner[starts] = False
        idx = np.flatnonzero(inner)
        trans = resp[idx - 1].T @ resp[idx]
        stats = {"start": resp[starts].sum(axis=0), "trans": trans}
        stats.update(self._emission_stats(resp, data))
        return stats

    def _emission_stats(self, resp, data):
        if self._categorical:
            emis = np.zeros((self.n_symbols_, resp.shape[1]))
            np.add.at(emis, data["symbols"], resp)
            return {"emis": emis.T.copy()}
        X = data["X"]
        Xc = X - self.means_prior_
        stats = {"N": resp.sum(axis=0), "S1": resp.T @ Xc}
        if self.covariance_type == "full":
            stats["S2"] = np.einsum("nk,ni,nj->kij", resp, Xc, Xc, optimize=True)
        else:
            stats["S2"] = resp.T @ (Xc * Xc)
        return stats

    # ------------------------------------------------------------------ VBM
    def _vbm_from_stats(self, stats):
        self.startprob_posterior_ = self.startprob_prior_ + stats["start"]
        self.transmat_posterior_ = self.transmat_prior_ + stats["trans"]
        if self._categorical:
            self.emissionprob_posterior_ = self.emissionprob_prior_ + stats["emis"]
            return
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        beta = self.beta_prior_ + N
        self.beta_posterior_ = beta
        self.means_posterior_ = self.means_prior_ + S1 / beta[:, None]
        self.dof_posterior_ = self.dof_prior_ + N
        if self.covariance_type == "full":
            scale = self.scale_prior_ + S2 - S1[:, :, None] * S1[:, None, :] / beta[:, None, None]
            self.scale_posterior_ = 0.5 * (scale + np.swapaxes(scale, 1, 2))
        else:
            self.scale_posterior_ = self.scale_prior_ + np.maximum(S2 - S1 * S1 / beta[:, None], 0.0)

    # ------------------------------------------------------------------ expectations
    def _expected_log_params(self):
        """E[ln pi], E[ln A] and the emission quantities under q(theta)."""
        Lpi = dirichlet_expected_log(self.startprob_posterior_)
        LA = dirichlet_expected_log(self.transmat_posterior_)
        if self._categorical:
            return Lpi, LA, dirichlet_expected_log(self.emissionprob_posterior_)
        return Lpi, LA, self._gaussian_expectations()

    def _gaussian_expectations(self):
        """Per state: const_k, the precision (Cholesky or diagonal) of the quadratic term
        and the mean.

        E[ln N(x | mu_k, Lambda_k)] = const_k - 0.5 (x - m_k)^T E[Lambda_k] (x - m_k).
        """
        D = self.n_features_in_
        beta, nu, scale = self.beta_posterior_, self.dof_posterior_, self.scale_posterior_
        if self.covariance_type == "full":
            chol_s = np.linalg.cholesky(scale)
            logdet_s = 2.0 * np.log(np.diagonal(chol_s, axis1=1, axis2=2)).sum(axis=1)
            e_logdet = (
                digamma(0.5 * (nu[:, None] - np.arange(D))).sum(axis=1) + D * np.log(2.0) - logdet_s
            )
            prec = nu[:, None, None] * np.linalg.inv(scale)
            prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
            quad = np.linalg.cholesky(prec)
        else:
            a = 0.5 * nu
            b = 0.5 * scale
            e_logdet = (digamma(a)[:, None] - np.log(b)).sum(axis=1)
            quad = a[:, None] / b
        const = 0.5 * e_logdet - 0.5 * D * LOG_2PI - 0.5 * D / beta
        return const, quad, self.means_posterior_.copy()

    def _plugin_gaussian(self):
        """const_k and precision for the posterior-mean parameters (means_, covars_)."""
        D = self.n_features_in_
        nu, scale = self.dof_posterior_, self.scale_posterior_
        if self.covariance_type == "full":
            prec = nu[:, None, None] * np.linalg.inv(scale)
            prec = 0.5 * (prec + np.swapaxes(prec, 1, 2))
            quad = np.linalg.cholesky(prec)
            logdet = 2.0 * np.log(np.diagonal(quad, axis1=1, axis2=2)).sum(axis=1)
        else:
            quad = nu[:, None] / scale
            logdet = np.log(quad).sum(axis=1)
        return 0.5 * logdet - 0.5 * D * LOG_2PI, quad, self.means_posterior_.copy()

    def _emission_log_table(self, data, emission_params):
        """Log emission weights (R, K): per symbol (categorical) or per frame (Gaussian)."""
        if self._categorical:
            return np.ascontiguousarray(emission_params.T)
        const, quad, mean = emission_params
        X = data["X"]
        if self.covariance_type == "full":
            return _k.gaussian_full_log_weights(X, mean, np.ascontiguousarray(quad), const)
        return _k.gaussian_diag_log_weights(X, mean, quad, const)

    def _expected_complete_loglik(self, stats, Lpi, LA, LE):
        """E_{q(s) q(theta)} ln p(s, X | theta) from the statistics of q(s)."""
        value = float(np.dot(stats["start"], Lpi) + np.sum(stats["trans"] * LA))
        if self._categorical:
            return value + float(np.sum(stats["emis"] * LE))
        const, quad, means = LE
        N, S1, S2 = stats["N"], stats["S1"], stats["S2"]
        delta = means - self.means_prior_
        if self.covariance_type == "full":
            prec = quad @ np.swapaxes(quad, 1, 2)
            scatter = (
                S2
                - S1[:, :, None] * delta[:, None, :]
                - delta[:, :, None] * S1[:, None, :]
                + N[:, None, None] * delta[:, :, None] * delta[:, None, :]
            )
            quad_term = np.einsum("kij,kji->k", prec, scatter)
        else:
            quad_term = np.sum(quad * (S2 - 2.0 * S1 * delta + N[:, None] * delta**2), axis=1)
        return value + float(np.sum(N * const - 0.5 * quad_term))

    def _kl_terms(self):
        kl_start = float(dirichlet_kl(self.startprob_posterior_, self.startprob_prior_))
        kl_trans = float(np.sum(dirichlet_kl(self.transmat_posterior_, self.transmat_prior_)))
        if self._categorical:
            kl_emis = float(np.sum(dirichlet_kl(self.emissionprob_posterior_, self.emissionprob_prior_)))
        elif self.covariance_type == "full":
            kl_emis = float(
                np.sum(
                    normal_wishart_kl(
                        self.means_posterior_,
                        self.beta_posterior_,
                        np.linalg.inv(self.scale_posterior_),
                        self.dof_posterior_,
                        self.means_prior_,
                        self.beta_prior_,
                        np.linalg.inv(self.scale_prior_),
                        self.dof_prior_,
                    )
                )
            )
        else:
            kl_emis = float(
                np.sum(
                    normal_gamma_kl(
                        self.means_posterior_,
                        self.beta_posterior_[:, None],
                        0.5 * self.dof_posterior_[:, None],
                        0.5 * self.scale_posterior_,
                        self.means_prior_,
                        self.beta_prior_,
                        0.5 * self.dof_prior_,
                        0.5 * self.scale_prior_,
                    )
                )
            )
        return kl_start, kl_trans, kl_emis

    # ------------------------------------------------------------------ VBE
    def _vbe(self, data, want_posteriors=True):
        Lpi, LA, LE = self._expected_log_params()
        out = forward_backward(
            Lpi, LA, self._emission_log_table(data, LE), data["index"], data["starts"], data["ends"],
            want_posteriors,
        )
        return out, (Lpi, LA, LE)

    def _stats_from_vbe(self, out, data):
        log_norm, _, start, trans, emis_counts = out
        stats = {"start": start, "trans": trans}
        if self._categorical:
            stats["emis"] = np.ascontiguousarray(emis_counts.T)
        else:
            stats.update(self._emission_stats(emis_counts, data))
        return stats

    # ------------------------------------------------------------------ loop steps
    def _iteration_steps(self):
        if self.optimize_prior_strengths:
            return ("prior", "vbm", "vbe")
        return ("vbm", "vbe")

    def _step_prior(self, data, iteration):
        if getattr(self, "_fresh", False):
            return
        blocks = [("startprob", self.startprob_posterior_), ("transmat", self.transmat_posterior_)]
        if self._categorical:
            blocks.append(("emissionprob", self.emissionprob_posterior_))
        for name, post in blocks:
            prior = getattr(self, f"{name}_prior_")
            if prior.shape[-1] < 2:
                continue  # a one-entry Dirichlet is a point mass: nothing to optimise
            lam = optimize_dirichlet_scale(np.atleast_2d(prior), dirichlet_expected_log(np.atleast_2d(post)))
            setattr(self, f"{name}_prior_", prior * lam)
        self._at_vbe = False

    def _step_vbm(self, data, iteration):
        if getattr(self, "_fresh", False):
            return  # the initial q(theta) is evaluated first
        self._vbm_from_stats(self._stats_)
        self._at_vbe = False

    def _step_vbe(self, data, iteration):
        self._fresh = False
        out, expected = self._vbe(data)
        self._stats_ = self._stats_from_vbe(out, data)
        self._vbe_log_norm_ = float(out[0].sum())
        self._vbe_expected_log_ = expected  # q(theta) that produced q(s)
        self._at_vbe = True
        self._vbe_bound = self._vbe_log_norm_ - sum(self._kl_terms())
        if not hasattr(self, "_run_bounds"):
            self._run_bounds = []
        self._run_bounds.append(self._vbe_bound)

    def _can_stop(self, iteration):
        """Stop only once the bound's increments have stopped growing.

        Near a saddle point (e.g. states that are copies of one another) the increments
        are tiny but grow geometrically as the run leaves it; near a maximum they shrink.
        The base loop has already checked that the last increment is below ``tol``.
        """
        b = self._run_bounds
        if len(b) < 3:
            return False
        return b[-1] - b[-2] <= b[-2] - b[-3]

    def _lower_bound(self, data):
        """F = H[q(s)] + E ln p(s, X | theta) - KL, with H[q(s)] = ln Z - E_vbe ln p(s, X | theta).

        Right after the VBE step this is ln Z - KL; after a VBM or prior step it is the
        bound of the stored q(s) with the new q(theta) (spec section 6, F_after_VBM).
        """
        if getattr(self, "_at_vbe", False):
            return self._vbe_bound
        kl = sum(self._kl_terms())
        elogp = self._expected_complete_loglik(self._stats_, *self._expected_log_params())
        elogp_vbe = self._expected_complete_loglik(self._stats_, *self._vbe_expected_log_)
        return self._vbe_log_norm_ + (elogp - elogp_vbe) - kl

    def _finalize(self, data):
        kl_start, kl_trans, kl_emis = self._kl_terms()
        self.lower_bound_terms_ = {
            "log_normaliser": self._vbe_log_norm_,
            "kl_startprob": kl_start,
            "kl_transmat": kl_trans,
            "kl_emission": kl_emis,
        }
        self.startprob_ = self.startprob_posterior_ / self.startprob_posterior_.sum()
        self.transmat_ = self.transmat_posterior_ / self.transmat_posterior_.sum(axis=1, keepdims=True)
        if self._categorical:
            post = self.emissionprob_posterior_
            self.emissionprob_ = post / post.sum(axis=1, keepdims=True)
            self.occupancy_ = self._stats_["emis"].sum(axis=1)
        else:
            self.means_ = self.means_posterior_.copy()
            if self.covariance_type == "full":
                self.covars_ = self.scale_posterior_ / self.dof_posterior_[:, None, None]
            else:
                self.covars_ = self.scale_posterior_ / self.dof_posterior_[:, None]
            self.occupancy_ = self._stats_["N"].copy()
        self.n_effective_components_ = int(np.sum(self.occupancy_ >= 1.0))

    # ------------------------------------------------------------------ public API
    def fit(self, X, y=None, lengths=None, sequence_ids=None):
        """Fit by VBEM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Concatenated sequences (integer symbols in one column for categorical
            emissions).
        y : ignored
        lengths : array-like of int, optional
            Lengths of the consecutive sequences in ``X`` (hmmlearn convention).
        sequence_ids : array-like of shape (n_samples,), optional
            One id per row; rows of a sequence are contiguous and in time order.  This
            form survives sklearn's cross-validation splitters (e.g. ``GroupKFold``).
        """
        return super().fit(X, lengths=lengths, sequence_ids=sequence_ids)

    def _new_data(self, X, lengths, sequence_ids):
        check_is_fitted(self, "lower_bound_")
        return self._sequence_data(X, lengths, sequence_ids, reset=False)

    def _plugin_forward(self, data, want_posteriors=False):
        log_pi = np.log(self.startprob_)
        log_A = np.log(self.transmat_)
        if self._categorical:
            table = np.ascontiguousarray(np.log(self.emissionprob_).T)
        else:
            table = self._emission_log_table(data, self._plugin_gaussian())
        return forward_backward(
            log_pi, log_A, table, data["index"], data["starts"], data["ends"], want_posteriors
        )

    def score_samples(self, X, lengths=None, sequence_ids=None, per="frame"):
        """Log-likelihood under the posterior-mean parameters.

        ``per="frame"`` (default) returns ln p(x_t | x_1..x_{t-1}) for every row (they
        sum to the log-likelihood of each sequence); ``per="sequence"`` returns the
        log-likelihood of each sequence.
        """
        if per not in ("frame", "sequence"):
            raise ValueError(f"per must be 'frame' or 'sequence'; got {per!r}.")
        data = self._new_data(X, lengths, sequence_ids)
        log_norm, frame_log_norm = self._plugin_forward(data)[:2]
        return frame_log_norm if per == "frame" else log_norm

    def score(self, X, y=None, lengths=None, sequence_ids=None):
        """Mean log-likelihood per row (frame) under the posterior-mean parameters."""
        data = self._new_data(X, lengths, sequence_ids)
        return float(self._plugin_forward(data)[0].sum() / data["n_frames"])

    def score_bound(self, X, lengths=None, sequence_ids=None):
        """Total sum_i ln Z_i of one VBE pass on X with q(theta) fixed (spec section 10, item 2)."""
        data = self._new_data(X, lengths, sequence_ids)
        return float(self._vbe(data, want_posteriors=False)[0][0].sum())

    def predict_proba(self, X, lengths=None, sequence_ids=None):
        """Variational state marginals q(s_t = k) of X with q(theta) fixed, (n_samples, K)."""
        data = self._new_data(X, lengths, sequence_ids)
        if self._categorical:
            return self._frame_marginals(data)
        return self._vbe(data)[0][4]

    def _frame_marginals(self, data):
        """q(s_t) of every frame under the current q(theta), categorical (n_frames, K)."""
        Lpi, LA, LC = self._expected_log_params()
        # map every frame to its own row of the emission table
        ll = np.ascontiguousarray(LC.T[data["symbols"]])
        out = forward_backward(
            Lpi, LA, ll, np.arange(data["n_frames"], dtype=np.int64),
            data["starts"], data["ends"], True,
        )
        return out[4]

    def decode(self, X, lengths=None, sequence_ids=None, parameters="mean"):
        """Viterbi path.  Returns (log-weight of the best paths summed, states).

        ``parameters="mean"`` uses the posterior-mean parameters (the log-weight is then
        ln p(X, s* | theta_bar)); ``"expected_log"`` uses exp E[ln theta], whose best path
        is the mode of q(s).
        """
        if parameters not in ("mean", "expected_log"):
            raise ValueError(f"parameters must be 'mean' or 'expected_log'; got {parameters!r}.")
        data = self._new_data(X, lengths, sequence_ids)
        if parameters == "mean":
            log_pi, log_A = np.log(self.startprob_), np.log(self.transmat_)
            if self._categorical:
                table = np.log(self.emissionprob_).T
            else:
                table = self._emission_log_table(data, self._plugin_gaussian())
        else:
            log_pi, log_A, LE = self._expected_log_params()
            if self._categorical:
                table = LE.T
            else:
                table = self._emission_log_table(data, LE)
        states, best = _k.viterbi(
            log_pi, log_A, np.ascontiguousarray(table), data["index"], data["starts"], data["ends"]
        )
        return float(best.sum()), states

    def predict(self, X, lengths=None, sequence_ids=None):
        """Most probable state path under the posterior-mean parameters (Viterbi)."""
        return self.decode(X, lengths, sequence_ids, parameters="mean")[1]

    def sample(self, n_samples=1, random_state=None):
        """Draw one sequence of ``n_samples`` frames from the posterior-mean model.

        Returns ``(X, states)``.
        """
        check_is_fitted(self, "lower_bound_")
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = check_random_state(random_state if random_state is not None else self.random_state)
        u = rng.random_sample(n_samples)
        states = _k.sample_states(
            self.startprob_, self.transmat_, u, np.array([0]), np.array([n_samples])
        )
        if self._categorical:
            cdf = np.cumsum(self.emissionprob_, axis=1)[states]
            r = rng.random_sample(n_samples)[:, None]
            X = np.minimum((r >= cdf).sum(axis=1), self.n_symbols_ - 1).reshape(-1, 1)
            return X.astype(np.int64), states
        D = self.n_features_in_
        z = rng.standard_normal((n_samples, D))
        if self.covariance_type == "full":
            L = np.linalg.cholesky(self.covars_)
            X = self.means_[states] + np.einsum("nij,nj->ni", L[states], z)
        else:
            X = self.means_[states] + np.sqrt(self.covars_[states]) * z
        return X, states

    def _n_parameters(self):
        K = self.n_components
        n = (K - 1) + K * (K - 1)
        if self._categorical:
            return n + K * (self.n_symbols_ - 1)
        D = self.n_features_in_
        per_state = D + D * (D + 1) // 2 if self.covariance_type == "full" else 2 * D
        return n + K * per_state

    def _check_new_data(self, X, lengths=None, sequence_ids=None):
        return self._new_data(X, lengths, sequence_ids)

    def _log_likelihood(self, data):
        return float(self._plugin_forward(data)[0].sum())

    def _n_observations(self, data):
        return data["n_frames"]
