"""Posterior sampling with the variational approximation as proposal (variational MCMC).

:class:`VariationalMCMC` draws from ``p(theta | X)`` of any package model with a
ScoringModel (HMM, MFA, LDS, discrete DAG, sigmoid belief network), using the fitted
q(theta) as proposal, as in de Freitas, Højen-Sørensen, Jordan & Russell (2001):

* ``kernel="independence"``: independence Metropolis–Hastings with q for the whole
  vector (Section 4.1); uniformly ergodic iff the weights ``p(theta | X)/q(theta)`` are
  bounded; its acceptance collapses above about 10 dimensions.
* ``kernel="block"``: block variational MH (Fig. 6), one MH step per block of q's
  factorisation with the block's factor as proposal.
* ``kernel="random_walk"``: block random-walk Metropolis in the unconstrained basis.
* ``kernel="mixture"`` (default): with probability ``nu`` a block variational sweep,
  otherwise a random-walk sweep (Fig. 7); one sweep per iteration.

Adaptation (``adapt=``):

* ``"none"``: q is used as fitted.
* ``"burn_in"``: halfway through and at the end of the burn-in, q is replaced by a
  Gaussian in the unconstrained basis moment-matched to the burn-in draws so far (pooled
  over chains), then frozen; adapting for ever would break the Markov property.
* ``"regeneration"`` (``kernel="independence"`` only; the paper recommends it up to
  about 7 dimensions): Fig. 10, the independence sampler split with
  ``s(theta) = min{1, c/w(theta)}``, ``nu(d theta) ∝ q(d theta) min{1, w(theta)/c}``
  (eq. 16, Mykland, Tierney & Yu 1995).  At each regeneration (probability eq. 17 after
  an accepted move) a new tour starts: q is refitted to the chain's path so far (a
  Gaussian in the unconstrained basis), ``c = w(theta~)/2`` at the highest-density
  point seen, and the new state is drawn from ``nu`` by rejection.  Adapting only at
  regeneration times keeps the chain valid (Gilks, Roberts & Sahu 1998).

All kernels keep ``p(theta | X)`` invariant and every chain draws from its own
generator.  A model whose ScoringModel provides ``compiled_chain_arrays(X)`` (the
sigmoid belief network) runs whole chains in compiled code (``engine="compiled"``:
proposals, incremental block log-likelihoods and accept/reject steps, the random
numbers drawn in the same order as the Python kernels, so a seed gives the same chain
up to rounding); other models run the Python kernels, vectorised over chains (one
likelihood call per block per iteration for all chains).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ._core.evidence.mcmc_moves import (
    BlockRandomWalkMH,
    IndependenceMH,
    Target,
    VariationalMixtureKernel,
)
from ._core.evidence.params import concat_params
from ._core.evidence.posteriors import GaussianQ
from ._core.kernels.constants import LOG_2PI
from ._core.numerics import as_seed_sequence
from ._core.progress import Progress
from .scoring import prepare_data, resolve_model, variational_posterior

__all__ = ["VariationalMCMC", "UnconstrainedGaussianQ", "effective_sample_size"]

KERNELS = ("mixture", "independence", "block", "random_walk")
ADAPT = ("none", "burn_in", "regeneration")
ENGINES = ("auto", "compiled", "python")
_KIND_CODES = {"mixture": 0, "independence": 1, "block": 2, "random_walk": 3}


def _gauss_logpdf(x, mean, L_inv, logdet):
    z = (x - mean) @ L_inv.T
    return -0.5 * np.sum(z * z, axis=1) - 0.5 * mean.size * LOG_2PI - 0.5 * logdet


class _PhiBlockQ:
    """Block marginal of an :class:`UnconstrainedGaussianQ`, as a density over the
    block's constrained values."""

    def __init__(self, block, mean, cov):
        self.name, self.block = block.name, block
        self.mean_ = mean
        self.L = np.linalg.cholesky(cov)
        self.L_inv = np.linalg.inv(self.L)
        self.logdet = 2.0 * np.sum(np.log(np.diag(self.L)))

    def sample(self, rng, size):
        phi = self.mean_ + rng.standard_normal((int(size), self.mean_.size)) @ self.L.T
        return self.block.from_unconstrained(phi)[0]

    def log_pdf(self, value):
        phi = self.block.to_unconstrained(value)
        _, ld = self.block.from_unconstrained(phi)
        return _gauss_logpdf(phi, self.mean_, self.L_inv, self.logdet) - ld


