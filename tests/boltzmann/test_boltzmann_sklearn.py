"""scikit-learn estimator checks for BoltzmannMachine."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import BoltzmannMachine


@parametrize_with_checks([BoltzmannMachine(n_hidden=1, n_init=1, max_iter=50, threshold=0.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
