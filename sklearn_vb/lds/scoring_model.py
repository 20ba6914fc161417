"""ScoringModel for a fitted :class:`~sklearn_vb.lds.VBLinearDynamicalSystem`.

Model::

    x_0 ~ N(mu0, Sigma0),   x_t = A x_{t-1} + B us_t + w_t,   w_t ~ N(0, I_k)
    y_t = C x_t + D uo_t + v_t,                               v_t ~ N(0, diag(1/rho))

theta = blocks ``"A"`` (k, k), ``"B"`` (k, ds), ``"C"`` (p, k), ``"D"`` (p, do) (real;
B and D only when the model has state / output inputs, the intercept included) and
``"rho"`` (p,) (positive).  The state noise is fixed to the identity.  Every
hyperparameter is frozen at its fitted value: the ARD precisions ``alpha``,
``beta`` (columns of [A B]), ``gamma``, ``delta`` (columns of [C D]), the Gamma(a, b)
prior of rho, and the initial-state prior ``(mu0, Sigma0)`` (a point hyperparameter of
the estimator).  The prior is therefore the proper, normalised density::

    [a_j; b_j] ~ N(0, diag(alpha, beta)^{-1})                   (rows j = 1..k)
    rho_s ~ Ga(a, b),   [c_s; d_s] | rho_s ~ N(0, rho_s^{-1} diag(gamma, delta)^{-1})

``ln p(X | theta)`` is exact: the Kalman-filter prediction-error decomposition, one
numba call for a whole batch of parameter sets and all sequences
(:func:`sklearn_vb.lds.kalman.lds_log_likelihood_terms`).  The number of
cases ``n`` is the total number of time steps (as in the estimator's BIC);
``log_likelihood_per_case``
returns the per-step terms ``ln p(y_t | y_{1:t-1}, theta)`` (they sum to the
log-likelihood).

Missing outputs (NaN in ``X``, missing at random) are marginalised exactly: the
likelihood is that of the observed entries (a step updates the filter with its
observed outputs only; a step with nothing observed has the term 0), the E step is
the same masked smoother the estimator's fit runs, and in the complete-data
quantities (the statistics, the VBM step, the M step, the closed-form complete-data
evidence, the likelihood gradient) every row of ``[C D]`` regresses on the steps where
its output is observed (:mod:`sklearn_vb.lds._output_rows`).  A model fitted with
missing outputs has one covariance per row of ``[C D]`` and one Gamma shape per
output in q(theta) (:class:`LDSPosterior` takes either form).

Degeneracies and aliases.  ``x -> P x`` with orthogonal ``P`` maps ``(A, B, C, D)`` to
``(P A P', P B, C P', D)`` and leaves the likelihood unchanged except through the frozen
initial-state prior (``mu0 -> P mu0``, ``Sigma0 -> P Sigma0 P'``); with ``Q = I`` fixed
that is the only continuous freedom left, so :meth:`n_parameters` subtracts its
``k(k-1)/2`` dimensions.  Its discrete part, the signed permutations of the states,
gives the ``S = 2^k k!`` of :meth:`n_aliases`; ``ln S`` is the right correction only when
the aliased modes are well separated (and are not exactly equivalent here, because the
ARD prior and the frozen ``(mu0, Sigma0)`` are not invariant).

Point estimates (group G2 of :mod:`sklearn_vb._core.evidence.protocols`): :meth:`fit_point` is
EM with the exact Kalman smoother as E step and the mode of the conjugate posterior (the
estimator's VBM step) given the expected statistics as M step
(MAP), or the least-squares / ML solution (``kind="ml"``); ``(mu0, Sigma0)`` stay frozen.
The MAP of rho is taken in the unconstrained basis ``phi = ln rho`` by default (the
basis of the Laplace scorer: Gamma shape ``a + (T + k + do)/2``), or in rho itself with
``basis="natural"`` (shape ``a - 1 + (T + k + do)/2``).

Sampling.  ARD makes the prior scales of the coordinates differ by orders of magnitude
(extinct columns reach precisions ~1e4 and more), which a random walk with one step
per block handles badly; :meth:`annealing_kernel` (used by ``kernel="auto"``) takes
steps per coordinate (``c / sqrt(prior precision + beta * data precision)``, fixed from
the fitted q before the run).  The posterior has ``2^k k!`` sign/permutation aliases, so
importance sampling from q alone covers one of them; ``alias_posterior()`` is the
equal-weight mixture of q over all of them.
"""

from __future__ import annotations

import itertools
from math import factorial, lgamma, log
from typing import NamedTuple

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from .._core.distributions import as_generator as _rng
from .._core.distributions import gamma_log_pdf
from ._scoring_records import ParameterBatch, ScoringData, StateCompletion
from ._output_rows import (rows_expected_log_likelihood, rows_gradient, rows_log_evidence,
                           rows_posterior)
from ._point import log_prior_density, point_m_step, spd_solve_inv
from .._core.kernels.constants import LOG_2PI
from .inference import (
    HiddenStatistics,
    OutputRows,
    dynamics_moments,
    hidden_statistics,
    output_moments,
    output_rows,
    smooth_states,
)
from .kalman import lds_log_likelihood_terms, simulate_lds
from .._core.evidence.mcmc_moves import BlockRandomWalkMH
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.posteriors import MappedPosterior, MixturePosterior
from .._core.evidence.protocols import EStep, ScoringModelMixin
from .._core.evidence.point_em import best_point_em

#: parameter sets per chunk of :meth:`LDSScoringModel.log_complete_joint_per_case`
_COMPLETE_CHUNK = 16

