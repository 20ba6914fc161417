"""scikit-learn estimator checks for VBDiscreteDAG (default latent-class structure)."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import VBDiscreteDAG


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
# the checks feed continuous data, which a categorical model refuses by default
@parametrize_with_checks([VBDiscreteDAG(max_iter=5, n_init=1, random_state=0,
                                        allow_float_categories=True)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
