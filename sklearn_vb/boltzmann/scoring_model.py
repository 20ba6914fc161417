"""ScoringModel for a fitted :class:`~sklearn_vb.BoltzmannMachine` (hidden units).

theta = one real block ``"coef"`` (the joint model's canonical parameters) with the
estimator's Gaussian prior.  ``ln p(X | lambda)`` is the *visible* likelihood
``sum_n ln Z(lambda | x_n) - N ln Z(lambda)``: exact when the joint states can be
enumerated (the sampling scorers refuse otherwise).

Hooks for the Cheeseman-Stutz score (:mod:`sklearn_vb.scoring._cs`): ``e_step`` completes
the hidden units with their exact posterior at ``lambda^`` (expected statistics
``S-bar = sum_n E_{h | x_n} f``), and ``log_complete_evidence(S-bar)`` is the Laplace
(or, with BP, Bethe-Laplace) evidence of the *fully observed* model at those fractional
statistics - an approximation, so the CS value is no lower bound here
(``cs_is_bound = False``).  The Laplace pieces of the visible marginal likelihood
(observed information ``N C - sum_n C_{h | x_n}``) are in :meth:`visible_laplace`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.protocols import ScoringModelMixin
from ..mrf.inference import LOG_2PI, ExactEngine, log_prior, newton_map
from ..mrf.scoring_model import GaussianWeightsMixin
from ._inference import VisibleLikelihood, fit_visible_map

__all__ = ["BoltzmannScoringModel", "BoltzmannData", "HiddenEStep"]

# the variance of the broad Gaussian that stands in for no prior at the ML point (the
# default ml_prior_variance of PairwiseMRF and LinearChainCRF)
ML_PRIOR_VARIANCE = 1e4


@dataclass
class BoltzmannData:
    """Distinct visible rows (``patterns``), their ``counts``, each row's pattern
    (``inverse``) and the case count ``N``."""

    patterns: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    N: float


@dataclass
class HiddenEStep:
    """The exact E step at ``lambda^`` in the form :func:`~sklearn_vb.scoring._cs.cs_value`
    reads."""

    stats: np.ndarray  # S-bar
    loglik: float
    expected_complete_loglik: float  # lambda^T S-bar - N ln Z
    entropy: float  # sum_n H[p(h | x_n)]


class BoltzmannScoringModel(GaussianWeightsMixin, ScoringModelMixin):
    """The scoring view of a fitted BoltzmannMachine."""

    model_label = "the Boltzmann machine"

    cs_is_bound = False

    def __init__(self, estimator, inference=None):
        self.estimator = estimator
        self.layout = estimator.layout_
        self.precision = estimator.precision()
        self.param_space = ParamSpace([ParamBlock("coef", (self.layout.n_features,), "real")])
        self._exact = (ExactEngine(self.layout)
                       if self.layout.n_states_total <= estimator.max_exact_states else None)
        self._engine = estimator.engine(self.layout)
        self._vlik = {}
        self._points = {}

    # -- data and likelihood ---------------------------------------------------------
    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError(f"BoltzmannMachine scoring accepts no fit parameters, got "
                             f"{sorted(fit_params)}.")
        if isinstance(X, BoltzmannData):
            return X
        codes = self.estimator.check_data(X)
        patterns, inverse, counts = np.unique(codes, axis=0, return_inverse=True,
                                              return_counts=True)
        return BoltzmannData(patterns, counts.astype(float), inverse.ravel(), float(codes.shape[0]))

    def visible_likelihood(self, X, inference="model"):
        """The :class:`~sklearn_vb.boltzmann._inference.VisibleLikelihood` of the data,
        with the model's engine (``"model"``), exact enumeration or BP."""
        key = (id(X), inference)
        if key not in self._vlik or self._vlik[key][0] is not X:
            if inference == "model":
                eng = self._engine
            elif inference == "exact":
                eng = self._exact_engine()
            elif inference == "bp":
                eng = self.estimator.__class__(**{**self.estimator.get_params(),
                                                  "inference": "bp"}).engine(self.layout)
            else:
                raise ValueError(f"inference must be 'model', 'exact' or 'bp', got {inference!r}.")
            self._vlik[key] = (X, VisibleLikelihood(self.layout, self.estimator.n_visible_,
                                                    X.patterns, X.counts, eng))
        return self._vlik[key][1]

    def _exact_engine(self):
        if self._exact is None:
            raise NotImplementedError("this score needs the exact visible likelihood: the model "
                                      f"has {self.layout.n_states_total} joint states (more than "
                                      f"max_exact_states={self.estimator.max_exact_states})")
        return self._exact

    def log_n_aliases(self):
        return self.estimator.log_n_aliases()

    def log_likelihood(self, params, X):
        return self.visible_likelihood(X, "exact").log_likelihood(params["coef"])

    def log_likelihood_per_case(self, params, X):
        coefs = np.atleast_2d(params["coef"])
        v = self.visible_likelihood(X, "exact")
        per = v.clamped_log_partition(coefs) - self._exact_engine().log_partition(coefs)[:, None]
        return per[:, X.inverse]

    def log_joint_gradient(self, params_single, X):
        coef = np.asarray(params_single["coef"], dtype=float).reshape(-1)
        ev = self.visible_likelihood(X, "exact").evaluate(coef)
        val = ev.loglik + float(log_prior(coef, self.precision))
        return val, {"coef": (ev.grad - self.precision * coef)[None]}

    def simulate(self, params, n_samples, rng):
        coef = np.atleast_2d(params["coef"])[0]
        full = self._exact_engine().sample(coef, int(n_samples), rng)
        return full[:, :self.estimator.n_visible_]

    # -- the MAP ---------------------------------------------------------------------
    def map_point(self, X, inference="model", kind="map"):
        """The MAP (``kind="ml"``: the maximum likelihood) of the visible likelihood on
        ``X``, started from the estimator's ``coef_`` and its random starts (cached per
        data set)."""
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        key = (id(X), inference, kind)
        if key in self._points and self._points[key][0] is X:
            return self._points[key][1]
        est = self.estimator
        pats, cnts = est.train_patterns_, est.train_counts_
        if (pats.shape == X.patterns.shape and np.array_equal(pats, X.patterns)
                and np.array_equal(cnts, X.counts)):
            starts = est.coef_[None]  # the training data: coef_ is already the best start
        else:
            rng = np.random.default_rng(0)  # extra starts besides the fitted point
            starts = np.vstack([est.coef_[None],
                                est.init_scale * rng.standard_normal((est.n_init - 1,
                                                                      self.layout.n_features))])
        # the maximum likelihood need not exist (a unit that always agrees with another
        # drives their weight to infinity), so "ml" keeps a broad Gaussian, as the
        # PairwiseMRF and LinearChainCRF adapters do with their ml_prior_variance
        precision = self.precision if kind == "map" else np.full_like(
            self.precision, 1.0 / ML_PRIOR_VARIANCE)
        res = fit_visible_map(self.visible_likelihood(X, inference), precision, starts,
                              est.max_iter, est.tol)
        self._points[key] = (X, res)
        return res

    def fit_point(self, X, kind="map", basis=None, rng=None, n_init=1, **ignored):
        return {"coef": self.map_point(X, kind=kind).coef[None].copy()}

    # -- Laplace of the visible marginal likelihood ----------------------------------
    def visible_laplace(self, X, inference="model"):
        """``(value, diagnostics)`` of ``l(lambda^) + ln p(lambda^) + (F/2) ln 2 pi -
        1/2 ln det(N C - sum_n C_{h | x_n} + P)`` at the MAP; ``nan`` when the matrix is
        not positive definite.  With BP the free ``ln Z`` and ``C`` are the Bethe ones and
        the linear response (Bethe-Laplace)."""
        res = self.map_point(X, inference)
        v = self.visible_likelihood(X, inference)
        ev = v.evaluate(res.coef, hessian=True)
        A = ev.information + np.diag(self.precision)
        w = np.linalg.eigvalsh(0.5 * (A + A.T))
        F = self.layout.n_features
        lp = float(log_prior(res.coef, self.precision))
        logdet = float(np.sum(np.log(w))) if w[0] > 0 else np.nan
        terms = {"loglik": ev.loglik, "log_prior": lp, "T4": 0.5 * F * LOG_2PI,
                 "half_logdet_A": 0.5 * logdet}
        value = ev.loglik + lp + 0.5 * F * LOG_2PI - 0.5 * logdet
        diag = {"terms": terms, "lambda_hat": res.coef, "A_eigenvalue_range": (w[0], w[-1]),
                "not_pd": bool(w[0] <= 0), "map_converged": res.converged,
                "gradient_norm": res.gradient_norm, "start_objectives": res.objectives,
                "bp_converged": (ev.info or {}).get("bp_converged")}
        return float(value), diag

    # -- Cheeseman-Stutz hooks -------------------------------------------------------
    def e_step(self, theta, X):
        coef = np.atleast_2d(theta["coef"])[0]
        ev = self.visible_likelihood(X).evaluate(coef)
        self._completion_point, self._last_N = coef, float(X.N)
        return HiddenEStep(ev.clamped_stats, ev.loglik,
                           float(coef @ ev.clamped_stats - X.N * ev.log_partition),
                           ev.hidden_entropy)

    def log_complete_evidence(self, stats, N=None):
        """Laplace (or Bethe-Laplace) evidence of the fully observed model at the
        fractional statistics ``stats`` (``N`` cases; the data of the last E step by
        default): the MAP by Newton from the completion point, then
        ``t + (F/2) ln 2 pi - 1/2 ln det(N C + P)``."""
        N = self._last_N if N is None else float(N)
        coef0 = getattr(self, "_completion_point", np.zeros(self.layout.n_features))
        res = newton_map(self._engine, np.asarray(stats, dtype=float), N, self.precision, coef0,
                         self.estimator.max_iter, self.estimator.tol)
        return res.objective + 0.5 * self.layout.n_features * LOG_2PI - 0.5 * res.logdet_A

    # -- AIS helpers -----------------------------------------------------------------
    def _laplace_gaussian(self, X):
        res = self.map_point(X, "exact")
        ev = self.visible_likelihood(X, "exact").evaluate(res.coef, hessian=True)
        A = ev.information + np.diag(self.precision)
        w, U = np.linalg.eigh(0.5 * (A + A.T))
        w = np.maximum(w, self.precision.min())  # a usable Gaussian even off a maximum
        return res.coef, (U / w) @ U.T, ev.information / X.N
