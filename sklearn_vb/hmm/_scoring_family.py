"""ScoringModel of a fitted :class:`~sklearn_vb.hmm.VBHiddenMarkov`, parameterised by its
emission family.

Parameters ``theta`` (every hyperparameter frozen at the estimator's fitted value):

* ``startprob`` (K,) and ``transmat`` (K, K), simplex rows with the estimator's Dirichlet
  priors (absent when K = 1, where they are constants);
* the emission blocks of the family (:meth:`~sklearn_vb.emissions.EmissionFamily.param_blocks`),
  e.g. ``means`` and the Cholesky factors of the precisions for full-covariance Gaussian
  states, ``rates`` for Poisson states.

Everything that depends on the emissions (prior and posterior densities and samplers of
their blocks, the likelihood tables of a batch of parameter sets, statistics, the
conjugate update, the complete-data evidence, the M step, simulation) comes from the
family object of :mod:`sklearn_vb.emissions` that the estimator itself uses, so adding a
family to the estimator adds it here.  This module holds the transition part only.

``ln p(X | theta)`` is the exact forward algorithm over all sequences; ``n`` (``n_cases``)
is the total number of frames.  With known states (``states=``, -1 unknown, as the
estimator's ``fit`` takes them) every likelihood, E step and complete-data term sums over
the state paths that agree with them (:mod:`sklearn_vb.hmm._scoring_known`), so the
scores estimate ``ln p(X, known states)``, the quantity the fit's bound bounds.  ``fit_point`` is EM with the estimator's conjugate M step;
``e_step`` is the exact forward-backward posterior; ``log_complete_evidence`` the
closed-form Dirichlet x emission-prior integral at (fractional) expected statistics.
"""

from __future__ import annotations

import itertools
from math import factorial, lgamma

import numpy as np
from scipy.special import logsumexp, polygamma

from .._core.distributions import as_generator as _rng, dirichlet_expected_log, dirichlet_log_pdf, dirichlet_sample
from . import kernels as _k
from ._point import (complete_log_likelihood, forward_backward_stats,
                            log_start_transitions, point_e_step, point_log_prior, point_m_step)
from ._scoring_known import (clamp_frames, consistent_paths, forward_on_tables, known_or_none,
                             random_consistent_completion)
from ._state import HMMSequences, HMMStats
from .emissions import emission_family
from .._core.evidence.mcmc_moves import (
    BlockRandomWalkMH,
    CompositeKernel,
    DirichletMH,
    estimate_prior_precision,
    posterior_data_precision,
)
from .._core.evidence.params import ParamBlock, ParamSpace, take
from .._core.evidence.posteriors import MixturePosterior
from .._core.evidence.protocols import EStep, ScoringModelMixin
from .._core.evidence.point_em import best_point_em, posterior_then_draws
from .._core.evidence.dirichlet import dirichlet_evidence
from ._state_aliases import (invariant_state_permutations, permute_hmm_blocks,
                             state_alias_posterior)

__all__ = ["FamilyHMMScoringModel", "FamilyHMMPosterior"]

#: seeded draws screened per restart of the point EM (each with a budget that much
#: shorter; see best_point_em): under sparse Dirichlet priors the MAP often lies in
#: another basin than VB's, which three draws rarely hit (K = 8 on 30k characters of
#: text: 9 draws screened for 15 E steps each found it, 2 draws screened for 93 did not)
_DRAWS_PER_INIT = 4

#: least E steps of a screened draw; a restart is screened for as many E steps as the
#: first run took (at least this many), shared among at most _DRAWS_PER_INIT draws.
#: EM from VB's point typically converges in a few E steps when VB's optimum is sharp
#: (5-state Gaussian HMM on 20 000 frames: 4), and a fixed floor of 20 E steps per
#: restart then made the restarts cost ten times the first run, several fits
_MIN_SCREEN_ITER = 5

#: parameter sets per block of emission tables in :meth:`FamilyHMMScoringModel.log_complete_joint_per_case`
_TABLE_CHUNK = 32


