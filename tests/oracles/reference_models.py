"""Reference models with exact evidence: the oracles the scorers are tested against.

Each model is a ScoringModel (prior density and sampler, exact likelihood vectorised over
parameter batches) with ``log_evidence(X)``, the exact ``ln p(X)`` in closed form or by
enumerating the hidden configurations.  The latent-variable models also provide MAP-EM
(``fit_point``), the exact E step, the complete-data evidence and a VB fit, so that every
scorer can be checked against exact values; the conjugate models provide their exact
posterior (as ``variational_posterior``) and exact tempered-posterior draws.

The tests refer to the reference problems built from them by these names (the data and
exact evidences are in ``tests/scoring/test_scoring_reference.py``):

* "beta-bernoulli", :class:`BetaBernoulli`: Beta prior, Bernoulli outcomes;
* "dirichlet-categorical", :class:`DirichletCategorical`: Dirichlet prior, categorical
  symbols;
* "gaussian-mean", :class:`GaussianMean`: Gaussian prior on the mean of Gaussian data;
* "linear-regression", :class:`BayesianLinearRegression`: Gaussian prior on the weights,
  known noise;
* "latent-class", :class:`LatentClassModel`: one hidden parent of discrete children (a
  DAG);
* "discrete-hmm", :class:`DiscreteHMM`: categorical HMM with Dirichlet rows;
* "gaussian-mixture-1d", :class:`GaussianMixture1D`: 1-d mixture with known weights and
  noise.

``fit_vb(X)`` returns a :class:`FittedReference` that behaves like a fitted package
estimator for the scorers (``lower_bound_``, ``variational_posterior_``,
``scoring_model()``).
"""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
from scipy.special import logsumexp

from sklearn_vb._core.distributions import as_generator as _rng, dirichlet_expected_log
from sklearn_vb._core.kernels.constants import LOG_2PI
from sklearn_vb._core.numerics import spawn_generators
from sklearn_vb._core.evidence.dirichlet import DirichletBlocksModel, dirichlet_evidence
from sklearn_vb.hmm._scoring_dirichlet import DirichletCategoricalHMM
from sklearn_vb.scoring import EStep, ParamBlock, ParamSpace, ScoringModelMixin
from sklearn_vb._core.evidence.posteriors import FactorizedPosterior, GaussianQ

__all__ = [
    "FittedReference",
    "DirichletCategorical",
    "BetaBernoulli",
    "GaussianLinearModel",
    "GaussianMean",
    "BayesianLinearRegression",
    "LatentClassModel",
    "DiscreteHMM",
    "GaussianMixture1D",
]


class FittedReference:
    """A fitted reference model seen as a VB estimator by the scorers."""

    def __init__(self, model, lower_bounds, q, restarts=None, converged=True):
        self.model = model
        self.lower_bounds_ = np.asarray(lower_bounds, dtype=float)
        self.lower_bound_ = float(self.lower_bounds_[-1])
        self.n_iter_ = len(self.lower_bounds_)
        self.converged_ = converged
        self.variational_posterior_ = q
        if restarts is not None:
            self.restarts_ = restarts

    def scoring_model(self):
        return self.model


# ---------------------------------------------------------------------------------------
# Dirichlet-categorical and Beta-Bernoulli
# ---------------------------------------------------------------------------------------


