"""Input checks shared by the estimators.

Every message names the argument that is wrong, and no function modifies its input
(arrays are copied whenever a conversion is needed).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_all_finite",
    "validate_float_data",
    "MISSING_VALUES_UNSUPPORTED",
    "MISSING_IN_SEQUENCES",
    "check_finite_2d",
    "check_symbols",
    "check_sequences",
    "check_unused_y",
    "validate_categorical_data",
    "categorical_column",
    "lookup_categories",
    "fitted_from_sequence_ids",
    "check_sequences_routed",
    "check_lengths",
    "check_sequence_ids",
    "sequence_bounds",
]


#: What a model without missing-value support tells the user to do instead.
MISSING_VALUES_UNSUPPORTED = (
    "{owner} has no missing-value support: drop or impute the incomplete rows "
    "(sklearn.impute) before fitting."
)

#: The same for sequence models, where a dropped row would join two time steps.
MISSING_IN_SEQUENCES = (
    "{owner} has no missing-value support: every frame must be fully observed. Split "
    "the sequence at the missing frames (lengths= or sequence_ids=) or impute them."
)


def check_all_finite(X, name="X", *, owner=None, missing=None):
    """Raise a ``ValueError`` naming ``name`` and the first non-finite entry of ``X``.

    NaN and infinity get different messages: NaN usually marks a missing value, so the
    message says what the estimator (``owner``) supports instead (``missing``, a text
    with an optional ``{owner}`` field); infinity is simply not a value.
    """
    if sp.issparse(X):
        # only the stored entries can be non-finite; report the first in row order
        coo = sp.coo_matrix(X)
        bad = np.flatnonzero(~np.isfinite(coo.data))
        if bad.size == 0:
            return
        k = bad[np.lexsort((coo.col[bad], coo.row[bad]))[0]]
        where, value = (coo.row[k], coo.col[k]), coo.data[k]
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "fc":
            return
        finite = np.isfinite(arr)
        if finite.all():
            return
        where = np.argwhere(~finite)[0]
        value = arr[tuple(where)]
    at = ", ".join(f"{axis} {int(i)}" for axis, i in zip(("row", "column", "index"), where))
    if np.isnan(value):
        text = f"{name} contains NaN (first at {at})."
        if missing is not None:
            text += " " + missing.format(owner=owner or "this estimator")
        raise ValueError(text)
    raise ValueError(
        f"{name} contains infinity (first at {at}); every value must be finite."
    )


#: Largest magnitude accepted by the Gaussian and count models: their sufficient
#: statistics hold squares and products of values summed over rows, which overflow
#: float64 (about 1.8e308) long before the values themselves do.
MAX_ABS_VALUE = 1e100


def validate_float_data(estimator, X, *, reset, missing=MISSING_VALUES_UNSUPPORTED,
                        max_abs=MAX_ABS_VALUE, allow_nan=False, **kwargs):
    """scikit-learn's ``validate_data`` to float64, with this package's messages.

    Non-finite values are reported by :func:`check_all_finite` (saying what the
    estimator supports instead of scikit-learn's generic advice), non-numeric values
    name ``X``.  With ``allow_nan`` NaN passes (for estimators that marginalise missing
    values) and only infinity is refused.  ``kwargs`` go to ``validate_data``.
    """
    from sklearn.utils.validation import validate_data

    try:
        out = validate_data(estimator, X, reset=reset, dtype=np.float64,
                            ensure_all_finite=False, **kwargs)
    except ValueError as exc:
        text = str(exc)
        if "convert" in text or "dtype" in text:
            raise ValueError(f"X must be numeric; {text}") from None
        if "Expected 2D" in text or "2-dimensional" in text or "dim 3" in text:
            raise ValueError(
                f"X must be a 2-D array of shape (n_samples, n_features); {text}"
            ) from None
        if not text.startswith("X "):
            raise ValueError(f"X: {text}") from None
        raise
    if sp.issparse(out):  # estimators that pass accept_sparse: the stored entries
        if allow_nan:
            raise ValueError("X: missing values (NaN) need a dense X, got a sparse matrix.")
        check_all_finite(out, "X", owner=type(estimator).__name__, missing=missing)
        values = out.data
    else:
        check_all_finite(np.where(np.isnan(out), 0.0, out) if allow_nan else out, "X",
                         owner=type(estimator).__name__, missing=missing)
        values = out
    if max_abs is not None and values.size:
        if allow_nan:  # (0 when every value is missing)
            largest = float(np.max(np.abs(values), initial=0.0,
                                   where=~np.isnan(values)))
        else:
            largest = float(np.max(np.abs(values)))
        if largest > max_abs:
            raise ValueError(
                f"X holds values as large as {largest:.3g} in magnitude; squares and "
                "products of such values overflow float64 in the model's statistics. "
                f"Rescale X (e.g. sklearn.preprocessing.StandardScaler) below {max_abs:g}."
            )
    return out


def check_finite_2d(X, name="X", *, min_rows=1, dtype=np.float64, n_features=None):
    """Return ``X`` as a finite 2-D float array (a copy if conversion was needed).

    A 1-D array is rejected rather than silently reshaped: for sequence models a 1-D
    array is ambiguous (one long univariate sequence or one multivariate frame).
    """
    try:
        arr = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; could not convert it: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got an array "
            f"with {arr.ndim} dimension(s) and shape {arr.shape}. Reshape 1-D data with "
            "X.reshape(-1, 1)."
        )
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} row(s); got {arr.shape[0]}.")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has 0 feature(s) (shape {arr.shape}); at least one is required.")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})."
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} has {arr.shape[1]} feature(s), but the model was fitted with {n_features}."
        )
    return arr


def check_symbols(X, name="X", *, n_symbols=None):
    """Return categorical observations as a 1-D int64 array of symbols.

    Accepts a 1-D array or a 2-D array with one column.  Values must be integers
    (floats with integral values are accepted) in ``[0, n_symbols)``.
    """
    arr = np.asarray(X)
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise ValueError(
                f"{name} of symbols must have one column; got shape {arr.shape}."
            )
        arr = arr[:, 0]
    elif arr.ndim != 1:
        raise ValueError(f"{name} of symbols must be 1-D or one column; got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty.")
    if arr.dtype.kind not in "iub":
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must hold integer symbols; got dtype {arr.dtype}."
            ) from None
        if not np.all(np.isfinite(as_float)):
            raise ValueError(f"{name} contains NaN or infinity; symbols must be integers.")
        if not np.all(as_float == np.round(as_float)):
            raise ValueError(f"{name} must hold integer symbols; found non-integer values.")
        arr = as_float
    symbols = arr.astype(np.int64)
    if symbols.min() < 0:
        raise ValueError(f"{name} contains negative symbol {symbols.min()}; symbols must be >= 0.")
    if n_symbols is not None and symbols.max() >= n_symbols:
        raise ValueError(
            f"{name} contains symbol {symbols.max()}, outside the alphabet [0, {n_symbols}) "
            f"(n_symbols={n_symbols})."
        )
    return symbols


def check_sequences(n_samples, lengths=None, sequence_ids=None):
    """Return validated sequence lengths (int64 array summing to ``n_samples``).

    ``lengths`` follows hmmlearn (consecutive blocks of ``X``).  ``sequence_ids``
    is sample-aligned, one id per row, and survives sklearn's cross-validation
    splitters; rows of one sequence must be contiguous and in time order.  With
    neither, ``X`` is one sequence.
    """
    if lengths is not None and sequence_ids is not None:
        raise ValueError("Pass either lengths or sequence_ids, not both.")
    if sequence_ids is not None:
        ids = np.asarray(sequence_ids)
        if ids.ndim != 1 or ids.shape[0] != n_samples:
            raise ValueError(
                f"sequence_ids must be 1-D with one id per row of X ({n_samples}); "
                f"got shape {ids.shape}."
            )
        if n_samples == 0:
            raise ValueError("X is empty.")
        return check_sequence_ids(ids, "sequence_ids")[1]
    if lengths is None:
        if n_samples == 0:
            raise ValueError("X is empty.")
        return np.array([n_samples], dtype=np.int64)
    lens = check_lengths(lengths, "lengths")
    if int(lens.sum()) != n_samples:
        raise ValueError(
            f"lengths sum to {int(lens.sum())} but X has {n_samples} rows. If X was split "
            "by cross-validation (GridSearchCV, cross_val_score), a lengths array cannot "
            "follow the split: pass sequence_ids= (one id per row, "
            "sklearn_vb.model_selection.lengths_to_sequence_ids(lengths)) and "
            "cv=SequenceKFold(...) with groups=sequence_ids."
        )
    return lens


def check_unused_y(y, X, method="fit"):
    """Refuse a ``y`` that a sequence model does not use unless it is a per-row target.

    scikit-learn hands an unsupervised estimator the ``y`` of a pipeline or a check
    (one entry per row of ``X``), which is ignored.  Anything else is a mistake, most
    often hmmlearn's ``fit(X, lengths)``: here the second positional argument is ``y``,
    and taking the lengths for an ignored target would fit ``X`` as one sequence."""
    # X's own check refuses sparse and scalar X with a message about X
    if y is None or sp.issparse(X):
        return
    shape_X = _shape(X)
    if not shape_X:
        return
    n_rows = shape_X[0]
    shape = _shape(y)
    if len(shape) >= 1 and shape[0] == n_rows:
        return
    hint = ("; sequence lengths go in lengths= (hmmlearn's fit(X, lengths) puts them in y)"
            if len(shape) == 1 else "")
    raise ValueError(f"y is not used by {method}: it must be None or have one entry per "
                     f"row of X ({n_rows}), got shape {shape}{hint}.")


def _shape(a):
    """The shape of an array-like without computing a lazy (dask) array."""
    shape = getattr(a, "shape", None)
    return tuple(np.asarray(a).shape if shape is None else shape)


def check_lengths(lengths, name="lengths"):
    """Return hmmlearn-style sequence lengths as a non-empty 1-D int64 array of
    positive values (floats with integral values are accepted)."""
    lens = np.asarray(lengths)
    if lens.ndim != 1 or lens.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of ints; got shape {lens.shape}.")
    if lens.dtype.kind not in "iu":
        if lens.dtype.kind == "f" and np.all(lens == np.round(lens)):
            lens = lens.astype(np.int64)
        else:
            raise ValueError(f"{name} must be integers; got dtype {lens.dtype}.")
    if np.any(lens <= 0):
        raise ValueError(f"{name} must be positive: empty sequences are not allowed.")
    return lens.astype(np.int64)


def check_sequence_ids(ids, name="sequence_ids"):
    """Check that row-aligned sequence ids label contiguous blocks of rows.

    Returns ``(ids, lengths)``: the ids as a 1-D array and the int64 length of every
    block, in row order.  An id that appears in two separate blocks is an error (the
    rows of one sequence must be consecutive, in time order).
    """
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array with one id per row; got shape {ids.shape}."
        )
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change])
    firsts = ids[starts]
    _, first_block = np.unique(firsts, return_index=True)
    if first_block.size != firsts.size:
        again = firsts[np.setdiff1d(np.arange(firsts.size), first_block)[0]].item()
        raise ValueError(
            f"{name} must label contiguous blocks of rows: id {again!r} appears in two "
            "separate blocks (sort X by sequence, keeping time order within each)."
        )
    return ids, np.diff(np.append(starts, ids.size)).astype(np.int64)


def sequence_bounds(lengths):
    """Start and end offsets (end exclusive) of each sequence, as int64 arrays."""
    ends = np.cumsum(lengths).astype(np.int64)
    starts = ends - np.asarray(lengths, dtype=np.int64)
    return starts, ends


def fitted_from_sequence_ids(sequence_ids):
    """Whether a fit received several sequences through ``sequence_ids`` (the form
    used inside scikit-learn's cross-validation)."""
    if sequence_ids is None:
        return False
    ids = np.asarray(sequence_ids)
    return bool(ids.ndim == 1 and ids.size > 1 and np.any(ids[1:] != ids[:-1]))


def check_sequences_routed(estimator, lengths, sequence_ids):
    """Refuse ``score(X)`` without sequences from a model fitted with ``sequence_ids``.

    Inside ``cross_val_score`` / ``GridSearchCV`` the fit receives the training rows'
    ``sequence_ids`` but, unless metadata routing is enabled, ``score`` receives none
    and would score the whole test fold as one long sequence, joining unrelated
    sequences.  That silently wrong number is refused, with the way to route the ids.
    """
    if lengths is not None or sequence_ids is not None:
        return
    if not getattr(estimator, "_fitted_from_sequence_ids", False):
        return
    name = type(estimator).__name__
    raise ValueError(
        f"{name}.score got neither lengths nor sequence_ids, but the model was fitted "
        "with sequence_ids (several sequences): X would be scored as one long sequence. "
        "Pass sequence_ids= (or lengths=[len(X)] for a single sequence). In "
        "cross_val_score / GridSearchCV, enable metadata routing so that the test fold's "
        "sequence_ids reach score: sklearn.set_config(enable_metadata_routing=True), "
        "estimator.set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True), "
        "cv=SequenceKFold(...), and pass cross_val_score(..., params={'sequence_ids': ids, "
        "'groups': ids}) or GridSearchCV(...).fit(X, sequence_ids=ids, groups=ids)."
    )


def _is_missing(value):
    """None, a float NaN, pandas.NA or NaT."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(value != value)
    return type(value).__name__ in ("NAType", "NaTType")


def validate_categorical_data(estimator, X, *, reset):
    """``validate_data`` for categorical tables (numbers, strings, pandas categoricals).

    Returns ``(columns, declared)``: a list of 1-D columns, each a float64 array (NaN =
    missing) or an object array of labels (None = missing), see
    :func:`categorical_column`; and, per column, the category list of a pandas
    categorical column (in its declared order) or None.
    """
    from sklearn.utils.validation import validate_data

    declared = None
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        declared = [list(dt.categories) if type(dt).__name__ == "CategoricalDtype" else None
                    for dt in dtypes]
    arr = validate_data(estimator, X, dtype=None, ensure_all_finite=False, reset=reset,
                        ensure_min_samples=1)
    if arr.dtype.kind == "c":
        raise ValueError("X must hold numbers or labels; got complex values.")
    if declared is None:
        declared = [None] * arr.shape[1]
    columns = [categorical_column(arr[:, c], c) for c in range(arr.shape[1])]
    return columns, declared


def categorical_column(col, index=None):
    """One column of a categorical table as float64 (numbers; NaN = missing) or as an
    object array of string labels (None = missing).

    A column mixing numbers and strings is refused: ``1`` and ``"1"`` would otherwise
    become two categories or be silently merged.
    """
    where = "" if index is None else f" column {index}"
    if col.dtype.kind in "iub":
        return col.astype(np.float64)
    if col.dtype.kind == "f":
        out = col.astype(np.float64)
    elif col.dtype.kind in "US":
        return col.astype(str).astype(object)
    else:
        missing = np.fromiter((_is_missing(v) for v in col), dtype=bool, count=col.size)
        present = col[~missing]
        strings = np.fromiter((isinstance(v, (str, bytes, np.str_)) for v in present),
                              dtype=bool, count=present.size)
        if strings.all() and present.size:
            out = np.empty(col.size, dtype=object)
            out[~missing] = present.astype(str)
            out[missing] = None
            return out
        if strings.any():
            raise ValueError(
                f"X{where} mixes numbers and strings (e.g. {present[~strings][0]!r} and "
                f"{present[strings][0]!r}); give one kind of label per column."
            )
        try:
            out = np.full(col.size, np.nan)
            out[~missing] = present.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"X{where} holds values that are neither numbers nor "
                            f"strings: {exc}") from None
    if np.isinf(out).any():
        raise ValueError(
            f"X{where} contains infinity (first at row {int(np.flatnonzero(np.isinf(out))[0])}); "
            "NaN marks a missing value, infinity is not a category."
        )
    return out


def lookup_categories(categories, values):
    """Index of every value in ``categories`` (any order), -1 when absent."""
    categories = np.asarray(categories)
    order = np.argsort(categories, kind="stable")
    sorted_cats = categories[order]
    pos = np.minimum(np.searchsorted(sorted_cats, values), sorted_cats.size - 1)
    hit = sorted_cats[pos] == values
    return np.where(hit, order[pos], -1)
