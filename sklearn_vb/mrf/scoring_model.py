"""ScoringModel for a fitted :class:`~sklearn_vb.PairwiseMRF`.

theta = one real block ``"coef"`` (the canonical parameters, node features then edge
features) with the estimator's independent Gaussian prior.  The data enter through the
sufficient statistics: ``ln p(X | lambda) = lambda^T S - N ln Z(lambda)``, exact by
enumeration (or by belief propagation on forests, where it is exact); on larger loopy
graphs the exact likelihood is unavailable and the sampling scorers refuse.

Besides the core hooks it provides the pieces of the Bethe-Laplace scores
(:mod:`sklearn_vb.scoring._bethe_laplace`): exact and Bethe moments, linear response,
pseudo-moment matching, the BP-MAP and the pseudo-likelihood MAP.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._core.evidence.mcmc_moves import KernelBase, Target
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.posteriors import FactorizedPosterior, GaussianQ
from .._core.evidence.protocols import ScoringModelMixin
from .._core.numerics import log_mean_exp
from .._core.progress import progress_for
from ._ais_kernels import ais_segment, draw_moves
from ._estimator import prior_precision_vector
from .inference import LOG_2PI, BPEngine, ExactEngine, lbfgs_minimize, log_prior, newton_map
from .layout import unique_rows

__all__ = ["MRFScoringModel", "MRFData", "MRFPreconditionedRW", "GaussianWeightsMixin"]


@dataclass
class MRFData:
    """Sufficient statistics ``S`` and case count ``N`` (weights allowed), with the
    distinct patterns of the rows (``codes``), their ``counts`` and each row's pattern
    (``inverse``; None when built from statistics alone)."""

    S: np.ndarray
    N: float
    codes: np.ndarray | None = None
    counts: np.ndarray | None = None
    inverse: np.ndarray | None = None


class MRFPreconditionedRW(KernelBase):
    """Gaussian random walk ``lambda' = lambda + c L_b eps`` with
    ``L_b L_b^T = (b N C_hat + P)^-1`` (the Laplace covariance of the tempered target
    ``ln p + b l``) and ``c = 2.38 scale / sqrt(F)``; ``C_hat`` the feature covariance at
    the MAP, fixed before the run."""

    def __init__(self, model, precision, cov_hat, n, scale=1.0):
        self.model = model
        self.n = float(n)
        self.s = 1.0 / np.sqrt(np.asarray(precision, dtype=float))
        M = cov_hat * np.outer(self.s, self.s)
        mu, U = np.linalg.eigh(0.5 * (M + M.T))
        self.mu, self.U = np.maximum(mu, 0.0), U
        self.c = 2.38 * float(scale) / np.sqrt(max(1, len(precision)))

    def factor(self, beta):
        return (self.s[:, None] * self.U) / np.sqrt(beta * self.n * self.mu + 1.0)

    #: run forward AIS through the compiled kernels when the model allows it
    #: (:meth:`run_forward_compiled`); False keeps the Python transition
    compiled = True

    def run_forward_compiled(self, X, betas, seeds, start="prior", q=None, verbose=0,
                             segment=1024):
        """Forward AIS of ``run_ais`` with this kernel (one move per temperature) in
        compiled code, or None where it does not apply: a model without an enumerated
        partition function (``compiled_ais_terms``; BP-only graphs, CRFs, Boltzmann
        machines), a start other than the prior or a single Gaussian q, or
        ``compiled = False``.  Same chains, random numbers and return keys as
        :func:`~sklearn_vb.scoring._ais.run_ais`; the log-weights agree with it to
        rounding (the dot products are summed in another order than NumPy's)."""
        terms_of = getattr(self.model, "compiled_ais_terms", None)
        terms = terms_of(X) if self.compiled and callable(terms_of) else None
        if terms is None:
            return None
        from_q = start == "q"
        if from_q:
            blocks = getattr(q, "blocks", None)
            if (blocks is None or len(blocks) != 1 or type(blocks[0]) is not GaussianQ
                    or blocks[0].name != "coef"):
                return None
        elif start != "prior":
            return None
        S, N, Phi = terms
        betas = np.ascontiguousarray(betas, dtype=float)
        K, C, F = betas.size - 1, len(seeds), self.s.size
        rngs = [np.random.default_rng(s) for s in seeds]
        target = Target(self.model, X, start, q)
        state = target.sample_start(rngs)  # the Python path's start draws and values
        coef = np.ascontiguousarray(state.params["coef"], dtype=float).copy()
        lp = np.asarray(state.log_prior, dtype=float).copy()
        ll = np.asarray(state.loglik, dtype=float).copy()
        lq = (np.asarray(state.log_q, dtype=float).copy() if from_q else np.zeros(C))
        f_prev = np.asarray(target.log_f(state, betas[0]), dtype=float).copy()
        P = np.asarray(self.model.precision, dtype=float)
        lp_const = 0.5 * np.sum(np.log(P)) - 0.5 * P.size * LOG_2PI
        if from_q:
            g = blocks[0]
            q_mean, q_Linv = g.mean_.ravel().astype(float), np.ascontiguousarray(g._Linv)
            lq_c1, lq_c2 = 0.5 * F * LOG_2PI, 0.5 * g._logdet
        else:
            q_mean, q_Linv, lq_c1, lq_c2 = np.zeros(F), np.zeros((F, F)), 0.0, 0.0
        sU = np.ascontiguousarray(self.s[:, None] * self.U)
        log_w = np.zeros(C)
        log_ratio = np.zeros((K, C))
        accept = np.full(K - 1, np.nan) if K > 1 else np.zeros(0)
        progress = progress_for(verbose, "ais", K)
        gens = tuple(rngs)
        for k0 in range(1, K + 1, int(segment)):
            k1 = min(K + 1, k0 + int(segment))
            draws = np.empty((C, max(0, min(k1, K) - k0), F + 1))
            draw_moves(gens, draws.shape[1], F, draws)
            ais_segment(betas, k0, k1, coef, lp, ll, lq, f_prev, log_w, log_ratio, accept,
                        draws, float(self.c), sU, self.mu, self.n, from_q,
                        np.ascontiguousarray(S, dtype=float), float(N),
                        np.ascontiguousarray(Phi, dtype=float), P, lp_const, q_mean, q_Linv,
                        lq_c1, lq_c2, from_q)
            progress(k1 - 1, _running_text(log_w))
        return {"log_weights": log_w,
                # run_ais averages its chain groups' acceptances weighted by their sizes
                "acceptance": (np.average(accept[None], axis=0, weights=[float(C)])
                               if K > 1 else np.zeros(0)),
                "final_params": {"coef": coef}, "log_ratios": log_ratio}

    def transition(self, state, target, beta, rngs):
        L = self.factor(target.tuning_beta(beta))
        coef = state.params["coef"]
        eps = np.stack([g.standard_normal(coef.shape[1]) for g in rngs])
        logu = np.log(np.array([1.0 - g.random() for g in rngs]))
        new = target.state({"coef": coef + self.c * eps @ L.T})
        with np.errstate(invalid="ignore"):
            lr = target.log_f(new, beta) - target.log_f(state, beta)
        a = logu < np.where(np.isnan(lr), -np.inf, lr)
        return target.merge(state, new, a), float(np.mean(a))


def _running_text(log_w):
    return lambda: f"running estimate {log_mean_exp(log_w):.4f}"


class GaussianWeightsMixin:
    """The parts shared by the log-linear models (pairwise MRF, linear-chain CRF,
    Boltzmann machine): one real block ``"coef"`` of ``layout.n_features`` weights with
    independent Gaussian priors of precisions ``precision``, data objects with a case
    count ``N``, and the Laplace Gaussian at the MAP as the model's q and as the
    preconditioner of its annealing kernel.

    A model provides ``layout``, ``precision`` and ``_laplace_gaussian(X)``, which
    returns the MAP, the Laplace covariance and the per-case information matrix."""

    #: how the error messages name the model
    model_label = "this model"

    def n_cases(self, X):
        return X.N

    def n_parameters(self):
        return self.layout.n_features

    def log_prior(self, params):
        return log_prior(np.atleast_2d(params["coef"]), self.precision)

    def sample_prior(self, rng, size):
        return {"coef": rng.standard_normal((size, self.layout.n_features)) / np.sqrt(self.precision)}

    def variational_posterior(self, X=None):
        """The Laplace Gaussian at the MAP (not a VB posterior); needs the data."""
        if X is None:
            raise NotImplementedError(f"the Laplace q of {self.model_label} needs the data")
        mean, cov, _ = self._laplace_gaussian(X)
        return FactorizedPosterior([GaussianQ("coef", mean, 0.5 * (cov + cov.T))])

    def annealing_kernel(self, X=None, scale=1.0):
        """Random walk preconditioned by the tempered Laplace covariance
        ``(b N C + P)^-1`` at the MAP (:class:`MRFPreconditionedRW`)."""
        if X is None:
            raise NotImplementedError(f"the annealing kernel of {self.model_label} needs the data")
        _, _, C = self._laplace_gaussian(X)
        return MRFPreconditionedRW(self, self.precision, C, X.N, scale)

    def kernel_prior_precision(self):
        return {"coef": self.precision.copy()}


class MRFScoringModel(GaussianWeightsMixin, ScoringModelMixin):
    """The scoring view of a fitted PairwiseMRF (any structure; exact likelihood when
    the joint states can be enumerated or the graph is a forest)."""

    model_label = "the pairwise MRF"

    def __init__(self, estimator):
        self.estimator = estimator
        self.layout = estimator.layout_
        self.precision = prior_precision_vector(estimator.prior_variance, self.layout)
        self.ml_precision = np.full(self.layout.n_features, 1.0 / float(estimator.ml_prior_variance))
        self.param_space = ParamSpace([ParamBlock("coef", (self.layout.n_features,), "real")])
        self.max_exact_states = int(estimator.max_exact_states)
        # the fitted estimator's enumeration serves the scores too (an exact engine is
        # only built within max_exact_states)
        fitted = getattr(estimator, "_engine_", None)
        if isinstance(fitted, ExactEngine) and fitted.layout is self.layout:
            self._exact = fitted
        else:
            self._exact = (ExactEngine(self.layout)
                           if self.layout.n_states_total <= self.max_exact_states else None)
        self._cache = {}

    # -- engines ----------------------------------------------------------------------
    def inference_tractable(self):
        """True when ``ln Z`` is exact: enumeration or a forest."""
        return self._exact is not None or self.layout.forest

    def exact_engine(self, data=None):
        """The exact engine (``data`` is accepted for models whose engines depend on the
        data set, such as CRFs; an MRF's engine does not)."""
        if self._exact is not None:
            return self._exact
        if self.layout.forest:
            return self.bp_engine()
        raise NotImplementedError("the MRF is too large for exact inference (loopy graph with "
                                  f"more than max_exact_states={self.max_exact_states} states)")

    def bp_engine(self, warn=True, data=None):
        e = self.estimator
        return BPEngine(self.layout, damping=e.bp_damping, tol=e.bp_tol, max_iter=e.bp_max_iter,
                        lr=e.lr_method, warn=warn)

    # -- data -------------------------------------------------------------------------
    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError(f"PairwiseMRF scoring accepts no fit parameters, got {sorted(fit_params)}.")
        if isinstance(X, MRFData):
            return X
        codes = self.estimator.check_data(X)
        patterns, inverse, counts = unique_rows(codes, self.layout.n_states)
        S = self.layout.statistics(patterns, counts)
        return MRFData(S, float(codes.shape[0]), patterns, counts.astype(float), inverse)

    def sufficient_statistics(self, X):
        d = self.prepare_data(X)
        return d.S, d.N

    def n_aliases(self):
        return 1

    def _log_partition(self, coefs):
        coefs = np.atleast_2d(np.asarray(coefs, dtype=float))
        try:
            eng = self.exact_engine()
        except NotImplementedError as exc:
            raise NotImplementedError("this score needs an exact log_likelihood: " + str(exc)) from exc
        return eng.log_partition(coefs)

    def compiled_ais_terms(self, X):
        """``(S, N, Phi)`` of ``ln p(X | lambda) = lambda^T S - N logsumexp(Phi lambda)``
        for the compiled AIS kernels when the joint states are enumerated, else None."""
        if self._exact is None or not isinstance(X, MRFData):
            return None
        return X.S, X.N, self._exact.Phi

    def log_likelihood(self, params, X):
        coefs = np.atleast_2d(params["coef"])
        return coefs @ X.S - X.N * self._log_partition(coefs)

    def log_likelihood_per_case(self, params, X):
        if X.codes is None:
            raise ValueError("per-case likelihoods need the data rows, not only statistics.")
        coefs = np.atleast_2d(params["coef"])
        per_pattern = self.layout.energies(coefs, X.codes) - self._log_partition(coefs)[:, None]
        return per_pattern[:, X.inverse]

    def log_joint_gradient(self, params_single, X):
        coef = np.asarray(params_single["coef"], dtype=float).reshape(-1)
        m = self.exact_engine().moments(coef, covariance=False)
        val = coef @ X.S - X.N * m.log_partition + float(log_prior(coef, self.precision))
        return val, {"coef": (X.S - X.N * m.kappa - self.precision * coef)[None]}

    def simulate(self, params, n_samples, rng):
        coef = np.atleast_2d(params["coef"])[0]
        if self._exact is None:
            raise NotImplementedError("exact simulation needs an enumerable MRF")
        return self._exact.sample(coef, int(n_samples), rng)

    # -- point estimates ------------------------------------------------------------------
    def map_fit(self, X, kind="map", inference="exact", init="fitted"):
        """The Newton fit (:func:`~sklearn_vb.mrf.inference.newton_map`) with exact
        (``inference="exact"``) or BP moments; cached per data set and settings.

        ``init="fitted"`` starts from the estimator's weights when they are the same
        kind of point (a search scores each candidate right after fitting it on the same
        rows, so Newton then only confirms the optimum); otherwise from pseudo-moment
        matching (``"pmm"``), zeros (``"zeros"``) or the given vector.  The objective is
        concave, so the start changes the cost, not the optimum."""
        key = (id(X), kind, inference, init if isinstance(init, str) else "given")
        if key in self._cache and self._cache[key][0] is X:
            return self._cache[key][1]
        eng = self.exact_engine() if inference == "exact" else self.bp_engine()
        P = self.precision if kind == "map" else self.ml_precision
        fitted = self._fitted_newton(X, kind, eng, P) if init == "fitted" else None
        if fitted is not None:
            self._cache[key] = (X, fitted)
            return fitted
        coef0 = self._start(X, kind, init)
        res = newton_map(eng, X.S, X.N, P, coef0, self.estimator.max_iter, self.estimator.tol)
        res.engine = eng
        self._cache[key] = (X, res)
        return res

    def _fitted_newton(self, X, kind, engine, P):
        """The estimator's own converged Newton fit when it is this fit: the same kind of
        point, engine, statistics and prior (the training data of a search's candidate);
        Newton would only confirm it."""
        est = self.estimator
        stored = getattr(est, "_newton", None)
        if stored is None or kind != est.point or engine is not getattr(est, "_engine_", None):
            return None
        res, S, N, P_fit = stored
        if not res.converged or not np.isfinite(res.logdet_A) or res.moments.cov is None:
            return None
        if X.N != N or not np.array_equal(X.S, S) or not np.array_equal(P, P_fit):
            return None
        # no Newton step is taken for the score
        out = replace(res, n_iter=0, objectives=[res.objective])
        out.engine = engine
        return out

    def _start(self, X, kind, init):
        if not isinstance(init, str):
            return np.asarray(init, dtype=float)
        if init == "fitted":
            init = "estimator" if kind == self.estimator.point else "pmm"
        if init == "estimator":
            return np.asarray(self.estimator.coef_, dtype=float).copy()
        if init == "pmm":
            return self.pmm(X)
        if init == "zeros":
            return np.zeros(self.layout.n_features)
        raise ValueError(f"init must be 'fitted', 'pmm', 'zeros' or a vector, got {init!r}.")

    def fit_point(self, X, kind="map", basis=None, rng=None, n_init=1, inference="exact", **ignored):
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        return {"coef": self.map_fit(X, kind, inference).coef[None].copy()}

    def pmm(self, X):
        """Pseudo-moment matching from the empirical moments (uniform mixing ``1/(N+1)``)."""
        return self.layout.pmm_coef(X.S / X.N, X.N)

    def bethe_map(self, X, init="pmm"):
        return self.map_fit(X, "map", "bp", init)

    def pseudo_likelihood_map(self, X):
        """MAP of the pseudo-likelihood ``sum_n sum_i ln p(x_i | x_-i) + ln p(lambda)``
        (exact at any size, no partition function), by L-BFGS."""
        if X.codes is None:
            raise ValueError("the pseudo-likelihood needs the data rows.")
        L, w = self.layout, X.counts
        alts = []  # per node: (K_i, n_patterns, F) feature matrices with x_i replaced
        for i in range(L.n_nodes):
            mats = []
            for k in range(L.n_states[i]):
                c = X.codes.copy()
                c[:, i] = k
                mats.append(L.feature_matrix(c))
            alts.append(np.stack(mats))
        P = self.precision

        def neg(coef):
            val = float(log_prior(coef, P))
            grad = X.S - P * coef
            for i, A in enumerate(alts):
                en = A @ coef  # (K_i, n)
                mx = en.max(axis=0)
                pr = np.exp(en - mx)
                lse = mx + np.log(pr.sum(axis=0))
                pr /= pr.sum(axis=0)
                val += float(w @ (en[X.codes[:, i], np.arange(en.shape[1])] - lse))
                grad -= np.einsum("kn,knf->f", pr * w, A)
            return -val, -grad

        res = lbfgs_minimize(neg, self.pmm(X), maxiter=1000, gtol=1e-10, ftol=1e-15)
        return res.x

    # -- moments --------------------------------------------------------------------------
    def exact_moments(self, params_single):
        m = self.exact_engine().moments(np.asarray(params_single["coef"], dtype=float).reshape(-1))
        return m.log_partition, m.kappa, m.cov

    def bethe_log_partition(self, params_single, messages=None):
        eng = self.bp_engine()
        r = eng.run(np.asarray(params_single["coef"], dtype=float).reshape(-1), messages)
        info = {"bp_converged": r.converged, "bp_iterations": r.n_iter, "bp_residual": r.residual}
        return r.log_partition, r.kappa, r.messages, info

    def linear_response_covariance(self, params_single, method="matrix"):
        coef = np.asarray(params_single["coef"], dtype=float).reshape(-1)
        eng = self.bp_engine()
        if method == "propagation":
            return eng.covariance_propagation(coef)
        if method != "matrix":
            raise ValueError(f"method must be 'matrix' or 'propagation', got {method!r}.")
        return np.linalg.inv(eng.moments(coef).J.toarray())

    # -- G5 / G6 --------------------------------------------------------------------------
    def _laplace_gaussian(self, X):
        res = self.map_fit(X, "map", "exact")
        C = res.moments.cov
        return res.coef, np.linalg.inv(X.N * C + np.diag(self.precision)), C