class DirichletCategorical(DirichletBlocksModel):
    """``theta ~ Dir(alpha)``, ``y_i ~ Cat(theta)``; X holds symbols 0..K-1."""

    def __init__(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        if alpha.ndim != 1 or alpha.size < 2 or np.any(~(alpha > 0)):
            raise ValueError("alpha must be a vector of >= 2 positive concentrations.")
        self.prior_alpha = {"theta": alpha}
        self.K = alpha.size
        self._init_space()

    def prepare_data(self, X, **fit_params):
        super().prepare_data(X, **fit_params)
        y = np.asarray(X).ravel()
        if y.size == 0 or np.any(y != np.round(y)) or np.any((y < 0) | (y >= self.K)):
            raise ValueError(f"X must hold integer symbols in [0, {self.K}).")
        return y.astype(np.int64)

    def counts(self, X):
        return np.bincount(X, minlength=self.K).astype(float)

    def n_cases(self, X):
        return int(X.size)

    def n_aliases(self):
        return 1

    def log_likelihood(self, params, X):
        with np.errstate(divide="ignore"):
            return np.log(params["theta"]) @ self.counts(X)

    def log_likelihood_per_case(self, params, X):
        with np.errstate(divide="ignore"):
            return np.log(params["theta"])[:, X]

    def log_evidence(self, X):
        return float(dirichlet_evidence(self.prior_alpha["theta"], self.counts(X)))

    def posterior(self, X, beta=1.0):
        return self.q_from_stats({"theta": beta * self.counts(X)})

    def variational_posterior(self, X):
        return self.posterior(X)

    def sample_tempered_posterior(self, X, beta, rng, size):
        return self.posterior(X, beta).sample(rng, size)

    def e_step(self, params_single, X):
        ll = float(self.log_likelihood(params_single, X)[0])
        return EStep(ll, {"theta": self.counts(X)}, ll, 0.0)

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=1, max_iter=None,
                  tol_per_case=None):
        return self.point_from_stats({"theta": self.counts(X)}, kind, basis)

    def fit_vb(self, X):
        """Exact conjugate posterior: the bound F equals the evidence."""
        X = self.prepare_data(X)
        q = self.posterior(X)
        return FittedReference(self, [self.log_evidence(X)], q)

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        return rng.choice(self.K, size=int(n_cases), p=params_single["theta"][0]), None


class BetaBernoulli(DirichletCategorical):
    """``p ~ Beta(a, b)``, ``y_i ~ Bernoulli(p)``; X holds 0/1.

    The parameter block is the simplex ``theta = (p, 1 - p)``; heads (1) is symbol 0.
    """

    def __init__(self, a=1.0, b=1.0):
        super().__init__([a, b])

    def prepare_data(self, X, **fit_params):
        y = np.asarray(X).ravel()
        if y.size == 0 or np.any((y != 0) & (y != 1)):
            raise ValueError("X must hold 0/1 outcomes.")
        return super().prepare_data(1 - y.astype(np.int64), **fit_params)

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        return (rng.random(int(n_cases)) < params_single["theta"][0, 0]).astype(int), None


# ---------------------------------------------------------------------------------------
# Gaussian linear models (the Gaussian mean and linear regression)
# ---------------------------------------------------------------------------------------