__all__ = [
    "LDSScoringModel",
    "LDSPosterior",
    "aliased_posterior",
]


def _chol(M, name):
    try:
        return np.linalg.cholesky(0.5 * (M + M.T))
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"{name} must be positive definite.") from exc



_spd_solve_inv = spd_solve_inv


class CompleteDataStatistics(NamedTuple):
    """The expected sufficient statistics of a q(x) on one prepared data set: what the
    E step hands to the M step and to the complete-data bounds."""

    #: the hidden-state statistics, pooled over sequences
    hidden: HiddenStatistics
    #: ``sum_i <(x_0i - mu0)' Sigma0^{-1} (x_0i - mu0)>``
    x0_quad: float
    #: ``sum_t us_t us_t'``, ``sum_t uo_t uo_t'``, ``sum_t uo_t y_t'``
    UUs: np.ndarray
    UUo: np.ndarray
    UY: np.ndarray
    #: ``sum_t y_ts^2`` per output
    YY: np.ndarray
    #: entropy of the exact p(x | y, theta) as the smoother computed it (E step only)
    smoother_entropy: float | None = None
    #: with missing outputs, the statistics of every output over the steps where it is
    #: observed (the output part of every complete-data quantity then uses these)
    rows: OutputRows | None = None


# =========================================================================================
# q(theta): Gaussian rows of [A B], Normal-Gamma rows of ([C D], rho)
# =========================================================================================


class LDSPosterior:
    """The VB posterior ``q(A, B) q(C, D, rho)`` of the LDS.

    Rows ``[a_j; b_j] ~ N(M_AB[j], Sigma_AB)`` independently; for each output ``s``,
    ``rho_s ~ Ga(shape, rate_s)`` and ``[c_s; d_s] | rho_s ~ N(M_CD[s], Sigma_CD / rho_s)``.
    Fitted with missing outputs, every row has its own covariance (``Sigma_CD`` of
    shape (p, m, m)) and every output its own shape (``shape`` of shape (p,)).
    Densities are in the coordinates of ``log_prior`` (A, B, C, D, rho themselves).

    With ``dof`` set, every Gaussian row (of [A B], and of [C D] given rho) becomes a
    multivariate Student-t with that location, the Gaussian covariance as scale matrix
    and ``dof`` degrees of freedom (an independent t per row); ``broaden`` multiplies
    the Gamma shape and rate by ``broaden`` (mean kept, wider).  No ``blocks`` attribute:
    ([C D], rho) is one joint factor, not a product over parameter blocks.
    """

    family = "lds_gaussian_normal_gamma"

    def __init__(self, k, ds, do, M_AB, Sigma_AB, M_CD, Sigma_CD, shape, rate, dof=None,
                 broaden=None):
        self.k, self.ds, self.do = int(k), int(ds), int(do)
        self.M_AB = np.asarray(M_AB, dtype=float)
        self.M_CD = np.asarray(M_CD, dtype=float)
        self.Sigma_AB = 0.5 * (np.asarray(Sigma_AB, float) + np.asarray(Sigma_AB, float).T)
        Sigma_CD = np.asarray(Sigma_CD, float)
        self.Sigma_CD = 0.5 * (Sigma_CD + np.swapaxes(Sigma_CD, -1, -2))
        self.shape = float(shape) if np.ndim(shape) == 0 else np.array(shape, dtype=float)
        self.rate = np.asarray(rate, dtype=float)
        if broaden is not None:
            if not 0 < broaden <= 1:
                raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
            self.shape *= broaden
            self.rate = self.rate * broaden
        self.broaden = broaden
        if dof is not None and not dof > 0:
            raise ValueError(f"dof must be positive, got {dof}.")
        self.dof = None if dof is None else float(dof)
        if np.any(~(np.asarray(self.shape) > 0)) or np.any(~(self.rate > 0)):
            raise ValueError("the Gamma factor of q needs a positive shape and rates.")
        self.L_AB = _chol(self.Sigma_AB, "Sigma_AB")
        self.Linv_AB = np.linalg.inv(self.L_AB)
        self.ld_AB = 2.0 * float(np.sum(np.log(np.diag(self.L_AB))))
        self.per_row = self.Sigma_CD.ndim == 3
        if self.per_row:
            self.L_CD = np.stack([_chol(S, "Sigma_CD") for S in self.Sigma_CD])
            self.Linv_CD = np.linalg.inv(self.L_CD)
            self.ld_CD = 2.0 * np.sum(np.log(np.diagonal(self.L_CD, axis1=1, axis2=2)), axis=1)
        else:
            self.L_CD = _chol(self.Sigma_CD, "Sigma_CD")
            self.Linv_CD = np.linalg.inv(self.L_CD)
            self.ld_CD = 2.0 * float(np.sum(np.log(np.diag(self.L_CD))))

    # -- helpers -------------------------------------------------------------------------
    def _split(self, AB, CD, rho):
        return ParameterBatch.split(AB, CD, rho, self.k).blocks()

    def _join(self, params):
        theta = ParameterBatch.from_blocks(params)
        return theta.AB, theta.CD, theta.rho

    def _row_scale(self, rng, shape):
        if self.dof is None:
            return 1.0
        return 1.0 / np.sqrt(rng.chisquare(self.dof, size=shape) / self.dof)[..., None]

    def _row_logpdf(self, quad, d, logdet):
        """ln density of a row with squared Mahalanobis distance ``quad``."""
        if self.dof is None:
            return -0.5 * quad - 0.5 * d * LOG_2PI - 0.5 * logdet
        nu = self.dof
        return (gammaln(0.5 * (nu + d)) - gammaln(0.5 * nu) - 0.5 * d * np.log(nu * np.pi)
                - 0.5 * logdet - 0.5 * (nu + d) * np.log1p(quad / nu))

    # -- protocol ------------------------------------------------------------------------
    def sample(self, rng, size):
        rng = _rng(rng)
        size = int(size)
        k, p = self.M_AB.shape[0], self.M_CD.shape[0]
        dab, dcd = self.M_AB.shape[1], self.M_CD.shape[1]
        z = rng.standard_normal((size, k, dab)) * self._row_scale(rng, (size, k))
        AB = self.M_AB[None] + z @ self.L_AB.T
        rho = np.maximum(rng.standard_gamma(self.shape, size=(size, p)) / self.rate, 1e-300)
        z = rng.standard_normal((size, p, dcd)) * self._row_scale(rng, (size, p))
        zL = (np.einsum("csj,sij->csi", z, self.L_CD) if self.per_row else z @ self.L_CD.T)
        CD = self.M_CD[None] + zL / np.sqrt(rho)[..., None]
        return self._split(AB, CD, rho)

    def log_pdf(self, params):
        AB, CD, rho = self._join(params)
        dab, dcd = AB.shape[2], CD.shape[2]
        zab = (AB - self.M_AB[None]) @ self.Linv_AB.T
        out = self._row_logpdf(np.sum(zab * zab, axis=2), dab, self.ld_AB).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = CD - self.M_CD[None]
            zcd = (np.einsum("csj,sij->csi", dev, self.Linv_CD) if self.per_row
                   else dev @ self.Linv_CD.T)
            quad = rho * np.sum(zcd * zcd, axis=2)
            logdet = self.ld_CD - dcd * np.log(rho)
            lcd = self._row_logpdf(quad, dcd, logdet)
        lrho = gamma_log_pdf(rho, self.shape, self.rate[None])
        out = out + np.sum(np.where(rho > 0, lcd + lrho, -np.inf), axis=1)
        return np.asarray(out, dtype=float)

    def mean(self):
        return self._split(self.M_AB[None], self.M_CD[None],
                           np.asarray(self.shape / self.rate)[None])

    def heavy_tailed(self, dof=3.0, broaden=None):
        return LDSPosterior(self.k, self.ds, self.do, self.M_AB, self.Sigma_AB, self.M_CD,
                            self.Sigma_CD, self.shape, self.rate, dof=dof, broaden=broaden)

    def gaussian_unconstrained(self):
        return None

    def unconstrained_sd(self, space):
        """Approximate standard deviations of the unconstrained coordinates of ``space``
        (rows of [C D]: the Student-t marginal, ``E[1/rho_s] Sigma_CD``; rho: the sd of
        ``ln rho``)."""
        k = self.k
        p = self.M_CD.shape[0]
        v_ab = np.diag(self.Sigma_AB)
        shape = self.shape
        inv_rho = self.rate / np.where(shape > 1, np.maximum(shape - 1.0, 1e-3), shape)
        # (p, m) the diagonal of every row's covariance (shared or per row)
        v_cd = np.broadcast_to(np.diagonal(self.Sigma_CD, axis1=-2, axis2=-1),
                               (p, self.M_CD.shape[1]))
        sd = {
            "A": np.broadcast_to(np.sqrt(v_ab[:k]), (k, k)),
            "B": np.broadcast_to(np.sqrt(v_ab[k:]), (k, self.ds)),
            "C": np.sqrt(inv_rho[:, None] * v_cd[:, :k]),
            "D": np.sqrt(inv_rho[:, None] * v_cd[:, k:]),
            "rho": np.broadcast_to(np.sqrt(polygamma(1, shape)), (p,)),
        }
        return np.concatenate([np.ravel(sd[b.name]) for b in space.blocks])

    @staticmethod
    def mixture(components, weights=None):
        return MixturePosterior(components, weights)


