"""Variational Bayesian linear dynamical system (linear-Gaussian state-space model).

The package holds the estimator (``_estimator``), its point fits (``_point``), the
rotation and translation moves (``_moves``), the hyperparameter updates (``_hyper``),
the numba Kalman filter, smoother and simulator (``kalman``), the inference of the
hidden states that the estimator and the scoring model share (``inference``) and its
view for the evidence estimators (``scoring_model``).
"""

from ._estimator import VBLinearDynamicalSystem

__all__ = ["VBLinearDynamicalSystem"]