class GaussianLinearModel(ScoringModelMixin):
    """``w ~ N(m0, S0)``, ``y = Phi w + N(0, noise_var I)``; X = ``[Phi, y]`` (last column y).

    :class:`BayesianLinearRegression` is ``m0 = 0, S0 = I/alpha, noise_var = 1/beta``;
    :class:`GaussianMean` has a column of ones as design.
    """

    def __init__(self, prior_mean, prior_cov, noise_var):
        self.m0 = np.atleast_1d(np.asarray(prior_mean, dtype=float))
        d = self.m0.size
        self.S0 = np.asarray(prior_cov, dtype=float).reshape(d, d)
        self.noise_var = float(noise_var)
        self.d = d
        self.param_space = ParamSpace([ParamBlock("w", (d,), "real")])
        self._prior = GaussianQ("w", self.m0, self.S0)

    def prepare_data(self, X, **fit_params):
        super().prepare_data(X, **fit_params)
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.d + 1:
            raise ValueError(f"X must be [design, y] with {self.d + 1} columns, got {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite.")
        return X

    def n_cases(self, X):
        return int(X.shape[0])

    def n_parameters(self):
        return self.d

    def n_aliases(self):
        return 1

    def log_prior(self, params):
        return self._prior.log_pdf(params["w"])

    def sample_prior(self, rng, size):
        return {"w": self._prior.sample(_rng(rng), int(size))}

    def log_likelihood_per_case(self, params, X):
        Phi, y = X[:, :-1], X[:, -1]
        r = y[None, :] - params["w"] @ Phi.T
        return -0.5 * r * r / self.noise_var - 0.5 * (LOG_2PI + np.log(self.noise_var))

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def log_evidence(self, X):
        Phi, y = X[:, :-1], X[:, -1]
        mean = Phi @ self.m0
        cov = self.noise_var * np.eye(len(y)) + Phi @ self.S0 @ Phi.T
        L = np.linalg.cholesky(cov)
        z = np.linalg.solve(L, y - mean)
        return float(-0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * len(y) * LOG_2PI)

    def posterior(self, X, beta=1.0):
        Phi, y = X[:, :-1], X[:, -1]
        P0 = np.linalg.inv(self.S0)
        P = P0 + beta * Phi.T @ Phi / self.noise_var
        S = np.linalg.inv(P)
        m = S @ (P0 @ self.m0 + beta * Phi.T @ y / self.noise_var)
        return FactorizedPosterior([GaussianQ("w", m, 0.5 * (S + S.T))])

    def variational_posterior(self, X):
        return self.posterior(X)

    def sample_tempered_posterior(self, X, beta, rng, size):
        return self.posterior(X, beta).sample(_rng(rng), size)

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=1, max_iter=None,
                  tol_per_case=None):
        if kind == "ml":
            w = np.linalg.lstsq(X[:, :-1], X[:, -1], rcond=None)[0]
            return {"w": w[None]}
        return {"w": self.posterior(X)["w"].mean()[None]}

    def fit_vb(self, X):
        X = self.prepare_data(X)
        return FittedReference(self, [self.log_evidence(X)], self.posterior(X))

    def e_step(self, params_single, X):
        # no latent variables: the "statistics" are the data themselves
        ll = float(self.log_likelihood(params_single, X)[0])
        return EStep(ll, X, ll, 0.0)

    def log_complete_evidence(self, stats):
        return self.log_evidence(stats)

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        n = int(n_cases)
        Phi = rng.standard_normal((n, self.d))
        y = Phi @ params_single["w"][0] + np.sqrt(self.noise_var) * rng.standard_normal(n)
        return np.column_stack([Phi, y]), None


class BayesianLinearRegression(GaussianLinearModel):
    """``w ~ N(0, I/alpha)``, ``y ~ N(Phi w, I/beta)``."""

    def __init__(self, n_features, alpha=1.0, beta=1.0):
        d = int(n_features)
        super().__init__(np.zeros(d), np.eye(d) / alpha, 1.0 / beta)


class GaussianMean(GaussianLinearModel):
    """``mu ~ N(m0, s0^2)``, ``y_i ~ N(mu, sigma^2)``; X is the vector of y."""

    def __init__(self, m0=0.0, s0=1.0, sigma=1.0):
        super().__init__([m0], [[s0**2]], sigma**2)

    def prepare_data(self, X, **fit_params):
        y = np.asarray(X, dtype=float).ravel()
        return super().prepare_data(np.column_stack([np.ones_like(y), y]), **fit_params)

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        return params_single["w"][0, 0] + np.sqrt(self.noise_var) * rng.standard_normal(int(n_cases)), None


# ---------------------------------------------------------------------------------------
# Latent-variable reference models: shared VB / EM machinery
# ---------------------------------------------------------------------------------------


