"""Variational Bayesian mixtures of factor analysers (Beal 2003, Chapter 4).

The package holds the estimator (``_estimator``) and the constraints on its parameters
(``_constraints``), the typed state and containers (``_state``), the VBEM updates and
the bound of a state (``_vbem``), the steps of one iteration (``_steps``), the changes
of its structure (``_structure``), the fitted attributes of a state (``_fitted``), its
point fits by EM (``_point``), the hyperparameter updates (``_hyper``), the rotation and
translation moves of the factor bases (``_rotate``), the birth/death search
(``_birth_death``) and the partial updates of its births (``_search``), online
natural-gradient steps (``_online``, run by ``_online_fit``), its numba kernels
(``kernels``, ``_batch_kernels``) and its view for the evidence estimators
(``scoring_model``).
"""

from ._estimator import VBMixtureFactorAnalysers, fa_free_parameters, max_identifiable_factors

__all__ = ["VBMixtureFactorAnalysers", "max_identifiable_factors", "fa_free_parameters"]