class UnconstrainedGaussianQ:
    """A Gaussian ``N(mean, cov)`` in the unconstrained basis of ``space``, as a density
    over the constrained parameters (``log_pdf = ln N(phi(theta)) - ln|det d theta/d phi|``),
    with block marginals in ``blocks`` (the proposals of block variational MH).

    It is the proposal that the adaptive schemes of de Freitas et al. (2001), §4.4, refit
    to the chain's draws.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.mcmc import UnconstrainedGaussianQ
    >>> from sklearn_vb.scoring import ParamBlock, ParamSpace
    >>> space = ParamSpace([ParamBlock("rate", (2,), "positive")])
    >>> q = UnconstrainedGaussianQ(space, mean=[0.0, 1.0], cov=0.01 * np.eye(2))
    >>> draws = q.sample(np.random.default_rng(0), 3)
    >>> draws["rate"].shape, q.log_pdf(draws).shape
    ((3, 2), (3,))
    >>> np.round(q.mean()["rate"], 3)          # exp of the unconstrained mean
    array([[1.   , 2.718]])
    >>> phi = space.to_unconstrained(q.sample(np.random.default_rng(1), 500))
    >>> refit = UnconstrainedGaussianQ.fit(space, phi)
    >>> bool(np.allclose(refit.mean_, [0.0, 1.0], atol=0.05))
    True
    """

    def __init__(self, space, mean, cov):
        self.space = space
        self.mean_ = np.asarray(mean, dtype=float)
        self.cov = np.asarray(cov, dtype=float)
        self.L = np.linalg.cholesky(self.cov)
        self.L_inv = np.linalg.inv(self.L)
        self.logdet = 2.0 * np.sum(np.log(np.diag(self.L)))
        self.blocks = [_PhiBlockQ(b, self.mean_[space.slices[b.name]],
                                  self.cov[space.slices[b.name], space.slices[b.name]])
                       for b in space.blocks if b.dim > 0]

    @classmethod
    def fit(cls, space, phi, previous=None, ridge=1e-8):
        """Moment match to draws ``phi`` (N, D); ``previous`` is returned when there are
        too few distinct draws for a full covariance."""
        phi = np.asarray(phi, dtype=float)
        D = phi.shape[1]
        if np.unique(phi, axis=0).shape[0] < D + 2:
            return previous
        cov = np.atleast_2d(np.cov(phi, rowvar=False))
        cov = cov + ridge * max(float(np.mean(np.diag(cov))), 1e-12) * np.eye(D)
        try:
            return cls(space, phi.mean(axis=0), cov)
        except np.linalg.LinAlgError:
            return previous

    @classmethod
    def from_moments(cls, space, n, s1, s2, previous=None, ridge=1e-8):
        """Moment match to ``n`` draws with sum ``s1`` and sum of outer products ``s2``."""
        mean = s1 / n
        cov = (s2 - n * np.outer(mean, mean)) / max(n - 1, 1)
        cov = 0.5 * (cov + cov.T)
        cov = cov + ridge * max(float(np.mean(np.diag(cov))), 1e-12) * np.eye(mean.size)
        try:
            return cls(space, mean, cov)
        except np.linalg.LinAlgError:
            return previous

    def sample(self, rng, size):
        """``size`` draws, mapped to the constrained parameters (a dict of blocks)."""
        phi = self.mean_ + rng.standard_normal((int(size), self.mean_.size)) @ self.L.T
        return self.space.from_unconstrained(phi)[0]

    def log_pdf(self, params):
        """The density of the constrained ``params`` (C sets), shape (C,)."""
        phi = self.space.to_unconstrained(params)
        return (_gauss_logpdf(phi, self.mean_, self.L_inv, self.logdet)
                - self.space.log_det_jacobian(params))

    def mean(self):
        """The unconstrained mean mapped to the constrained parameters (a batch of one)."""
        return self.space.from_unconstrained(self.mean_[None])[0]

    def unconstrained_sd(self, space=None):
        """The standard deviation of each unconstrained coordinate, shape (D,)."""
        return np.sqrt(np.diag(self.cov))


def _moment_matched(q, space, rng, n=4000):
    """q as an :class:`UnconstrainedGaussianQ` fitted to ``n`` of its own draws."""
    draws = q.sample(rng, n)
    return UnconstrainedGaussianQ.fit(space, space.to_unconstrained(draws))


