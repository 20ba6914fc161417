import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import VBSigmoidBeliefNetwork


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([VBSigmoidBeliefNetwork(binarize=0.0, max_iter=5, n_init=1, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
