"""The variational Bayesian EM loop shared by every estimator.

The template is defined in ``sklearn_vb/_core/base.py``, under the model packages;
this module is its public address.
"""

from ._core.base import (
    ACCELERATION_CONSTRAINT,
    BoundDecreaseError,
    BoundDecreaseWarning,
    Restart,
    Step,
    SquaremSteps,
    VBEMEstimator,
    bound_round_off,
    predicted_remaining_gain,
)

__all__ = ["VBEMEstimator", "BoundDecreaseError", "BoundDecreaseWarning", "SquaremSteps",
           "ACCELERATION_CONSTRAINT", "Restart", "Step", "predicted_remaining_gain"]