def effective_sample_size(chains):
    """Effective sample size per coordinate of ``chains`` (C, N, D), pooled over chains:
    ``C N / (1 + 2 sum_k rho_k)`` with the chain-averaged autocorrelations truncated by
    Geyer's initial monotone positive-sequence rule.  For the effective sample size of
    importance weights see :func:`sklearn_vb.scoring.importance_effective_sample_size`.

    Examples
    --------
    Independent draws keep about their number; an autocorrelated chain (AR(1) with
    coefficient 0.9, integrated autocorrelation time 19) has far fewer:

    >>> import numpy as np
    >>> from sklearn_vb.mcmc import effective_sample_size
    >>> rng = np.random.default_rng(0)
    >>> iid = rng.standard_normal((2, 1000, 1))
    >>> ar = np.zeros((2, 1000, 1))
    >>> for t in range(1, 1000):
    ...     ar[:, t] = 0.9 * ar[:, t - 1] + rng.standard_normal((2, 1))
    >>> bool(effective_sample_size(iid)[0] > 1500), bool(effective_sample_size(ar)[0] < 300)
    (True, True)
    """
    x = np.asarray(chains, dtype=float)
    if x.ndim == 2:
        x = x[None]
    C, N, D = x.shape
    if N < 4:
        return np.full(D, float(C * N))
    xc = x - x.mean(axis=1, keepdims=True)
    nfft = 1 << int(np.ceil(np.log2(2 * N)))
    f = np.fft.rfft(xc, n=nfft, axis=1)
    acov = np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :N] / N
    acov = acov.mean(axis=0)  # (N, D)
    var = acov[0]
    out = np.empty(D)
    for d in range(D):
        if not var[d] > 0:
            out[d] = float(C * N)
            continue
        rho = acov[:, d] / var[d]
        # pairs Gamma_m = rho_{2m} + rho_{2m+1}, kept while positive and made monotone
        m_max = (N - 1) // 2
        gam = rho[0:2 * m_max:2] + rho[1:2 * m_max + 1:2]
        pos = np.flatnonzero(gam <= 0)
        gam = gam[: pos[0]] if pos.size else gam
        gam = np.minimum.accumulate(gam) if gam.size else gam
        tau = -1.0 + 2.0 * np.sum(gam) if gam.size else 1.0
        out[d] = C * N / max(tau, 1.0 / np.log10(max(C * N, 10)))
    return out


