"""Discrete Bayesian networks with hidden nodes: VBEM, MAP/ML EM and exact inference.

The package holds the estimator (``_estimator``), the encoding of its data as integer
codes (``_encoding``), its online natural-gradient steps (``_online``, run by
``_online_fit``), the structure handling shared with the structure searches and with
:mod:`sklearn_vb.sbn` (``structure``), its numba
kernels (``kernels``, ``fit_kernels``, ``_evidence_kernels``) and its view for the
evidence estimators (``scoring_model``).
"""

from ._estimator import VBDiscreteDAG, alias_count, sample_states

__all__ = ["VBDiscreteDAG"]
