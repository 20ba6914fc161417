"""scikit-learn estimator checks for VBLinearDynamicalSystem."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb.lds import VBLinearDynamicalSystem

# The rows of X are time steps of one sequence, not exchangeable samples: the
# one-step-ahead predictions and scores of a row depend on the rows before it, so
# reordering or subsetting the rows changes them by design.
EXPECTED_FAILED = {
    "check_methods_sample_order_invariance":
        "rows are time steps of a sequence; predictions depend on their order",
    "check_methods_subset_invariance":
        "rows are time steps of a sequence; a subset is a different sequence",
}


@parametrize_with_checks(
    [VBLinearDynamicalSystem(n_states=2, max_iter=5, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
