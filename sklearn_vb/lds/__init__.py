"""Variational Bayesian linear dynamical system (linear-Gaussian state-space model).

The package holds the estimator (``_estimator``) and the pieces it runs: its typed
variational state (``_state``), the VBEM updates and bound (``_vbem``), the inputs (``_inputs``), its point fits (``_point``),
the rotation and translation moves (``_moves``) and its steps that apply them
(``_move_steps``), the pruning step (``_prune``), the ARD check (``_ard_check``), the
hyperparameter updates (``_hyper``), forecasts and sampling (``_forecast``), the
numba Kalman filter, smoother and simulator (``kalman``), the inference of the hidden
states that the estimator and the scoring model share (``inference``) and its view
for the evidence estimators (``scoring_model``, with its records of data and
parameters in ``_scoring_records``).
"""

from ._estimator import VBLinearDynamicalSystem

__all__ = ["VBLinearDynamicalSystem"]
