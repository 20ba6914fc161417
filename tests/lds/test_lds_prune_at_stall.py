"""A removal tried when the fit stalls gets the iterations the fit has left."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.lds import VBLinearDynamicalSystem

#: yearly sunspot numbers 1850-2008 (statsmodels' ``sunspots`` data set, its last 159 years)
SUNSPOTS_1850 = np.array([
    66.6, 64.5, 54.1, 39, 20.6, 6.7, 4.3, 22.7, 54.8, 93.8, 95.8, 77.2, 59.1, 44, 47, 30.5,
    16.3, 7.3, 37.6, 74, 139, 111.2, 101.6, 66.2, 44.7, 17, 11.3, 12.4, 3.4, 6, 32.3, 54.3,
    59.7, 63.7, 63.5, 52.2, 25.4, 13.1, 6.8, 6.3, 7.1, 35.6, 73, 85.1, 78, 64, 41.8, 26.2,
    26.7, 12.1, 9.5, 2.7, 5, 24.4, 42, 63.5, 53.8, 62, 48.5, 43.9, 18.6, 5.7, 3.6, 1.4, 9.6,
    47.4, 57.1, 103.9, 80.6, 63.6, 37.6, 26.1, 14.2, 5.8, 16.7, 44.3, 63.9, 69, 77.8, 64.9,
    35.7, 21.2, 11.1, 5.7, 8.7, 36.1, 79.7, 114.4, 109.6, 88.8, 67.8, 47.5, 30.6, 16.3, 9.6,
    33.2, 92.6, 151.6, 136.3, 134.7, 83.9, 69.4, 31.5, 13.9, 4.4, 38, 141.7, 190.2, 184.8,
    159, 112.3, 53.9, 37.6, 27.9, 10.2, 15.1, 47, 93.8, 105.9, 105.5, 104.5, 66.6, 68.9, 38,
    34.5, 15.5, 12.6, 27.5, 92.5, 155.4, 154.6, 140.4, 115.9, 66.6, 45.9, 17.9, 13.4, 29.4,
    100.2, 157.6, 142.6, 145.7, 94.3, 54.6, 29.9, 17.5, 8.6, 21.5, 64.3, 93.3, 119.6, 111,
    104, 63.7, 40.4, 29.8, 15.2, 7.5, 2.9])


def test_default_fit_of_a_cycle_reaches_the_smaller_models_bound():
    # From four states the fit stalls with three (the cycle and a state that drives it
    # unobserved), creeping for thousands of iterations, while the two-state cycle has
    # a bound about 6 nats higher; removing the third state only shows its gain after
    # a plateau longer than prune_iter.
    y = SUNSPOTS_1850
    X = ((y - y.mean()) / y.std())[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = VBLinearDynamicalSystem(random_state=0).fit(X)
        two = VBLinearDynamicalSystem(n_states=2, random_state=0).fit(X)
    assert default.lower_bound_ > two.lower_bound_ - 1.0
    assert default.converged_ and default.n_iter_ <= default.max_iter
