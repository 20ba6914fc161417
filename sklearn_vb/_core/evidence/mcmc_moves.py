"""MCMC moves (transition kernels) for annealed importance sampling and variational MCMC.

Every kernel leaves the tempered target invariant for each inverse temperature beta:

* ``start="prior"``: ``ln f_b(theta) = ln p(theta) + b l(theta)``;
* ``start="q"``: ``ln f_b(theta) = (1 - b) ln q(theta) + b [ln p(theta) + l(theta)]``.

Chains are vectorised over the batch axis (the likelihood is called with a batch of C
parameter sets), while every chain draws its random numbers from its own Generator (a
list ``rngs`` of length C), so results do not depend on how chains are grouped into
batches or jobs.  Tuning parameters depend on beta, n, the prior and (for the models'
``annealing_kernel`` hooks) the fitted q, fixed when a kernel is built; never on a chain's
state or past samples.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..distributions import dirichlet_log_pdf
from ..numerics import spawn_generators
from .params import concat_params

__all__ = [
    "KernelBase",
    "Target",
    "ChainState",
    "BlockRandomWalkMH",
    "DirichletMH",
    "CompositeKernel",
    "IdentityKernel",
    "ExactTemperedKernel",
    "IndependenceMH",
    "VariationalMixtureKernel",
    "make_kernel",
    "as_rngs",
    "estimate_prior_precision",
    "posterior_data_precision",
]


def as_rngs(rng, C):
    """A list of C Generators from a Generator, a list of Generators or a seed."""
    if isinstance(rng, (list, tuple)):
        if len(rng) != C:
            raise ValueError(f"need one Generator per chain ({C}), got {len(rng)}.")
        return list(rng)
    return spawn_generators(rng, C)


def _normal(rngs, d):
    return np.stack([g.standard_normal(d) for g in rngs])


def _uniform(rngs):
    return np.array([g.random() for g in rngs])


def _log_gamma_per_chain(rngs, shape):
    """ln G, G ~ Gamma(shape[c], 1) per chain, accurate for tiny shapes."""
    out = np.empty_like(shape)
    for c, g in enumerate(rngs):
        s = shape[c]
        if s.min() >= 0.5:  # no underflow risk: one draw per variate
            out[c] = np.log(g.standard_gamma(s))
        else:
            out[c] = np.log(g.standard_gamma(s + 1.0)) + np.log(1.0 - g.random(s.shape)) / s
    return out


def _dirichlet_per_chain(rngs, alpha):
    lg = _log_gamma_per_chain(rngs, alpha)
    lg -= lg.max(axis=-1, keepdims=True)
    th = np.exp(lg)
    th = np.maximum(th / th.sum(axis=-1, keepdims=True), np.finfo(float).tiny)
    return th / th.sum(axis=-1, keepdims=True)


@dataclass
class ChainState:
    """Current parameters of C chains with cached density terms."""

    params: dict
    log_prior: np.ndarray
    loglik: np.ndarray
    log_q: np.ndarray | None = None

    @property
    def C(self):
        return self.log_prior.shape[0]


class Target:
    """The tempered family of one model on one data set."""

    def __init__(self, model, X, start="prior", q=None):
        if start not in ("prior", "q"):
            raise ValueError(f"start must be 'prior' or 'q', got {start!r}.")
        if start == "q" and q is None:
            raise ValueError("start='q' needs a variational posterior q.")
        self.model, self.X, self.start, self.q = model, X, start, q
        self.space = model.param_space
        self.n = int(model.n_cases(X))

    def state(self, params):
        lp = np.asarray(self.model.log_prior(params), dtype=float)
        ll = np.asarray(self.model.log_likelihood(params, self.X), dtype=float)
        lq = np.asarray(self.q.log_pdf(params), dtype=float) if self.start == "q" else None
        return ChainState(params, lp, ll, lq)

    def tuning_beta(self, beta):
        """The inverse temperature at which kernels size their proposals for a move that
        targets ``f_beta``.  From the prior the tempered posterior narrows with ``beta``;
        from q (already about as narrow as the posterior) every ``f_beta`` is, so the
        proposals keep their size at beta = 1 along the whole path.  Any choice leaves
        ``f_beta`` invariant; this one keeps the acceptance rate up."""
        return beta if self.start == "prior" else 1.0

    def log_f(self, state, beta):
        ll = np.where(np.isnan(state.loglik), -np.inf, state.loglik)
        if self.start == "prior":
            with np.errstate(invalid="ignore"):
                return state.log_prior + (beta * ll if beta > 0 else 0.0)
        post = state.log_prior + ll
        return (1.0 - beta) * state.log_q + beta * post if 0 < beta < 1 else (
            state.log_q if beta == 0 else post)

    def sample_start(self, rngs):
        src = self.q if self.start == "q" else None
        parts = [(src.sample(g, 1) if src is not None else self.model.sample_prior(g, 1))
                 for g in rngs]
        return self.state(concat_params(parts))

    def merge(self, state, new, accept):
        """Per-chain select between two states."""
        params = {}
        for k, v in state.params.items():
            m = accept.reshape((-1,) + (1,) * (v.ndim - 1))
            params[k] = np.where(m, new.params[k], v)
        lq = None if state.log_q is None else np.where(accept, new.log_q, state.log_q)
        return ChainState(params, np.where(accept, new.log_prior, state.log_prior),
                          np.where(accept, new.loglik, state.loglik), lq)


def _accept(log_ratio, rngs):
    log_ratio = np.where(np.isnan(log_ratio), -np.inf, log_ratio)
    u = _uniform(rngs)
    with np.errstate(divide="ignore"):
        return np.log(u) < log_ratio


class KernelBase:
    """Base of the moves: the public ``step`` over the ``transition`` a move defines.
    A model that brings a move of its own (the MRF's preconditioned random walk)
    subclasses it."""

    reversible = True

    def step(self, params, X, beta, rng, n_steps=1, start="prior", q=None):
        """Public form of the protocol: returns (params, info with 'accept')."""
        target = Target(self.model, X, start, q)
        state = target.state(params)
        rngs = as_rngs(rng, state.C)
        accs = []
        for _ in range(int(n_steps)):
            state, acc = self.transition(state, target, beta, rngs)
            accs.append(acc)
        return state.params, {"accept": float(np.mean(accs))}

    def adjoint(self):
        return self


def _per_block(space, blocks, value, what):
    """``value`` (a number, a dict block -> number or (dim_b,) array, or a flat
    (space.size,) array) as a dict block -> float array of shape (dim_b,)."""
    out = {}
    flat = None
    if not isinstance(value, dict) and np.ndim(value) == 1:
        flat = np.asarray(value, dtype=float)
        if flat.shape != (space.size,):
            raise ValueError(f"{what} must have {space.size} entries, got {flat.shape}.")
    for b in blocks:
        dim = space[b].dim
        if flat is not None:
            v = flat[space.slices[b]]
        else:
            v = value.get(b, np.nan) if isinstance(value, dict) else value
        v = np.asarray(v, dtype=float)
        if v.size == 1:
            v = np.full(dim, float(v.reshape(-1)[0]))
        v = v.reshape(-1)
        if v.shape != (dim,):
            raise ValueError(f"{what}[{b!r}] must be a number or have {dim} entries, got {v.shape}.")
        out[b] = v
    return out


def estimate_prior_precision(model, blocks=None, n_samples=1000, seed=0):
    """Prior precision of every unconstrained coordinate, ``dict block -> (dim_b,)``.

    The model's ``kernel_prior_precision()`` (dict block -> number or (dim_b,) array)
    when it has one; blocks it leaves out, or every block of a model without it, get
    ``1 / s^2`` with ``s`` a robust scale of the prior in that coordinate, estimated
    once from ``n_samples`` prior draws with a fixed seed (inter-quartile range / 1.349:
    the standard deviation for a Gaussian, finite for heavy-tailed priors such as the
    Student-t marginals of Normal-Gamma means).  Coordinates without a usable estimate
    get 1.  Depends on the prior only, never on a chain.
    """
    space = model.param_space
    blocks = [b for b in (space.names if blocks is None else blocks) if space[b].dim > 0]
    given = {}
    if callable(getattr(model, "kernel_prior_precision", None)):
        given = dict(model.kernel_prior_precision())
    out = _per_block(space, [b for b in blocks if b in given], given, "kernel_prior_precision")
    todo = [b for b in blocks if b not in out]
    if todo:
        draws = model.sample_prior(np.random.default_rng(seed), int(n_samples))
        phi = space.to_unconstrained(space.check(draws))
        for b in todo:
            x = phi[:, space.slices[b]]
            x = np.where(np.isfinite(x), x, np.nan)
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                q75, q25 = np.nanpercentile(x, [75, 25], axis=0)
            s = (q75 - q25) / 1.349
            ok = np.isfinite(s) & (s > 0) & (np.sum(np.isfinite(x), axis=0) >= 0.5 * x.shape[0])
            out[b] = np.where(ok, 1.0 / np.where(ok, s, 1.0) ** 2, 1.0)
    for b, v in out.items():
        if np.any(~(v > 0)) or not np.all(np.isfinite(v)):
            raise ValueError(f"prior precision of block {b!r} must be positive and finite.")
    return {b: out[b] for b in blocks}


def posterior_data_precision(model, q, pi, blocks=None):
    """Total data precision of every unconstrained coordinate from a posterior
    approximation ``q`` with ``q.unconstrained_sd(space)``: ``max(1/sd_q^2 - pi, 0)``
    (``pi`` as returned by :func:`estimate_prior_precision`).  Fixed before a run."""
    space = model.param_space
    sd = np.asarray(q.unconstrained_sd(space), dtype=float)
    if sd.shape != (space.size,):
        raise ValueError(f"q.unconstrained_sd must have {space.size} entries, got {sd.shape}.")
    blocks = list(pi) if blocks is None else blocks
    out = {}
    for b in blocks:
        s = sd[space.slices[b]]
        with np.errstate(divide="ignore"):
            h = 1.0 / s**2 - pi[b]
        out[b] = np.where(np.isfinite(h) & (h > 0), h, 0.0)
    return out


class BlockRandomWalkMH(KernelBase):
    """Gaussian random walk in the unconstrained basis, one block at a time.

    Step size of coordinate i of block b:
    ``s_i(beta) = c_b / sqrt(pi_i + beta n h_i)`` (Beal: widths shrink like
    ``1/sqrt(n tau)``), ``c_b = scale * 2.38 / sqrt(dim_b)``.

    * ``pi_i``, the prior precision (``prior_precision``): ``"auto"`` (default) takes it
      from the prior, see :func:`estimate_prior_precision` (the model's
      ``kernel_prior_precision()`` or a robust estimate from prior draws), so the early,
      prior-dominated temperatures move on the prior's own scale whatever the units of
      the data; a number (1 was the former fixed value), a dict block -> number or
      (dim_b,) array, or a flat (space.size,) array.
    * ``h_i``, the per-case curvature: ``curvature`` or the model's
      ``kernel_curvature()`` (dict block -> number or (dim_b,) array), default
      ``1 / n_rows`` for simplex blocks and 1 otherwise.  ``data_precision`` (same forms)
      gives the total data precision ``H_i`` instead, used as ``beta H_i`` (e.g. from a
      fitted posterior, :func:`posterior_data_precision`).

    Every tuning quantity is fixed when the kernel is built (prior, q, n); none depends
    on a chain's state (adapting to it would break the invariance of ``f_beta``).  The
    target includes ``ln|det d theta / d phi|``.
    """

    def __init__(self, model, blocks=None, scale=1.0, prior_precision="auto", curvature=None,
                 fixed_steps=None, order=None, data_precision=None):
        self.model = model
        space = model.param_space
        self.blocks = [b for b in (list(blocks) if blocks is not None else space.names)
                       if space[b].dim > 0]
        self.scale = float(scale)
        if fixed_steps is not None:
            pi = 1.0
        elif isinstance(prior_precision, str):
            if prior_precision != "auto":
                raise ValueError(f"prior_precision must be 'auto', a number, a dict or an "
                                 f"array, got {prior_precision!r}.")
            pi = estimate_prior_precision(model, self.blocks) if self.blocks else {}
        else:
            pi = prior_precision
        self.prior_precision = _per_block(space, self.blocks, pi, "prior_precision")
        curv = {}
        if hasattr(model, "kernel_curvature"):
            curv.update(model.kernel_curvature())
        if curvature is not None:
            curv.update(curvature)
        self.curvature = {
            b: curv.get(b, 1.0 / space[b].n_rows if space[b].constraint == "simplex" else 1.0)
            for b in self.blocks
        }
        self.data_precision = (None if data_precision is None
                               else _per_block(space, self.blocks, data_precision, "data_precision"))
        self.fixed_steps = fixed_steps  # dict block -> per-coordinate step (ignores beta)
        self.order = list(order) if order is not None else self.blocks

    def adjoint(self):
        k = type(self).__new__(type(self))
        k.__dict__.update(self.__dict__)
        k.order = self.order[::-1]
        return k

    def step_size(self, block, beta, n):
        if self.fixed_steps is not None:
            return np.asarray(self.fixed_steps[block], dtype=float)
        dim = self.model.param_space[block].dim
        c = self.scale * 2.38 / np.sqrt(dim)
        if self.data_precision is not None:
            H = self.data_precision[block]
        else:
            H = n * np.asarray(self.curvature[block], dtype=float)
        return c / np.sqrt(self.prior_precision[block] + beta * H)

    def transition(self, state, target, beta, rngs):
        space = target.space
        D = space.size
        # all random numbers of the sweep up front: one normal and one uniform call per chain
        eps = np.stack([g.standard_normal(D) for g in rngs])
        logu = np.log(np.stack([1.0 - g.random(len(self.order)) for g in rngs]))
        acc = []
        for i, b in enumerate(self.order):
            sl = space.slices[b]
            phi = space.to_unconstrained(state.params)
            s = self.step_size(b, target.tuning_beta(beta), target.n)
            prop = phi.copy()
            prop[:, sl] = phi[:, sl] + s * eps[:, sl]
            params, ld_new = space.from_unconstrained(prop)
            # keep the other blocks bit-identical
            for k in state.params:
                if k != b:
                    params[k] = state.params[k]
            new = target.state(params)
            ld_old = space.log_det_jacobian(state.params)
            with np.errstate(invalid="ignore"):
                lr = target.log_f(new, beta) + ld_new - target.log_f(state, beta) - ld_old
            lr = np.where(np.isnan(lr), -np.inf, lr)
            a = logu[:, i] < lr
            state = target.merge(state, new, a)
            acc.append(a)
        self.last_accepts = np.stack(acc, axis=1)  # (C, blocks in self.order)
        return state, float(np.mean(self.last_accepts))


class DirichletMH(KernelBase):
    """Independent-row Dirichlet proposals ``theta' ~ Dir(alpha theta + gamma)`` for
    simplex blocks.

    Strength ``alpha(beta) = alpha0 + kappa n beta h_b`` (Beal: optimal strength grows like
    n tau), with ``h_b`` as in :class:`BlockRandomWalkMH`.  Acceptance
    ``min{1, f(theta') Dir(theta | alpha theta' + gamma) / (f(theta) Dir(theta' | alpha theta + gamma))}``.
    One row is updated at a time.  Gamma variates are drawn in log space.

    ``floor`` (``gamma``, per entry) keeps the kernel irreducible.  With Beal's
    ``Dir(alpha theta)`` (``floor=0``) an entry near 0 proposes values that are smaller
    still (a Gamma variate of shape ``alpha theta_k`` is of order ``exp(-1/(alpha theta_k))``),
    so under a sparse prior (concentrations below 1, where prior draws have entries of
    1e-30 and smaller) such entries never come back: chains freeze in a region the data
    rule out and AIS under-estimates by hundreds of nats however long the schedule.
    ``floor="prior"`` (default) uses the block's prior concentrations (``model.prior_alpha``)
    capped at 1, or 1/K when the model exposes none: the proposal for a vanishing entry is
    then spread over log-scales like the prior itself.  Rows of length 1 are constants and
    are skipped.

    ``concentration`` (dict block -> (prior row totals, data row totals), each of the
    block's ``n_rows``) replaces the rule ``alpha0 + kappa n beta h``: a row whose
    tempered posterior has total concentration ``A(beta) = A_prior + beta N`` (e.g.
    ``N`` from a fitted q's Dirichlet parameters) gets ``alpha = (A + 1) d / 2.38^2 - 1``
    with ``d = K - 1``: the proposal spread is the random-walk optimum, 2.38/sqrt(d) times
    the posterior spread, in every row, at every temperature.  Fixed before the run.
    """

    def __init__(self, model, blocks=None, alpha0=5.0, kappa=2.0, curvature=None, order=None,
                 floor="prior", concentration=None):
        self.model = model
        space = model.param_space
        simplex = [b.name for b in space.blocks
                   if b.constraint == "simplex" and not space[b.name].constant]
        self.blocks = list(blocks) if blocks is not None else simplex
        for b in self.blocks:
            if space[b].constraint != "simplex":
                raise ValueError(f"DirichletMH needs simplex blocks; {b!r} is {space[b].constraint}.")
        self.alpha0, self.kappa = float(alpha0), float(kappa)
        curv = {}
        if hasattr(model, "kernel_curvature"):
            curv.update(model.kernel_curvature())
        if curvature is not None:
            curv.update(curvature)
        self.curvature = {b: curv.get(b, 1.0 / space[b].n_rows) for b in self.blocks}
        self.floor = {b: self._floor(b, floor) for b in self.blocks}
        self.concentration = None
        if concentration is not None:
            self.concentration = {}
            for b in self.blocks:
                a0, nd = (np.asarray(v, dtype=float).reshape(-1) for v in concentration[b])
                R = space[b].n_rows
                if a0.shape != (R,) or nd.shape != (R,) or np.any(~(a0 > 0)) or np.any(nd < 0):
                    raise ValueError(f"concentration[{b!r}] must be two arrays of {R} row "
                                     "totals, the prior's positive, the data's >= 0.")
                d = space[b].shape[-1] - 1
                self.concentration[b] = (a0.reshape(space[b].shape[:-1]),
                                         nd.reshape(space[b].shape[:-1]), d)
        rows = []
        for b in self.blocks:
            for r in np.ndindex(*space[b].shape[:-1]):
                rows.append((b, r))
        self.order = rows if order is None else list(order)

    def _floor(self, b, floor):
        shape = self.model.param_space[b].shape
        if isinstance(floor, str):
            if floor != "prior":
                raise ValueError(f"floor must be 'prior', a number or a dict, got {floor!r}.")
            priors = getattr(self.model, "prior_alpha", None)
            prior = priors.get(b) if isinstance(priors, dict) else None
            if prior is None or np.size(prior) not in (1, int(np.prod(shape))):
                return np.full(shape, 1.0 / shape[-1])
            return np.minimum(np.broadcast_to(np.asarray(prior, dtype=float), shape), 1.0)
        if isinstance(floor, dict):
            floor = floor[b]
        out = np.broadcast_to(np.asarray(floor, dtype=float), shape).copy()
        if np.any(out < 0) or not np.all(np.isfinite(out)):
            raise ValueError("floor must be finite and non-negative.")
        return out

    def adjoint(self):
        k = DirichletMH.__new__(DirichletMH)
        k.__dict__.update(self.__dict__)
        k.order = self.order[::-1]
        return k

    def strength(self, block, beta, n, row=None):
        if self.concentration is not None:
            a0, nd, d = self.concentration[block]
            # proposal covariance (2.38^2 / d) x that of Dir(theta | A(beta) theta)
            A = a0[row] + beta * nd[row]
            return max((A + 1.0) * d / 2.38**2 - 1.0, 1e-3)
        return self.alpha0 + self.kappa * n * beta * self.curvature[block]

    def transition(self, state, target, beta, rngs):
        # Each row's proposal depends only on that row's current value, which does not
        # change before the row's own update, so all Dirichlet proposals and acceptance
        # uniforms of the sweep are drawn up front: a few generator calls per chain.
        rows = [state.params[b][(slice(None),) + r] for b, r in self.order]
        tb = target.tuning_beta(beta)
        strengths = [self.strength(b, tb, target.n, r) for b, r in self.order]
        floors = [self.floor[b][r] for b, r in self.order]
        alphas = [a * row + g for a, row, g in zip(strengths, rows, floors)]
        shapes = np.concatenate(alphas, axis=1)  # (C, total entries)
        lg = _log_gamma_per_chain(rngs, shapes)
        logu = np.log(np.stack([1.0 - g.random(len(self.order)) for g in rngs]))
        acc = []
        pos = 0
        for i, (b, r) in enumerate(self.order):
            row = state.params[b][(slice(None),) + r]
            a_row = alphas[i]
            K = row.shape[1]
            g = lg[:, pos:pos + K]
            pos += K
            g = g - g.max(axis=1, keepdims=True)
            prop_row = np.exp(g)
            prop_row = np.maximum(prop_row / prop_row.sum(axis=1, keepdims=True), np.finfo(float).tiny)
            prop_row /= prop_row.sum(axis=1, keepdims=True)
            a, g0 = strengths[i], floors[i]
            new_b = state.params[b].copy()
            new_b[(slice(None),) + r] = prop_row
            params = dict(state.params)
            params[b] = new_b
            new = target.state(params)
            with np.errstate(invalid="ignore", divide="ignore"):
                lr = (target.log_f(new, beta) - target.log_f(state, beta)
                      + dirichlet_log_pdf(row, a * prop_row + g0) - dirichlet_log_pdf(prop_row, a_row))
            lr = np.where(np.isnan(lr), -np.inf, lr)
            acc_c = logu[:, i] < lr
            state = target.merge(state, new, acc_c)
            acc.append(acc_c.mean())
        return state, float(np.mean(acc))


class IdentityKernel(KernelBase):
    """Leaves the state unchanged (a model without free parameters)."""

    def __init__(self, model):
        self.model = model

    def transition(self, state, target, beta, rngs):
        return state, 1.0


class CompositeKernel(KernelBase):
    """Apply kernels in sequence; the adjoint applies the adjoints in reverse order."""

    def __init__(self, kernels):
        self.kernels = list(kernels)
        self.model = self.kernels[0].model
        self.reversible = False

    def adjoint(self):
        return CompositeKernel([k.adjoint() for k in self.kernels[::-1]])

    def transition(self, state, target, beta, rngs):
        acc = []
        for k in self.kernels:
            state, a = k.transition(state, target, beta, rngs)
            acc.append(a)
        return state, float(np.mean(acc))


class ExactTemperedKernel(KernelBase):
    """Independent exact draws from ``f_beta`` (conjugate models with
    ``sample_tempered_posterior``); with perfect moves AIS is exact, which tests the
    annealing itself."""

    def __init__(self, model):
        if not hasattr(model, "sample_tempered_posterior"):
            raise NotImplementedError("ExactTemperedKernel needs sample_tempered_posterior")
        self.model = model

    def transition(self, state, target, beta, rngs):
        if target.start != "prior":
            raise ValueError("ExactTemperedKernel supports start='prior' only.")
        parts = [self.model.sample_tempered_posterior(target.X, beta, g, 1) for g in rngs]
        return target.state(concat_params(parts)), 1.0


class IndependenceMH(KernelBase):
    """Independence Metropolis–Hastings with proposal q (block-wise when ``blocks=True``).

    ``w = f(theta) / q(theta)``; accept with ``min{1, w(theta*) / w(theta)}``.  With
    ``blocks=True`` each block is proposed from its factor q_b (block variational MH).
    """

    def __init__(self, model, q, blocks=False):
        self.model, self.q, self.blocks = model, q, bool(blocks)

    def transition(self, state, target, beta, rngs):
        if not self.blocks:
            prop = concat_params([self.q.sample(g, 1) for g in rngs])
            new = target.state(prop)
            lr = (target.log_f(new, beta) - self.q.log_pdf(prop)
                  - target.log_f(state, beta) + self.q.log_pdf(state.params))
            a = _accept(lr, rngs)
            self.last_accepts = a[:, None]
            return target.merge(state, new, a), float(a.mean())
        acc = []
        for qb in self.q.blocks:
            b = qb.name
            draw = np.concatenate([qb.sample(g, 1) for g in rngs], axis=0)
            params = dict(state.params)
            params[b] = draw
            new = target.state(params)
            lr = (target.log_f(new, beta) - qb.log_pdf(draw)
                  - target.log_f(state, beta) + qb.log_pdf(state.params[b]))
            a = _accept(lr, rngs)
            state = target.merge(state, new, a)
            acc.append(a)
        self.last_accepts = np.stack(acc, axis=1)  # (C, blocks of q)
        return state, float(np.mean(self.last_accepts))


def take_state(state, idx):
    """The chains ``idx`` of a ChainState."""
    return ChainState({k: v[idx] for k, v in state.params.items()}, state.log_prior[idx],
                      state.loglik[idx], None if state.log_q is None else state.log_q[idx])


def put_state(state, idx, sub):
    """A copy of ``state`` with the chains ``idx`` replaced by ``sub``."""
    params = {}
    for k, v in state.params.items():
        v = np.array(v, copy=True)
        v[idx] = sub.params[k]
        params[k] = v
    out = [np.array(a, copy=True) for a in (state.log_prior, state.loglik)]
    for a, b in zip(out, (sub.log_prior, sub.loglik)):
        a[idx] = b
    lq = None
    if state.log_q is not None:
        lq = np.array(state.log_q, copy=True)
        lq[idx] = sub.log_q
    return ChainState(params, out[0], out[1], lq)


class VariationalMixtureKernel(KernelBase):
    """Variational MCMC mixture kernel (de Freitas et al. 2001, Fig. 7): with
    probability ``nu`` a block variational MH sweep, otherwise a block random-walk sweep
    (each keeps the target invariant, so the mixture does).  The choice is made per
    chain, and each chain runs only the sub-kernel it chose: one sweep's cost per
    iteration.  ``last_choice`` records the choices of the last transition (True:
    variational sweep)."""

    def __init__(self, model, q, nu=0.5, rw=None, blocks=True):
        self.model, self.q, self.nu = model, q, float(nu)
        self.indep = IndependenceMH(model, q, blocks=blocks)
        self.rw = rw if rw is not None else BlockRandomWalkMH(model)

    def transition(self, state, target, beta, rngs):
        use_q = _uniform(rngs) < self.nu
        self.last_choice = use_q
        total = 0.0
        for mask, kernel in ((use_q, self.indep), (~use_q, self.rw)):
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                continue
            sub, a = kernel.transition(take_state(state, idx), target, beta,
                                       [rngs[i] for i in idx])
            state = put_state(state, idx, sub)
            total += a * idx.size
        return state, total / state.C


def make_kernel(kind, model, rw_scale=1.0, dirichlet_strength=(5.0, 2.0), dirichlet_floor="prior",
                X=None):
    """The kernel named by ``kind`` for ``model`` (data ``X`` as prepared by the model).

    * ``"auto"``: the model's own ``annealing_kernel(X=X, scale=rw_scale)`` when it has
      one (an optional method: a kernel tuned from the prior, the fitted posterior q
      and the data size, fixed before the run and never adapted to the chains; see
      :class:`~sklearn_vb._core.evidence.protocols.ScoringModelMixin`), otherwise ``"blocks"``;
    * ``"blocks"``: DirichletMH for simplex blocks and a random walk for the rest, with
      prior precisions from the prior (:func:`estimate_prior_precision`) and per-case
      curvatures from ``kernel_curvature()``;
    * ``"rw"``: random walk for every block; ``"dirichlet"``; ``"exact"``; or a kernel.
    """
    if not isinstance(kind, str):
        return kind
    space = model.param_space
    simplex = [b.name for b in space.blocks if b.constraint == "simplex" and b.dim > 0]
    other = [b.name for b in space.blocks if b.constraint != "simplex" and b.dim > 0]
    a0, kap = dirichlet_strength
    if kind == "auto" and callable(getattr(model, "annealing_kernel", None)):
        return model.annealing_kernel(X=X, scale=rw_scale)
    if kind == "rw":
        return BlockRandomWalkMH(model, scale=rw_scale)
    if kind == "exact":
        return ExactTemperedKernel(model)
    if kind in ("auto", "blocks", "dirichlet"):
        ks = []
        if simplex:
            ks.append(DirichletMH(model, simplex, alpha0=a0, kappa=kap, floor=dirichlet_floor))
        if other:
            if kind == "dirichlet":
                raise ValueError("kernel='dirichlet' needs every block to be a simplex.")
            ks.append(BlockRandomWalkMH(model, other, scale=rw_scale))
        if not ks:  # every block is a constant: nothing to move
            return IdentityKernel(model)
        return ks[0] if len(ks) == 1 else CompositeKernel(ks)
    raise ValueError("kernel must be 'auto', 'blocks', 'rw', 'dirichlet', 'exact' or a kernel, "
                     f"got {kind!r}.")
