"""A categorical HMM with Dirichlet priors on every row, as a ScoringModel.

theta = (initial distribution, transition rows, emission rows); ln p(X | theta) by the
scaled forward recursion vectorised over parameter batches (numba), the exact E step by
forward-backward, and the exact ln p(X) by enumerating every joint state path (tiny
data only).  The scoring model of a fitted categorical
:class:`~sklearn_vb.hmm.VBHiddenMarkov` builds on it.
"""

from __future__ import annotations

import itertools
from math import factorial, lgamma

import numpy as np
from scipy.special import logsumexp

from .._core.distributions import as_generator as _rng
from ._blas_threads import forward_backward_blas
from .forward_backward import categorical_hmm_log_likelihood_batch, forward_backward

from .._core.evidence.protocols import EStep
from .._core.evidence.dirichlet import DirichletBlocksModel, dirichlet_evidence
from ._clamp import check_states
from ._scoring_known import (clamped_columns, consistent_paths, extend_emissions,
                             known_or_none, random_consistent_completion)
from ._state import SymbolSequences
from ._state_aliases import (invariant_state_permutations, permute_hmm_blocks,
                             state_alias_posterior)

__all__ = ["DirichletCategoricalHMM"]


class DirichletCategoricalHMM(DirichletBlocksModel):
    """K-state HMM with V symbols; Dirichlet(alpha) on the initial, transition and
    emission rows (or the explicit hyperparameter arrays ``priors``).  X is the
    concatenation of sequences (``lengths=`` as in hmmlearn), prepared as a
    :class:`~sklearn_vb.hmm._state.SymbolSequences`, in which the symbol ``V`` marks a
    missing observation: its emission probability is 1 in every state (marginalised,
    missing at random), and it adds no emission count.  With known states
    (``states=``, -1 unknown) every likelihood and E step sums over the state paths that
    agree with them (:mod:`sklearn_vb.hmm._scoring_known`): the evidence is that of X
    and the known states."""

    #: under sparse Dirichlet priors the MAP often lies in another basin than VB's, which
    #: three draws rarely hit (K = 8 on 30k characters of text: 9 draws screened for 15
    #: E steps each found it, 2 draws screened for 93 did not)
    point_draws_per_init = 4
    #: restarts screened for as many E steps as the first run took (at least this many
    #: per draw): when EM from VB's point converges in a few steps, fixed floors made
    #: the restarts cost several fits (see _scoring_family)
    point_min_screen_iter = 5

    def __init__(self, n_states=2, n_symbols=3, alpha=1.0, priors=None):
        self.K = int(n_states)
        self.V = int(n_symbols)
        self.prior_alpha = {
            "pi": np.full(self.K, float(alpha)),
            "A": np.full((self.K, self.K), float(alpha)),
            "B": np.full((self.K, self.V), float(alpha)),
        }
        if priors is not None:  # explicit hyperparameter arrays (e.g. a fitted estimator's)
            for k in ("pi", "A", "B"):
                a = np.asarray(priors[k], dtype=float)
                if a.shape != self.prior_alpha[k].shape or np.any(~(a > 0)):
                    raise ValueError(f"priors[{k!r}] must be positive of shape {self.prior_alpha[k].shape}.")
                self.prior_alpha[k] = a
        self._seq_fraction = 1.0
        self._init_space()

    def kernel_curvature(self):
        # the initial-state row sees one case per sequence, the others ~ n / K each
        return {"pi": self._seq_fraction, "A": 1.0 / self.K, "B": 1.0 / self.K}

    def prepare_data(self, X, lengths=None, states=None):
        obs = np.asarray(X).ravel()
        if obs.size == 0 or np.any(obs != np.round(obs)) or np.any((obs < 0) | (obs >= self.V)):
            raise ValueError(f"X must hold integer symbols in [0, {self.V}).")
        lengths = np.array([obs.size]) if lengths is None else np.asarray(lengths, dtype=np.int64)
        if lengths.sum() != obs.size or np.any(lengths < 1):
            raise ValueError("lengths must be positive and sum to len(X).")
        ends = np.cumsum(lengths)
        self._seq_fraction = lengths.size / obs.size
        return SymbolSequences(symbols=obs.astype(np.int64), starts=ends - lengths, ends=ends,
                               known=known_or_none(check_states(states, obs.size, self.K)))

    def n_cases(self, X):
        return int(X.symbols.size)

    def _has_missing(self, X):
        return bool(X.symbols.size) and int(X.symbols.max()) >= self.V

    def _emission_probs(self, B, X):
        """The emission rows ``B`` (..., V) with a column of ones for the missing symbol
        ``V`` appended when ``X`` has missing symbols (``B`` itself otherwise)."""
        B = np.asarray(B, dtype=float)
        if not self._has_missing(X):
            return B
        return np.concatenate([B, np.ones(B.shape[:-1] + (1,))], axis=-1)

    def _emission_columns(self, B, X):
        """``(weights, columns, extra_symbols)``: the emission rows ``B`` (..., K, V) as
        the kernels read them (:meth:`_emission_probs`, and with known states an extra
        column per (symbol, known state) pair), the column every frame reads, and the
        symbol of every extra column (None without known states)."""
        B = self._emission_probs(B, X)
        if X.known is None:
            return B, X.symbols, None
        columns, symbol, state = clamped_columns(X.symbols, X.known, B.shape[-1], self.K)
        return np.ascontiguousarray(extend_emissions(B, symbol, state)), columns, symbol

    def n_aliases(self):
        return factorial(self.K)

    def log_n_aliases(self):
        """``ln K!`` (the K states are exchangeable), as a log-factorial."""
        return lgamma(self.K + 1)

    def permute_states(self, params, perm):
        """The parameter batch with its states relabelled: new state ``k`` is old state
        ``perm[k]`` (initial entries, transition rows and columns, emission rows)."""
        return permute_hmm_blocks(params, perm, {"pi": "vector", "A": "matrix", "B": "rows"})

    def alias_permutations(self):
        """The state permutations that leave the prior (hence the posterior) unchanged,
        the identity first: all ``K!`` under the exchangeable default priors."""
        a = self.prior_alpha
        return invariant_state_permutations(self.K, [(a["pi"], "vector"), (a["A"], "matrix"),
                                                     (a["B"], "rows")])

    def alias_posterior(self, q=None, max_components=24):
        """Equal-weight mixture of ``q`` (default: the fitted q) over
        :meth:`alias_permutations` (see
        :func:`~sklearn_vb._core.evidence.posteriors.relabelled_mixture`); a ValueError when
        there are more than ``max_components`` state permutations."""
        return state_alias_posterior(self, q, max_components)

    def _forward(self, params, X, keep_frames=False):
        B, columns, _ = self._emission_columns(params["B"], X)
        return categorical_hmm_log_likelihood_batch(
            np.ascontiguousarray(params["pi"], dtype=float),
            np.ascontiguousarray(params["A"], dtype=float),
            np.ascontiguousarray(B), columns, X.starts, X.ends, keep_frames,
        )

    def log_likelihood_per_sequence(self, params, X):
        return self._forward(params, X)[0]

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_sequence(params, X).sum(axis=1)

    def log_likelihood_per_case(self, params, X):
        """(C, T) ``ln p(x_t | x_<t of its sequence, theta_c)``; rows sum to the
        likelihood (the per-step normalisers of the batched forward pass)."""
        return self._forward(params, X, keep_frames=True)[1]

    def random_completion(self, X, rng):
        """A uniformly random state for every frame (the known state where one is
        known), (T,)."""
        return random_consistent_completion(X.known, self.K, self.n_cases(X), rng)

    def log_complete_joint_per_case(self, params, Z, X):
        """(C, T) ``ln p(s_t | s_{t-1}) + ln p(x_t | s_t)`` along the completion ``Z``
        (the initial distribution at the first frame of a sequence)."""
        first = np.zeros(Z.size, dtype=bool)
        first[X.starts] = True
        prev = np.concatenate([[0], Z[:-1]])
        B, columns, _ = self._emission_columns(params["B"], X)
        with np.errstate(divide="ignore"):  # logs of the (C, K, .) blocks, then gathered
            log_pi, log_A = (np.log(np.asarray(params[k], dtype=float)) for k in ("pi", "A"))
            log_B = np.log(B)
        return np.where(first, log_pi[:, Z], log_A[:, prev, Z]) + log_B[:, Z, columns]

    def loglik_and_stats(self, params_single, X):
        """``(ln p(X | theta), expected counts)`` by one forward-backward pass: the part
        of :meth:`e_step` the point EM needs."""
        B, columns, extra = self._emission_columns(params_single["B"][0], X)
        with np.errstate(divide="ignore"):
            log_pi, log_A = (np.log(np.asarray(params_single[k][0], dtype=float))
                             for k in ("pi", "A"))
            log_B = np.log(B)
        table = np.ascontiguousarray(log_B.T)
        with forward_backward_blas(table, columns, X.starts, X.ends):
            log_norm, _, init, xi, emis_counts = forward_backward(
                log_pi, log_A, table, columns, X.starts, X.ends, True)
        counts = np.array(emis_counts[:self.V], copy=True)
        if extra is not None:  # the known frames' columns count for their symbols
            n_base = B.shape[-1] - extra.size
            observed = np.flatnonzero(extra < self.V)
            np.add.at(counts, extra[observed], emis_counts[n_base + observed])
        # the missing symbol's row (if any) carries no emission counts
        return float(log_norm.sum()), {"pi": init, "A": xi, "B": counts.T}

    def e_step(self, params_single, X):
        ll, stats = self.loglik_and_stats(params_single, X)
        with np.errstate(divide="ignore"):
            ecl = sum(float(np.sum(np.where(stats[k] > 0, stats[k] * np.log(params_single[k][0]), 0.0)))
                      for k in ("pi", "A", "B"))
        return EStep(float(ll), stats, ecl, float(ll - ecl))

    def log_evidence(self, X):
        """Exact ln p(X) by enumerating all K^T joint state paths (those that agree with
        the known states: ln p(X, known states))."""
        obs, starts = X.symbols, X.starts
        T = obs.size
        if self.K**T > 2**20:
            raise ValueError("too many state paths to enumerate.")
        Z = consistent_paths(
            np.array(list(itertools.product(range(self.K), repeat=T)), dtype=np.int64),
            X.known)
        eye = np.eye(self.K)
        first = np.zeros(T, bool)
        first[starts] = True
        N_pi = eye[Z[:, first]].sum(axis=1)
        trans = ~first[1:]
        prev, nxt = Z[:, :-1][:, trans], Z[:, 1:][:, trans]
        N_A = np.einsum("mti,mtj->mij", eye[prev], eye[nxt])
        # a missing symbol (V) has the row of zeros: no emission count
        N_B = np.einsum("mtk,tv->mkv", eye[Z], np.eye(self.V + 1)[obs][:, :self.V])
        total = (
            dirichlet_evidence(self.prior_alpha["pi"], N_pi)
            + dirichlet_evidence(self.prior_alpha["A"], N_A)
            + dirichlet_evidence(self.prior_alpha["B"], N_B)
        )
        return float(logsumexp(total))

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = _rng(rng)
        lengths = [int(n_cases)] if lengths is None else [int(t) for t in lengths]
        pi, A, B = (params_single[k][0] for k in ("pi", "A", "B"))
        obs, states = [], []
        for T in lengths:
            z = rng.choice(self.K, p=pi)
            for _ in range(T):
                states.append(z)
                obs.append(rng.choice(self.V, p=B[z]))
                z = rng.choice(self.K, p=A[z])
        return np.array(obs), np.array(states)
