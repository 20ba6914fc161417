"""Emission families of :class:`~sklearn_vb.VBHiddenMarkov`, as separate pieces.

Each family (:class:`EmissionFamily`) supplies everything that depends on how a frame is
drawn given its hidden state: validation of X, prior, statistics, conjugate update,
expected log-likelihood table, KL, parameter count, sampler, and the densities the
scoring layer needs.  The estimator and its scoring adapter both take their family from
the registry below, keyed by the estimator's ``emission`` and ``covariance_type``
arguments.  Adding a family means writing one module and one registry entry.
"""

from ._base import EmissionFamily, EmissionPoint
from ._categorical import (CategoricalEmissions, CategoricalPoint, CategoricalPosterior,
                           CategoricalPrior, CategoricalStats)
from ._gaussian import (GaussianDiagEmissions, GaussianDiagPoint, GaussianFullEmissions,
                        GaussianFullPoint, GaussianPosterior, GaussianPrior, GaussianStats,
                        GaussianSummary)
from ._poisson import (PoissonEmissions, PoissonPoint, PoissonPosterior, PoissonPrior,
                       PoissonStats, PoissonSummary)

__all__ = [
    "EmissionFamily",
    "EmissionPoint",
    "CategoricalEmissions",
    "GaussianFullEmissions",
    "GaussianDiagEmissions",
    "PoissonEmissions",
    "CategoricalPrior",
    "CategoricalPosterior",
    "CategoricalStats",
    "CategoricalPoint",
    "GaussianPrior",
    "GaussianPosterior",
    "GaussianStats",
    "GaussianSummary",
    "GaussianFullPoint",
    "GaussianDiagPoint",
    "PoissonPrior",
    "PoissonPosterior",
    "PoissonStats",
    "PoissonSummary",
    "PoissonPoint",
    "EMISSION_FAMILIES",
    "emission_family",
]

#: (emission, covariance_type) -> family class; covariance_type None when the family
#: has no covariance choice
EMISSION_FAMILIES = {
    ("categorical", None): CategoricalEmissions,
    ("gaussian", "full"): GaussianFullEmissions,
    ("gaussian", "diag"): GaussianDiagEmissions,
    ("poisson", None): PoissonEmissions,
}


#: one instance per family class: families are stateless
_INSTANCES = {}


def emission_family(emission, covariance_type=None):
    """The family object for ``VBHiddenMarkov(emission=..., covariance_type=...)``.

    ``covariance_type`` is ignored by families without a covariance choice.  Families
    are stateless, so one instance per class is shared.

    Examples
    --------
    >>> from sklearn_vb.emissions import emission_family
    >>> type(emission_family("gaussian", "full")).__name__
    'GaussianFullEmissions'
    >>> emission_family("poisson", "full") is emission_family("poisson")
    True
    """
    cls = EMISSION_FAMILIES.get((emission, covariance_type)) or EMISSION_FAMILIES.get(
        (emission, None)
    )
    if cls is None:
        known = sorted({e for e, _ in EMISSION_FAMILIES})
        raise ValueError(f"emission must be one of {known}; got {emission!r}.")
    if cls not in _INSTANCES:
        _INSTANCES[cls] = cls()
    return _INSTANCES[cls]
