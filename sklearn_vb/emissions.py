"""Emission families of :class:`~sklearn_vb.hmm.VBHiddenMarkov` (the public address of
:mod:`sklearn_vb.hmm.emissions`, where they are defined), with the typed containers of
their hyperparameters and statistics."""

from .hmm.emissions import (EMISSION_FAMILIES, CategoricalEmissions, CategoricalPosterior,
                            CategoricalPrior, CategoricalStats, EmissionFamily,
                            GaussianDiagEmissions, GaussianFullEmissions, GaussianPosterior,
                            GaussianPrior, GaussianStats, GaussianSummary, PoissonEmissions,
                            PoissonPosterior, PoissonPrior, PoissonStats, PoissonSummary,
                            emission_family)

__all__ = [
    "EmissionFamily",
    "CategoricalEmissions",
    "GaussianFullEmissions",
    "GaussianDiagEmissions",
    "PoissonEmissions",
    "CategoricalPrior",
    "CategoricalPosterior",
    "CategoricalStats",
    "GaussianPrior",
    "GaussianPosterior",
    "GaussianStats",
    "GaussianSummary",
    "PoissonPrior",
    "PoissonPosterior",
    "PoissonStats",
    "PoissonSummary",
    "EMISSION_FAMILIES",
    "emission_family",
]
