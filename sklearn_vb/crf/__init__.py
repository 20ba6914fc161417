"""Linear-chain conditional random fields fitted at the MAP (or ML).

The package holds the estimator (``_estimator``), the feature layout and exact
inference (``_layout``, on the numba kernels of ``_kernels``; the MAP machinery is that
of :mod:`sklearn_vb.mrf`) and its view for the evidence estimators (``scoring_model``).
"""

from ._estimator import LinearChainCRF, crf_prior_precision

__all__ = ["LinearChainCRF", "crf_prior_precision"]
