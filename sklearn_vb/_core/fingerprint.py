"""A fingerprint of the data an estimator was fitted on.

A VB estimator's ``lower_bound_`` is a bound on ``ln p(X_train)``; the ``vb`` score
may return it only for that data.  The fingerprint lets it recognise the training
data cheaply: the shapes and a hash of the values of X and of every fit parameter
(``lengths``, ``sequence_ids``, ``U``), with numbers compared as float64 (so that a
list of ints and the same values as a float array are the same data) and anything
else (strings, categories) by its text.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["data_fingerprint", "fingerprint_mismatch"]


def _update(digest, value):
    if value is None:
        digest.update(b"None")
        return
    if hasattr(value, "__dask_tokenize__"):
        # a dask collection: its token names its graph; hashing values would compute it
        digest.update(f"dask{value.__dask_tokenize__()}".encode())
        return
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "biuf":
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        digest.update(f"n{arr.shape}".encode())
        digest.update(arr.tobytes())
    else:  # strings, objects (pandas categories, mixed columns)
        digest.update(f"o{arr.shape}".encode())
        digest.update(repr(arr.tolist()).encode())


def _digest(value):
    digest = hashlib.blake2b(digest_size=16)
    _update(digest, value)
    return digest.hexdigest()


def data_fingerprint(X, fit_params):
    """``{name: hex digest}`` of ``X`` (under ``"X"``) and of every non-None fit
    parameter."""
    out = {"X": _digest(X)}
    out.update({name: _digest(value) for name, value in fit_params.items() if value is not None})
    return out


def fingerprint_mismatch(fingerprint, X, fit_params):
    """The name of the first of ``X`` and the given (non-None) ``fit_params`` that
    differs from ``fingerprint``, or None when they are the fingerprinted data.  A fit
    parameter left out is not compared (the rows of X identify the data; the
    estimator's own sequences, inputs are what its bound used)."""
    if fingerprint is None:
        return "X"
    if fingerprint.get("X") != _digest(X):
        return "X"
    for name, value in fit_params.items():
        if value is not None and fingerprint.get(name) != _digest(value):
            return name
    return None
