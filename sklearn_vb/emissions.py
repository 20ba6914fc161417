"""Emission families of :class:`~sklearn_vb.hmm.VBHiddenMarkov` (the public address of
:mod:`sklearn_vb.hmm.emissions`, where they are defined)."""

from .hmm.emissions import (EMISSION_FAMILIES, CategoricalEmissions, EmissionFamily,
                            GaussianDiagEmissions, GaussianFullEmissions, PoissonEmissions,
                            emission_family)

__all__ = [
    "EmissionFamily",
    "CategoricalEmissions",
    "GaussianFullEmissions",
    "GaussianDiagEmissions",
    "PoissonEmissions",
    "EMISSION_FAMILIES",
    "emission_family",
]
