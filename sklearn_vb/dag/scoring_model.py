"""ScoringModel for a fitted :class:`~sklearn_vb.dag.VBDiscreteDAG`.

theta = one simplex block per node (its CPT, shape (q_j, r_j)), Dirichlet rows with the
estimator's prior; exact ln p(X | theta) by enumeration of the unobserved nodes of every
distinct data pattern (the estimator's own compressed patterns and enumeration kernels).
"""

from __future__ import annotations

import itertools
from math import exp

import numpy as np
from scipy.special import gammaln

from .._core.distributions import dirichlet_sample
from .._core.evidence.dirichlet import DirichletBlocksModel
from .._core.evidence.posteriors import MappedPosterior, MixturePosterior
from .._core.evidence.protocols import EStep
from ._evidence_kernels import (dag_ais_chains, dag_ais_chains_from_mixture,
                                     dag_ais_chains_from_start, dag_ais_init,
                                     dag_log_hidden_conditional, dag_mixture_log_density,
                                     dag_sample_hidden)
from .kernels import enumerate_posterior, pattern_log_normalisers
from .structure import CPTLayout, exact_log_evidence

__all__ = ["DAGScoringModel"]


class DAGScoringModel(DirichletBlocksModel):
    """The scoring view of a fitted VBDiscreteDAG (any structure, hidden nodes)."""

    def __init__(self, estimator):
        if not hasattr(estimator, "structure_"):
            raise ValueError("the estimator must be fitted.")
        self.estimator = estimator
        self.layout = CPTLayout(estimator.structure_)
        s = estimator.structure_
        self.block_names = [f"cpt[{name}]" for name in s.names]
        self.prior_alpha = {b: np.asarray(p, dtype=float)
                            for b, p in zip(self.block_names, estimator.prior_)}
        self._init_space()
        self.n_components = int(sum(s.cardinalities[h] for h in s.hidden_nodes))

    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError(f"VBDiscreteDAG scoring accepts no fit parameters, got {sorted(fit_params)}.")
        data = self.estimator.check_data(X)
        # joint annealing's prior draw of the latents exists only for complete data
        self._has_missing = bool(np.any(data.patterns < 0))
        return data

    def n_cases(self, X):
        return int(round(float(np.sum(X.weights))))

    def n_parameters(self):
        return int(self.estimator.n_parameters_)

    def n_aliases(self):
        return int(round(exp(self.estimator.log_alias_count_)))

    def log_n_aliases(self):
        """ln S as the estimator computed it (no round trip through ``S``, which
        overflows a float for large hidden cardinalities)."""
        return float(self.estimator.log_alias_count_)

    def _flat(self, params):
        C = next(iter(params.values())).shape[0]
        return np.concatenate([np.asarray(params[b], dtype=float).reshape(C, -1)
                               for b in self.block_names], axis=1)

    def _pattern_loglik(self, params, pdata):
        flat = self._flat(params)
        out = np.empty((flat.shape[0], pdata.n_patterns))
        with np.errstate(divide="ignore"):
            logs = np.log(flat)
        for c in range(flat.shape[0]):
            pattern_log_normalisers(np.ascontiguousarray(logs[c]), pdata.idx, pdata.row_start, out[c])
        return out

    def log_likelihood(self, params, X):
        return self._pattern_loglik(params, X) @ X.weights

    def log_likelihood_per_case(self, params, X):
        return self._pattern_loglik(params, X)[:, X.inverse]

    def random_completion(self, X, rng):
        """One uniformly random joint configuration of the unobserved nodes per case,
        as a row of the pattern's enumeration index (Beal 2003, Algorithm 6.2, complete
        kind)."""
        u = X.inverse
        H = X.row_start[u + 1] - X.row_start[u]
        return X.row_start[u] + np.floor(rng.random(u.size) * H).astype(np.int64)

    def log_complete_joint_per_case(self, params, Z, X):
        """ln p(s_i, y_i | theta) for the completion rows ``Z``: (C, n)."""
        with np.errstate(divide="ignore"):
            logs = np.log(self._flat(params))
        return logs[:, X.idx[Z]].sum(axis=2)

    def e_step(self, params_single, X):
        with np.errstate(divide="ignore"):
            log_theta = np.ascontiguousarray(np.log(self._flat(params_single)[0]))
        counts = np.empty(self.layout.size)
        post = np.empty(X.idx.shape[0])
        log_z = np.empty(X.n_patterns)
        ent = np.empty(X.n_patterns)
        enumerate_posterior(log_theta, X.idx, X.row_start, X.weights, counts, post, log_z, ent)
        ll = float(log_z @ X.weights)
        entropy = float(ent @ X.weights)
        stats = dict(zip(self.block_names, self.layout.split(counts)))
        return EStep(ll, stats, ll - entropy, entropy)

    # -- compiled AIS (Beal's Algorithm 6.1 with a joint Dirichlet proposal) ------------
    #: default proposal strength alpha(beta) = alpha0 + kappa n beta of the joint kernel.
    #: On Beal's true structure at n = 480 (K = 2048 and 16384, 5 runs) kappa = 3 gave
    #: higher estimates than kappa = 6 or 12 and than Beal's fixed alpha = 3000, with
    #: acceptance rising from ~0.2 to ~0.3 along the schedule.
    compiled_ais_strength = (10.0, 3.0)

    def _flat_prior(self):
        return np.ascontiguousarray(
            np.concatenate([np.asarray(self.prior_alpha[b], dtype=float).ravel()
                            for b in self.block_names]))

    def _log_normaliser(self, alpha):
        """``sum_rows lgamma(sum alpha_row) - sum lgamma(alpha_row)`` over rows of length >= 2
        of a flat concentration vector (the log normaliser of a product of Dirichlets)."""
        rp = self.layout.row_ptr
        out = 0.0
        for a, b in zip(rp[:-1], rp[1:]):
            if b - a >= 2:
                out += gammaln(alpha[a:b].sum()) - gammaln(alpha[a:b]).sum()
        return float(out)

    def run_ais_compiled(self, X, betas, seeds, strength=None, floor="prior", start_params=None,
                         progress=None, segment=1024, start_alpha=None, start_mixture=None):
        """Forward AIS chains in compiled code (one chain per entry of ``seeds``).

        Every chain starts at an exact prior draw and makes, per temperature, one
        Metropolis–Hastings move of all CPT rows at once with the proposal
        ``Dir(alpha(beta) theta_row + floor_row)`` and one accept/reject (Beal's kernel,
        Beal 2003, Algorithm 6.1), ``alpha(beta) = alpha0 + kappa n beta`` with
        ``strength = (alpha0, kappa)`` (``kappa = 0``: Beal's fixed strength), then adds
        ``(beta_k - beta_{k-1}) ln p(X | theta)`` to its log-weight.  ``floor="prior"``
        uses the prior concentrations capped at 1; ``0`` gives Beal's proposal.

        ``start_alpha`` (flat concentrations, in the order of the blocks) replaces the
        prior as the start of the path by the product of Dirichlets ``s`` it defines (e.g.
        the variational posterior): chains start at exact draws of ``s`` and the targets
        are ``(1 - beta) ln s + beta [ln p + ln p(X | theta)]``.  Every target is then
        about as concentrated as the posterior, so the proposal strength is held at its
        value at beta = 1, ``alpha0 + kappa n``.

        ``seeds`` are :class:`numpy.random.SeedSequence` objects (or ints); chain ``c``'s
        prior draw and its moves depend only on ``seeds[c]``.  Temperatures are processed
        in segments of ``segment`` steps; ``progress(k, K, log_w)`` is called after each.

        ``start_mixture`` ((M, P) flat concentrations, e.g. from :meth:`alias_mixture`)
        replaces the start by the equal-weight mixture of the M products of Dirichlets,
        whose log density (a log-mean-exp of the M component densities) is exact; chain
        ``c`` starts at a draw of component ``c mod M`` (stratified: the mean weight is the
        mixture's expectation when M divides C; otherwise each chain's log-weight carries
        ``ln(C / (M C_m))``, C_m the chains of its component, so that the mean weight is the
        stratified estimate).  The proposal strength is held at ``alpha0 + kappa n``.

        Returns dict with ``log_weights`` (C,), ``acceptance`` (K,) (fraction of chains
        that accepted the move targeting ``betas[k-1]``), ``final_params`` and
        ``log_ratios`` (K,) (mean weight increment per temperature).
        """
        if start_mixture is not None:
            if start_alpha is not None:
                raise ValueError("give start_alpha or start_mixture, not both.")
            return self._run_ais_mixture(X, betas, seeds, strength, floor, start_params,
                                         progress, segment, start_mixture)
        betas = np.ascontiguousarray(betas, dtype=float)
        a0, kappa, prior, g = self._proposal_setup(strength, floor)
        C, K, bounds, n_seg, kids = self._chain_segments(seeds, betas, segment)
        n = float(self.n_cases(X))
        if start_alpha is not None:
            start_alpha = np.ascontiguousarray(start_alpha, dtype=float)
            if start_alpha.shape != prior.shape or not np.all(start_alpha > 0):
                raise ValueError("start_alpha must hold one positive concentration per entry.")
            a0, kappa = a0 + kappa * n, 0.0
        if start_params is None and start_alpha is not None:
            space = self.param_space
            start_q = self.variational_posterior_from(
                {k: v[0] for k, v in space.unflatten(start_alpha).items()})
            draws = [start_q.sample(np.random.default_rng(kid[0]), 1) for kid in kids]
            theta = np.concatenate([self._flat(d) for d in draws], axis=0)
        elif start_params is None:
            draws = [self.sample_prior(np.random.default_rng(kid[0]), 1) for kid in kids]
            theta = np.concatenate([self._flat(d) for d in draws], axis=0)
        else:
            theta = self._flat(start_params)
        theta = np.ascontiguousarray(theta, dtype=float).copy()
        row_ptr = np.ascontiguousarray(self.layout.row_ptr, dtype=np.int64)
        ll, lp, log_w = np.empty(C), np.empty(C), np.zeros(C)
        dag_ais_init(theta, prior, row_ptr, X.idx, X.row_start, X.weights, ll, lp)
        if start_alpha is not None:
            ls = np.empty(C)
            dag_ais_init(theta, start_alpha, row_ptr, X.idx, X.row_start, X.weights, ll, ls)
            norm_diff = self._log_normaliser(prior) - self._log_normaliser(start_alpha)
        acc = np.zeros(K, dtype=np.int64)
        lr = np.zeros(K)
        for s in range(n_seg):
            seg_seeds = np.array([int(kid[1 + s].generate_state(1)[0]) for kid in kids], dtype=np.int64)
            if start_alpha is None:
                dag_ais_chains(theta, ll, lp, log_w, betas, bounds[s], bounds[s + 1], prior,
                               row_ptr, X.idx, X.row_start, X.weights, n, float(a0),
                               float(kappa), g, seg_seeds, acc, lr)
            else:
                dag_ais_chains_from_start(theta, ll, lp, ls, log_w, betas, bounds[s],
                                          bounds[s + 1], prior, start_alpha, norm_diff, row_ptr,
                                          X.idx, X.row_start, X.weights, n, float(a0),
                                          float(kappa), g, seg_seeds, acc, lr)
            if progress is not None:
                progress(bounds[s + 1], K, log_w)
        return {"log_weights": log_w, "acceptance": acc / C,
                "final_params": self.param_space.unflatten(theta), "log_ratios": lr / C}

    @staticmethod
    def _chain_segments(seeds, betas, segment):
        """``(C, K, bounds, n_seg, kids)``: the chains, temperatures, the schedule cut into
        segments of ``segment`` temperatures (the kernel runs one segment per call, so that
        progress can be reported between them), and per chain ``1 + n_seg`` child seeds
        (the start draw, then one stream per segment)."""
        seqs = [sd if isinstance(sd, np.random.SeedSequence) else np.random.SeedSequence(int(sd))
                for sd in seeds]
        K = betas.size - 1
        segment = max(1, int(segment))
        bounds = list(range(0, K, segment)) + [K]
        n_seg = len(bounds) - 1
        return len(seqs), K, bounds, n_seg, [ss.spawn(1 + n_seg) for ss in seqs]

    def _proposal_setup(self, strength, floor):
        a0, kappa = self.compiled_ais_strength if strength is None else strength
        if not (a0 >= 0 and kappa >= 0 and a0 + kappa > 0):
            raise ValueError(f"strength must be (alpha0, kappa) >= 0, not both 0; got {(a0, kappa)}.")
        prior = self._flat_prior()
        if isinstance(floor, str):
            if floor != "prior":
                raise ValueError(f"floor must be 'prior' or a number, got {floor!r}.")
            g = np.minimum(prior, 1.0)
        else:
            g = np.broadcast_to(np.asarray(floor, dtype=float), prior.shape).copy()
            if np.any(g < 0) or not np.all(np.isfinite(g)):
                raise ValueError("floor must be finite and non-negative.")
        return float(a0), float(kappa), prior, np.ascontiguousarray(g)

    def _mixture_terms(self, starts):
        """(M, P) concentrations -> (starts, log normaliser + ln(1/M) per component)."""
        starts = np.ascontiguousarray(np.atleast_2d(np.asarray(starts, dtype=float)))
        prior = self._flat_prior()
        if starts.ndim != 2 or starts.shape[1] != prior.size or not np.all(starts > 0):
            raise ValueError(f"start_mixture must be (M, {prior.size}) positive concentrations.")
        M = starts.shape[0]
        log_norms = np.array([self._log_normaliser(a) for a in starts]) - np.log(M)
        return starts, np.ascontiguousarray(log_norms)

    def mixture_log_density(self, params, start_mixture):
        """ln s(theta) of every parameter set in ``params`` under the equal-weight
        mixture of products of Dirichlets ``start_mixture`` (M, P)."""
        starts, log_norms = self._mixture_terms(start_mixture)
        theta = np.ascontiguousarray(self._flat(params), dtype=float)
        out = np.empty(theta.shape[0])
        dag_mixture_log_density(theta, starts, log_norms,
                                np.ascontiguousarray(self.layout.row_ptr, dtype=np.int64), out)
        return out

    def _sample_flat_dirichlet(self, alpha, rng):
        """One draw of the product of Dirichlets with flat concentrations ``alpha``."""
        g = rng.standard_gamma(alpha)
        rows = np.add.reduceat(g, self.layout.row_ptr[:-1])
        theta = g / np.repeat(rows, np.diff(self.layout.row_ptr))
        return np.maximum(theta, np.finfo(float).tiny)

    def _run_ais_mixture(self, X, betas, seeds, strength, floor, start_params, progress,
                         segment, start_mixture):
        betas = np.ascontiguousarray(betas, dtype=float)
        a0, kappa, prior, g = self._proposal_setup(strength, floor)
        starts, log_norms = self._mixture_terms(start_mixture)
        M = starts.shape[0]
        C, K, bounds, n_seg, kids = self._chain_segments(seeds, betas, segment)
        n = float(self.n_cases(X))
        component = np.arange(C) % M
        if start_params is None:
            theta = np.stack([self._sample_flat_dirichlet(starts[m], np.random.default_rng(kid[0]))
                              for m, kid in zip(component, kids)])
        else:
            theta = self._flat(start_params)
        theta = np.ascontiguousarray(theta, dtype=float).copy()
        row_ptr = np.ascontiguousarray(self.layout.row_ptr, dtype=np.int64)
        ll, lp, ls = np.empty(C), np.empty(C), np.empty(C)
        dag_ais_init(theta, prior, row_ptr, X.idx, X.row_start, X.weights, ll, lp)
        dag_mixture_log_density(theta, starts, log_norms, row_ptr, ls)
        # stratified estimate: component m's chains stand for 1/M of the start mass
        per = np.bincount(component, minlength=M)
        log_w = (np.log(C / (M * per[component])) if start_params is None
                 else np.zeros(C))
        acc = np.zeros(K, dtype=np.int64)
        lr = np.zeros(K)
        prior_norm = self._log_normaliser(prior)
        for s in range(n_seg):
            seg_seeds = np.array([int(kid[1 + s].generate_state(1)[0]) for kid in kids], dtype=np.int64)
            dag_ais_chains_from_mixture(theta, ll, lp, ls, log_w, betas, bounds[s], bounds[s + 1],
                                        prior, prior_norm, starts, log_norms, row_ptr, X.idx,
                                        X.row_start, X.weights, a0 + kappa * n, g, seg_seeds,
                                        acc, lr)
            if progress is not None:
                progress(bounds[s + 1], K, log_w)
        return {"log_weights": log_w, "acceptance": acc / C,
                "final_params": self.param_space.unflatten(theta), "log_ratios": lr / C}

    def alias_permutations(self):
        """The relabellings of the hidden nodes that leave the model unchanged, as flat
        index maps ``g`` (G, P): ``theta'[g[k]] = theta[k]``.  The group is that of the
        alias count (Beal 2003, §6.3.2): the state permutations of every hidden node with
        children, composed with the permutations of those nodes that preserve their
        cardinalities, prior tables and the edge set; G = S.  The first map is the
        identity."""
        s = self.estimator.structure_
        lay = self.layout
        prior = self._flat_prior()
        priors = lay.split(prior)
        connected = [h for h in s.hidden_nodes if s.children(h)]
        edges = {(p, c) for c in range(s.n_nodes) for p in s.parents[c]}
        node_maps = []
        for perm in itertools.permutations(connected):
            sigma = dict(zip(connected, perm))
            if all(lay.r[a] == lay.r[b] and priors[a].shape == priors[b].shape
                   and np.array_equal(priors[a], priors[b]) for a, b in sigma.items()) \
                    and {(sigma.get(p, p), sigma.get(c, c)) for p, c in edges} == edges:
                node_maps.append(sigma)
        label_perms = itertools.product(*[list(itertools.permutations(range(int(lay.r[h]))))
                                          for h in connected])
        label_perms = list(label_perms)
        # every entry's full state vector (its node's parents and itself, others 0)
        J = s.n_nodes
        entry_states = np.zeros((lay.size, J), dtype=np.int64)
        for j in range(J):
            fam = list(s.parents[j]) + [j]
            grid = np.indices([int(lay.r[p]) for p in fam]).reshape(len(fam), -1).T
            flat = lay.offsets[j] + grid @ lay.coef[fam, j]
            entry_states[flat[:, None], np.array(fam)[None, :]] = grid
        maps = []
        for sigma in node_maps:
            node_of = np.array([sigma.get(j, j) for j in range(J)], dtype=np.int64)
            for labels in label_perms:
                new_states = np.zeros_like(entry_states)
                for j in range(J):
                    col = entry_states[:, j]
                    if j in connected:
                        col = np.asarray(labels[connected.index(j)], dtype=np.int64)[col]
                    new_states[:, node_of[j]] = col
                new_node = node_of[lay.entry_node]
                g = lay.offsets[new_node] + np.einsum("ej,je->e", new_states, lay.coef[:, new_node])
                maps.append(g.astype(np.int64))
        maps = np.array(maps, dtype=np.int64)
        ident = np.arange(lay.size)
        first = int(np.flatnonzero((maps == ident).all(axis=1))[0])
        return np.concatenate([maps[first:first + 1], np.delete(maps, first, axis=0)])

    def alias_mixture(self, concentrations, tol=1e-6):
        """Flat concentrations (M, P) of the alias-symmetrised start: every alias copy of
        every given product of Dirichlets (flat concentrations, one per row, e.g. the
        variational posteriors of several VB restarts), copies that coincide (within
        ``tol`` relative) kept once."""
        conc = np.atleast_2d(np.asarray(concentrations, dtype=float))
        out = []
        for a in conc:
            for g in self.alias_permutations():
                b = np.empty_like(a)
                b[g] = a
                if not any(np.allclose(b, c, rtol=tol, atol=0.0) for c in out):
                    out.append(b)
        return np.ascontiguousarray(np.array(out))

    def alias_posterior(self, q=None, max_components=24):
        """Equal-weight mixture of ``q`` (default: the fitted q) over the relabellings of
        :meth:`alias_permutations`, as a proposal for importance sampling or a start
        for annealing (draws and exact mixture density); a ValueError when there are
        more than ``max_components``."""
        maps = self.alias_permutations()
        if len(maps) > max_components:
            raise ValueError(f"{len(maps)} aliases exceed max_components={max_components}.")
        q = self.variational_posterior() if q is None else q
        space = self.param_space

        def forward(params, g):
            flat = space.flatten(params)
            out = np.empty_like(flat)
            out[:, g] = flat
            return space.unflatten(out)

        return MixturePosterior([
            MappedPosterior(q, lambda p, g=g: forward(p, g),
                            lambda p, g=g: space.unflatten(space.flatten(p)[:, g]))
            for g in maps])

    def flat_concentrations(self, q):
        """The concentrations of a product-of-Dirichlets q over this model's CPT rows as
        one flat vector in the order of ``run_ais_compiled``'s ``start_alpha``."""
        return np.ascontiguousarray(np.concatenate(
            [np.asarray(q[b].alpha, dtype=float).ravel() for b in self.block_names]))

    # -- joint (theta, z) annealing (sklearn_vb.scoring._joint_anneal) -------------------
    # The latents of case i are its unobserved values (hidden nodes, and missing values),
    # stored as the offset of their setting among its pattern's enumeration rows (for a
    # complete case: the C-order grid over the hidden nodes), so Z is (C, n) ints.  Only
    # the factors of the observed values present form p(x | z, theta), the tempered
    # factor; the others are p(z | theta).  A prior draw of z without the data exists
    # only for complete data whose hidden nodes have hidden parents only (checked).

    def _joint_grid(self):
        """(hidden nodes, observed nodes, (H, n_hidden) flat CPT entries of the hidden
        nodes in every configuration of the grid)."""
        s = self.estimator.structure_
        hidden = np.array(s.hidden_nodes, dtype=np.int64)
        observed = np.array(s.observed, dtype=np.int64)
        lay = self.layout
        grid = (np.indices([int(lay.r[h]) for h in hidden]).reshape(hidden.size, -1).T
                if hidden.size else np.zeros((1, 0), np.int64))
        states = np.zeros((grid.shape[0], s.n_nodes), dtype=np.int64)
        states[:, hidden] = grid
        entries = states @ lay.coef[:, hidden] + lay.offsets[hidden]
        return hidden, observed, entries

    def _joint_cases(self, X, betas):
        """Cases grouped by pattern and sorted by exponent within one,
        ``(case_order, case_ptr)``, after checking that there is one case per data row."""
        per_case = np.bincount(X.inverse, minlength=X.n_patterns)
        if not np.array_equal(per_case, X.weights):
            raise ValueError("anneal='joint' on a VBDiscreteDAG needs one case per data row "
                             "(unweighted patterns).")
        order = np.lexsort((betas, X.inverse)).astype(np.int64)
        ptr = np.concatenate([[0], np.cumsum(per_case)]).astype(np.int64)
        return order, ptr

    def _tempered(self, X):
        """(U, J) whether node j's factor is an observed value present in pattern u."""
        s = self.estimator.structure_
        out = np.zeros((X.n_patterns, s.n_nodes), dtype=np.bool_)
        out[:, np.array(s.observed, dtype=np.int64)] = X.patterns >= 0
        return out

    @staticmethod
    def _case_betas(beta, X):
        """The tempering exponent of every case (``beta`` a number or one per case)."""
        n = X.inverse.size
        b = np.ascontiguousarray(np.broadcast_to(np.asarray(beta, dtype=float), (n,)))
        if np.any(~(b >= 0)):
            raise ValueError("beta must be >= 0.")
        return b

    def _flat_logs(self, params):
        with np.errstate(divide="ignore"):
            return np.ascontiguousarray(np.log(self._flat(params)))

    def _case_rows(self, Z, X):
        return X.row_start[X.inverse][None, :] + np.asarray(Z, dtype=np.int64)

    def sample_latents_prior(self, params, n, rng):
        """Every case's hidden configuration from ``p(z | theta)``: (C, n)."""
        s = self.estimator.structure_
        if any(not s.hidden[p] for h in s.hidden_nodes for p in s.parents[h]):
            raise ValueError("anneal='joint' on a VBDiscreteDAG needs hidden nodes whose "
                             "parents are all hidden (then p(z | theta) does not involve the data).")
        if getattr(self, "_has_missing", False):
            raise ValueError("anneal='joint' on a VBDiscreteDAG needs complete data (no missing "
                             "values); use the default anneal='theta', which sums them out.")
        _, _, entries = self._joint_grid()
        logs = self._flat_logs(params)
        C, H = logs.shape[0], entries.shape[0]
        lp = logs[:, entries].sum(axis=2)
        p = np.exp(lp - lp.max(axis=1, keepdims=True))
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]
        # one search over all chains at once: chain c's CDF shifted into [2c, 2c + 1]
        shift = 2.0 * np.arange(C)[:, None]
        u = rng.random((C, int(n))) + shift
        pos = np.searchsorted((cdf + shift).ravel(), u.ravel(), side="right").reshape(C, int(n))
        return np.minimum(pos - H * np.arange(C)[:, None], H - 1).astype(np.int64)

    def sample_latents(self, params, X, rng, beta=1.0):
        """Every case's hidden configuration drawn exactly from
        ``p(z | theta) p(x | z, theta)^beta`` by enumerating the configurations: (C, n).
        ``beta`` is a number or one exponent per case (e.g. 0 for the cases a sequential
        sampler has not reached)."""
        betas = self._case_betas(beta, X)
        order, ptr = self._joint_cases(X, betas)
        logs = self._flat_logs(params)
        C, n = logs.shape[0], X.inverse.size
        out = np.empty((C, n), dtype=np.int64)
        dag_sample_hidden(logs, X.idx, self._tempered(X), X.row_start, order, ptr, betas,
                          rng.random((C, n)), out)
        return out

    def log_latent_conditional(self, params, Z, X, beta=1.0):
        """``sum_i ln p(z_i | x_i, theta)`` under the tempered conditional that
        :meth:`sample_latents` draws from (``p(z | theta) p(x | z, theta)^beta``,
        normalised over every case's configurations): (C,)."""
        betas = self._case_betas(beta, X)
        order, ptr = self._joint_cases(X, betas)
        logs = self._flat_logs(params)
        Z = np.ascontiguousarray(np.broadcast_to(np.asarray(Z, dtype=np.int64),
                                                 (logs.shape[0], X.inverse.size)))
        out = np.empty(logs.shape[0])
        dag_log_hidden_conditional(logs, X.idx, self._tempered(X), X.row_start, order, ptr,
                                   betas, Z, out)
        return out

    def _case_factors(self, params, Z, X):
        """``(terms, tempered)``: every case's log CPT entries at its completion ``Z``
        (C, n, J), and which of them are factors of observed values present (n, J)."""
        logs = self._flat_logs(params)
        C = logs.shape[0]
        ent = X.idx[self._case_rows(Z, X)]
        terms = np.take_along_axis(logs, ent.reshape(C, -1), axis=1).reshape(ent.shape)
        return terms, self._tempered(X)[X.inverse]

    def log_complete_likelihood_per_case(self, params, Z, X):
        """``ln p(x_i | z_i, theta)``, the factors of the observed values present: (C, n)."""
        terms, tempered = self._case_factors(params, Z, X)
        return np.where(tempered, terms, 0.0).sum(axis=2)

    def log_latent_prior(self, params, Z, X):
        """``sum_i ln p(z_i | theta)``, the other factors (hidden nodes and missing values,
        given their parents, which may be observed: hence ``X``): (C,).  With
        :meth:`log_complete_likelihood_per_case` it makes ``ln p(z, X | theta)``."""
        terms, tempered = self._case_factors(params, Z, X)
        return np.where(tempered, 0.0, terms).sum(axis=(1, 2))

    def _completed_counts(self, Z, X, beta):
        """The CPT counts of every chain's completed data, (C, P): the hidden nodes'
        entries whole, those of the observed values present times ``beta`` (a number or
        one per case)."""
        ent = X.idx[self._case_rows(Z, X)]  # (C, n, J)
        C, P = ent.shape[0], self.layout.size
        weight = np.where(self._tempered(X)[X.inverse], self._case_betas(beta, X)[:, None], 1.0)
        flat = (ent + P * np.arange(C)[:, None, None]).ravel()
        return np.bincount(flat, weights=np.broadcast_to(weight, ent.shape).ravel(),
                           minlength=C * P).reshape(C, P)

    def _conjugate_alphas(self, Z, X, beta):
        """The Dirichlet concentrations of ``p(theta | z, X)`` (tempered), per chain."""
        counts = self._completed_counts(Z, X, beta)
        C = counts.shape[0]
        out = {}
        for j, b in enumerate(self.block_names):
            a = self.prior_alpha[b]
            block = counts[:, self.layout.offsets[j]:self.layout.offsets[j + 1]]
            out[b] = a[None] + block.reshape((C,) + a.shape)
        return out

    def sample_params(self, Z, X, rng, beta=1.0):
        """Every CPT row from its conjugate Dirichlet given the completed data, drawn from
        ``p(theta) p(z | theta) p(x | z, theta)^beta``: the hidden nodes' counts enter
        whole, the counts of the observed values present times ``beta`` (a number or one
        per case)."""
        return {b: dirichlet_sample(a, rng) for b, a in self._conjugate_alphas(Z, X, beta).items()}

    def log_param_conditional(self, params, Z, X, beta=1.0):
        """``ln p(theta | z, X)`` (tempered as in :meth:`sample_params`), one chain of
        ``Z`` per parameter set: (C,)."""
        return self.log_dirichlet_blocks(params, self._conjugate_alphas(Z, X, beta))

    def variational_posterior(self, X=None):
        post = getattr(self.estimator, "posterior_", None)
        if post is None:
            raise NotImplementedError("the DAG was not fitted by VB (no posterior_)")
        return self.variational_posterior_from(dict(zip(self.block_names, post)))

    def log_evidence(self, X):
        """Exact ln p(X) by summing over all completions (tiny data only)."""
        return exact_log_evidence(np.concatenate([a.ravel() for a in self.prior_alpha.values()]),
                                  self.layout, X)