class _LatentMixin:
    """EM, exact E step and VB for models with a per-case discrete latent of K states.

    Subclasses provide ``_log_resp_unnorm(params_single, X)`` (n, K) giving
    ln p(z_i = k, y_i | theta), ``_stats(R, X)``, ``_vbe_logits(q_stats, X)`` (n, K) giving
    the VBE log-potentials, and Dirichlet / Gaussian specific ``log_complete_evidence``.
    """

    def e_step(self, params_single, X):
        L = self._log_resp_unnorm(params_single, X)
        ll_i = logsumexp(L, axis=1)
        R = np.exp(L - ll_i[:, None])
        with np.errstate(invalid="ignore"):
            ecl = float(np.sum(np.where(R > 0, R * L, 0.0)))
        ll = float(ll_i.sum())
        return EStep(ll, self._stats(R, X), ecl, float(ll - ecl))

    def _entropy(self, R):
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(-np.sum(np.where(R > 0, R * np.log(R), 0.0)))

    def _vb_run(self, X, R, max_iter, tol):
        """VBEM from q(z) = R; the bound of (q(z), VBM(q(z))) is recorded after each VBM."""
        bounds = []
        for _ in range(int(max_iter)):
            stats = self._stats(R, X)
            bounds.append(self._entropy(R) + self.log_complete_evidence(stats))
            if len(bounds) > 1 and abs(bounds[-1] - bounds[-2]) < tol:
                break
            logits = self._vbe_logits(stats, X)
            R = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
        return bounds, self.q_from_stats(stats)

    def vb_refine(self, X, estep, max_iter=1000, tol=1e-10):
        """VBEM started with a VBM step from the exact posterior of ``estep``: the first
        bound equals the CS score (Beal 2003, Corollary 2.5)."""
        R = self._resp_from_estep(estep, X)
        return self._vb_run(X, R, max_iter, tol)[0]

    def fit_vb(self, X, random_state=None, n_init=5, max_iter=500, tol=1e-10, keep_restarts=True):
        X = self.prepare_data(X)
        best = None
        restarts = []
        for rng in spawn_generators(random_state, n_init):
            R = rng.dirichlet(np.ones(self.K), size=self.n_cases(X))
            bounds, q = self._vb_run(X, R, max_iter, tol)
            restarts.append((bounds[-1], q))
            if best is None or bounds[-1] > best[0][-1]:
                best = (bounds, q)
        return FittedReference(self, best[0], best[1], restarts if keep_restarts else None)

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=1000,
                  tol_per_case=1e-8):
        """EM for the MAP (softmax basis by default) or ML point; best of ``n_init``."""
        rng = _rng(rng)
        n = self.n_cases(X)
        best = None
        for _ in range(int(n_init)):
            R = rng.dirichlet(np.ones(self.K), size=n)
            theta = self.point_from_stats(self._stats(R, X), kind, basis)
            prev = -np.inf
            for _ in range(int(max_iter)):
                e = self.e_step(theta, X)
                obj = e.loglik + (0.0 if kind == "ml" else self._point_log_prior(theta, basis))
                theta = self.point_from_stats(e.stats, kind, basis)
                if abs(obj - prev) < tol_per_case * n:
                    break
                prev = obj
            e = self.e_step(theta, X)
            obj = e.loglik + (0.0 if kind == "ml" else self._point_log_prior(theta, basis))
            if best is None or obj > best[0]:
                best = (obj, theta)
        return best[1]

    def _point_log_prior(self, theta, basis):
        # the EM objective: softmax basis adds the log-Jacobian (counts lambda + N)
        lp = float(self.log_prior(theta)[0])
        if basis == "softmax":
            lp += float(self.param_space.log_det_jacobian(theta)[0])
        return lp


# ---------------------------------------------------------------------------------------
# Latent-class DAG
# ---------------------------------------------------------------------------------------


