"""Pieces shared by the structure-search meta-estimators.

Everything here sees an estimator only through the scikit-learn API (``clone``,
``set_params``, ``fit``) and the evidence scores of :mod:`sklearn_vb.scoring`; nothing
knows which model family it is searching.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import pickle
import sys
import time
import traceback
from numbers import Integral, Real

import numpy as np
from joblib import hash as joblib_hash
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.utils import check_random_state

from ..scoring import ScoreResult, score
from .._core.warn import warn_at_caller

__all__ = [
    "ALIAS_AUTO_METHODS",
    "resolve_scoring",
    "ranking_uses_correction",
    "base_entropy",
    "candidate_seed",
    "fit_and_score",
    "rescore",
    "score_columns",
    "rank_descending",
]

# Alias corrections (ln S) are applied by default to the scores whose value ignores the
# posterior's symmetric copies, never to the Monte Carlo estimators, which already
# integrate over every copy.
ALIAS_AUTO_METHODS = frozenset({"vb", "bic", "bic_map", "bicp", "cs", "cs_dagger", "laplace", "hidden_laplace",
                                "hidden_vb"})
MONTE_CARLO_METHODS = frozenset({"is", "ais", "rais", "bdmc"})
# deterministic scores of models without aliases (pairwise MRFs)
NO_ALIAS_METHODS = frozenset({"bethe_laplace"})
KNOWN_METHODS = ALIAS_AUTO_METHODS | MONTE_CARLO_METHODS | NO_ALIAS_METHODS


def _raw_vb_result(estimator, error):
    return ScoreResult(
        method="vb", log_evidence=float(estimator.lower_bound_), bound="lower",
        diagnostics={"source": "lower_bound_", "scoring_error": error},
    )


class _NamedMethod:
    """A scoring method given by name, with options for :func:`sklearn_vb.scoring.score`."""

    def __init__(self, method, **options):
        self.method = method
        self.options = options

    def __call__(self, estimator, X, *, alias_correction, random_state, fit_params):
        try:
            return score(estimator, X, self.method, alias_correction=alias_correction,
                         random_state=random_state, **self.options, **fit_params)
        except Exception as exc:
            # The VB score is the estimator's own bound; when the scoring layer cannot
            # build its model for this candidate, the raw bound is still exact.
            if (
                self.method != "vb"
                or alias_correction
                or self.options
                or isinstance(exc, NotImplementedError)
                or not hasattr(estimator, "lower_bound_")
            ):
                raise
            return _raw_vb_result(estimator, f"{type(exc).__name__}: {exc}")

    def __repr__(self):
        return f"{self.method!r}"


def _scorer_method(scorer):
    """The method name of a scorer object (``sklearn_vb.scoring`` scorers call it
    ``name``; a plain function may set ``method``), or None."""
    for attr in ("method", "name"):
        value = getattr(scorer, attr, None)
        if isinstance(value, str):
            return value
    return None


class _ScorerObject:
    """A user scorer ``scorer(fitted_estimator, X, **fit_params) -> ScoreResult``."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.method = _scorer_method(scorer)

    def __call__(self, estimator, X, *, alias_correction, random_state, fit_params):
        kwargs = dict(fit_params)
        # Scorer objects built by sklearn_vb.scoring.get_scorer accept random_state and
        # alias_correction; plain functions may not, so pass only what they take.
        accepted = _accepted_keywords(self.scorer)
        if random_state is not None and (accepted is None or "random_state" in accepted):
            kwargs["random_state"] = random_state
        if alias_correction and (accepted is None or "alias_correction" in accepted):
            kwargs["alias_correction"] = alias_correction
        try:
            return self.scorer(estimator, X, **kwargs)
        except TypeError as exc:
            if accepted is None and ("random_state" in str(exc) or "alias_correction" in str(exc)):
                kwargs.pop("random_state", None)
                kwargs.pop("alias_correction", None)
                return self.scorer(estimator, X, **kwargs)
            raise

    def __repr__(self):
        return repr(self.scorer)


