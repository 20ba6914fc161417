"""Sequence models refuse a ``y`` they do not use unless it is a per-row target:
hmmlearn's ``fit(X, lengths)`` would otherwise fit ``X`` as one sequence."""

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov, VBLinearDynamicalSystem


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2))
    return X, [20, 25, 15]


def _hmm():
    return VBHiddenMarkov(2, emission="gaussian", max_iter=5, random_state=0)


def _lds():
    return VBLinearDynamicalSystem(n_states=1, max_iter=5, random_state=0)


@pytest.mark.parametrize("make", [_hmm, _lds], ids=["hmm", "lds"])
def test_hmmlearn_positional_lengths_are_refused(make):
    X, lengths = _data()
    with pytest.raises(ValueError, match=r"lengths="):
        make().fit(X, lengths)
    fitted = make().fit(X, lengths=lengths)
    with pytest.raises(ValueError, match=r"lengths="):
        fitted.score(X, lengths)
    assert np.isfinite(fitted.score(X, lengths=lengths))


@pytest.mark.parametrize("make", [_hmm, _lds], ids=["hmm", "lds"])
def test_a_per_row_target_is_ignored(make):
    # what a Pipeline or scikit-learn's checks hand an unsupervised estimator
    X, lengths = _data()
    y = np.arange(X.shape[0]) % 3
    a = make().fit(X, y, lengths=lengths)
    b = make().fit(X, lengths=lengths)
    assert a.lower_bound_ == pytest.approx(b.lower_bound_, rel=1e-12, abs=1e-12)
    with pytest.raises(ValueError, match=r"y is not used by fit.*\(60\)"):
        make().fit(X, y[:-1][:, None], lengths=lengths)


def test_partial_fit_refuses_positional_lengths():
    X, lengths = _data()
    with pytest.raises(ValueError, match=r"lengths="):
        _hmm().partial_fit(X, lengths)
