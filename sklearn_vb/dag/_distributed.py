"""Batch VBEM of a discrete DAG on a dask array: the VBE step runs where the chunks live.

Every row chunk is encoded and compressed to its distinct patterns once, where it is
(:func:`~sklearn_vb.dag.structure.prepare_patterns`), and kept there
(:mod:`sklearn_vb._core.distributed`).  Every VBE step then runs one task per chunk that
calls the function the in-memory fit runs on its patterns
(:func:`~sklearn_vb.dag._vbe.vbe_statistics`) with the flat ``E[ln theta]`` as argument,
and the client adds the expected counts, ``sum w ln Z`` and the entropy of q(hidden) in
chunk order.  The VBM step, the bound, the convergence test and SQUAREM run on the
client, in the iteration of :class:`sklearn_vb.base.VBEMEstimator` that the compiled
in-memory run reproduces (:mod:`sklearn_vb.dag.fit_kernels`), so both fits agree to the
rounding of the sums.

The categories of the columns whose cardinality is not declared are the union of every
chunk's distinct values (one pass before the fit), as in memory.  Numeric arrays only
(integer codes or numbers, NaN for missing); no ``sample_weight``.

Nothing here imports dask at module level: the package must import without it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.distributed import chunk_runner
from .._core.validation import categorical_column, validate_categorical_data
from ._encoding import (encode_columns, learn_categories, observed_columns, prior_flat,
                        start_tables)
from .structure import CPTLayout, observed_column_names, parse_structure, prepare_patterns

__all__ = ["DaskFitData", "dask_fit_data"]


@dataclass
class DaskFitData:
    """The rows of a fit on a dask array: the compressed chunks where they live and
    what the fit needs of the whole (the counterpart of the estimator's ``_FitData``).

    Attributes
    ----------
    chunks : list
        Every non-empty row chunk as its ``PatternData``: futures of the client's
        cluster, or delayed objects without a client.
    layout : CPTLayout
    prior : ndarray
        The flat Dirichlet prior.
    n_samples : int
    start_tables : list or None
        Starting log tables of ``init_params="posterior"``.
    """

    chunks: list
    layout: CPTLayout
    prior: np.ndarray
    n_samples: int
    runner: Any
    start_tables: list | None = None

    def chunk_sum(self, fn, *args):
        """``fn(patterns, *args)`` of every chunk added up in chunk order."""
        results = self.runner.map(fn, self.chunks, args)
        total = results[0]
        for result in results[1:]:
            total = total + result
        return total


def _column_values(block, columns):
    """The distinct observed values of every column ``columns`` of a chunk."""
    block = np.asarray(block)
    out = []
    for c in columns:
        col = categorical_column(block[:, c], c)
        out.append(np.unique(col[~np.isnan(col)]))
    return out


def _prepare_chunk(block, encoder):
    """A chunk's rows encoded by ``encoder`` (a copy of the estimator holding the
    learned categories) and compressed to patterns."""
    block = np.asarray(block)
    codes = encode_columns([categorical_column(block[:, c], c) for c in encoder._columns],
                           encoder._structure, encoder._categories)[0]
    return prepare_patterns(codes, None, encoder._layout,
                            max_configurations=encoder.max_configurations)


def dask_fit_data(est, X):
    """Validate the dask array ``X`` chunk by chunk where the chunks live, set the
    estimator's structure, categories and prior as the in-memory fit does and return the
    :class:`DaskFitData`."""
    import dask

    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows x columns); got a dask array of shape "
                         f"{X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError("a dask array X must hold numbers (integer codes, NaN for missing); "
                         f"got dtype {X.dtype}.  Encode labels as integers first.")
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})  # whole rows in every chunk; lazy
    # n_features_in_ and the like, from the first row
    columns, _ = validate_categorical_data(est, np.asarray(X[:1].compute()), reset=True)
    n = int(X.shape[0])
    structure = parse_structure(est.structure, est.cardinalities, est.hidden,
                                observed_names=observed_column_names(None, len(columns)),
                                n_components=est.n_components)
    est._structure = structure
    est._columns = observed_columns(structure, None, len(columns), est.structure is None)
    est._cardinalities_list = list(structure.cardinalities)
    blocks = [b for b, size in zip(X.to_delayed().ravel(), X.chunks[0]) if size > 0]
    values = dask.compute(*[dask.delayed(_column_values, pure=True)(b, est._columns)
                            for b in blocks])
    est._categories = []
    for c, j in enumerate(structure.observed):
        union = np.unique(np.concatenate([v[c] for v in values]))
        est._categories.append(learn_categories(
            union, np.zeros(union.size, dtype=bool), False, structure.names[j],
            structure.cardinalities[j], None, None, est.allow_float_categories))
        if est._categories[c] is not None:
            est._cardinalities_list[j] = int(est._categories[c].size)
    est._structure = structure.with_cardinalities(est._cardinalities_list)
    layout = CPTLayout(est._structure)
    est._layout = layout
    est._prior = prior_flat(est.prior, est.ess, layout)
    est._basis = est.map_basis
    start = (start_tables(est.init_posterior, layout, est.method)
             if est.init_params == "posterior" else None)
    encoder = copy.copy(est)  # the learned encoding, frozen for the tasks
    prepare = dask.delayed(_prepare_chunk, pure=True)
    runner = chunk_runner()
    chunks = runner.keep([prepare(block, encoder) for block in blocks])
    return DaskFitData(chunks=chunks, layout=layout, prior=est._prior, n_samples=n,
                       runner=runner, start_tables=start)

