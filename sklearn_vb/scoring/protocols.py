"""The model-side interface of the scoring layer.

Scorers see a fitted estimator only through a :class:`ScoringModel`: plain mathematical
functions of parameter batches and data, with every hyperparameter frozen at its fitted
value.  Its methods come in groups; every group beyond G0 is optional, and scorers check
what they need up front (:func:`require`) and raise
``NotImplementedError("<scorer> needs <method>")`` otherwise.

G0, core (IS, AIS, reverse AIS, BDMC, VMCMC, Laplace)
    ``param_space``, ``log_prior``, ``sample_prior``, ``log_likelihood`` (exact, the
    hidden variables summed or integrated out), ``n_cases``, ``prepare_data``.
G1, hidden variables (the complete-data dimension estimate of CS-dagger)
    ``random_completion`` (a uniformly random completion of the hidden variables) and
    ``log_complete_joint_per_case`` (ln p(s_i, y_i | theta) per case).
G2/G3, point estimates, E step and complete-data evidence (BIC, Laplace, CS)
    ``fit_point`` (EM for the MAP or ML point), ``e_step`` (exact, an :class:`EStep`),
    ``log_complete_evidence`` of expected statistics; optionally ``log_joint_gradient``
    (``(params_single, X) -> (ln p(theta) + ln p(X | theta), gradient)``, the gradient a
    dict of arrays shaped like the parameter blocks, in the constrained values), which
    the Laplace scorer pulls back to the unconstrained basis.
G4, counting (BIC, CS-dagger, alias corrections)
    ``n_parameters``, ``n_aliases`` (equivalent relabellings of the posterior, an exact
    integer) and optionally ``log_n_aliases`` (its logarithm from log-factorials, used by
    the alias corrections when present).
G5, variational posterior (VB, IS, VMCMC, AIS from q)
    ``variational_posterior(X)``, a :class:`VariationalPosterior`.
G6, MCMC moves (AIS, reverse AIS, VMCMC)
    the optional hooks listed under :class:`Kernel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .params import ParamSpace, batch_size

__all__ = [
    "ScoringModel",
    "VariationalPosterior",
    "Kernel",
    "EStep",
    "ScoringModelMixin",
    "require",
    "has",
]


@dataclass
class EStep:
    """Exact E step at a normalised parameter value (group G2/G3).

    ``loglik``: ln p(X | theta); ``stats``: expected sufficient statistics under
    p(z | X, theta); ``expected_complete_loglik``: E ln p(z, X | theta);
    ``entropy``: H[p(z | X, theta)] = loglik - expected_complete_loglik.
    """

    loglik: float
    stats: Any
    expected_complete_loglik: float
    entropy: float


@runtime_checkable
class ScoringModel(Protocol):
    """The G0 core of the interface; the optional groups G1 to G6 are listed in the
    module docstring.

    ``X`` passed to every method is whatever :meth:`prepare_data` returned for the
    user's ``X`` and fit parameters (``lengths=``, ``sequence_ids=``, ``U=`` ...).
    """

    param_space: ParamSpace

    def log_prior(self, params) -> np.ndarray: ...

    def sample_prior(self, rng, size: int) -> dict: ...

    def log_likelihood(self, params, X) -> np.ndarray: ...

    def n_cases(self, X) -> int: ...


@runtime_checkable
class VariationalPosterior(Protocol):
    """q(theta) over the model's ``param_space`` (group G5); densities in the same
    coordinates as ``log_prior``."""

    def sample(self, rng, size: int) -> dict: ...

    def log_pdf(self, params) -> np.ndarray: ...

    def mean(self) -> dict: ...


@runtime_checkable
class Kernel(Protocol):
    """An MCMC kernel leaving ``f_beta`` invariant for every beta (group G6).

    Optional model-side hooks read by :func:`sklearn_vb.scoring.mcmc_moves.make_kernel`:

    * ``annealing_kernel(X=None, scale=1.0) -> Kernel``: the model's own kernel, used by
      ``kernel="auto"`` of AIS, reverse AIS, BDMC (when the model has no compiled
      kernel).  Its tuning may use the prior, the fitted q and the data size, and may
      depend on beta, but is fixed when the kernel is built: never adapted to a chain's
      state or past samples during a scored run, which would bias the AIS weights (a
      separate pilot run is allowed).
      ``X`` is the prepared data, ``scale`` the scorer's ``rw_scale``.  Its
      ``adjoint()`` serves reverse AIS.
    * ``kernel_prior_precision() -> dict``: prior precision per unconstrained coordinate
      of each block (number or (dim_b,) array); otherwise estimated once from prior draws.
    * ``kernel_curvature() -> dict``: per-case data precision (curvature) per block.
    """

    reversible: bool

    def step(self, params, X, beta: float, rng, n_steps: int = 1): ...

    def adjoint(self) -> "Kernel": ...


def has(model, name):
    """True when ``model`` provides the callable ``name``."""
    return callable(getattr(model, name, None))


def require(model, scorer, *names):
    """Raise ``NotImplementedError("<scorer> needs <name>")`` for the first missing method."""
    for name in names:
        if not has(model, name):
            raise NotImplementedError(f"{scorer} needs {name}")


class ScoringModelMixin:
    """Shared conveniences for ScoringModels.

    Provides ``log_joint = log_prior + log_likelihood``, a default ``prepare_data``
    that accepts no fit parameters, and the tempered log-target used by the kernels.
    """

    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError(
                f"{type(self).__name__} accepts no fit parameters, got {sorted(fit_params)}."
            )
        X = np.asarray(X)
        return X

    def log_joint(self, params, X):
        """ln p(theta) + ln p(X | theta), shape (C,)."""
        return np.asarray(self.log_prior(params), dtype=float) + np.asarray(
            self.log_likelihood(params, X), dtype=float
        )

    def batch_size(self, params):
        return batch_size(params)
