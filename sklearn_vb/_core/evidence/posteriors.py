"""Variational posteriors q(theta) over a ParamSpace.

A :class:`FactorizedPosterior` is a product of per-block factors (:class:`QBlock`):
Dirichlet rows for simplex blocks, Gaussian / Student-t for real blocks and Gamma for
positive blocks.  Densities are in the coordinates of ``log_prior`` (simplex: Lebesgue
measure on the first K-1 coordinates).  :class:`MixturePosterior` is a finite mixture,
used for restart mixtures and defensive proposals; its ``log_pdf`` is the log of the
mixture density.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, polygamma

from ..distributions import dirichlet_log_pdf, dirichlet_sample, gamma_log_pdf
from ..kernels.constants import LOG_2PI
from .params import concat_params

__all__ = [
    "QBlock",
    "DirichletQ",
    "GaussianQ",
    "StudentTQ",
    "GammaQ",
    "FactorizedPosterior",
    "MixturePosterior",
    "MappedPosterior",
    "PriorPosterior",
    "relabelled_mixture",
]


class QBlock:
    """One factor of q over the block ``name`` (event shape ``shape``)."""

    family = None

    def sample(self, rng, size):  # pragma: no cover - abstract
        raise NotImplementedError

    def log_pdf(self, value):  # pragma: no cover - abstract
        raise NotImplementedError

    def mean(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def heavy_tailed(self, dof=3.0, broaden=None):
        return self

    def unconstrained_sd(self):
        """Approximate standard deviations of the unconstrained coordinates (flat)."""
        raise NotImplementedError


class DirichletQ(QBlock):
    """Independent Dirichlet rows ``Dir(alpha[r])`` (alpha has the block's shape)."""

    family = "dirichlet"

    def __init__(self, name, alpha):
        self.name = name
        self.alpha = np.asarray(alpha, dtype=float)
        if np.any(~(self.alpha > 0)):
            raise ValueError(f"alpha of q block {name!r} must be positive.")
        self.shape = self.alpha.shape

    def sample(self, rng, size):
        return dirichlet_sample(self.alpha, rng, size=size)

    def log_pdf(self, value):
        lp = dirichlet_log_pdf(value, self.alpha)
        return lp.reshape(lp.shape[0], -1).sum(axis=1) if lp.ndim > 1 else lp

    def mean(self):
        return self.alpha / self.alpha.sum(axis=-1, keepdims=True)

    def heavy_tailed(self, dof=3.0, broaden=None):
        if broaden is None:
            return self
        if not 0 < broaden <= 1:
            raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
        return DirichletQ(self.name, self.alpha * broaden)

    def unconstrained_sd(self):
        t = polygamma(1, self.alpha)
        return np.sqrt(t[..., :-1] + t[..., -1:]).ravel()


class GaussianQ(QBlock):
    """Gaussian over the flattened block with mean ``mean`` and covariance ``cov``."""

    family = "gaussian"

    def __init__(self, name, mean, cov):
        self.name = name
        self.mean_ = np.asarray(mean, dtype=float)
        self.shape = self.mean_.shape
        d = self.mean_.size
        self.cov = np.asarray(cov, dtype=float).reshape(d, d)
        try:
            self._L = np.linalg.cholesky(self.cov)
        except np.linalg.LinAlgError as exc:
            raise ValueError(f"cov of q block {name!r} must be positive definite.") from exc
        self._logdet = 2.0 * np.sum(np.log(np.diag(self._L)))
        # explicit inverse factor: tiny blocks, and a matmul avoids per-call LAPACK overhead
        self._Linv = np.linalg.inv(self._L)

    def _standardise(self, value):
        v = np.asarray(value, dtype=float).reshape(len(value), -1) - self.mean_.ravel()
        return np.einsum("ij,cj->ci", self._Linv, v)

    def sample(self, rng, size):
        d = self.mean_.size
        z = rng.standard_normal((size, d))
        return (self.mean_.ravel() + z @ self._L.T).reshape((size,) + self.shape)

    def log_pdf(self, value):
        z = self._standardise(value)
        d = z.shape[1]
        return -0.5 * np.sum(z * z, axis=1) - 0.5 * d * LOG_2PI - 0.5 * self._logdet

    def mean(self):
        return self.mean_.copy()

    def heavy_tailed(self, dof=3.0, broaden=None):
        return StudentTQ(self.name, self.mean_, self.cov, dof)

    def unconstrained_sd(self):
        return np.sqrt(np.diag(self.cov))


class StudentTQ(GaussianQ):
    """Multivariate Student-t with location ``mean``, scale matrix ``cov`` and ``dof``."""

    family = "student_t"

    def __init__(self, name, mean, cov, dof):
        super().__init__(name, mean, cov)
        if not dof > 0:
            raise ValueError(f"dof must be positive, got {dof}.")
        self.dof = float(dof)

    def sample(self, rng, size):
        d = self.mean_.size
        z = rng.standard_normal((size, d))
        g = rng.chisquare(self.dof, size=size) / self.dof
        z = z / np.sqrt(g)[:, None]
        return (self.mean_.ravel() + z @ self._L.T).reshape((size,) + self.shape)

    def log_pdf(self, value):
        z = self._standardise(value)
        d = z.shape[1]
        nu = self.dof
        return (
            gammaln(0.5 * (nu + d)) - gammaln(0.5 * nu) - 0.5 * d * np.log(nu * np.pi)
            - 0.5 * self._logdet - 0.5 * (nu + d) * np.log1p(np.sum(z * z, axis=1) / nu)
        )

    def heavy_tailed(self, dof=3.0, broaden=None):
        return StudentTQ(self.name, self.mean_, self.cov, dof)


class GammaQ(QBlock):
    """Independent Gamma(shape a, rate b) entries."""

    family = "gamma"

    def __init__(self, name, a, b):
        self.name = name
        self.a = np.asarray(a, dtype=float)
        self.b = np.broadcast_to(np.asarray(b, dtype=float), self.a.shape)
        self.shape = self.a.shape

    def sample(self, rng, size):
        return np.maximum(rng.standard_gamma(self.a, size=(size,) + self.shape) / self.b, 1e-300)

    def log_pdf(self, value):
        lp = gamma_log_pdf(np.asarray(value, dtype=float), self.a, self.b)
        return lp.reshape(len(lp), -1).sum(axis=1)

    def mean(self):
        return self.a / self.b

    def heavy_tailed(self, dof=3.0, broaden=None):
        if broaden is None:
            return self
        return GammaQ(self.name, self.a * broaden, self.b * broaden)

    def unconstrained_sd(self):
        return np.sqrt(polygamma(1, self.a)).ravel()


class FactorizedPosterior:
    """``q(theta) = prod_b q_b(theta_b)`` over the blocks of a ParamSpace."""

    def __init__(self, blocks):
        self.blocks = list(blocks)
        self._by_name = {b.name: b for b in self.blocks}

    def __getitem__(self, name):
        return self._by_name[name]

    def sample(self, rng, size):
        return {b.name: b.sample(rng, int(size)) for b in self.blocks}

    def log_pdf(self, params):
        out = 0.0
        for b in self.blocks:
            out = out + b.log_pdf(params[b.name])
        return np.asarray(out, dtype=float)

    def block_log_pdf(self, name, value):
        return self._by_name[name].log_pdf(value)

    def sample_block(self, name, rng, size):
        return self._by_name[name].sample(rng, int(size))

    def mean(self):
        return {b.name: b.mean()[None] for b in self.blocks}

    def heavy_tailed(self, dof=3.0, broaden=None):
        return FactorizedPosterior([b.heavy_tailed(dof, broaden) for b in self.blocks])

    def unconstrained_sd(self, space):
        """Per-coordinate standard deviations in the unconstrained basis of ``space``."""
        return np.concatenate([self._by_name[b.name].unconstrained_sd() for b in space.blocks])

    def gaussian_unconstrained(self):
        return None

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


class MixturePosterior:
    """Finite mixture ``sum_j w_j q_j``; ``log_pdf`` is the log mixture density."""

    def __init__(self, components, weights=None):
        self.components = list(components)
        J = len(self.components)
        if J == 0:
            raise ValueError("components must not be empty.")
        w = np.full(J, 1.0 / J) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (J,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError("weights must be non-negative, one per component, summing to 1.")
        self.weights = w

    def sample(self, rng, size):
        size = int(size)
        comp = rng.choice(len(self.components), size=size, p=self.weights)
        parts, order = [], []
        for j, q in enumerate(self.components):
            idx = np.flatnonzero(comp == j)
            if idx.size:
                parts.append(q.sample(rng, idx.size))
                order.append(idx)
        out = concat_params(parts)
        inv = np.empty(size, dtype=int)
        inv[np.concatenate(order)] = np.arange(size)
        return {k: v[inv] for k, v in out.items()}

    def log_pdf(self, params):
        with np.errstate(divide="ignore"):
            lw = np.log(self.weights)
        terms = np.stack([lw[j] + q.log_pdf(params) for j, q in enumerate(self.components)])
        return _log_sum_exp_columns(terms)

    def mean(self):
        means = [q.mean() for q in self.components]
        return {k: sum(w * m[k] for w, m in zip(self.weights, means)) for k in means[0]}

    def heavy_tailed(self, dof=3.0, broaden=None):
        return MixturePosterior([q.heavy_tailed(dof, broaden) for q in self.components],
                                self.weights)

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


def _log_sum_exp_columns(terms):
    """``ln sum_j exp(terms[j])`` per column, in plain numpy: the mixture densities of
    the annealing kernels are called for a few parameter sets at a time, where
    ``scipy.special.logsumexp`` costs more than the component densities."""
    m = np.max(terms, axis=0)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(terms - safe), axis=0))