def aliased_posterior(q, P, model):
    """The image of ``q`` under the state change ``x -> P x`` (``P`` orthogonal): draws
    are mapped by ``(A, B, C, D) -> (P A P', P B, C P', D)``, a volume-preserving map."""
    P = np.asarray(P, dtype=float)
    return MappedPosterior(q, lambda params: model.change_state_basis(params, P),
                           lambda params: model.change_state_basis(params, P.T))


# =========================================================================================
# the scoring model
# =========================================================================================


class LDSScoringModel(ScoringModelMixin):
    """The scoring view of a fitted VBLinearDynamicalSystem (frozen hyperparameters)."""

    def __init__(self, estimator):
        if not hasattr(estimator, "Sigma_AB_"):
            raise ValueError("the estimator must be fitted.")
        est = estimator
        self.estimator = est
        self.k = k = int(est.n_states_)
        self.p = p = int(est.n_features_in_)
        self.state_cols = np.asarray(est.state_inputs_, dtype=np.int64)
        self.out_cols = np.asarray(est.output_inputs_, dtype=np.int64)
        self.ds = ds = self.state_cols.size
        self.do = do = self.out_cols.size
        self.n_components = k
        # frozen hyperparameters
        self.prior_ab = np.concatenate([np.asarray(est.alpha_, float),
                                        np.asarray(est.beta_, float)[self.state_cols]])
        self.prior_cd = np.concatenate([np.asarray(est.gamma_, float),
                                        np.asarray(est.delta_, float)[self.out_cols]])
        self.a0 = float(est.noise_prior_shape_)
        self.b0 = float(est.noise_prior_rate_)
        self.mu0 = np.ascontiguousarray(est.init_state_mean_, dtype=float)
        self.Sigma0 = np.ascontiguousarray(est.init_state_cov_, dtype=float)
        self._Sigma0_inv, self._ld_Sigma0 = _spd_solve_inv(self.Sigma0)
        blocks = [ParamBlock("A", (k, k), "real")]
        if ds:
            blocks.append(ParamBlock("B", (k, ds), "real"))
        blocks.append(ParamBlock("C", (p, k), "real"))
        if do:
            blocks.append(ParamBlock("D", (p, do), "real"))
        blocks.append(ParamBlock("rho", (p,), "positive"))
        self.param_space = ParamSpace(blocks)
        self._q = None
        self._n_last = 1  # time steps of the last prepared data set (kernel curvature)

    # ------------------------------------------------------------------------ data
    def prepare_data(self, X, U=None, lengths=None, sequence_ids=None):
        """Validate ``X`` (and ``U``, ``lengths`` / ``sequence_ids``) as the estimator does;
        returns a :class:`~sklearn_vb.lds._scoring_records.ScoringData`: the outputs
        (missing ones as NaN, with their mask), the state / output inputs (intercept
        included), the sequence offsets and the data statistics."""
        seq = self.estimator.check_data(X, U=U, lengths=lengths, sequence_ids=sequence_ids)
        Us = np.ascontiguousarray(seq.Us)
        Uo = np.ascontiguousarray(seq.Uo)
        Y = np.ascontiguousarray(seq.X, dtype=float)
        self._n_last = Y.shape[0]
        return ScoringData.from_sequences(
            Y, Us, Uo, np.ascontiguousarray(seq.starts, dtype=np.int64),
            np.ascontiguousarray(seq.ends, dtype=np.int64))

    def n_cases(self, X):
        return int(X.Y.shape[0])

    # ------------------------------------------------------------------------ parameters
    def _split(self, AB, CD, rho):
        return ParameterBatch.split(AB, CD, rho, self.k).blocks(dtype=float)

    def change_state_basis(self, params, P):
        """``x -> P x`` (``P`` orthogonal): ``(P A P', P B, C P', D, rho)``."""
        theta = ParameterBatch.from_blocks(params)
        return ParameterBatch(
            A=np.einsum("ij,cjl,ml->cim", P, theta.A, P),
            B=None if theta.B is None else np.einsum("ij,cjd->cid", P, theta.B),
            C=np.einsum("csj,mj->csm", theta.C, P),
            D=None if theta.D is None else np.array(theta.D, dtype=float),
            rho=np.array(theta.rho, dtype=float)).blocks()

    def signed_permutations(self):
        """The ``2^k k!`` signed permutation matrices of the states."""
        k = self.k
        out = []
        for perm in itertools.permutations(range(k)):
            for signs in itertools.product((1.0, -1.0), repeat=k):
                P = np.zeros((k, k))
                P[np.arange(k), perm] = signs
                out.append(P)
        return out

    # ------------------------------------------------------------------------ G0
    def log_prior(self, params):
        theta = ParameterBatch.from_blocks(params)
        return log_prior_density(theta.AB, theta.CD, theta.rho, self.prior_ab,
                                 self.prior_cd, self.a0, self.b0)

    def sample_prior(self, rng, size):
        rng = _rng(rng)
        size = int(size)
        k, p = self.k, self.p
        AB = rng.standard_normal((size, k, self.prior_ab.size)) / np.sqrt(self.prior_ab)
        rho = np.maximum(rng.standard_gamma(self.a0, size=(size, p)) / self.b0, 1e-300)
        CD = (rng.standard_normal((size, p, self.prior_cd.size)) / np.sqrt(self.prior_cd)
              / np.sqrt(rho)[..., None])
        return self._split(AB, CD, rho)

    def log_likelihood_per_case(self, params, X):
        """Per-step prediction-error terms ``ln p(y_t | y_{1:t-1}, theta)``: (C, T)."""
        theta = ParameterBatch.from_blocks(params)
        A = np.ascontiguousarray(theta.A)
        Cm = np.ascontiguousarray(theta.C)
        rho = np.ascontiguousarray(theta.rho)
        B, D = theta.input_blocks()
        out = np.empty((A.shape[0], X.Y.shape[0]))
        lds_log_likelihood_terms(A, B, Cm, D, rho, X.Y0, X.Us, X.Uo, X.starts, X.ends,
                                 X.observed_steps, X.kernel_mask, self.mu0, self.Sigma0, out)
        return out

    def log_likelihood(self, params, X):
        """Exact ``ln p(X | theta)`` (Kalman filter), shape (C,)."""
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def log_likelihood_per_sequence(self, params, X):
        terms = self.log_likelihood_per_case(params, X)
        return np.add.reduceat(terms, X.starts, axis=1)

    def _full_inputs(self, U, N):
        """The input matrix of ``N`` simulated steps: the user inputs ``U``, then the
        intercept column when the estimator fits one (the column order of ``B_mean_``)."""
        est = self.estimator
        n_user = int(est.n_inputs_) - int(bool(est.fit_intercept))
        U = np.zeros((N, 0)) if U is None else np.asarray(U, dtype=float)
        if U.shape != (N, n_user) or not np.all(np.isfinite(U)):
            raise ValueError(f"U must be finite of shape ({N}, {n_user}) (one row per simulated "
                             f"step, one column per input of the fitted model); got {U.shape}.")
        if est.fit_intercept:
            U = np.hstack([U, np.ones((N, 1))])
        return U

    def simulate(self, params_single, rng, n_cases=None, lengths=None, U=None):
        """Simulate outputs (and states) from one parameter set.

        ``lengths`` (or ``n_cases`` for one sequence) gives the sequence lengths; ``U``
        the user inputs when the model has any (the intercept is added).  Returns
        ``(Y (T, p), states (T, k))``.
        """
        rng = _rng(rng)
        if lengths is None:
            if n_cases is None:
                raise ValueError("simulate needs n_cases or lengths.")
            lengths = [int(n_cases)]
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim != 1 or np.any(lengths < 1):
            raise ValueError("lengths must be positive integers.")
        N = int(lengths.sum())
        Uall = self._full_inputs(U, N)
        Us = Uall[:, self.state_cols]
        Uo = Uall[:, self.out_cols]
        th = ParameterBatch.from_blocks(params_single)
        bu = Us @ th.B[0].T if self.ds else np.zeros((N, self.k))
        du = Uo @ th.D[0].T if self.do else np.zeros((N, self.p))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        x0 = rng.multivariate_normal(self.mu0, self.Sigma0, size=lengths.size)
        w = rng.standard_normal((N, self.k))
        v = rng.standard_normal((N, self.p))
        states, Y = simulate_lds(
            np.ascontiguousarray(th.A[0]), np.ascontiguousarray(bu), np.ascontiguousarray(th.C[0]),
            np.ascontiguousarray(du), 1.0 / np.sqrt(th.rho[0]), np.ascontiguousarray(x0), w, v,
            starts.astype(np.int64), ends.astype(np.int64))
        return Y, states

    # ------------------------------------------------------------------------ G1
    def random_completion(self, X, rng):
        """A generic completion of the hidden states for the complete-data dimension of
        CS-dagger (Beal 2003, Algorithm 6.2): standard normal ``x_t`` for every step and
        ``x_0`` for every sequence.  The states are continuous, so there is no uniform
        completion; what the algorithm needs is a completion at which the per-case
        complete-data terms have their generic rank, which a draw from any density
        gives almost surely.  Returns a
        :class:`~sklearn_vb.lds._scoring_records.StateCompletion` (``x`` (N, k), ``x0``
        (n_seq, k))."""
        rng = _rng(rng)
        x = rng.standard_normal((self.n_cases(X), self.k))
        return StateCompletion(x=x, x0=rng.standard_normal((X.starts.size, self.k)))

    def log_complete_joint_per_case(self, params, Z, X):
        """(C, N) ``ln p(x_t | x_{t-1}, theta) + ln p(y_t | x_t, theta)`` along the
        completion ``Z`` (:meth:`random_completion`), plus the frozen prior
        ``ln N(x_0 | mu0, Sigma0)`` at the first step of each sequence, so that a row
        sums to ``ln p(x_{0:N}, Y | theta)``.  Evaluated for
        :data:`_COMPLETE_CHUNK` parameter sets at a time (memory O(chunk N (k + p)))."""
        x = np.asarray(Z.x, dtype=float)
        x0 = np.asarray(Z.x0, dtype=float)
        starts = X.starts
        prev = np.empty_like(x)
        prev[1:] = x[:-1]
        prev[starts] = x0
        theta = ParameterBatch.from_blocks(params)
        A, Cm, rho = theta.A, theta.C, theta.rho
        n_theta = A.shape[0]
        B, D = theta.input_blocks()
        k, p = self.k, self.p
        d0 = x0 - self.mu0
        x0_term = -0.5 * (k * LOG_2PI + self._ld_Sigma0
                          + np.einsum("si,ij,sj->s", d0, self._Sigma0_inv, d0))
        out = np.empty((n_theta, x.shape[0]))
        # missing outputs: only the observed entries of y_t enter (missing at random)
        m = None if X.obs_mask is None else X.obs_mask.astype(float)
        for lo in range(0, n_theta, _COMPLETE_CHUNK):
            c = slice(lo, min(n_theta, lo + _COMPLETE_CHUNK))
            r = (x[None] - np.einsum("cij,tj->cti", A[c], prev)
                 - np.einsum("cij,tj->cti", B[c], X.Us))
            e = (X.Y0[None] - np.einsum("csj,tj->cts", Cm[c], x)
                 - np.einsum("csj,tj->cts", D[c], X.Uo))
            with np.errstate(divide="ignore", invalid="ignore"):
                log_rho = np.log(rho[c])
            if m is None:
                out[c] = (-0.5 * (k + p) * LOG_2PI - 0.5 * np.sum(r * r, axis=2)
                          + 0.5 * np.sum(log_rho, axis=1)[:, None]
                          - 0.5 * np.einsum("cs,cts->ct", rho[c], e * e))
            else:
                out[c] = (-0.5 * (k + m.sum(axis=1)) * LOG_2PI - 0.5 * np.sum(r * r, axis=2)
                          + 0.5 * np.einsum("ts,cs->ct", m, log_rho)
                          - 0.5 * np.einsum("cs,cts->ct", rho[c], m * e * e))
        out[:, starts] += x0_term
        return out

    # ------------------------------------------------------------------------ G4
    def n_parameters(self):
        """``k^2 + k ds + p k + p do + p - k(k-1)/2``: the orthogonal rotations of the
        state that remain with ``Q = I`` are removed.  The frozen
        initial-state prior is not counted."""
        k, p = self.k, self.p
        return k * k + k * self.ds + p * k + p * self.do + p - k * (k - 1) // 2

    def n_aliases(self):
        """``2^k k!`` signed permutations of the states.  ``ln S`` corrects a score only
        approximately: it assumes well-separated, equally weighted aliased modes."""
        return (2 ** self.k) * factorial(self.k)

    def log_n_aliases(self):
        """``k ln 2 + ln k!``, the logarithm of :meth:`n_aliases` (log-factorial)."""
        return self.k * log(2.0) + lgamma(self.k + 1)

    # ------------------------------------------------------------------------ G5
    def variational_posterior(self, X=None):
        """q(theta) of the fitted estimator (:class:`LDSPosterior`)."""
        if self._q is None:
            est = self.estimator
            M_AB = np.hstack([est.A_mean_, np.asarray(est.B_mean_)[:, self.state_cols]])
            M_CD = np.hstack([est.C_mean_, np.asarray(est.D_mean_)[:, self.out_cols]])
            self._q = LDSPosterior(self.k, self.ds, self.do, M_AB, est.Sigma_AB_, M_CD,
                                   est.Sigma_CD_, est.rho_shape_, est.rho_rate_)
        return self._q

    def alias_posterior(self, q=None, max_components=400):
        """Equal-weight mixture of ``q`` (default: the fitted q) over the ``2^k k!``
        signed permutations of the states: a proposal that covers every aliased mode
        for importance sampling."""
        q = self.variational_posterior() if q is None else q
        if self.n_aliases() > max_components:
            raise ValueError(f"{self.n_aliases()} aliases exceed max_components={max_components}.")
        return MixturePosterior([aliased_posterior(q, P, self) for P in self.signed_permutations()])

    # ------------------------------------------------------------------------ kernels
    def kernel_prior_precision(self):
        """Prior precision of every unconstrained coordinate (closed form): the ARD
        precisions for the rows of [A B]; ``E[rho] x`` the ARD precisions for the rows of
        [C D] (their prior scale given rho, at the prior mean of rho); ``1 / trigamma(a)``
        for ``ln rho``."""
        k, p = self.k, self.p
        e_rho = self.a0 / self.b0
        pi = {
            "A": np.broadcast_to(self.prior_ab[:k], (k, k)),
            "B": np.broadcast_to(self.prior_ab[k:], (k, self.ds)),
            "C": np.broadcast_to(e_rho * self.prior_cd[:k], (p, k)),
            "D": np.broadcast_to(e_rho * self.prior_cd[k:], (p, self.do)),
            "rho": np.full(p, 1.0 / polygamma(1, self.a0)),
        }
        return {b.name: np.ravel(pi[b.name]) for b in self.param_space.blocks}

    def _precisions(self):
        """Prior and data precisions of every unconstrained coordinate (fixed)."""
        q = self.variational_posterior()
        sd_q = q.unconstrained_sd(self.param_space)
        pri = self.kernel_prior_precision()
        pi = np.concatenate([pri[b.name] for b in self.param_space.blocks])
        h = np.maximum(1.0 / sd_q**2 - pi, 0.0)
        return pi, h

    def kernel_curvature(self):
        """Per-case curvature scale of each block for ``BlockRandomWalkMH`` (median data
        precision of its coordinates under the fitted q, divided by n)."""
        pi, h = self._precisions()
        n = max(1, int(self._n_last))
        return {b.name: float(np.median(h[self.param_space.slices[b.name]])) / n
                for b in self.param_space.blocks}

    def annealing_kernel(self, X=None, scale=1.0):
        """The kernel ``kernel="auto"`` uses (G6 hook): a random walk in the
        unconstrained basis with one step size per coordinate, ``c / sqrt(pi_i + beta
        h_i)`` (prior precision ``pi_i`` from :meth:`kernel_prior_precision`, data
        precision ``h_i = 1/var_q - pi_i`` from the fitted q, floored at 0), fixed before
        the run; its adjoint sweeps the blocks in reverse order (reverse AIS, BDMC).
        ``X`` is not needed (q already reflects the training data)."""
        pi, h = self._precisions()
        return BlockRandomWalkMH(self, scale=scale, prior_precision=pi, data_precision=h)

    # ------------------------------------------------------------------------ G2 / G3
    def stats_from_moments(self, X, omega, ups, cross, omega0, ups0):
        """Expected sufficient statistics from the marginals of a q(x).

        ``omega, ups`` (T, k), (T, k, k): means and covariances of ``x_t``; ``cross``
        (T, k, k): ``Cov(x_{t-1}, x_t)``; ``omega0, ups0``: moments of each ``x_0``.
        With missing outputs, also the statistics of every output over the steps where
        it is observed (``rows``).
        """
        hidden = hidden_statistics(omega, ups, cross, omega0, ups0, X.starts, X.ends,
                                   X.Y0, X.Us, X.Uo, X.obs_mask)
        dev = omega0 - self.mu0
        x0_quad = float(np.sum(self._Sigma0_inv * ups0.sum(axis=0))
                        + np.sum((dev @ self._Sigma0_inv) * dev))
        rows = (None if X.obs_mask is None
                else output_rows(hidden, omega, X.Y0, X.Uo, X.obs_mask))
        return CompleteDataStatistics(hidden, x0_quad, X.UUs, X.UUo, X.UY, X.YY, rows=rows)

    @staticmethod
    def _blocks(stats):
        return (*dynamics_moments(stats.hidden, stats.UUs),
                *output_moments(stats.hidden, stats.UUo, stats.UY))

    def _x0_term(self, stats):
        k = self.k
        return (-0.5 * stats.hidden.n_seq * (k * LOG_2PI + self._ld_Sigma0)
                - 0.5 * stats.x0_quad)

    def expected_complete_loglik(self, params_single, stats):
        """``E ln p(x_{0:T}, y | theta)`` under the q(x) that produced ``stats``."""
        W_z, R_AB, W_w, R_CD = self._blocks(stats)
        theta = ParameterBatch.from_blocks(params_single)
        M_AB, M_CD, rho = theta.AB[0], theta.CD[0], theta.rho[0]
        T, k, p = stats.hidden.T, self.k, self.p
        e_dyn = -0.5 * T * k * LOG_2PI - 0.5 * (
            np.trace(stats.hidden.W_C) - 2.0 * np.sum(M_AB * R_AB.T)
            + np.sum((M_AB.T @ M_AB) * W_z))
        if stats.rows is not None:
            return float(self._x0_term(stats) + e_dyn
                         + rows_expected_log_likelihood(stats.rows, M_CD, rho))
        quad = (stats.YY - 2.0 * np.sum(M_CD * R_CD.T, axis=1)
                + np.einsum("si,ij,sj->s", M_CD, W_w, M_CD))
        e_obs = -0.5 * T * p * LOG_2PI + 0.5 * T * np.sum(np.log(rho)) - 0.5 * np.sum(rho * quad)
        return float(self._x0_term(stats) + e_dyn + e_obs)

    def log_joint_gradient(self, params_single, X):
        """``(ln p(theta) + ln p(X | theta), gradient)`` at one parameter set, the gradient
        (block name -> array of the block's batch shape) in ``A, B, C, D, rho``.

        Fisher's identity: the gradient of ``ln p(X | theta)`` is that of
        :meth:`expected_complete_loglik` in ``theta`` with the Kalman/RTS smoother's
        statistics at ``theta`` held fixed: ``R_AB^T - M_AB W_z`` for the rows of
        ``[A B]``, ``rho_s (R_CD^T - M_CD W_w)_s`` for those of ``[C D]`` and
        ``T / (2 rho_s) - quad_s / 2`` for ``rho``.  Costs one smoother pass."""
        e = self.e_step(params_single, X)
        W_z, R_AB, W_w, R_CD = self._blocks(e.stats)
        theta = ParameterBatch.from_blocks(params_single)
        M_AB, M_CD, rho = theta.AB[0], theta.CD[0], theta.rho[0]
        T = e.stats.hidden.T
        g_AB = R_AB.T - M_AB @ W_z - M_AB * self.prior_ab
        if e.stats.rows is not None:
            g_CD, g_rho = rows_gradient(e.stats.rows, M_CD, rho, self.prior_cd, self.a0,
                                        self.b0)
        else:
            quad = (e.stats.YY - 2.0 * np.sum(M_CD * R_CD.T, axis=1)
                    + np.einsum("si,ij,sj->s", M_CD, W_w, M_CD))
            g_CD = rho[:, None] * (R_CD.T - M_CD @ W_w - M_CD * self.prior_cd)
            prior_quad = np.sum(M_CD * M_CD * self.prior_cd, axis=1)
            g_rho = (0.5 * T / rho - 0.5 * quad + 0.5 * self.prior_cd.size / rho
                     - 0.5 * prior_quad + (self.a0 - 1.0) / rho - self.b0)
        grads = self._split(g_AB[None], g_CD[None], g_rho[None])
        return float(self.log_prior(params_single)[0]) + e.loglik, grads

    def log_complete_evidence(self, stats):
        """``ln int p(theta) exp<ln p(x, y | theta)> dtheta`` in closed form (conjugate
        rows given the statistics)."""
        W_z, R_AB, W_w, R_CD = self._blocks(stats)
        T, k = stats.hidden.T, self.k
        # dynamics: k independent Gaussian rows of [A B]
        Sigma_AB, ld_Lam_AB = _spd_solve_inv(W_z + np.diag(self.prior_ab))
        e_dyn = (-0.5 * T * k * LOG_2PI - 0.5 * np.trace(stats.hidden.W_C)
                 + 0.5 * k * (np.sum(np.log(self.prior_ab)) - ld_Lam_AB)
                 + 0.5 * np.sum(R_AB * (Sigma_AB @ R_AB)))
        if stats.rows is not None:
            return float(self._x0_term(stats) + e_dyn
                         + rows_log_evidence(stats.rows, self.prior_cd, self.a0, self.b0))
        # observations: p independent Normal-Gamma rows of ([C D], rho)
        Lam_CD = W_w + np.diag(self.prior_cd)
        Sigma_CD, ld_Lam_CD = _spd_solve_inv(Lam_CD)
        M = (Sigma_CD @ R_CD).T  # (p, k+do)
        g = (stats.YY - 2.0 * np.sum(M * R_CD.T, axis=1)
             + np.einsum("si,ij,sj->s", M, Lam_CD, M))
        g = np.maximum(g, 1e-300)
        a, b = self.a0, self.b0
        e_obs = np.sum(
            -0.5 * T * LOG_2PI + 0.5 * (np.sum(np.log(self.prior_cd)) - ld_Lam_CD)
            + a * np.log(b) - gammaln(a) + gammaln(a + 0.5 * T) - (a + 0.5 * T) * np.log(b + 0.5 * g))
        return float(self._x0_term(stats) + e_dyn + e_obs)

    def q_from_stats(self, stats):
        """VBM: the optimal q(theta) given the statistics of a q(x)."""
        W_z, R_AB, W_w, R_CD = self._blocks(stats)
        Sigma_AB, _ = _spd_solve_inv(W_z + np.diag(self.prior_ab))
        M_AB = (Sigma_AB @ R_AB).T
        if stats.rows is not None:
            post = rows_posterior(stats.rows, self.prior_cd)
            return LDSPosterior(self.k, self.ds, self.do, M_AB, Sigma_AB, post.M, post.Sigma,
                                self.a0 + 0.5 * stats.rows.T, self.b0 + 0.5 * post.g)
        Lam_CD = W_w + np.diag(self.prior_cd)
        Sigma_CD, _ = _spd_solve_inv(Lam_CD)
        M_CD = (Sigma_CD @ R_CD).T
        g = (stats.YY - 2.0 * np.sum(M_CD * R_CD.T, axis=1)
             + np.einsum("si,ij,sj->s", M_CD, Lam_CD, M_CD))
        g = np.maximum(g, 1e-300)
        return LDSPosterior(self.k, self.ds, self.do, M_AB, Sigma_AB, M_CD, Sigma_CD,
                            self.a0 + 0.5 * stats.hidden.T, self.b0 + 0.5 * g)

    def _smoother(self, params_single, X):
        """The exact Kalman filter and RTS smoother at one parameter set."""
        theta = ParameterBatch.from_blocks(params_single)
        return smooth_states(X.Y, X.Us, X.Uo, X.starts, X.ends, theta.AB[0], theta.CD[0],
                             theta.rho[0], self.mu0, self.Sigma0)

    def e_step(self, params_single, X):
        """Exact Kalman/RTS smoother at a point ``theta``: loglik, expected statistics,
        ``E ln p(x, y | theta)`` and the entropy ``loglik - E ln p(x, y | theta)``
        (the smoother's own entropy is kept in ``stats.smoother_entropy``)."""
        r = self._smoother(params_single, X)
        stats = self.stats_from_moments(X, r.omega, r.ups, r.cross, r.omega0,
                                        r.ups0)
        stats = stats._replace(smoother_entropy=float(np.sum(r.entropy)))
        ll = float(np.sum(r.log_terms))
        ecl = self.expected_complete_loglik(params_single, stats)
        return EStep(ll, stats, ecl, ll - ecl)

    def vb_refine(self, X, estep, max_iter=1000, tol=1e-8):
        """VBEM with the frozen hyperparameters, started by a VBM step from the
        statistics of ``estep`` (the exact posterior at a point: the first bound is then
        the CS score, Beal 2003, Corollary 2.5).  Each recorded bound is the collapsed
        ``H[q(x)] + log_complete_evidence(stats(q(x)))`` = F(q(x), VBM(q(x))); the VBE
        step is the estimator's variational Kalman smoother."""
        stats = estep.stats
        bounds = [float(estep.entropy + self.log_complete_evidence(stats))]
        for _ in range(int(max_iter)):
            q = self.q_from_stats(stats)
            r = smooth_states(X.Y, X.Us, X.Uo, X.starts, X.ends, q.M_AB,
                              q.M_CD, q.shape / q.rate, self.mu0, self.Sigma0,
                              Sigma_AB=q.Sigma_AB, Sigma_CD=q.Sigma_CD,
                              log_rho=digamma(q.shape) - np.log(q.rate))
            stats = self.stats_from_moments(X, r.omega, r.ups, r.cross, r.omega0,
                                            r.ups0)
            bounds.append(float(np.sum(r.entropy) + self.log_complete_evidence(stats)))
            if abs(bounds[-1] - bounds[-2]) < tol:
                break
        return bounds

    def point_from_stats(self, stats, kind="map", basis="softmax"):
        """M step.  MAP (default): rows of [A B] and [C D] at their conjugate posterior
        means, rho at the mode of its Gamma factor in the basis ``ln rho`` (``"softmax"``,
        the unconstrained basis) or ``rho`` (``"natural"``).  ``kind="ml"``: least
        squares and ``rho_s = T / residual sum of squares``."""
        W_z, R_AB, W_w, R_CD = self._blocks(stats)
        M_AB, M_CD, rho = point_m_step(W_z, R_AB, W_w, R_CD, stats.YY, stats.hidden.T,
                                       self.prior_ab, self.prior_cd, self.a0, self.b0, kind,
                                       basis, rows=stats.rows)
        return self._split(M_AB[None], M_CD[None], rho[None])

    def _objective(self, theta, loglik, kind, basis):
        if kind == "ml":
            return loglik
        obj = loglik + float(self.log_prior(theta)[0])
        if basis != "natural":
            obj += float(np.sum(np.log(ParameterBatch.from_blocks(theta).rho)))
        return obj

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=1000,
                  tol_per_case=1e-6):
        """EM for the MAP (or ML with ``kind="ml"``) point; best of ``n_init`` starts.

        The first start is the mean of the fitted q(theta), the others are seeded draws
        from it, screened as in :func:`~sklearn_vb._core.evidence.point_em.best_point_em`
        (EM with SQUAREM extrapolation).  The objective (``ln p(theta) + l(theta)``, plus
        ``sum ln rho`` in the default basis) never decreases; iteration stops when an EM
        step changes it by less than ``tol_per_case * n``; a best run that reaches
        ``max_iter`` raises a ``ConvergenceWarning``.
        """
        if kind not in ("map", "ml"):
            raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
        if basis not in ("softmax", "natural"):
            raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
        rng = _rng(rng)
        q = self.variational_posterior()
        n = max(1, self.n_cases(X))

        def start(i):
            return q.mean() if i == 0 else q.sample(rng, 1)

        def evaluate(theta):
            e = self.e_step(theta, X)
            return self._objective(theta, e.loglik, kind, basis), e.stats

        run = best_point_em(start, evaluate, lambda stats, _: self.point_from_stats(stats, kind, basis),
                            n_init=n_init, max_iter=max_iter, tol=tol_per_case * n,
                            owner=type(self).__name__, space=self.param_space)
        self.last_point_run_ = run
        return run.theta