class FamilyHMMPosterior:
    """Dirichlet initial and transition rows times the family's density over the
    emission blocks (the prior, or a posterior such as the fitted q(theta)).

    ``log_pdf`` is normalised in the coordinates of the model's ``log_prior`` (simplex rows:
    Lebesgue measure on the first K-1 entries).  ``factors`` names the factors; the
    emission factor may couple several blocks (a Normal-Wishart couples the means with
    the precisions), so there is no per-block list.
    """

    def __init__(self, startprob, transmat, emission):
        self.startprob = None if startprob is None else np.asarray(startprob, dtype=float)
        self.transmat = None if transmat is None else np.asarray(transmat, dtype=float)
        self.emission = emission
        self.factors = (["startprob", "transmat"] if self.startprob is not None else []) + [
            "emission"]

    def sample(self, rng, size):
        size = int(size)
        out = {}
        if self.startprob is not None:
            out["startprob"] = dirichlet_sample(self.startprob, rng, size=size)
            out["transmat"] = dirichlet_sample(self.transmat, rng, size=size)
        out.update(self.emission.sample(rng, size))
        return out

    def log_pdf(self, params):
        out = self.emission.log_pdf(params)
        if self.startprob is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out + dirichlet_log_pdf(params["startprob"], self.startprob) + np.sum(
                    dirichlet_log_pdf(params["transmat"], self.transmat), axis=-1)
        return np.asarray(out, dtype=float)

    def mean(self):
        """Posterior-mean plug-in: the estimator's ``startprob_``, ``transmat_`` and the
        emission parameters of its plug-in likelihood (e.g. ``means_`` and the Cholesky
        factor of ``covars_^-1``)."""
        out = {}
        if self.startprob is not None:
            out["startprob"] = (self.startprob / self.startprob.sum())[None]
            out["transmat"] = (self.transmat / self.transmat.sum(axis=1, keepdims=True))[None]
        out.update(self.emission.mean())
        return out

    def heavy_tailed(self, dof=3.0, broaden=None):
        """A wider proposal: heavy tails where the family has them (Student-t means of
        Gaussian states, ``dof`` degrees of freedom); with ``broaden = kappa`` every
        Dirichlet concentration and the emission concentrations are multiplied by kappa
        with their means kept."""
        sp, tm = self.startprob, self.transmat
        if broaden is not None and sp is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            sp, tm = sp * broaden, tm * broaden
        return FamilyHMMPosterior(sp, tm, self.emission.broadened(dof, broaden))

    def gaussian_unconstrained(self):
        return None

    def unconstrained_sd(self, space):
        """Approximate standard deviations of the unconstrained coordinates (VMCMC steps)."""
        parts = []
        if self.startprob is not None:
            for a in (self.startprob, self.transmat):
                t = polygamma(1, a)
                parts.append(np.sqrt(t[..., :-1] + t[..., -1:]).ravel())
        parts.append(self.emission.unconstrained_sd())
        return np.concatenate(parts)

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


