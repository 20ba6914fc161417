"""scikit-learn estimator checks for PairwiseMRF (categories learned from the data)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import PairwiseMRF


@parametrize_with_checks([PairwiseMRF(n_states=None, )])
def test_sklearn_compatible(estimator, check):
    check(estimator)
