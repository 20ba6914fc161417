"""Fully observed pairwise Markov random fields (Boltzmann machines and K-state models).

The package holds the estimator (``_estimator``), the feature layout (``layout``) and
the inference and MAP machinery (``inference``, on the belief-propagation kernels of
``_bp_kernels``) that :mod:`sklearn_vb.boltzmann` and :mod:`sklearn_vb.crf` build on,
and its view for the evidence estimators (``scoring_model``).
"""

from ._estimator import PairwiseMRF, prior_precision_vector

__all__ = ["PairwiseMRF", "prior_precision_vector"]
