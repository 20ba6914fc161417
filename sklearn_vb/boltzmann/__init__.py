"""Boltzmann machines with hidden units (binary pairwise MRFs, part of the nodes unobserved).

The package holds the estimator (``_estimator``), the visible likelihood with the hidden
units summed out (``_inference``) and its view for the evidence estimators
(``scoring_model``); the layout, inference and priors are those of :mod:`sklearn_vb.mrf`.
"""

from ._estimator import BoltzmannMachine, boltzmann_edges

__all__ = ["BoltzmannMachine", "boltzmann_edges"]
