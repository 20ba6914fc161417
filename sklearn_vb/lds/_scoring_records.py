"""The records of the LDS scoring model (:mod:`sklearn_vb.lds.scoring_model`): the
prepared data, a completion of the hidden states and a batch of parameter sets.

Shapes: ``N`` time steps and ``n`` sequences in all, ``k`` states, ``p`` outputs,
``ds`` / ``do`` input columns of B / D (the intercept included), ``C`` parameter sets
in a batch.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .inference import data_moments, missing_outputs

__all__ = ["ParameterBatch", "ScoringData", "StateCompletion"]


class ScoringData(NamedTuple):
    """Sequences prepared for the scoring model
    (:meth:`~sklearn_vb.lds.scoring_model.LDSScoringModel.prepare_data`)."""

    #: (N, p) outputs, all sequences concatenated in time order
    Y: np.ndarray
    #: (N, ds) inputs that drive the states
    Us: np.ndarray
    #: (N, do) inputs that drive the outputs
    Uo: np.ndarray
    #: (n,) first row and (n,) one past the last row of every sequence (int64)
    starts: np.ndarray
    ends: np.ndarray
    #: (ds, ds) ``sum_t us_t us_t'``, (do, do) ``sum_t uo_t uo_t'``, (do, p) ``sum_t uo_t y_t'``
    UUs: np.ndarray
    UUo: np.ndarray
    UY: np.ndarray
    #: (p,) ``sum_t y_ts^2`` per output (of the observed entries)
    YY: np.ndarray
    #: (N, p) bool, the observed outputs (missing ones are NaN in ``Y``); None when
    #: every output is observed
    obs_mask: np.ndarray | None = None
    #: (N, p) ``Y`` with its missing entries set to 0 (``Y`` itself without them)
    Y0: np.ndarray | None = None

    @classmethod
    def from_sequences(cls, Y, Us, Uo, starts, ends) -> ScoringData:
        """The record of validated sequences (missing outputs as NaN), with its data
        statistics, which sum over the observed entries."""
        Y0, obs_mask = missing_outputs(Y)
        return cls(Y, Us, Uo, starts, ends, *data_moments(Y0, Us, Uo), obs_mask=obs_mask,
                   Y0=Y0)

    @property
    def observed_steps(self) -> np.ndarray:
        """(N,) bool, the steps with at least one observed output."""
        if self.obs_mask is None:
            return np.ones(self.Y.shape[0], dtype=np.bool_)
        return np.ascontiguousarray(self.obs_mask.any(axis=1))

    @property
    def kernel_mask(self) -> np.ndarray:
        """The ``obs_mask`` argument of the Kalman kernels: (N, p), or (0, p) when every
        output is observed."""
        if self.obs_mask is None:
            return np.zeros((0, self.Y.shape[1]), dtype=np.bool_)
        return np.ascontiguousarray(self.obs_mask)


class StateCompletion(NamedTuple):
    """A completion of the hidden states
    (:meth:`~sklearn_vb.lds.scoring_model.LDSScoringModel.random_completion`)."""

    #: (N, k) the states ``x_t`` of every time step
    x: np.ndarray
    #: (n, k) the auxiliary initial state ``x_0`` of every sequence
    x0: np.ndarray


class ParameterBatch(NamedTuple):
    """A batch of parameter sets by name; B and D are None when the model has no
    state / output inputs.  The scoring protocol passes parameter sets as a mapping
    from the names of the blocks of the model's ``param_space`` to arrays:
    :meth:`from_blocks` and :meth:`blocks` convert between the two."""

    #: (C, k, k)
    A: np.ndarray
    #: (C, k, ds) or None
    B: np.ndarray | None
    #: (C, p, k)
    C: np.ndarray
    #: (C, p, do) or None
    D: np.ndarray | None
    #: (C, p) the output noise precisions
    rho: np.ndarray

    @classmethod
    def from_blocks(cls, params) -> ParameterBatch:
        """The batch of a protocol mapping ``{block name: array}``, as float arrays."""
        def block(name):
            value = params.get(name)
            return None if value is None else np.asarray(value, dtype=float)
        return cls(A=block("A"), B=block("B"), C=block("C"), D=block("D"),
                   rho=block("rho"))

    @classmethod
    def split(cls, AB, CD, rho, k) -> ParameterBatch:
        """The batch of stacked rows ``[A B]`` (C, k, k + ds) and ``[C D]``
        (C, p, k + do) (B, D: None when of width 0)."""
        return cls(A=AB[:, :, :k], B=AB[:, :, k:] if AB.shape[2] > k else None,
                   C=CD[:, :, :k], D=CD[:, :, k:] if CD.shape[2] > k else None, rho=rho)

    def blocks(self, **asarray) -> dict:
        """The protocol mapping ``{block name: array}`` (B, D only when present), each
        array through ``np.ascontiguousarray(value, **asarray)``."""
        named = (("A", self.A), ("C", self.C), ("rho", self.rho), ("B", self.B), ("D", self.D))
        return {name: np.ascontiguousarray(value, **asarray) for name, value in named
                if value is not None}

    @property
    def AB(self) -> np.ndarray:
        """(C, k, k + ds) the rows of ``[A B]``."""
        return self.A if self.B is None else np.concatenate([self.A, self.B], axis=2)

    @property
    def CD(self) -> np.ndarray:
        """(C, p, k + do) the rows of ``[C D]``."""
        return self.C if self.D is None else np.concatenate([self.C, self.D], axis=2)

    def input_blocks(self):
        """``(B, D)`` as contiguous arrays, of width 0 where absent (for the kernels)."""
        n, k, p = self.A.shape[0], self.A.shape[1], self.C.shape[1]
        B = np.zeros((n, k, 0)) if self.B is None else np.ascontiguousarray(self.B)
        D = np.zeros((n, p, 0)) if self.D is None else np.ascontiguousarray(self.D)
        return B, D
