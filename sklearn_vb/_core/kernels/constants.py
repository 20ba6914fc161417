"""Numerical constants shared by the kernels and every layer above them."""

import numpy as np

LOG_2PI = np.log(2.0 * np.pi)
"""ln(2 pi), the normalising constant of a unit Gaussian density per dimension."""
