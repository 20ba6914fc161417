"""Warnings attributed to the user's line.

A warning raised deep inside a fit or a score is about the user's call, so it names the
first frame outside this package and scikit-learn (whose pipelines and searches call
ours): ``warnings.warn``'s fixed ``stacklevel`` would name a different frame for every
path that reaches the same warning."""

from __future__ import annotations

import os
import sys
import warnings

import sklearn

__all__ = ["warn_at_caller", "caller_stacklevel"]

_LIBRARY_DIRS = tuple(os.path.dirname(os.path.abspath(path)) + os.sep for path in (
    os.path.dirname(os.path.abspath(__file__)),  # sklearn_vb/_core -> sklearn_vb/
    sklearn.__file__))


def caller_stacklevel():
    """``stacklevel`` for a ``warnings.warn`` made by the calling function that names
    the first frame outside the package and scikit-learn (1: the calling function)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


def warn_at_caller(message, category=UserWarning):
    """``warnings.warn(message, category)`` at the first frame outside the package
    and scikit-learn."""
    warnings.warn(message, category, stacklevel=caller_stacklevel())