class LatentClassModel(_LatentMixin, DirichletBlocksModel):
    """One K-valued hidden parent ``z`` of J observed children with cardinalities
    ``V_j``; Dirichlet(alpha) on every CPT row.  X is (n, J) integer symbols."""

    def __init__(self, n_classes=2, cardinalities=(3, 3), alpha=1.0):
        self.K = int(n_classes)
        self.V = tuple(int(v) for v in cardinalities)
        self.alpha = float(alpha)
        self.prior_alpha = {"pi": np.full(self.K, self.alpha)}
        for j, v in enumerate(self.V):
            self.prior_alpha[f"B{j}"] = np.full((self.K, v), self.alpha)
        self._init_space()

    def prepare_data(self, X, **fit_params):
        ScoringModelMixin.prepare_data(self, X, **fit_params)
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != len(self.V):
            raise ValueError(f"X must have shape (n, {len(self.V)}), got {X.shape}.")
        if np.any(X != np.round(X)) or np.any(X < 0) or np.any(X >= np.array(self.V)):
            raise ValueError("X holds symbols outside the alphabets.")
        return X.astype(np.int64)

    def n_cases(self, X):
        return int(X.shape[0])

    def n_aliases(self):
        return factorial(self.K)

    def _log_joint_cases(self, params, X):
        """(C, n, K): ln p(z_i = k, y_i | theta_c)."""
        with np.errstate(divide="ignore"):
            out = np.log(params["pi"])[:, None, :] + 0.0
            for j in range(len(self.V)):
                out = out + np.log(params[f"B{j}"])[:, :, X[:, j]].transpose(0, 2, 1)
        return out

    def log_likelihood_per_case(self, params, X):
        return logsumexp(self._log_joint_cases(params, X), axis=2)

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def random_completion(self, X, rng):
        return rng.integers(0, self.K, size=self.n_cases(X))

    def log_complete_joint_per_case(self, params, Z, X):
        L = self._log_joint_cases(params, X)
        return L[:, np.arange(len(Z)), Z]

    def _log_resp_unnorm(self, params_single, X):
        return self._log_joint_cases(params_single, X)[0]

    def _stats(self, R, X):
        stats = {"pi": R.sum(axis=0)}
        for j, v in enumerate(self.V):
            stats[f"B{j}"] = R.T @ np.eye(v)[X[:, j]]
        return stats

    def _resp_from_estep(self, estep, X):
        return estep.stats["_R"] if "_R" in estep.stats else None

    def e_step(self, params_single, X):
        e = super().e_step(params_single, X)
        L = self._log_resp_unnorm(params_single, X)
        e.stats["_R"] = np.exp(L - logsumexp(L, axis=1, keepdims=True))
        return e

    def log_complete_evidence(self, stats):
        return float(sum(dirichlet_evidence(a, stats[k]) for k, a in self.prior_alpha.items()))

    def _vbe_logits(self, stats, X):
        out = dirichlet_expected_log(self.prior_alpha["pi"] + stats["pi"])[None, :] + 0.0
        for j in range(len(self.V)):
            El = dirichlet_expected_log(self.prior_alpha[f"B{j}"] + stats[f"B{j}"])
            out = out + El[:, X[:, j]].T
        return out

    def log_evidence(self, X):
        """Exact ln p(X): sum over all K^n completions of Dirichlet-integral products."""
        n = self.n_cases(X)
        if self.K**n > 2**20:
            raise ValueError("too many completions to enumerate.")
        Z = np.array(list(itertools.product(range(self.K), repeat=n)), dtype=np.int64)
        onehot = np.eye(self.K)[Z]  # (M, n, K)
        total = dirichlet_evidence(self.prior_alpha["pi"], onehot.sum(axis=1))
        for j, v in enumerate(self.V):
            counts = np.einsum("mnk,nv->mkv", onehot, np.eye(v)[X[:, j]])
            total = total + dirichlet_evidence(self.prior_alpha[f"B{j}"], counts)
        return float(logsumexp(total))

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        n = int(n_cases)
        z = rng.choice(self.K, size=n, p=params_single["pi"][0])
        X = np.empty((n, len(self.V)), dtype=np.int64)
        for j, v in enumerate(self.V):
            B = params_single[f"B{j}"][0]
            u = rng.random(n)
            X[:, j] = np.minimum((u[:, None] > np.cumsum(B[z], axis=1)).sum(axis=1), v - 1)
        return X, z


# ---------------------------------------------------------------------------------------
# Discrete HMM
# ---------------------------------------------------------------------------------------


# The package's own categorical-HMM ScoringModel: its exact evidence enumerates every
# joint state path, independently of the forward recursion that gives its likelihood.
DiscreteHMM = DirichletCategoricalHMM


# ---------------------------------------------------------------------------------------
# 1-d Gaussian mixture with known weights and noise
# ---------------------------------------------------------------------------------------