class FamilyHMMScoringModel(ScoringModelMixin):
    """The scoring view of a fitted VBHiddenMarkov, for any emission family.

    Parameters
    ----------
    estimator : VBHiddenMarkov
        Fitted; its priors (``startprob_prior_``, ``transmat_prior_`` and the family's
        ``<name>_prior_`` attributes) are frozen here and q(theta) is read from the
        ``*_posterior_`` attributes.

    Data: ``prepare_data(X, lengths=None, sequence_ids=None)`` validates ``X`` with the
    estimator's public :meth:`~sklearn_vb.hmm.VBHiddenMarkov.check_data`, exactly as
    the estimator does, and returns an :class:`~sklearn_vb.hmm._state.HMMSequences`;
    ``n_cases`` is the total number of frames.  Expected statistics
    (``e_step(...).stats``) are an :class:`~sklearn_vb.hmm._state.HMMStats`: ``start``
    (K,), ``trans`` (K, K) and the family's statistics, exactly as the estimator's.
    """

    def __init__(self, estimator):
        if not hasattr(estimator, "startprob_posterior_"):
            raise ValueError("the estimator must be fitted.")
        self.estimator = estimator
        self.family = emission_family(estimator.emission, estimator.covariance_type)
        K = int(estimator.n_components)
        self.n_components = self.K = K
        self.startprob_prior = np.array(estimator.startprob_prior_, dtype=float).reshape(K)
        self.transmat_prior = np.array(estimator.transmat_prior_, dtype=float).reshape(K, K)
        self.emission_prior = self._emission_attributes("prior")
        blocks = []
        if K > 1:
            blocks += [ParamBlock("startprob", (K,), "simplex"),
                       ParamBlock("transmat", (K, K), "simplex")]
        blocks += [ParamBlock(*spec) for spec in self.family.param_blocks(self.emission_prior, K)]
        self.param_space = ParamSpace(blocks)
        self._seq_fraction = 1.0
        self._emission_names = [b.name for b in self.param_space.blocks
                                if b.name not in ("startprob", "transmat")]
        self._table_memo = None  # (frames, emission blocks, table) of _emission_table
        self._prior = self._posterior(self.startprob_prior, self.transmat_prior,
                                      self.emission_prior)

    def _emission_attributes(self, kind):
        """The estimator's emission prior or posterior (the family's dataclass), every
        array a float copy."""
        return self.family.hyper_from_attributes(self.estimator, kind,
                                                 lambda value: np.array(value, dtype=float))

    # -- data ------------------------------------------------------------------------
    def prepare_data(self, X, lengths=None, sequence_ids=None, states=None):
        d = self.estimator.check_data(X, lengths=lengths, sequence_ids=sequence_ids,
                                      states=states)
        Xv = np.ascontiguousarray(d.X)
        starts = np.asarray(d.starts, dtype=np.int64)
        self._seq_fraction = starts.size / Xv.shape[0]
        return HMMSequences(frames=Xv, starts=starts, ends=np.asarray(d.ends, dtype=np.int64),
                            index=np.arange(Xv.shape[0], dtype=np.int64),
                            known=known_or_none(d.known_states))

    def n_cases(self, X):
        return int(X.frames.shape[0])

    # -- counting ----------------------------------------------------------------------
    def n_parameters(self):
        K = self.K
        return (K - 1) + K * (K - 1) + self.family.n_parameters(
            self._emission_attributes("posterior"))

    def n_aliases(self):
        return factorial(self.K)

    def log_n_aliases(self):
        """``ln K!`` (the K states are exchangeable), as a log-factorial."""
        return lgamma(self.K + 1)

    def permute_states(self, params, perm):
        """The parameter batch with its states relabelled: new state ``k`` is old state
        ``perm[k]`` (initial entries, transition rows and columns, the state axis of
        every emission block)."""
        kinds = {"startprob": "vector", "transmat": "matrix"}
        kinds.update({name: "rows" for name in self._emission_names})
        return permute_hmm_blocks(params, perm, kinds)

    def alias_permutations(self):
        """The state permutations that leave the prior (hence the posterior) unchanged,
        the identity first: all ``K!`` under exchangeable priors.  An emission
        hyperparameter has a state axis when it has as many axes as its posterior."""
        post = self._emission_attributes("posterior")
        arrays = [(self.startprob_prior, "vector"), (self.transmat_prior, "matrix")]
        arrays += [(getattr(self.emission_prior, name), "rows") for name in self.family.hyper_names
                   if np.ndim(getattr(self.emission_prior, name)) == np.ndim(getattr(post, name))]
        return invariant_state_permutations(self.K, arrays)

    def alias_posterior(self, q=None, max_components=24):
        """Equal-weight mixture of ``q`` (default: the fitted q) over
        :meth:`alias_permutations` (see
        :func:`~sklearn_vb._core.evidence.posteriors.relabelled_mixture`); a ValueError when
        there are more than ``max_components`` state permutations."""
        return state_alias_posterior(self, q, max_components)

    # -- priors and posteriors -----------------------------------------------------------
    def _posterior(self, w_pi, w_A, emission_hyper):
        if self.K == 1:
            w_pi = w_A = None
        return FamilyHMMPosterior(w_pi, w_A, self.family.param_density(emission_hyper, self.K))

    @property
    def prior(self):
        """The prior as a :class:`FamilyHMMPosterior` (same coordinates as q)."""
        return self._prior

    def log_prior(self, params):
        return self._prior.log_pdf(params)

    def sample_prior(self, rng, size):
        return self._prior.sample(_rng(rng), int(size))

    def posterior_from_stats(self, stats):
        """q(theta) = VBM(stats): the conjugate posterior given expected statistics."""
        return self._posterior(self.startprob_prior + stats.start,
                               self.transmat_prior + stats.trans,
                               self.family.vbm(self.emission_prior, stats.emission))

    def variational_posterior(self, X=None):
        """q(theta) of the fitted estimator (its ``*_posterior_`` attributes)."""
        est = self.estimator
        return self._posterior(np.asarray(est.startprob_posterior_, dtype=float),
                               np.asarray(est.transmat_posterior_, dtype=float),
                               self._emission_attributes("posterior"))

    def kernel_curvature(self):
        """Per-case curvature scales of the unconstrained coordinates at the fitted
        posterior, for the random-walk and Dirichlet kernels (steps ~ 1/sqrt(n beta h))."""
        K = self.K
        out = {}
        if K > 1:
            out["startprob"] = self._seq_fraction  # one case per sequence
            out["transmat"] = 1.0 / K
        out.update(self.family.kernel_curvature(self._emission_attributes("posterior"), K))
        return out

    def annealing_kernel(self, X=None, scale=1.0):
        """The kernel ``kernel="auto"`` uses, tuned once from the prior and the fitted q,
        never from the chains: Dirichlet MH on the rows of ``startprob`` and ``transmat``
        with strengths from the rows' tempered concentrations
        ``A_prior + beta (A_q - A_prior)`` (proposal spread 2.38/sqrt(K-1) times the
        row's spread), then a random walk on the emission blocks with one step per
        coordinate, ``scale 2.38/sqrt(dim) / sqrt(pi_i + beta h_i)``: ``pi_i`` the prior
        precision (robust estimate from prior draws, so data far from unit scale are
        handled), ``h_i = 1/var_q - pi_i``.  The tuning reflects the training data; on
        other data it is still a valid (if less well tuned) kernel."""
        q = self.variational_posterior()
        ks = []
        if self.K > 1:
            conc = {}
            for b, prior, post in (("startprob", self.startprob_prior, q.startprob),
                                   ("transmat", self.transmat_prior, q.transmat)):
                a0 = prior.sum(axis=-1)
                conc[b] = (a0, np.maximum(post.sum(axis=-1) - a0, 0.0))
            ks.append(DirichletMH(self, ["startprob", "transmat"], concentration=conc))
        other = [b.name for b in self.param_space.blocks if b.constraint != "simplex"]
        if other:
            pi = estimate_prior_precision(self, other)
            h = posterior_data_precision(self, q, pi, other)
            ks.append(BlockRandomWalkMH(self, other, scale=scale, prior_precision=pi,
                                        data_precision=h))
        return ks[0] if len(ks) == 1 else CompositeKernel(ks)

    # -- likelihood ----------------------------------------------------------------------
    def _log_pi_A(self, params, C):
        return log_start_transitions(params, self.K, C)

    def _forward(self, params, X):
        log_pi, log_A = self._log_pi_A(params, self.batch_size(params))
        if X.known is not None:  # the paths through the known states: masked tables
            return forward_on_tables(
                log_pi, log_A, clamp_frames(self.family.log_likelihood_tables(params, X.frames),
                                            X.known), X.starts, X.ends)
        return self.family.log_likelihood_batch(
            np.ascontiguousarray(log_pi), np.ascontiguousarray(log_A), params, X.frames,
            X.starts, X.ends)

    def log_likelihood_per_sequence(self, params, X):
        """(C, n_sequences) exact ln p(sequence | theta_c)."""
        return self._forward(params, X)[0]

    def log_likelihood(self, params, X):
        """(C,) exact ln p(X | theta_c) by the forward algorithm."""
        return self._forward(params, X)[0].sum(axis=1)

    def log_likelihood_per_case(self, params, X):
        """(C, T) ln p(x_t | x_<t of its sequence, theta_c); rows sum to the likelihood."""
        return self._forward(params, X)[1]

    # -- completions (CS-dagger) -------------------------------------------------------
    def random_completion(self, X, rng):
        """A uniformly random state for every frame (the known state where one is
        known), (T,)."""
        return random_consistent_completion(X.known, self.K, self.n_cases(X), rng)

    def log_complete_joint_per_case(self, params, Z, X):
        """(C, T) ``ln p(s_t | s_{t-1}) + ln p(x_t | s_t)`` along the completion ``Z``
        (the initial distribution at the first frame of a sequence).

        The emission terms are read from the family's (c, T, K) log-likelihood tables,
        :data:`_TABLE_CHUNK` parameter sets at a time: memory O(chunk T K) whatever the
        batch (a per-frame gather of the parameters would hold (C, T, D, D) arrays for
        full-covariance Gaussian states)."""
        C = self.batch_size(params)
        out = np.empty((C, Z.size))
        frames = np.arange(Z.size)
        for lo in range(0, C, _TABLE_CHUNK):
            chunk = take(params, slice(lo, min(C, lo + _TABLE_CHUNK)))
            out[lo:lo + _TABLE_CHUNK] = self.family.log_likelihood_tables(
                chunk, X.frames)[:, frames, Z]
        if self.K > 1:
            lp, la = self._log_pi_A(params, self.batch_size(params))
            first = np.zeros(Z.size, dtype=bool)
            first[X.starts] = True
            prev = np.concatenate([[0], Z[:-1]])
            out = out + np.where(first, lp[:, Z], la[:, prev, Z])
        return out

    # -- E step, complete-data quantities ----------------------------------------------
    def stats_from_responsibilities(self, R, X):
        """Statistics of a labelling ``R`` (T, K) (transition counts as outer products of
        consecutive rows: exact for hard labels)."""
        R = np.asarray(R, dtype=float)
        inner = np.ones(R.shape[0], dtype=bool)
        inner[X.starts] = False
        idx = np.flatnonzero(inner)
        return HMMStats(start=R[X.starts].sum(axis=0), trans=R[idx - 1].T @ R[idx],
                        emission=self.family.stats(R, X.frames, self.emission_prior))

    def complete_loglik(self, params, stats):
        """(C,) ``E_{q(z)} ln p(z, X | theta_c)`` for expected statistics ``stats``."""
        return complete_log_likelihood(self.family, self.emission_prior, params, stats, self.K)

    def _fb(self, log_pi, log_A, table, X, params):
        """ln Z and the expected statistics of one forward-backward pass over the
        per-frame log emission table (T, K) made from the emission quantities
        ``params``."""
        return forward_backward_stats(self.family, self.emission_prior, log_pi, log_A,
                                      clamp_frames(table, X.known), X.frames, X.index,
                                      X.starts, X.ends, params)

    def _loglik_and_stats(self, params_single, X):
        """ln p(X | theta) and the expected statistics of the exact posterior (one
        forward-backward pass, the estimator's kernel)."""
        return point_e_step(self.family, self.emission_prior, params_single, X.frames,
                            X.starts, X.ends, self.K, known_states=X.known)

    def e_step(self, params_single, X):
        """Exact posterior over state paths at normalised ``params_single`` (batch of 1)."""
        ll, stats = self._loglik_and_stats(params_single, X)
        ecl = float(self.complete_loglik(params_single, stats)[0])
        return EStep(ll, stats, ecl, ll - ecl)

    @property
    def log_joint_gradient(self):
        """``(params_single, X) -> (ln p(theta) + ln p(X | theta), gradient)``, the
        gradient in the constrained blocks, or ``None`` when the emission family does not
        provide the gradients of its complete-data log-likelihood and prior density
        (the Laplace scorer then falls back to finite differences)."""
        if not (hasattr(self.family, "complete_log_likelihood_gradient")
                and hasattr(self._prior.emission, "log_pdf_gradient")):
            return None
        return self._log_joint_gradient

    def _log_joint_gradient(self, params_single, X):
        # Fisher's identity: the gradient of ln p(X | theta) is the gradient of the
        # expected complete-data log-likelihood with the forward-backward statistics
        # at theta held fixed
        lp, la = log_start_transitions(params_single, self.K, 1)
        loglik, stats = self._fb(lp[0], la[0], self._emission_table(params_single, X), X,
                                params_single)
        grads = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.K > 1:
                grads["startprob"] = ((self.startprob_prior - 1.0 + stats.start)[None]
                                      / np.asarray(params_single["startprob"], dtype=float))
                grads["transmat"] = ((self.transmat_prior - 1.0 + stats.trans)[None]
                                     / np.asarray(params_single["transmat"], dtype=float))
            g_lik = self.family.complete_log_likelihood_gradient(params_single, stats.emission,
                                                                 self.emission_prior)
            g_prior = self._prior.emission.log_pdf_gradient(params_single)
        for name in g_lik:
            grads[name] = g_lik[name] + g_prior[name]
        return float(self.log_prior(params_single)[0]) + loglik, grads

    def _emission_table(self, params_single, X):
        """The (n_frames, K) log emission table at one parameter set, reusing the columns
        of the states whose emission blocks equal those of the previous call on the same
        data: the Laplace Hessian's differences move one coordinate, hence one state's
        column (or none, for a transition coordinate), at a time.  Every entry depends
        on its own state's blocks only and is computed by the same arithmetic either way,
        so the table does not depend on what was remembered."""
        names = self._emission_names
        blocks = {n: np.asarray(params_single[n], dtype=float) for n in names}
        memo = self._table_memo
        changed = range(self.K)
        if memo is not None and memo[0] is X.frames:
            changed = [k for k in range(self.K)
                       if any(not np.array_equal(blocks[n][:, k], memo[1][n][:, k]) for n in names)]
        if len(changed) == self.K:
            table = self.family.log_likelihood_tables(blocks, X.frames)[0]
        else:
            table = memo[2].copy()
            for k in changed:
                table[:, k] = self.family.log_likelihood_tables(
                    {n: blocks[n][:, k:k + 1] for n in names}, X.frames)[0][:, 0]
        self._table_memo = (X.frames, {n: b.copy() for n, b in blocks.items()}, table)
        return table

    def log_complete_evidence(self, stats):
        """ln of the integral of prior x exp(E ln p(z, X | theta)) at the statistics (closed
        form: Dirichlet integrals x the family's marginal likelihood)."""
        val = 0.0
        if self.K > 1:
            val += float(dirichlet_evidence(self.startprob_prior, stats.start))
            val += float(dirichlet_evidence(self.transmat_prior, stats.trans))
        return float(val + self.family.log_marginal_likelihood(self.emission_prior,
                                                               stats.emission))

    def log_evidence(self, X):
        """Exact ln p(X) by enumerating the K^T state paths (tiny problems only): the
        parameters integrate out in closed form given a path."""
        T = self.n_cases(X)
        if self.K**T > 2**16:
            raise ValueError("too many state paths to enumerate.")
        if self.family.latent_missing and np.isnan(X.frames).any():
            # given a path the parameters no longer integrate out in closed form
            raise ValueError("X: the exact evidence by enumeration is not available with "
                             "missing entries for this emission family.")
        eye = np.eye(self.K)
        paths = consistent_paths(np.array(list(itertools.product(range(self.K), repeat=T)),
                                          dtype=np.int64).reshape(-1, T), X.known)
        vals = [self.log_complete_evidence(self.stats_from_responsibilities(eye[z], X))
                for z in paths]
        return float(logsumexp(vals))

    # -- point estimates ---------------------------------------------------------------
    def point_from_stats(self, stats, kind="map", basis="softmax"):
        """M step.  ``kind="ml"``: normalised counts and the family's maximum-likelihood
        emission point.  ``"map"``, ``basis="softmax"`` (default): the posterior mean of the
        conjugate posterior, ``(u + N)`` rows -- the estimator's VBM arithmetic followed by
        its plug-in.  ``basis="natural"``: the joint mode, ``(u + N - 1)`` rows and the
        family's posterior mode.  A parameter batch of one set."""
        return point_m_step(self.family, self.startprob_prior, self.transmat_prior,
                            self.emission_prior, stats, kind, basis).blocks()

    def _point_objective_prior(self, params, basis):
        """The log prior term of the EM objective in the basis of ``point_from_stats``:
        the prior density in the family's point coordinates, plus ``sum ln theta_rows``
        for the softmax basis."""
        return point_log_prior(self.family, self.startprob_prior, self.transmat_prior,
                               self._prior.emission, params, basis)

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=1000,
                  tol_per_case=1e-8):
        """EM for the MAP (``basis`` as in :meth:`point_from_stats`) or ML point, best of
        ``n_init`` runs.  The first run starts at the mean of the fitted q(theta) (the
        estimator's plug-in parameters; for the default MAP in the softmax basis this is
        exactly the M step of q's statistics, the point of q in the EM's basis), the
        others at the family's seeded initial hard labellings (the previous starts),
        screened as in
        :func:`~sklearn_vb._core.evidence.point_em.best_point_em`.  A run stops when the
        objective changes by less than ``tol_per_case * n``; a best run that reaches
        ``max_iter`` raises a ``ConvergenceWarning``."""
        rng = _rng(rng)
        T = self.n_cases(X)
        q = self.variational_posterior()

        eye = np.eye(self.K)

        def from_labels():
            labels = self.family.initial_labels(X.frames, self.K, rng)
            return self.point_from_stats(self.stats_from_responsibilities(eye[labels], X),
                                         kind, basis)

        start = posterior_then_draws(q.mean, from_labels)

        def evaluate(params):
            ll, stats = self._loglik_and_stats(params, X)
            prior = 0.0 if kind == "ml" else self._point_objective_prior(params, basis)
            return ll + prior, stats

        run = best_point_em(start, evaluate, lambda stats, _: self.point_from_stats(stats, kind, basis),
                            n_init=n_init, max_iter=max_iter, tol=tol_per_case * max(1, T),
                            owner=type(self).__name__, space=self.param_space,
                            draws_per_init=_DRAWS_PER_INIT, min_screen_iter=_MIN_SCREEN_ITER)
        self.last_point_run_ = run
        return run.theta

    # -- VB from a given q(z) (VBScore(init="cs")) ---------------------------------------
    def vb_refine(self, X, estep, max_iter=1000, tol=1e-10):
        """VBEM from ``q(z)`` = the exact posterior of ``estep``, starting with a VBM step.

        Records ``F(q(z), VBM(q(z))) = H[q(z)] + log_complete_evidence(stats)`` (the
        collapsed bound) after every VBM step, so the first value is the CS score and the
        sequence never decreases (Beal 2003, section 2.6).
        """
        stats, H = estep.stats, float(estep.entropy)
        family, prior = self.family, self.emission_prior
        bounds = []
        for _ in range(int(max_iter)):
            bounds.append(H + self.log_complete_evidence(stats))
            if len(bounds) > 1 and abs(bounds[-1] - bounds[-2]) < tol:
                break
            if self.K > 1:
                Lpi = dirichlet_expected_log(self.startprob_prior + stats.start)
                LA = dirichlet_expected_log(self.transmat_prior + stats.trans)
            else:
                Lpi, LA = np.zeros(1), np.zeros((1, 1))
            expected = family.expected_log_params(family.vbm(prior, stats.emission))
            log_z, stats = self._fb(Lpi, LA, family.frame_log_table(expected, X.frames), X,
                                    expected)
            # H[q(z)] = ln Z~ - E_q(z) ln p~(z, X) with the VBE potentials
            e_pot = float(np.sum(stats.start * Lpi) + np.sum(stats.trans * LA)
                          + family.expected_log_likelihood(stats.emission, expected, prior))
            H = log_z - e_pot
        return bounds

    # -- simulation --------------------------------------------------------------------
    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        """Draw ``(X, states)`` from ``theta`` (one sequence of ``n_cases`` frames, or one
        per entry of ``lengths``)."""
        rng = _rng(rng)
        lengths = np.array([int(n_cases)] if lengths is None else [int(t) for t in lengths],
                           dtype=np.int64)
        if np.any(lengths < 1):
            raise ValueError("lengths (or n_cases) must be positive.")
        ends = np.cumsum(lengths)
        starts = ends - lengths
        T = int(ends[-1])
        if self.K > 1:
            pi = np.asarray(params_single["startprob"], dtype=float)[0]
            A = np.asarray(params_single["transmat"], dtype=float)[0]
        else:
            pi, A = np.ones(1), np.ones((1, 1))
        states = _k.sample_states(pi, A, rng.random(T), starts, ends)
        return self.family.simulate(params_single, states, rng), states
