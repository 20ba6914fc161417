"""The typed variational state of :class:`~sklearn_vb.lds.VBLinearDynamicalSystem`.

During a fit the estimator holds q(x) as a :class:`HiddenPosterior` (``_q_x``), its
expected statistics as a :class:`~sklearn_vb.lds.inference.HiddenStatistics`
(``_stats``) and q(theta) as a :class:`ParameterPosterior` (``_q_theta``); the bound's
KL terms are a :class:`KLTerms`, the pruning move keeps its proposal schedule in a
:class:`PruneSchedule` and the per-iteration ARD precisions go to a
:class:`HyperparameterTrace`, and the last bound computed is memoised in a
:class:`BoundMemo`.  q(x) and q(theta) are never changed in place: every
update builds a new one (the bound's memo identifies a state by these objects).

Shapes: ``k`` states, ``p`` outputs, ``ds`` / ``do`` present input columns of B / D
(the intercept included), ``N`` time steps and ``n`` sequences in all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .inference import SmootherResult

__all__ = ["BoundMemo", "HiddenPosterior", "HyperparameterTrace", "KLTerms", "ParameterPosterior",
           "PruneSchedule"]


@dataclass(eq=False, frozen=True)
class HiddenPosterior:
    """q(x): the smoothed marginals of every ``x_t`` and of each sequence's auxiliary
    ``x_0`` (Beal 2003, Section 5.3.5), with what the bound needs of the smoother."""

    #: (N, k) means ``<x_t>``
    omega: np.ndarray
    #: (N, k, k) covariances ``Cov(x_t)``
    ups: np.ndarray
    #: (N, k, k) cross-covariances ``Cov(x_{t-1}, x_t)``
    cross: np.ndarray
    #: (n, k) means of each sequence's ``x_0``
    omega0: np.ndarray
    #: (n, k, k) covariances of each sequence's ``x_0``
    ups0: np.ndarray
    #: (n,) entropy of q(x_{0:T}) per sequence
    entropy: np.ndarray
    #: (n,) the smoother's ``ln Z'`` per sequence (zeros before the first VBE step)
    ln_z: np.ndarray
    #: None, or (N,): ``ups`` and ``cross`` are then tables of the distinct covariances
    #: (sequences batched by the smoother share theirs), step t's at row ``cov_rows[t]``
    cov_rows: np.ndarray | None = None

    @classmethod
    def from_smoother(cls, res: SmootherResult) -> HiddenPosterior:
        """The q(x) of a smoother run (:func:`~sklearn_vb.lds.inference.smooth_states`)."""
        return cls(omega=res.omega, ups=res.ups, cross=res.cross, omega0=res.omega0,
                   ups0=res.ups0, entropy=res.entropy, ln_z=res.ln_z,
                   cov_rows=res.cov_rows)

    def keep_states(self, keep) -> HiddenPosterior:
        """The marginals of the state dimensions ``keep`` (an index array) only."""
        return HiddenPosterior(
            omega=np.ascontiguousarray(self.omega[:, keep]),
            ups=np.ascontiguousarray(self.ups[:, keep][:, :, keep]),
            cross=np.ascontiguousarray(self.cross[:, keep][:, :, keep]),
            omega0=np.ascontiguousarray(self.omega0[:, keep]),
            ups0=np.ascontiguousarray(self.ups0[:, keep][:, :, keep]),
            entropy=self.entropy,
            ln_z=self.ln_z,
            cov_rows=self.cov_rows,
        )


@dataclass(eq=False, frozen=True)
class ParameterPosterior:
    """q(A, B) q(C, D, rho) (Beal 2003, Section 5.3.1): the k rows of ``[A B]`` are
    independent ``N(M_AB[j], Sigma_AB)``; for each output s, ``rho_s ~ Ga(rho_shape,
    rho_rate[s])`` and row s of ``[C D]`` is ``N(M_CD[s], Sigma_CD / rho_s)``.

    A point estimate (``method="ml"`` or ``"map"``, :meth:`at_point`) is a q(theta)
    with no spread: zero covariances, ``log_rho = ln rho``, and no ``E_*``,
    ``logdet_*`` or Gamma posterior (None)."""

    #: (k, k + ds) means of the rows of ``[A B]``
    M_AB: np.ndarray
    #: (k + ds, k + ds) the covariance shared by the rows of ``[A B]``
    Sigma_AB: np.ndarray
    #: (p, k + do) means of the rows of ``[C D]``
    M_CD: np.ndarray
    #: (k + do, k + do) row s of ``[C D]`` has covariance ``Sigma_CD / rho_s``
    Sigma_CD: np.ndarray
    #: (p,) ``<rho>``, the mean noise precisions
    rho: np.ndarray
    #: (p,) ``<ln rho>``
    log_rho: np.ndarray
    #: (k + ds, k + ds) ``<[A B]'[A B]> = M_AB' M_AB + k Sigma_AB``
    E_AB: np.ndarray | None = None
    #: (k + do, k + do) ``<[C D]' diag(rho) [C D]> = M_CD' diag(<rho>) M_CD + p Sigma_CD``
    E_CD: np.ndarray | None = None
    #: ``ln|Sigma_AB|`` and ``ln|Sigma_CD|``
    logdet_Sigma_AB: float | None = None
    logdet_Sigma_CD: float | None = None
    #: shape (float) and (p,) rates of the Gamma posterior of rho
    rho_shape: float | None = None
    rho_rate: np.ndarray | None = None
    #: whether this is a point estimate (see :meth:`at_point`)
    point: bool = False

    @classmethod
    def at_point(cls, M_AB, M_CD, rho) -> ParameterPosterior:
        """The point ``(M_AB, M_CD, rho)`` as a q(theta) with no spread: the VBE
        kernel run on it is the exact smoother."""
        n_ab, n_cd = M_AB.shape[1], M_CD.shape[1]
        return cls(M_AB=M_AB, Sigma_AB=np.zeros((n_ab, n_ab)), M_CD=M_CD,
                   Sigma_CD=np.zeros((n_cd, n_cd)), rho=rho, log_rho=np.log(rho),
                   point=True)

    @property
    def k(self) -> int:
        """The state dimension."""
        return self.M_AB.shape[0]

    @property
    def ds(self) -> int:
        """The number of present input columns of B."""
        return self.M_AB.shape[1] - self.M_AB.shape[0]

    @property
    def do(self) -> int:
        """The number of present input columns of D."""
        return self.M_CD.shape[1] - self.M_AB.shape[0]


class KLTerms(NamedTuple):
    """The KL terms of the bound F: q(theta) against its prior, split into the
    marginals of B, rho and D and the conditionals of A and C (nats)."""

    KL_B: float
    KL_A_given_B: float
    KL_rho: float
    KL_D_given_rho: float
    KL_C_given_rho_D: float

    def total(self) -> float:
        """Their sum, the part of F that q(theta) subtracts."""
        return sum(self)


@dataclass
class PruneSchedule:
    """When the pruning move proposes a removal next (``sklearn_vb.lds._prune``)."""

    #: the first iteration at which a move is due by the interval
    next: int
    #: the first iteration from which a stalled bound makes a move due
    stall_from: int
    #: the bound at the last call (-inf before the first)
    last: float = -np.inf
    #: whether the current stall has had its round of proposals
    stalled: bool = False
    #: consecutive rejected moves (each doubles the interval, up to 8 times)
    rejected: int = 0


@dataclass
class HyperparameterTrace:
    """The ARD precisions after every VBE step of a fit: alpha and gamma as (k_max,)
    arrays in the original state labels (NaN once a dimension is removed), beta and
    delta as (ds,) and (do,) arrays."""

    alpha: list = field(default_factory=list)
    beta: list = field(default_factory=list)
    gamma: list = field(default_factory=list)
    delta: list = field(default_factory=list)

    def record(self, alpha, beta, gamma, delta):
        """Append one iteration's values."""
        self.alpha.append(alpha)
        self.beta.append(beta)
        self.gamma.append(gamma)
        self.delta.append(delta)

    def as_arrays(self) -> dict:
        """The trace as ``hyperparameter_history_``: name -> (n_iter, ...) array."""
        return {"alpha": np.asarray(self.alpha), "beta": np.asarray(self.beta),
                "gamma": np.asarray(self.gamma), "delta": np.asarray(self.delta)}


class BoundMemo(NamedTuple):
    """The last bound the estimator computed and the state it was computed for."""

    #: the data, q(x), q(theta) and statistics objects (compared by identity)
    state: tuple
    #: copies of the hyperparameters' values (compared by value)
    hyperparameters: tuple
    #: the bound F of that state
    value: float
