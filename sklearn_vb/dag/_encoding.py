"""The data of :class:`~sklearn_vb.dag.VBDiscreteDAG` as integer codes: which column of
``X`` is which observed node, the categories an observed node learns from the training
data, the encoding of the cells (``-1`` missing), the Dirichlet prior of every CPT
entry and the starting tables of ``init_posterior``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._core.distributions import dirichlet_expected_log
from .._core.validation import lookup_categories
from .structure import family_prior_value

__all__ = ["encode_columns", "observed_columns", "positive_rows", "prior_flat", "start_tables"]


def observed_columns(structure, X_names, n_features, default_structure):
    """Column of X for every observed node (in node order); ``default_structure``:
    the structure is the latent-class model, one column per observed node in order."""
    obs = structure.observed
    obs_names = [structure.names[j] for j in obs]
    if default_structure:
        return np.arange(n_features)
    for j in structure.hidden_nodes:
        if X_names is not None and str(structure.names[j]) in X_names:
            raise ValueError(
                f"X has a column {structure.names[j]!r}, but that node is declared hidden "
                "(hidden nodes are never observed).")
    if X_names is not None and all(isinstance(n, str) for n in obs_names):
        lookup = {str(n): i for i, n in enumerate(X_names)}
        missing = [n for n in obs_names if n not in lookup]
        extra = [n for n in X_names if n not in set(obs_names)]
        if missing or extra:
            raise ValueError(
                "the observed columns of X do not match the observed nodes of the structure: "
                f"missing columns {missing}, unexpected columns {extra}.")
        return np.array([lookup[n] for n in obs_names], dtype=np.int64)
    if n_features != len(obs):
        raise ValueError(
            f"X has {n_features} columns, but the structure has {len(obs)} observed nodes "
            f"{obs_names} (one column per observed node, in node order).")
    return np.arange(n_features)


def encode_columns(columns, structure, categories=None, weights=None,
                   declared_categories=None, allow_float_categories=False):
    """Columns in observed-node order (float64 or object labels, see
    :func:`~sklearn_vb._core.validation.categorical_column`) -> int codes, -1 = missing,
    and the categories of every column.  Without ``categories`` (a fit) they are
    learned from the columns (None for a node with a declared cardinality)."""
    learn = categories is None
    if learn:
        categories = []
    n = columns[0].shape[0] if columns else 0
    codes = np.full((n, len(columns)), -1, dtype=np.int64)
    for c, j in enumerate(structure.observed):
        col = columns[c]
        labels = col.dtype == object
        missing = np.equal(col, None) if labels else np.isnan(col)
        name = structure.names[j]
        if learn:
            categories.append(learn_categories(
                col, missing, labels, name, structure.cardinalities[j], weights,
                None if declared_categories is None else declared_categories[c],
                allow_float_categories))
        cats = categories[c]
        if cats is None:
            if labels:
                raise ValueError(
                    f"X: column for node {name!r} holds labels such as "
                    f"{col[~missing][0]!r}, but the node has a declared cardinality and "
                    "takes integers 0..r-1; leave its cardinality undeclared (None) to "
                    "learn the categories from the data.")
            r = structure.cardinalities[j]
            ok = ~missing & (col != -1)
            vals = col[ok]
            if vals.size and (np.any(vals != np.round(vals)) or vals.min() < 0 or vals.max() >= r):
                bad = vals[(vals != np.round(vals)) | (vals < 0) | (vals >= r)][0]
                raise ValueError(
                    f"X: column for node {name!r} contains {bad:g}; values must be integers in "
                    f"[0, {r}) (cardinality {r}), with -1 or NaN for missing.")
            codes[ok, c] = vals.astype(np.int64)
            continue
        if not missing.all() and labels != (cats.dtype == object):
            kinds = ("labels", "numbers") if labels else ("numbers", "labels")
            raise ValueError(
                f"X: column for node {name!r} holds {kinds[0]}, but the model learned "
                f"{kinds[1]} as its categories {list(cats)}.")
        present = ~missing
        codes[present, c] = lookup_categories(cats, col[present])
    return codes, categories


def learn_categories(col, missing, labels, name, declared, weights, pandas_categories,
                      allow_float_categories):
    """The categories of one observed column (None when its cardinality is declared)."""
    if declared is not None:
        return None
    if pandas_categories is not None:
        cats = np.asarray(pandas_categories)
        if cats.dtype.kind in "US":
            cats = cats.astype(str).astype(object)
        elif cats.dtype.kind in "iub":
            cats = cats.astype(np.float64)
        return cats
    keep = ~missing if weights is None else (~missing & (weights > 0))
    if not keep.any():
        raise ValueError(
            f"X: observed node {name!r} has no observed value with positive weight, so "
            "its categories cannot be learned; declare its cardinality.")
    if labels:
        return np.unique(col[keep].astype(str)).astype(object)
    cats = np.unique(col[keep])
    fractional = cats[cats != np.round(cats)]
    if fractional.size and not allow_float_categories:
        raise ValueError(
            f"X: column for node {name!r} holds non-integral values such as "
            f"{float(fractional[0])!r} ({cats.size} distinct values); VBDiscreteDAG models "
            "categories, not continuous data. Discretise the column (e.g. "
            "sklearn.preprocessing.KBinsDiscretizer), pass it as strings or a pandas "
            "categorical, or set allow_float_categories=True to make every distinct "
            "value a category.")
    return cats


def prior_flat(prior, ess, layout):
    """The Dirichlet hyperparameter of every CPT entry, flat in the order of
    ``layout``, from the ``prior`` argument (a scalar, ``"uniform"``, ``"bdeu"`` with
    equivalent sample size ``ess``, or per-node tables)."""
    s = layout.structure
    p = prior
    if isinstance(p, (str, Real)):
        return np.concatenate([
            np.full(int(q * r), family_prior_value(p, ess, int(q), int(r)))
            for q, r in zip(layout.q, layout.r)])
    if isinstance(p, dict):
        unknown = [k for k in p if k not in s.names]
        if unknown:
            raise ValueError(f"prior names unknown nodes {unknown}; nodes are {list(s.names)}.")
        tables = [p.get(n, 1.0) for n in s.names]
    else:
        tables = list(p)
        if len(tables) != s.n_nodes:
            raise ValueError(f"prior has {len(tables)} entries but the structure has {s.n_nodes} nodes.")
    out = []
    for j, t in enumerate(tables):
        shape = (int(layout.q[j]), int(layout.r[j]))
        t = np.asarray(t, dtype=float)
        try:
            t = np.broadcast_to(t, shape)
        except ValueError:
            raise ValueError(
                f"prior for node {s.names[j]!r} must broadcast to shape {shape}; got {t.shape}.") from None
        if not np.all(np.isfinite(t)) or np.any(t <= 0):
            raise ValueError(f"prior for node {s.names[j]!r} must be positive and finite.")
        out.append(t.ravel())
    return np.concatenate(out)


def start_tables(init_posterior, layout, method):
    """Validated ``init_posterior`` as starting log-tables per node (None: not given):
    ``exp E[ln theta]`` of the Dirichlet for ``method="vb"``, the log posterior mean
    otherwise."""
    given = init_posterior
    if given is None:
        raise ValueError(
            "init_params='posterior' needs init_posterior: a dict mapping node names to "
            "Dirichlet parameter tables of shape (parent configurations, states).")
    s = layout.structure
    unknown = [k for k in given if k not in s.names]
    if unknown:
        raise ValueError(f"init_posterior names unknown node(s) {unknown}; nodes are {list(s.names)}.")
    tables = []
    for j, name in enumerate(s.names):
        if name not in given:
            tables.append(None)
            continue
        shape = (int(layout.q[j]), int(layout.r[j]))
        alpha = np.array(given[name], dtype=float)
        if alpha.shape != shape:
            raise ValueError(
                f"init_posterior[{name!r}] must have shape {shape} (parent configurations x "
                f"states of node {name!r}); got {alpha.shape}.")
        if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise ValueError(
                f"init_posterior[{name!r}] must hold positive finite Dirichlet parameters.")
        if method == "vb":
            tables.append(dirichlet_expected_log(alpha))
        else:
            tables.append(np.log(alpha / alpha.sum(axis=1, keepdims=True)))
    return tables


def positive_rows(codes, weights):
    """The rows of positive weight (all of them without weights)."""
    if weights is None:
        return codes, None
    keep = weights > 0
    if not keep.any():
        raise ValueError("sample_weight: every weight is zero.")
    return codes[keep], weights[keep]
