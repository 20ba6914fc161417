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
    ``entropy``: H[p(z | X, theta)] = loglik - expected_complete_loglik.  These are the
    quantities of the Cheeseman-Stutz approximation, Beal (2003), §2.6.2.

    Examples
    --------
    >>> from sklearn_vb.scoring import EStep
    >>> step = EStep(loglik=-10.0, stats={"counts": [3, 5]},
    ...              expected_complete_loglik=-12.5, entropy=2.5)
    >>> step.loglik == step.expected_complete_loglik + step.entropy
    True
    """

    loglik: float
    stats: Any
    expected_complete_loglik: float
    entropy: float


@runtime_checkable
class ScoringModel(Protocol):
    """The G0 core of the interface; the optional groups G1 to G6 are listed in the
    module docstring.

    ``X`` passed to every method is whatever ``prepare_data`` (e.g. :meth:`ScoringModelMixin.prepare_data`) returned for the
    user's ``X`` and fit parameters (``lengths=``, ``sequence_ids=``, ``U=`` ...).

    Examples
    --------
    A coin with a uniform prior on its bias: four methods make a model that annealed
    importance sampling (Neal 2001; Beal 2003, §6.3.5) can score, here against the exact
    evidence ``ln B(1 + heads, 1 + tails)``:

    >>> import numpy as np
    >>> from scipy.special import betaln
    >>> from sklearn_vb.scoring import (ParamBlock, ParamSpace, ScoringModel,
    ...                                 ScoringModelMixin, score)
    >>> class Coin(ScoringModelMixin):
    ...     param_space = ParamSpace([ParamBlock("p", (2,), "simplex")])
    ...     def log_prior(self, params):          # uniform density on the simplex
    ...         return np.zeros(len(params["p"]))
    ...     def sample_prior(self, rng, size):
    ...         return {"p": np.random.default_rng(rng).dirichlet([1.0, 1.0], size)}
    ...     def log_likelihood(self, params, X):  # X: 0/1 outcomes
    ...         heads = X.sum()
    ...         return (heads * np.log(params["p"][:, 1])
    ...                 + (len(X) - heads) * np.log(params["p"][:, 0]))
    ...     def n_cases(self, X):
    ...         return len(X)
    >>> isinstance(Coin(), ScoringModel)
    True
    >>> X = np.array([1, 0, 1, 1, 0, 1])
    >>> result = score(Coin(), X, "ais", n_temperatures=200, random_state=0)
    >>> result.bound
    'stochastic_lower'
    >>> bool(abs(result.log_evidence - betaln(5, 3)) < 3 * result.stderr)
    True
    """

    param_space: ParamSpace

    def log_prior(self, params) -> np.ndarray:
        """ln p(theta) of each of the ``C`` parameter sets of the batch, shape (C,)."""
        ...

    def sample_prior(self, rng, size: int) -> dict:
        """``size`` draws from the prior, a dict of blocks of shape ``(size,) + shape``."""
        ...

    def log_likelihood(self, params, X) -> np.ndarray:
        """ln p(X | theta), the hidden variables summed or integrated out, shape (C,)."""
        ...

    def n_cases(self, X) -> int:
        """The number of cases (rows or sequences) of the prepared data."""
        ...


@runtime_checkable
class VariationalPosterior(Protocol):
    """q(theta) over the model's ``param_space`` (group G5); densities in the same
    coordinates as ``log_prior``.

    The fitted ``q(theta)`` of VBEM (Beal 2003, §2.3.1); importance sampling uses it as
    proposal (§4.7) and so does variational MCMC (de Freitas et al. 2001, §4).

    Examples
    --------
    A fitted estimator's q through its scoring model:

    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.scoring import VariationalPosterior, scoring_model_for
    >>> X = np.array([[0], [0], [1], [1], [0], [2], [2], [1]] * 5)
    >>> hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X)
    >>> model = scoring_model_for(hmm)
    >>> q = model.variational_posterior(model.prepare_data(X))
    >>> isinstance(q, VariationalPosterior)
    True
    >>> draws = q.sample(np.random.default_rng(0), 4)
    >>> q.log_pdf(draws).shape
    (4,)
    >>> sorted(draws) == sorted(model.param_space.names)
    True
    """

    def sample(self, rng, size: int) -> dict:
        """``size`` draws from q, a dict of blocks of shape ``(size,) + shape``."""
        ...

    def log_pdf(self, params) -> np.ndarray:
        """ln q(theta) of each parameter set of the batch, shape (C,)."""
        ...

    def mean(self) -> dict:
        """The mean of q, a dict of blocks of shape ``(1,) + shape``."""
        ...


@runtime_checkable
class Kernel(Protocol):
    """An MCMC kernel leaving ``f_beta`` invariant for every beta (group G6).

    Optional model-side hooks read by ``sklearn_vb._core.evidence.mcmc_moves.make_kernel``:

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

    The transition operators of annealed importance sampling (Beal 2003, §6.3.5) and of
    reverse AIS (Grosse, Ghahramani & Adams 2015, §4.2.1), whose ``adjoint`` runs the
    schedule backwards.

    Examples
    --------
    The simplest valid kernel leaves every state where it is:

    >>> from sklearn_vb.scoring import Kernel
    >>> class Stay:
    ...     reversible = True
    ...     def step(self, params, X, beta, rng, n_steps=1):
    ...         return params
    ...     def adjoint(self):
    ...         return self
    >>> isinstance(Stay(), Kernel)
    True
    """

    reversible: bool

    def step(self, params, X, beta: float, rng, n_steps: int = 1):
        """``n_steps`` transitions of every chain of the batch ``params`` at inverse
        temperature ``beta``; returns the new batch."""
        ...

    def adjoint(self) -> "Kernel":
        """The kernel that runs these transitions backwards (itself when reversible)."""
        ...


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

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.scoring import ParamBlock, ParamSpace, ScoringModelMixin
    >>> class UnitGaussianMean(ScoringModelMixin):
    ...     param_space = ParamSpace([ParamBlock("mu", (1,))])
    ...     def log_prior(self, params):
    ...         return -0.5 * params["mu"][:, 0] ** 2
    ...     def log_likelihood(self, params, X):
    ...         return -0.5 * ((X[None, :] - params["mu"]) ** 2).sum(axis=1)
    >>> model = UnitGaussianMean()
    >>> X = model.prepare_data([1.0, 2.0])
    >>> model.log_joint({"mu": np.array([[0.0], [1.5]])}, X)
    array([-2.5  , -1.375])
    """

    def prepare_data(self, X, **fit_params):
        """The ``X`` that the other methods receive: here ``np.asarray(X)``, and a
        ValueError for any fit parameter."""
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
        """The number ``C`` of parameter sets in the batch ``params``."""
        return batch_size(params)