class PriorPosterior:
    """The prior of a ScoringModel seen as a proposal (likelihood weighting, defensive mixtures)."""

    def __init__(self, model):
        self.model = model

    def sample(self, rng, size):
        return self.model.sample_prior(rng, int(size))

    def log_pdf(self, params):
        return np.asarray(self.model.log_prior(params), dtype=float)

    def mean(self):  # pragma: no cover - not needed by the scorers
        raise NotImplementedError

    def heavy_tailed(self, dof=3.0, broaden=None):
        return self


class MappedPosterior:
    """The image of a posterior under a volume-preserving bijection ``T`` (an alias
    map: a relabelling, a signed permutation, an orthogonal change of basis): draws are
    ``T(theta)`` with ``theta ~ q`` and the density is ``q(T^{-1} theta)`` (no Jacobian,
    because ``T`` preserves volume).  ``forward`` and ``inverse`` map parameter batches."""

    def __init__(self, q, forward, inverse):
        self.q, self.forward, self.inverse = q, forward, inverse

    def sample(self, rng, size):
        return self.forward(self.q.sample(rng, size))

    def log_pdf(self, params):
        return self.q.log_pdf(self.inverse(params))

    def mean(self):
        return self.forward(self.q.mean())

    def heavy_tailed(self, dof=3.0, broaden=None):
        return MappedPosterior(self.q.heavy_tailed(dof, broaden), self.forward, self.inverse)

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


def relabelled_mixture(q, perms, permute):
    """The equal-weight mixture of ``q`` over the label permutations ``perms``:
    component ``j`` is the image of ``q`` under ``permute(., perms[j])`` (a relabelling
    of the hidden states or components, which preserves volume).  ``permute(params,
    perm)`` maps a parameter batch so that new label ``k`` is old label ``perm[k]``.

    When prior and likelihood are invariant under every permutation in ``perms`` (a
    group), the posterior is too, and this mixture puts a copy of q on every relabelled
    copy of the posterior that q's own mode has: an importance-sampling or annealing
    start from it estimates ``Z`` itself rather than about ``Z / S``.  Its density is
    exact (a log-sum-exp over the S components), so it costs S evaluations of q per
    draw."""
    comps = []
    for perm in perms:
        perm = np.asarray(perm, dtype=np.int64)
        inv = np.argsort(perm)
        comps.append(MappedPosterior(q, lambda params, p=perm: permute(params, p),
                                     lambda params, p=inv: permute(params, p)))
    return MixturePosterior(comps)