def _accepted_keywords(func):
    """Keyword names ``func`` accepts, or None when it takes ``**kwargs``."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    names = set()
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        names.add(p.name)
    return names


def _one_spec(value, argname):
    if isinstance(value, str):
        method = value.lower()
        if method not in KNOWN_METHODS:
            raise ValueError(
                f"{argname}={value!r} is not a known score; choose from "
                f"{sorted(KNOWN_METHODS)} or pass a scorer object."
            )
        return _NamedMethod(method)
    if callable(value):
        return _ScorerObject(value)
    raise ValueError(
        f"{argname} entries must be score names or callables "
        f"scorer(estimator, X, **fit_params) -> ScoreResult; got {value!r}."
    )


def resolve_scoring(scoring, argname="scoring"):
    """Return an ordered ``{name: spec}`` from the ``scoring`` argument.

    Accepts a name (``"vb"``), a scorer object, a list/tuple of names, or a dict of
    ``name -> name-or-scorer`` (as :class:`~sklearn.model_selection.GridSearchCV`).
    """
    if isinstance(scoring, str):
        return {scoring.lower(): _one_spec(scoring, argname)}
    if isinstance(scoring, dict):
        if not scoring:
            raise ValueError(f"{argname} is an empty dict; give at least one score.")
        out = {}
        for name, value in scoring.items():
            if not isinstance(name, str):
                raise ValueError(f"{argname} keys must be strings; got {name!r}.")
            out[name] = _one_spec(value, argname)
        return out
    if isinstance(scoring, (list, tuple)):
        if not scoring:
            raise ValueError(f"{argname} is empty; give at least one score.")
        out = {}
        for value in scoring:
            if not isinstance(value, str):
                raise ValueError(
                    f"{argname} as a list must hold score names; use a dict to name "
                    f"scorer objects (got {value!r})."
                )
            name = value.lower()
            if name in out:
                raise ValueError(f"{argname} lists {value!r} twice.")
            out[name] = _one_spec(value, argname)
        return out
    if callable(scoring):
        name = _scorer_method(scoring) or "score"
        return {str(name): _ScorerObject(scoring)}
    raise ValueError(
        f"{argname} must be a score name, a list of names, a dict or a scorer object; "
        f"got {scoring!r}."
    )


def ranking_uses_correction(spec, alias_correction, name):
    """Whether candidates are ranked by the alias-corrected value of this score.

    ``alias_correction`` is ``"auto"``, a bool, or a dict ``{score name: bool}``.
    For scorer objects whose method is unknown, ``"auto"`` means off.
    """
    if isinstance(alias_correction, dict):
        value = alias_correction.get(name, "auto")
    else:
        value = alias_correction
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value != "auto":
        raise ValueError(
            f"alias_correction must be 'auto', True, False or a dict of those; got {value!r}."
        )
    method = getattr(spec, "method", None)
    return method in ALIAS_AUTO_METHODS


def base_entropy(random_state):
    """An integer from which every candidate seed is derived, or None."""
    if random_state is None:
        return None
    if isinstance(random_state, (Integral, np.integer)):
        return int(random_state)
    rng = check_random_state(random_state)
    return int(rng.randint(np.iinfo(np.int32).max))


def candidate_seed(entropy, key, stream=0):
    """A 32-bit seed for one candidate, from the search seed and the candidate's key.

    The key is the candidate's parameters (or structure), hashed, so a candidate gets
    the same seed whatever its position in the grid, ``n_jobs`` or the joblib backend;
    a resumed or extended search (``memory=``) therefore finds its earlier fits.
    """
    if entropy is None:
        return None
    digest = joblib_hash(key)
    words = [int(digest[i : i + 8], 16) for i in range(0, 32, 8)]
    seq = np.random.SeedSequence([entropy, stream, *words])
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def _set_seed(estimator, seed):
    if seed is None:
        return estimator
    params = estimator.get_params(deep=False)
    if "random_state" in params:
        estimator.set_params(random_state=seed)
    return estimator


def _call_spec(spec, estimator, X, fit_params, seed, alias):
    return spec(estimator, X, alias_correction=alias, random_state=seed, fit_params=fit_params)


def _alias_from_estimator(result, estimator):
    """Use the estimator's own ``log_alias_count_`` (ln S) when the scoring layer has no
    alias count for it (VBDiscreteDAG reports one); None when neither has one."""
    log_s = getattr(estimator, "log_alias_count_", None)
    if log_s is None or not np.isfinite(log_s):
        return None
    try:
        return dataclasses.replace(result, log_alias_correction=float(log_s))
    except TypeError:  # not a dataclass (fallback result)
        result.log_alias_correction = float(log_s)
        return result


def _evaluate(specs, estimator, X, fit_params, seed, error_score):
    """Every score of one fitted candidate.

    The alias correction ln S is always requested, so that ``results_`` reports raw and
    corrected values for every score; whether the ranking uses it is decided later.  A
    model that cannot count its aliases is scored raw and listed in ``alias_missing``.
    """
    results, errors, alias_missing = {}, {}, []
    for name, spec in specs.items():
        try:
            try:
                res = _call_spec(spec, estimator, X, fit_params, seed, True)
            except Exception as exc:
                if isinstance(exc, NotImplementedError) and "n_aliases" not in str(exc):
                    raise
                # The alias count is auxiliary: when the model cannot count (or fails to
                # count) its aliases, score raw and say so, rather than lose the candidate.
                raw = _call_spec(spec, estimator, X, fit_params, seed, False)
                res = _alias_from_estimator(raw, estimator)
                if res is None:
                    failure = None
                    if not isinstance(exc, NotImplementedError):
                        failure = f"{type(exc).__name__}: {exc}"
                    alias_missing.append((name, failure))
                    res = raw
            if not math.isfinite(float(res.log_evidence)) and error_score == "raise":
                raise FloatingPointError(f"score {name!r} is {res.log_evidence}")
        except Exception:
            if error_score == "raise":
                raise
            res = None
            errors[name] = traceback.format_exc()
        results[name] = res
    return results, errors, alias_missing


def fit_and_score(estimator, params, X, y, fit_params, specs, seed, error_score, warm_from=None):
    """Fit one candidate on the whole data and compute every requested score.

    Returns a plain dict (picklable, so it travels back from joblib workers and is
    stored by ``joblib.Memory``).  ``warm_from`` is an optional callable
    ``warm_from(estimator, X, fit_params) -> estimator`` run after ``set_params`` (used to warm-start
    a neighbour from its parent in the DAG search).
    """
    est = clone(estimator)
    if params:
        est.set_params(**params)
    _set_seed(est, seed)
    if warm_from is not None:
        est = warm_from(est, X, fit_params)
    out = {
        "estimator": None,
        "scores": {name: None for name in specs},
        "fit_time": np.nan,
        "score_time": np.nan,
        "n_iter": -1,
        "converged": False,
        "lower_bound": np.nan,
        "fit_error": None,
        "score_errors": {},
        "alias_missing": [],
        "seed": -1 if seed is None else int(seed),
    }
    t0 = time.perf_counter()
    try:
        if y is None:
            est.fit(X, **fit_params)
        else:
            est.fit(X, y, **fit_params)
    except Exception:
        if error_score == "raise":
            raise
        out["fit_time"] = time.perf_counter() - t0
        out["fit_error"] = traceback.format_exc()
        out["fit_exception"] = _picklable_exception(sys.exc_info()[1])
        return out
    out["fit_time"] = time.perf_counter() - t0
    out["n_iter"] = int(np.max(getattr(est, "n_iter_", -1)))
    out["converged"] = bool(getattr(est, "converged_", True))
    out["lower_bound"] = float(getattr(est, "lower_bound_", np.nan))
    t0 = time.perf_counter()
    out["scores"], out["score_errors"], out["alias_missing"] = _evaluate(
        specs, est, X, fit_params, seed, error_score
    )
    out["score_time"] = time.perf_counter() - t0
    out["estimator"] = est
    return out


def _picklable_exception(exc):
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def rescore(estimator, X, fit_params, specs, seed, error_score):
    """Score an already fitted candidate (second stage of a two-stage search)."""
    t0 = time.perf_counter()
    scores, errors, missing = _evaluate(specs, estimator, X, fit_params, seed, error_score)
    return {
        "scores": scores,
        "score_errors": errors,
        "alias_missing": missing,
        "score_time": time.perf_counter() - t0,
    }


def rank_descending(values):
    """Integer ranks (1 = best) of ``values``, higher is better; NaN ranks last."""
    values = np.asarray(values, dtype=float)
    key = np.where(np.isnan(values), np.inf, -values)
    return rankdata(key, method="min").astype(np.int64)


def score_columns(name, results, use_corrected, error_score):
    """The ``results_`` columns for one score over all candidates."""
    fill = np.nan if error_score == "raise" else float(error_score)
    raw, corr, alias, err, bound, method = [], [], [], [], [], []
    for res in results:
        if res is None:
            raw.append(fill)
            corr.append(fill)
            alias.append(np.nan)
            err.append(np.nan)
            bound.append(None)
            method.append(None)
            continue
        raw.append(float(res.log_evidence))
        alias.append(float(res.log_alias_correction))
        corr.append(float(res.log_evidence) + float(res.log_alias_correction))
        err.append(np.nan if res.stderr is None else float(res.stderr))
        bound.append(res.bound)
        method.append(res.method)
    raw = np.asarray(raw, dtype=float)
    corr = np.asarray(corr, dtype=float)
    value = corr if use_corrected else raw
    return {
        f"score_{name}": value,
        f"raw_score_{name}": raw,
        f"corrected_score_{name}": corr,
        f"log_alias_correction_{name}": np.asarray(alias, dtype=float),
        f"stderr_{name}": np.asarray(err, dtype=float),
        f"bound_{name}": np.asarray(bound, dtype=object),
        f"method_{name}": np.asarray(method, dtype=object),
        f"rank_{name}": rank_descending(value),
    }


def not_separable_from_best(values, stderrs, best):
    """Boolean array: candidates whose score is within 2 joint standard errors of the best.

    Pairs with ``|Δ| < 2·sqrt(se₁² + se₂²)`` are flagged as not separable: two
    independent estimates whose difference is within two joint standard errors.  Deterministic scores (no stderr) are always separable unless equal.
    """
    values = np.asarray(values, dtype=float)
    se = np.nan_to_num(np.asarray(stderrs, dtype=float), nan=0.0)
    joint = 2.0 * np.sqrt(se**2 + se[best] ** 2)
    out = np.abs(values - values[best]) < np.where(joint > 0, joint, 0.0)
    out[best] = False
    return out


def warn_failures(outs, specs, owner):
    n_fit = sum(o["fit_error"] is not None for o in outs)
    n_score = sum(bool(o["score_errors"]) for o in outs)
    if n_fit == len(outs):
        # Every candidate failed: the data (not a candidate) is at fault, so surface the
        # original exception (its type and message), as a direct fit would.
        exc = outs[0].get("fit_exception")
        if exc is None:
            exc = ValueError(outs[0]["fit_error"])
        exc.add_note(f"{owner}: all {len(outs)} candidate fits failed with this error.")
        raise exc
    if n_fit:
        first = next(o["fit_error"] for o in outs if o["fit_error"] is not None)
        warn_at_caller(
            f"{owner}: {n_fit} of {len(outs)} candidate fits failed; their scores are set "
            f"to error_score. The first error was:\n{first}",
            FitFailedWarning,
        )
    if n_score:
        first = next(
            next(iter(o["score_errors"].values())) for o in outs if o["score_errors"]
        )
        warn_at_caller(
            f"{owner}: scoring failed for {n_score} candidate(s); their scores are set to "
            f"error_score. The first error was:\n{first}",
            FitFailedWarning,
        )


def warn_alias_missing(outs, flags, owner):
    """Warn when a score ranked by its alias-corrected value had to be taken raw.

    Refuse (``ValueError``) when that happened for some candidates but not for others:
    ranking raw scores against corrected ones compares numbers that differ by ln S.
    """
    for name, flag in flags.items():
        if not flag:
            continue
        raw, corrected = [], 0
        for i, o in enumerate(outs):
            if o["scores"].get(name) is None:
                continue
            entry = next((e for n, e in o.get("alias_missing", ()) if n == name), False)
            if entry is False:
                corrected += 1
            else:
                raw.append((i, entry))
        if raw and corrected:
            first = next((e for _, e in raw if e is not None), "no n_aliases")
            raise ValueError(
                f"{owner}: the alias correction ln S of score {name!r} is missing for "
                f"candidate(s) {[i for i, _ in raw]} (first error: {first}) but present for "
                f"{corrected} other(s); ranking would mix raw and corrected scores. Pass "
                f"alias_correction=False (or {{{name!r}: False}}) to rank every candidate by "
                "its raw score."
            )
    missing, failures = set(), {}
    for o in outs:
        for name, error in o.get("alias_missing", ()):
            if flags.get(name):
                missing.add(name)
                if error is not None:
                    failures.setdefault(name, error)
    if failures:
        warn_at_caller(
            f"{owner}: counting the posterior aliases failed for some candidates, which are "
            f"ranked by their raw {sorted(failures)} score (first error: "
            f"{next(iter(failures.values()))}).",
            UserWarning,
        )
    elif missing:
        warn_at_caller(
            f"{owner}: the model cannot count its posterior aliases (no n_aliases), so "
            f"{sorted(missing)} are ranked by their raw value without the ln S correction.",
            UserWarning,
        )


def format_params(params):
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) if params else "(defaults)"


def is_real(x):
    return isinstance(x, (Real, np.number)) and not isinstance(x, (bool, np.bool_))
