"""scikit-learn estimator checks for LinearChainCRF.

Without ``lengths`` the rows of ``X`` form one sequence, so the label of a row depends on
its neighbours: the checks that predict on reordered or subsetted rows and expect the
same per-row answers do not apply to a chain model."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_vb import LinearChainCRF

_CHAIN = ("the rows of X form one chain, so a row's prediction depends on its neighbours "
          "and changes when rows are reordered or dropped")
EXPECTED_FAILURES = {
    "check_methods_sample_order_invariance": _CHAIN,
    "check_methods_subset_invariance": _CHAIN,
}
_VITERBI = ("predict returns the jointly most probable label sequence (Viterbi), which can "
            "differ at some rows from the argmax of the per-row marginals of predict_proba")
for _name in ("check_classifiers_train", "check_classifiers_train(readonly_memmap=True)",
              "check_classifiers_train(readonly_memmap=True,X_dtype=float32)"):
    EXPECTED_FAILURES[_name] = _VITERBI


@parametrize_with_checks([LinearChainCRF(bias=True)],
                         expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_compatible(estimator, check):
    check(estimator)