class VariationalMCMC:
    """Samples from ``p(theta | X)`` with the variational posterior as proposal.

    Parameters
    ----------
    estimator : fitted estimator or ScoringModel
        Anything :func:`sklearn_vb.scoring.scoring_model_for` accepts, with a variational
        posterior (the fitted q).
    kernel : {"mixture", "independence", "block", "random_walk"}, default="mixture"
        See the module docstring.
    adapt : {"none", "burn_in", "regeneration"}, default="none"
        See the module docstring; ``"regeneration"`` needs ``kernel="independence"``.
    nu : float in [0, 1], default=0.5
        Probability of the variational sweep of the mixture kernel (the paper gives no
        value).
    n_samples : int, default=2000
        Iterations kept per chain (after the burn-in).
    burn_in : int or None, default=None
        Iterations discarded first; None: ``n_samples // 10`` (0 with
        ``adapt="regeneration"``, whose tours start from ``nu``).
    n_chains : int, default=4
    rw_scale : float, default=0.5
        Random-walk step per unconstrained coordinate: ``rw_scale`` times q's standard
        deviation in that coordinate.
    rw_step : float or None, default=None
        A fixed random-walk standard deviation for every coordinate instead (the paper
        used variance 0.01, ``rw_step=0.1``).
    posterior : VariationalPosterior or None
        Proposal instead of the estimator's fitted q.
    regeneration_refit : bool, default=True
        With ``adapt="regeneration"``: refit q at each regeneration (False keeps q and
        only records the tours, a check of the splitting).
    engine : {"auto", "compiled", "python"}, default="auto"
        ``"compiled"`` runs the chains in compiled code (needs a ScoringModel with
        ``compiled_chain_arrays``, a Gaussian q, and ``adapt`` other than
        ``"regeneration"``); ``"python"`` the Python kernels; ``"auto"`` the compiled
        engine when it applies.
    random_state : int, Generator or None
    verbose : int, default=0

    Attributes
    ----------
    samples_ : dict block -> ndarray (n_chains, n_samples) + block shape
    samples_phi_ : ndarray (n_chains, n_samples, D), the unconstrained coordinates
    log_target_ : ndarray (n_chains, n_samples), ``ln p(theta) + ln p(X | theta)``
    acceptance_ : dict kernel -> acceptance rate over all its proposals
    block_acceptance_ : dict kernel -> dict block -> acceptance rate
    kernel_counts_ : dict kernel -> number of chain-iterations that ran it
    n_likelihood_evaluations_ : int, chain-evaluations of ``ln p(X | theta)``
    tours_ : list (per chain) of arrays of the sample indices where a tour starts
        (regeneration only; None otherwise)
    ess_ : ndarray (D,), effective sample size per unconstrained coordinate
    proposal_ : the proposal in use at the end (the last refitted q when adapting)

    Notes
    -----
    de Freitas, Højen-Sørensen, Jordan & Russell (2001): the independence sampler with
    q as proposal is their §4.1, the block sampler §4.2 (Fig. 6), the mixture with
    random-walk Metropolis (the default) §4.3 (Fig. 7) and the adaptation by
    regeneration §4.4.1 (Fig. 10).  The ``"vmcmc"`` score of :mod:`sklearn_vb.scoring`
    turns the draws into an evidence estimate.

    Examples
    --------
    The weights of a fully observed two-node sigmoid belief network (two logistic
    regressions, de Freitas et al.'s Fig. 1A):

    >>> import numpy as np
    >>> from sklearn_vb import VBSigmoidBeliefNetwork
    >>> from sklearn_vb.mcmc import VariationalMCMC
    >>> rng = np.random.RandomState(0)
    >>> x0 = rng.rand(50) < 0.5
    >>> x1 = rng.rand(50) < np.where(x0, 0.8, 0.2)
    >>> X = np.column_stack([x0, x1]).astype(float)
    >>> sbn = VBSigmoidBeliefNetwork(structure=[("x0", "x1")], n_init=1,
    ...                              random_state=0).fit(X)
    >>> mcmc = VariationalMCMC(sbn, n_samples=200, n_chains=2, random_state=0).fit(X)
    >>> {block: draws.shape for block, draws in mcmc.samples_.items()}
    {'w[x0]': (2, 200, 1), 'w[x1]': (2, 200, 2)}
    >>> sorted(mcmc.acceptance_)
    ['block', 'random_walk']
    >>> bool(mcmc.posterior_mean()["w[x1]"][1] > 1.0)    # x0 raises P(x1 = 1)
    True
    """

    def __init__(self, estimator, kernel="mixture", adapt="none", *, nu=0.5, n_samples=2000,
                 burn_in=None, n_chains=4, rw_scale=0.5, rw_step=None, posterior=None,
                 regeneration_refit=True, engine="auto", random_state=None, verbose=0):
        self.estimator = estimator
        self.kernel = kernel
        self.adapt = adapt
        self.nu = nu
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.n_chains = n_chains
        self.rw_scale = rw_scale
        self.rw_step = rw_step
        self.posterior = posterior
        self.regeneration_refit = regeneration_refit
        self.engine = engine
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _validate(self):
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}.")
        if self.adapt not in ADAPT:
            raise ValueError(f"adapt must be one of {ADAPT}, got {self.adapt!r}.")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}.")
        if self.adapt == "regeneration" and self.kernel != "independence":
            raise ValueError("adapt='regeneration' needs kernel='independence' (Fig. 10 splits "
                             "the independence sampler).")
        if not (isinstance(self.nu, Real) and 0.0 <= self.nu <= 1.0):
            raise ValueError(f"nu must be a number in [0, 1], got {self.nu!r}.")
        for name in ("n_samples", "n_chains"):
            v = getattr(self, name)
            if not isinstance(v, Integral) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        if self.burn_in is not None and (not isinstance(self.burn_in, Integral) or self.burn_in < 0):
            raise ValueError(f"burn_in must be None or a non-negative integer, got {self.burn_in!r}.")
        if not (isinstance(self.rw_scale, Real) and self.rw_scale > 0):
            raise ValueError(f"rw_scale must be positive, got {self.rw_scale!r}.")
        if self.rw_step is not None and not (isinstance(self.rw_step, Real) and self.rw_step > 0):
            raise ValueError(f"rw_step must be None or positive, got {self.rw_step!r}.")

    # ------------------------------------------------------------------ setup
    def _setup(self, X, fit_params):
        model = resolve_model(self.estimator, "VariationalMCMC")
        data = prepare_data(model, X, fit_params)
        q = variational_posterior(self.estimator, model, data, self.posterior)
        if q is None:
            raise NotImplementedError("VariationalMCMC needs a variational posterior (the "
                                      "estimator's fitted q, or posterior=).")
        space = model.param_space
        seq = as_seed_sequence(self.random_state)
        s_setup, s_chains = seq.spawn(2)
        rng = np.random.default_rng(s_setup)
        free = [b.name for b in space.blocks if b.dim > 0]
        blocks_ok = hasattr(q, "blocks") and [qb.name for qb in q.blocks] == free
        if not blocks_ok:
            # no factor per parameter block: use q moment-matched in the unconstrained basis
            q = _moment_matched(q, space, rng)
        self.rngs_ = [np.random.default_rng(s) for s in s_chains.spawn(int(self.n_chains))]
        return model, data, q, space, free

    def _rw_kernel(self, model, q, space):
        if self.rw_step is not None:
            sd = np.full(space.size, float(self.rw_step))
        else:
            sd = self.rw_scale * np.asarray(q.unconstrained_sd(space), dtype=float)
        steps = {b.name: sd[space.slices[b.name]] for b in space.blocks if b.dim > 0}
        return BlockRandomWalkMH(model, fixed_steps=steps)

    def _kernel_for(self, model, q, rw):
        if self.kernel == "independence":
            return IndependenceMH(model, q, blocks=False)
        if self.kernel == "block":
            return IndependenceMH(model, q, blocks=True)
        if self.kernel == "random_walk":
            return rw
        return VariationalMixtureKernel(model, q, nu=self.nu, rw=rw, blocks=True)

    # ------------------------------------------------------------------ run
    def fit(self, X, **fit_params):
        """Run the chains on data ``X`` (and the model's fit parameters); returns self."""
        self._validate()
        model, data, q, space, free = self._setup(X, fit_params)
        self._calls = 0
        counting = _CountingModel(model, self)
        compiled = self._compiled_arrays(model, data, q, space)
        self.engine_ = "python" if compiled is None else "compiled"
        if self.adapt == "regeneration":
            self._run_regeneration(counting, data, q, space, free)
        elif compiled is not None:
            self._run_compiled(compiled, q, space, free)
        else:
            self._run_kernels(counting, data, q, space, free)
        self.n_likelihood_evaluations_ = int(self._calls)
        self.ess_ = effective_sample_size(self.samples_phi_)
        return self

    def _compiled_arrays(self, model, data, q, space):
        """The compiled engine's arrays, or None when it does not apply (``engine="auto"``)
        or raises when it was asked for and does not apply."""
        if self.engine == "python":
            return None
        hook = getattr(model, "compiled_chain_arrays", None)
        why = None
        if self.adapt == "regeneration":
            why = "adapt='regeneration' runs in Python"
        elif not callable(hook):
            why = f"{type(model).__name__} has no compiled_chain_arrays"
        elif any(b.constraint != "real" for b in space.blocks if b.dim > 0):
            why = "every parameter block must be real"
        elif _gaussian_arrays(q, space) is None:
            why = "q must be Gaussian in every block"
        if why is not None:
            if self.engine == "compiled":
                raise ValueError(f"engine='compiled' does not apply: {why}.")
            return None
        return hook(data)

    def _run_compiled(self, arrays, q, space, free):
        from .sbn.mcmc_kernels import sbn_vmcmc_chain

        rngs = self.rngs_
        C, D, B = len(rngs), space.size, len(free)
        burn = self.n_samples // 10 if self.burn_in is None else int(self.burn_in)
        n_iter = burn + int(self.n_samples)
        if self.rw_step is not None:
            rw_sd = np.full(D, float(self.rw_step))
        else:
            rw_sd = self.rw_scale * np.asarray(q.unconstrained_sd(space), dtype=float)
        # chains start from draws of q, as in the Python engine
        W = np.stack([space.to_unconstrained(q.sample(g, 1))[0] for g in rngs])
        out_w = np.empty((C, n_iter, D))
        out_lt = np.empty((C, n_iter))
        accepts = np.zeros((C, 3, B), dtype=np.int64)
        counts = np.zeros((C, 4), dtype=np.int64)
        ends = {n_iter}
        if self.adapt == "burn_in" and burn > 0:
            ends |= {max(burn // 2, 1), burn}
        if self.verbose:
            ends |= set(range(500, n_iter, 500))
        ends = sorted(e for e in ends if 0 < e <= n_iter)
        progress = Progress(self.verbose, "vmcmc", n_iter)
        a = arrays
        start = 0
        for end in ends:
            qa = _gaussian_arrays(q, space)
            for c, g in enumerate(rngs):
                sbn_vmcmc_chain(g, W[c], end - start, _KIND_CODES[self.kernel], float(self.nu),
                                a["block_ptr"], a["block_node"], a["states"], a["row_start"],
                                a["pattern_weight"], a["in_idx"], a["w_ptr"], a["offset"],
                                a["spin"], a["rep_ptr"], a["rep_rows"], a["row_rep"],
                                a["prior_mean"], float(a["prior_var"]), *qa,
                                rw_sd, out_w[c, start:end], out_lt[c, start:end],
                                accepts[c], counts[c])
            if self.adapt == "burn_in" and end in (max(burn // 2, 1), burn) and end <= burn:
                # the Python engine's pool: the second half of the burn-in so far,
                # iteration-major
                pool = out_w[:, end // 2:end].transpose(1, 0, 2).reshape(-1, D)
                new_q = UnconstrainedGaussianQ.fit(space, pool, previous=None)
                if new_q is not None:
                    q = new_q
            start = end
            progress(end)
        self.proposal_ = q
        self.tours_ = None
        self._store(space, out_w[:, burn:], out_lt[:, burn:])
        acc, counts = accepts.sum(axis=0), counts.sum(axis=0)
        kinds = {"mixture": ("block", "random_walk")}.get(self.kernel, (self.kernel,))
        row = {"block": (0, B), "random_walk": (1, B), "independence": (2, 1)}
        acc = {k: acc[row[k][0], :row[k][1]].astype(float) for k in kinds}
        tried = {k: int(counts[row[k][0]]) for k in kinds}
        self.acceptance_ = {k: float(acc[k].sum() / max(tried[k] * acc[k].size, 1)) for k in kinds}
        self.block_acceptance_ = {k: dict(zip(self._names_for(free, k), acc[k] / max(tried[k], 1)))
                                  for k in kinds}
        self.kernel_counts_ = tried
        self._calls += int(counts[3]) + C

    def _names_for(self, free, kind):
        return ["all"] if kind == "independence" else list(free)

    def _run_kernels(self, model, data, q, space, free):
        rngs = self.rngs_
        C = len(rngs)
        burn = self.n_samples // 10 if self.burn_in is None else int(self.burn_in)
        n_iter = burn + int(self.n_samples)
        rw = self._rw_kernel(model, q, space)
        kern = self._kernel_for(model, q, rw)
        target = Target(model, data)
        state = target.state(concat_params([q.sample(g, 1) for g in rngs]))
        kinds = {"mixture": ("block", "random_walk")}.get(self.kernel, (self.kernel,))
        acc = {k: np.zeros(len(self._names_for(free, k))) for k in kinds}
        tried = {k: 0 for k in kinds}
        phis, lts, burn_draws = [], [], []
        progress = Progress(self.verbose, "vmcmc", n_iter)
        for it in range(n_iter):
            state, _ = kern.transition(state, target, 1.0, rngs)
            if self.kernel == "mixture":
                choice = kern.last_choice
                for k, sub, mask in (("block", kern.indep, choice), ("random_walk", kern.rw, ~choice)):
                    if mask.any():
                        acc[k] += sub.last_accepts.sum(axis=0)
                        tried[k] += int(mask.sum())
            else:
                acc[kinds[0]] += kern.last_accepts.sum(axis=0)
                tried[kinds[0]] += C
            phi = space.to_unconstrained(state.params)
            if it < burn:
                if self.adapt == "burn_in":
                    burn_draws.append(phi)
                    if it + 1 in (max(burn // 2, 1), burn):
                        pool = np.concatenate(burn_draws[len(burn_draws) // 2:], axis=0)
                        new_q = UnconstrainedGaussianQ.fit(space, pool, previous=None)
                        if new_q is not None:
                            q = new_q
                            kern = self._kernel_for(model, q, rw)
            else:
                phis.append(phi)
                lts.append(state.log_prior + state.loglik)
            progress(it + 1)
        self.proposal_ = q
        self.tours_ = None
        self._store(space, np.stack(phis, axis=1), np.stack(lts, axis=1))
        self.acceptance_ = {k: float(acc[k].sum() / max(tried[k] * acc[k].size, 1)) for k in kinds}
        self.block_acceptance_ = {k: dict(zip(self._names_for(free, k), acc[k] / max(tried[k], 1)))
                                  for k in kinds}
        self.kernel_counts_ = dict(tried)

    def _store(self, space, phi, log_target):
        self.samples_phi_ = phi
        C, N, D = phi.shape
        params, _ = space.from_unconstrained(phi.reshape(C * N, D))
        self.samples_ = {k: v.reshape((C, N) + v.shape[1:]) for k, v in params.items()}
        self.log_target_ = log_target

    # ------------------------------------------------------------------ regeneration
    def _run_regeneration(self, model, data, q0, space, free):
        target = Target(model, data)
        n = int(self.n_samples)
        burn = 0 if self.burn_in is None else int(self.burn_in)
        phis, lts, tours, n_acc, proposals = [], [], [], 0, 0
        progress = Progress(self.verbose, "vmcmc", len(self.rngs_) * (burn + n))
        for c, rng in enumerate(self.rngs_):
            q = q0
            best_params = q.mean() if callable(getattr(q, "mean", None)) else None
            best_params = {k: np.asarray(v)[:1] for k, v in best_params.items()}
            best = target.state(best_params)
            best_lf = float((best.log_prior + best.loglik)[0])
            log_c = best_lf - float(q.log_pdf(best_params)[0]) - np.log(2.0)
            st, lw, log_c = self._draw_nu(q, target, rng, log_c)
            path, path_lt, starts = [], [], [0]
            # running moments of the path (for the refits at regeneration times)
            m0, m1, m2 = 0, np.zeros(space.size), np.zeros((space.size, space.size))
            for it in range(burn + n):
                prop = q.sample(rng, 1)
                new = target.state(prop)
                lf_new = float((new.log_prior + new.loglik)[0])
                lw_new = lf_new - float(q.log_pdf(prop)[0])
                proposals += 1
                if np.log(1.0 - rng.random()) < lw_new - lw:
                    n_acc += 1
                    if lw > log_c and lw_new > log_c:
                        log_r = log_c - min(lw, lw_new)
                    elif lw < log_c and lw_new < log_c:
                        log_r = max(lw, lw_new) - log_c
                    else:
                        log_r = 0.0
                    if np.log(1.0 - rng.random()) < log_r:
                        # regeneration: a new tour starts with a draw from nu (eq. 16)
                        if lf_new > best_lf:
                            best_params, best_lf = prop, lf_new
                        if self.regeneration_refit and m0 >= max(50, 10 * space.size):
                            q = UnconstrainedGaussianQ.from_moments(space, m0, m1, m2, previous=q)
                        log_c = best_lf - float(q.log_pdf(best_params)[0]) - np.log(2.0)
                        st, lw, log_c = self._draw_nu(q, target, rng, log_c)
                        starts.append(it + 1)
                    else:
                        st, lw = new, lw_new
                lf = float((st.log_prior + st.loglik)[0])
                if lf > best_lf:
                    best_params, best_lf = st.params, lf
                phi_now = space.to_unconstrained(st.params)
                path.append(phi_now)
                path_lt.append(lf)
                m0, m1, m2 = m0 + 1, m1 + phi_now[0], m2 + np.outer(phi_now[0], phi_now[0])
                progress(c * (burn + n) + it + 1)
            phis.append(np.concatenate(path[burn:], axis=0))
            lts.append(np.array(path_lt[burn:]))
            tours.append(np.array([s - burn for s in starts if s >= burn], dtype=np.int64))
        self.proposal_ = q
        self.tours_ = tours
        self._store(space, np.stack(phis), np.stack(lts))
        self.acceptance_ = {"independence": n_acc / max(proposals, 1)}
        self.block_acceptance_ = {"independence": {"all": n_acc / max(proposals, 1)}}
        self.kernel_counts_ = {"independence": proposals}

    @staticmethod
    def _draw_nu(q, target, rng, log_c, patience=500, max_rounds=20):
        """A draw from ``nu ∝ q min{1, w/c}`` by rejection from q; returns
        ``(state, ln w, ln c)``.

        Any ``c > 0`` gives a valid atom (Mykland et al. 1995), and at a regeneration
        time it may depend on anything drawn so far.  When ``patience`` proposals in a
        row are rejected (``c`` far above typical weights, e.g. when theta~ lies in q's
        tail), ``c`` is lowered to the median weight of those proposals and the
        rejection sampler restarts with it; the tour then runs with that ``c``.
        """
        for _ in range(max_rounds):
            seen = []
            for _ in range(int(patience)):
                prop = q.sample(rng, 1)
                st = target.state(prop)
                lw = float((st.log_prior + st.loglik)[0] - q.log_pdf(prop)[0])
                if np.log(1.0 - rng.random()) < min(0.0, lw - log_c):
                    return st, lw, log_c
                seen.append(lw)
            seen = np.asarray(seen)
            log_c = float(np.median(seen[np.isfinite(seen)])) if np.isfinite(seen).any() else log_c
        raise RuntimeError("rejection sampling from the regeneration measure failed; q is far "
                           "from the posterior.")

    # ------------------------------------------------------------------ summaries
    def posterior_mean(self):
        """Mean of the draws (pooled over chains), per block, in the constrained values."""
        return {k: v.reshape((-1,) + v.shape[2:]).mean(axis=0) for k, v in self.samples_.items()}

    def tour_estimate(self, f=None):
        """Regenerative estimate of ``E[f(phi)]`` from the tours of every chain (ratio of
        tour sums to tour lengths; Mykland et al. 1995) with its standard error.
        ``f`` maps (N, D) unconstrained draws to (N, k); default the identity."""
        if self.tours_ is None:
            raise ValueError("tour_estimate needs adapt='regeneration'.")
        sums, lens = [], []
        for c, starts in enumerate(self.tours_):
            x = self.samples_phi_[c]
            vals = x if f is None else np.asarray(f(x), dtype=float).reshape(x.shape[0], -1)
            # complete tours only: from one regeneration to the next
            for a, b in zip(starts[:-1], starts[1:]):
                sums.append(vals[a:b].sum(axis=0))
                lens.append(b - a)
        if not lens:
            raise ValueError("no complete tour.")
        S, N = np.array(sums), np.array(lens, dtype=float)
        est = S.sum(axis=0) / N.sum()
        T = N.size
        resid = S - est * N[:, None]
        se = np.sqrt(np.sum(resid**2, axis=0) / T) / (N.mean() * np.sqrt(T))
        return est, se


def _gaussian_arrays(q, space):
    """q as the compiled engine's arrays ``(mean, whole-vector Cholesky factor, its log
    determinant, block-diagonal Cholesky factors of the block marginals, their log
    determinants)``, or None when a block of q is not Gaussian in the unconstrained
    basis."""
    D = space.size
    if isinstance(q, UnconstrainedGaussianQ):
        chol, logdet = q.L, q.logdet
        mean = q.mean_
    else:
        chol, logdet, mean = np.zeros((D, D)), 0.0, np.empty(D)
    chol_blocks = np.zeros((D, D))
    logdets = []
    for qb in getattr(q, "blocks", ()):
        if isinstance(qb, _PhiBlockQ):
            L, ld, m = qb.L, qb.logdet, qb.mean_
        elif type(qb) is GaussianQ and space[qb.name].constraint == "real":
            L, ld, m = qb._L, qb._logdet, qb.mean_
        else:
            return None
        sl = space.slices[qb.name]
        chol_blocks[sl, sl] = L
        logdets.append(float(ld))
        if not isinstance(q, UnconstrainedGaussianQ):
            chol[sl, sl] = L
            mean[sl] = np.ravel(m)
            logdet += float(ld)
    if len(logdets) != sum(1 for b in space.blocks if b.dim > 0):
        return None
    return (np.ascontiguousarray(mean, dtype=float), np.ascontiguousarray(chol),
            float(logdet), chol_blocks, np.asarray(logdets))


class _CountingModel:
    """Forwards to a ScoringModel, counting chain-evaluations of the likelihood."""

    def __init__(self, model, owner):
        self._model, self._owner = model, owner

    def __getattr__(self, name):
        return getattr(self._model, name)

    def log_likelihood(self, params, X):
        out = self._model.log_likelihood(params, X)
        self._owner._calls += int(np.shape(out)[0])
        return out

