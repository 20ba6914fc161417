"""Shared input checks: messages name the argument, inputs are never modified."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sklearn_vb._core.validation import (
    check_finite_2d,
    check_sequences,
    check_symbols,
    sequence_bounds,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=8))
def test_lengths_and_sequence_ids_describe_the_same_split(lengths):
    n = sum(lengths)
    ids = np.repeat(np.arange(len(lengths)) * 7 + 3, lengths)  # arbitrary distinct labels
    ids_before = ids.copy()
    from_lengths = check_sequences(n, lengths=lengths)
    from_ids = check_sequences(n, sequence_ids=ids)
    np.testing.assert_array_equal(from_lengths, lengths)
    np.testing.assert_array_equal(from_ids, lengths)
    np.testing.assert_array_equal(ids, ids_before)
    starts, ends = sequence_bounds(from_lengths)
    assert starts[0] == 0 and ends[-1] == n
    np.testing.assert_array_equal(ends - starts, lengths)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=8), st.integers(-5, 5).filter(lambda d: d != 0))
def test_lengths_that_do_not_sum_to_n_are_rejected(lengths, delta):
    n = sum(lengths) + delta
    if n < 1:
        n = sum(lengths) + abs(delta)
    with pytest.raises(ValueError, match="lengths sum to"):
        check_sequences(n, lengths=lengths)


def test_sequence_errors_name_the_argument():
    with pytest.raises(ValueError, match="empty sequences"):
        check_sequences(5, lengths=[5, 0])
    with pytest.raises(ValueError, match="lengths must be integers"):
        check_sequences(5, lengths=[2.5, 2.5])
    with pytest.raises(ValueError, match="sequence_ids must be 1-D"):
        check_sequences(5, sequence_ids=[0, 0, 1])
    with pytest.raises(ValueError, match="contiguous"):
        check_sequences(4, sequence_ids=[0, 1, 0, 1])
    with pytest.raises(ValueError, match="not both"):
        check_sequences(2, lengths=[2], sequence_ids=[0, 0])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_finite_2d_accepts_exactly_the_finite_arrays(X):
    before = X.copy()
    if np.all(np.isfinite(X)):
        out = check_finite_2d(X)
        np.testing.assert_array_equal(out, X)
    else:
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            check_finite_2d(X)
    np.testing.assert_array_equal(np.isnan(X), np.isnan(before))
    np.testing.assert_array_equal(X[~np.isnan(X)], before[~np.isnan(before)])


def test_finite_2d_messages():
    with pytest.raises(ValueError, match="Y must be a 2-D array"):
        check_finite_2d(np.zeros(3), "Y")
    with pytest.raises(ValueError, match="fitted with 2"):
        check_finite_2d(np.zeros((3, 3)), n_features=2)
    with pytest.raises(ValueError, match="must be numeric"):
        check_finite_2d([["a", "b"]])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 30), elements=st.integers(-3, 12)), st.integers(1, 10))
def test_symbols_inside_the_alphabet_pass_and_others_are_named(symbols, n_symbols):
    before = symbols.copy()
    if symbols.min() >= 0 and symbols.max() < n_symbols:
        np.testing.assert_array_equal(check_symbols(symbols, n_symbols=n_symbols), symbols)
        np.testing.assert_array_equal(check_symbols(symbols[:, None].astype(float), n_symbols=n_symbols), symbols)
    else:
        with pytest.raises(ValueError, match="X contains"):
            check_symbols(symbols, n_symbols=n_symbols)
    np.testing.assert_array_equal(symbols, before)


def test_symbol_messages():
    with pytest.raises(ValueError, match="integer symbols"):
        check_symbols(np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="one column"):
        check_symbols(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        check_symbols(np.array([0.0, np.nan]))