class GaussianMixture1D(_LatentMixin, ScoringModelMixin):
    """``z_i ~ Cat(1/K)``, ``mu_k ~ N(0, prior_var)``, ``y_i ~ N(mu_{z_i}, noise_var)``."""

    def __init__(self, n_components=2, prior_var=4.0, noise_var=1.0):
        self.K = int(n_components)
        self.prior_var = float(prior_var)
        self.noise_var = float(noise_var)
        self.param_space = ParamSpace([ParamBlock("mu", (self.K,), "real")])
        self._prior = GaussianQ("mu", np.zeros(self.K), self.prior_var * np.eye(self.K))

    def prepare_data(self, X, **fit_params):
        ScoringModelMixin.prepare_data(self, X, **fit_params)
        y = np.asarray(X, dtype=float).ravel()
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise ValueError("X must be a non-empty finite vector.")
        return y

    def n_cases(self, X):
        return int(X.size)

    def n_parameters(self):
        return self.K

    def n_aliases(self):
        return factorial(self.K)

    def log_prior(self, params):
        return self._prior.log_pdf(params["mu"])

    def sample_prior(self, rng, size):
        return {"mu": self._prior.sample(_rng(rng), int(size))}

    def _log_joint_cases(self, params, X):
        mu = params["mu"]  # (C, K)
        r = X[None, :, None] - mu[:, None, :]
        return (-np.log(self.K) - 0.5 * (LOG_2PI + np.log(self.noise_var))
                - 0.5 * r * r / self.noise_var)

    def log_likelihood_per_case(self, params, X):
        return logsumexp(self._log_joint_cases(params, X), axis=2)

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def _log_resp_unnorm(self, params_single, X):
        return self._log_joint_cases(params_single, X)[0]

    def _stats(self, R, X):
        return {"N": R.sum(axis=0), "S": R.T @ X, "Q": R.T @ (X * X), "_R": R}

    def _resp_from_estep(self, estep, X):
        return estep.stats["_R"]

    def log_complete_evidence(self, stats):
        N, S, Q = stats["N"], stats["S"], stats["Q"]
        s2, v = self.prior_var, self.noise_var
        # int N(mu; 0, s2) prod_i [N(y_i; mu, v) / K]^{r_ik} dmu, per component
        per = (
            -N * np.log(self.K) - 0.5 * N * (LOG_2PI + np.log(v))
            - 0.5 * np.log1p(s2 * N / v)
            - 0.5 * Q / v + 0.5 * (S / v) ** 2 / (1.0 / s2 + N / v)
        )
        return float(np.sum(per))

    def q_from_stats(self, stats):
        prec = 1.0 / self.prior_var + stats["N"] / self.noise_var
        m = stats["S"] / self.noise_var / prec
        return FactorizedPosterior([GaussianQ("mu", m, np.diag(1.0 / prec))])

    def _vbe_logits(self, stats, X):
        prec = 1.0 / self.prior_var + stats["N"] / self.noise_var
        m = stats["S"] / self.noise_var / prec
        r = X[:, None] - m[None, :]
        return -0.5 * (r * r + 1.0 / prec[None, :]) / self.noise_var

    def point_from_stats(self, stats, kind="map", basis="softmax"):
        if kind == "ml":
            return {"mu": (stats["S"] / np.maximum(stats["N"], 1e-300))[None]}
        prec = 1.0 / self.prior_var + stats["N"] / self.noise_var
        return {"mu": (stats["S"] / self.noise_var / prec)[None]}

    def _point_log_prior(self, theta, basis):
        return float(self.log_prior(theta)[0])

    def log_evidence(self, X):
        """Exact ln p(X): enumerate the K^n assignments, Gaussian marginal per cluster."""
        n = X.size
        if self.K**n > 2**20:
            raise ValueError("too many assignments to enumerate.")
        Z = np.array(list(itertools.product(range(self.K), repeat=n)), dtype=np.int64)
        R = np.eye(self.K)[Z]  # (M, n, K)
        N = R.sum(axis=1)
        S = np.einsum("mnk,n->mk", R, X)
        Q = np.einsum("mnk,n->mk", R, X * X)
        s2, v = self.prior_var, self.noise_var
        per = (
            -N * np.log(self.K) - 0.5 * N * (LOG_2PI + np.log(v)) - 0.5 * np.log1p(s2 * N / v)
            - 0.5 * Q / v + 0.5 * (S / v) ** 2 / (1.0 / s2 + N / v)
        )
        return float(logsumexp(per.sum(axis=1)))

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        n = int(n_cases)
        z = rng.integers(0, self.K, size=n)
        return params_single["mu"][0, z] + np.sqrt(self.noise_var) * rng.standard_normal(n), z
