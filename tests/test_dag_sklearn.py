"""scikit-learn estimator checks for VBDiscreteDAG (default latent-class structure)."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import VBDiscreteDAG


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([VBDiscreteDAG(max_iter=5, n_init=1, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
