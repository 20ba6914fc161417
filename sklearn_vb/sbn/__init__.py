"""Bayesian sigmoid (logistic) belief networks fitted by variational EM with the
Jaakkola–Jordan bound.

The package holds the estimator (``_estimator``, with the structure parsing of
:mod:`sklearn_vb.dag`), its numba kernels (``_kernels``; ``mcmc_kernels``, the compiled
chain of :class:`sklearn_vb.mcmc.VariationalMCMC`) and its view for the evidence
estimators (``scoring_model``).
"""

from ._estimator import (SBNPatterns, VBSigmoidBeliefNetwork, expand_patterns,
                         hidden_automorphisms, map_weights, sample_states)

__all__ = ["VBSigmoidBeliefNetwork", "SBNPatterns", "map_weights"]
