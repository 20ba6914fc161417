"""Structure search by approximate marginal likelihood: :class:`StructureSearch`."""

from __future__ import annotations

import time
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils._tags import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, check_memory

from . import _common as C
from .._core.warn import warn_at_caller

__all__ = ["StructureSearch"]


def _best_has(attr):
    """Delegate ``attr`` to the kept best estimator (or, before fit, to ``estimator``)."""

    def check(self):
        if hasattr(self, "best_estimator_"):
            getattr(self.best_estimator_, attr)
            return True
        if not self.refit:
            raise AttributeError(
                f"This {type(self).__name__} was created with refit=False; {attr} is "
                "available only with refit=True."
            )
        getattr(self.estimator, attr)
        return True

    return check


class _SearchBase(MetaEstimatorMixin, BaseEstimator):
    """Delegation to ``best_estimator_`` and the result bookkeeping shared by searches."""

    # ------------------------------------------------------------ delegation
    def _check_best(self, method):
        check_is_fitted(self, "results_")
        if not hasattr(self, "best_estimator_"):
            raise AttributeError(
                f"{method} is not available: the search was run with refit=False, so no "
                "fitted best estimator was kept."
            )
        return self.best_estimator_

    @available_if(_best_has("predict"))
    def predict(self, X, **params):
        """Call ``predict`` on the best candidate (fitted on the whole data)."""
        return self._check_best("predict").predict(X, **params)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X, **params):
        """Call ``predict_proba`` on the best candidate."""
        return self._check_best("predict_proba").predict_proba(X, **params)

    @available_if(_best_has("predict_log_proba"))
    def predict_log_proba(self, X, **params):
        """Call ``predict_log_proba`` on the best candidate."""
        return self._check_best("predict_log_proba").predict_log_proba(X, **params)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X, **params):
        """Call ``decision_function`` on the best candidate."""
        return self._check_best("decision_function").decision_function(X, **params)

    @available_if(_best_has("transform"))
    def transform(self, X, **params):
        """Call ``transform`` on the best candidate."""
        return self._check_best("transform").transform(X, **params)

    @available_if(_best_has("inverse_transform"))
    def inverse_transform(self, X, **params):
        """Call ``inverse_transform`` on the best candidate."""
        return self._check_best("inverse_transform").inverse_transform(X, **params)

    @available_if(_best_has("score_samples"))
    def score_samples(self, X, **params):
        """Call ``score_samples`` on the best candidate."""
        return self._check_best("score_samples").score_samples(X, **params)

    @available_if(_best_has("score"))
    def score(self, X, y=None, **params):
        """``best_estimator_.score(X)``: the best candidate's own score.

        For the VB estimators of this package that is the mean log-likelihood per
        row, as in :class:`~sklearn.mixture.BayesianGaussianMixture`; it is *not* the
        evidence score used to rank candidates (that is ``best_score_``).
        """
        best = self._check_best("score")
        if y is None:
            return best.score(X, **params)
        return best.score(X, y, **params)

    @available_if(_best_has("sample"))
    def sample(self, *args, **kwargs):
        """Draw from the best candidate."""
        return self._check_best("sample").sample(*args, **kwargs)

    @property
    def n_features_in_(self):
        check_is_fitted(self, "results_")
        if not hasattr(self, "best_estimator_"):
            raise AttributeError(
                f"{type(self).__name__} with refit=False has no n_features_in_."
            )
        return self.best_estimator_.n_features_in_

    @property
    def classes_(self):
        return self._check_best("classes_").classes_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.transformer_tags = deepcopy(sub.transformer_tags)
        tags.input_tags.pairwise = sub.input_tags.pairwise
        tags.input_tags.sparse = sub.input_tags.sparse
        tags.input_tags.allow_nan = sub.input_tags.allow_nan
        tags.input_tags.categorical = sub.input_tags.categorical
        tags.input_tags.positive_only = sub.input_tags.positive_only
        tags.target_tags = deepcopy(sub.target_tags)
        tags.non_deterministic = sub.non_deterministic
        return tags

    # ------------------------------------------------------------ results
    def results_table(self, sort=True):
        """``results_`` as a :class:`pandas.DataFrame`, best candidate first by default."""
        import pandas as pd

        check_is_fitted(self, "results_")
        frame = pd.DataFrame(self.results_)
        if sort:
            frame = frame.sort_values("rank", kind="stable")
        return frame

    def _log(self, message, level=1):
        if self.verbose >= level:
            print(f"[{type(self).__name__}] {message}", flush=True)


class StructureSearch(_SearchBase):
    """Choose a model structure by approximate marginal likelihood.

    Every candidate of a :class:`~sklearn.model_selection.ParameterGrid` (for example
    ``n_components`` of :class:`~sklearn_vb.VBHiddenMarkov` or
    :class:`~sklearn_vb.VBMixtureFactorAnalysers`, ``n_states`` of
    :class:`~sklearn_vb.VBLinearDynamicalSystem`, ``structure`` of
    :class:`~sklearn_vb.VBDiscreteDAG`) is fitted on the **whole** data set and scored
    by an evidence estimate from :mod:`sklearn_vb.scoring` (log marginal likelihood in
    nats, higher is better).  There is no cross-validation: the evidence already
    penalises complexity.  The best candidate is kept as ``best_estimator_`` and the
    search delegates ``predict``/``transform``/``score``... to it, so it can be the last
    step of a :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    estimator : estimator object
        The model to search over; cloned for each candidate.
    param_grid : dict or list of dicts
        As for :class:`~sklearn.model_selection.GridSearchCV`.
    scoring : str, callable, list of str or dict, default="vb"
        Score name(s) understood by :func:`sklearn_vb.scoring.score` (``"vb"``,
        ``"bic"``, ``"bic_map"``, ``"bicp"``, ``"laplace"``, ``"cs"``, ``"cs_dagger"``, ``"is"``,
        ``"ais"``), a scorer object ``scorer(fitted, X, **fit_params) -> ScoreResult``
        (for example ``sklearn_vb.scoring.get_scorer("ais", n_temperatures=1000)``), a
        list of names or a dict ``{name: name-or-scorer}``.  With several scores all are
        computed in one pass over the fitted candidates; ``refit`` says which one
        selects the best.
    alias_correction : "auto", bool or dict, default="auto"
        Rank by the alias-corrected score ``log_evidence + ln S``.  ``"auto"`` turns it
        on for ``vb``, ``bic``, ``bic_map``, ``bicp``, ``cs``, ``cs_dagger`` and ``laplace`` and off
        for ``is``/``ais`` (which integrate over all posterior copies already).  A dict
        sets it per score name.  Raw and corrected values are always both reported.
    refit : bool or str, default=True
        Keep the best candidate (already fitted on all data) as ``best_estimator_``.
        With several scores, a string names the score that selects the best (default:
        the first).  ``refit=False`` keeps no fitted model.
    rescoring : str, callable or None, default=None
        Two-stage mode: after ranking every candidate by ``scoring``, re-score the top
        ``rescore_top_k`` with this (usually expensive) score, typically ``"ais"``; the
        best is then chosen among those by the re-score.
    rescore_top_k : int, default=3
        Number of candidates re-scored in two-stage mode.
    n_jobs : int or None, default=None
        Candidates fitted in parallel through joblib.  Any joblib backend works, e.g.
        ``with joblib.parallel_config(backend="dask"):`` on a ``dask.distributed``
        cluster.
    random_state : int, RandomState instance or None, default=None
        Each candidate's seed (its ``random_state`` parameter, if it has one, and the
        scorer's) is derived from this and the candidate's parameters, so results do
        not depend on ``n_jobs``, the backend or the grid order.  None leaves the
        estimator's own ``random_state`` untouched.
    verbose : int, default=0
        ``>= 1`` prints one line per finished candidate and a summary.
    error_score : "raise" or float, default=np.nan
        Score given to a candidate whose fit or scoring fails (with a
        :class:`~sklearn.exceptions.FitFailedWarning`), or ``"raise"``.
    memory : None, str or joblib.Memory, default=None
        Cache of fitted-and-scored candidates.  Re-running an interrupted (or
        extended) search with the same ``memory`` and ``random_state`` loads finished
        candidates instead of refitting them.
    pre_dispatch : int or str, default="2*n_jobs"
        Passed to ``joblib.Parallel``.

    Attributes
    ----------
    results_ : dict of numpy arrays
        One entry per candidate, in grid order (``pandas.DataFrame(results_)`` works;
        :meth:`results_table` returns it sorted best first).  Keys: ``params``,
        ``param_<name>``; for every score ``s``: ``score_s`` (the ranking value),
        ``raw_score_s``, ``corrected_score_s``, ``log_alias_correction_s``,
        ``stderr_s``, ``bound_s``, ``method_s``, ``rank_s``; and ``rank`` (the final
        ranking), ``fit_time``, ``score_time``, ``n_iter``, ``converged``,
        ``lower_bound``, ``fit_failed``, ``seed``; in two-stage mode also ``rescored``
        and ``not_separable``.
    score_results_ : list of dict
        The :class:`~sklearn_vb.scoring.ScoreResult` objects, per candidate and score.
    best_index_, best_params_, best_score_ : int, dict, float
        The selected candidate and its ranking score (nats).
    best_estimator_ : estimator
        The selected candidate, fitted on the whole data (``refit=True`` only).
    scorer_names_ : list of str
        Score names in the order computed; ``selection_score_`` is the one that chose
        the best.
    n_candidates_ : int

    Notes
    -----
    Never mix raw and corrected values, or scores computed with different frozen
    hyperparameters.  Ranking by the VB bound assumes equal KL gaps
    across candidates; the gap tends to grow with model size, so VB leans to smaller
    models.  The two-stage mode warns when AIS prefers a larger model than VB did, or
    when AIS falls below the VB bound (annealing schedule too short).

    Examples
    --------
    The number of states of an HMM, by the VB bound and BIC (as in Beal 2003, §3.5.1):

    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> from sklearn_vb.model_selection import StructureSearch
    >>> X, _, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100, 100], random_state=0)
    >>> search = StructureSearch(VBHiddenMarkov(random_state=0), {"n_components": [1, 2, 3]},
    ...                          scoring=["vb", "bic"], random_state=0)
    >>> search.fit(X, lengths=lengths).best_params_
    {'n_components': 2}
    >>> search.selection_score_
    'vb'
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "param_grid": [dict, list],
        "scoring": [str, callable, list, tuple, dict],
        "alias_correction": [StrOptions({"auto"}), "boolean", dict],
        "refit": ["boolean", str],
        "rescoring": [None, str, callable],
        "rescore_top_k": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": [None, str, HasMethods(["cache"])],
        "pre_dispatch": [Integral, str],
    }

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        scoring="vb",
        alias_correction="auto",
        refit=True,
        rescoring=None,
        rescore_top_k=3,
        n_jobs=None,
        random_state=None,
        verbose=0,
        error_score=np.nan,
        memory=None,
        pre_dispatch="2*n_jobs",
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.alias_correction = alias_correction
        self.refit = refit
        self.rescoring = rescoring
        self.rescore_top_k = rescore_top_k
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.error_score = error_score
        self.memory = memory
        self.pre_dispatch = pre_dispatch

    # ------------------------------------------------------------ helpers
    def _selection_name(self, names):
        if isinstance(self.refit, str):
            if self.refit not in names:
                raise ValueError(
                    f"refit={self.refit!r} is not one of the scores {names}; name the score "
                    "that selects the best candidate."
                )
            return self.refit
        return names[0]

    def _run_parallel(self, tasks, describe, total):
        parallel = Parallel(
            n_jobs=self.n_jobs, pre_dispatch=self.pre_dispatch, return_as="generator"
        )
        outs = []
        t0 = time.perf_counter()
        for i, out in enumerate(parallel(tasks)):
            outs.append(out)
            if self.verbose:
                self._log(f"{i + 1}/{total} {describe(i, out)} [{time.perf_counter() - t0:.1f} s]")
        return outs

    # ------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Fit and score every candidate on ``X`` and keep the best.

        ``fit_params`` (for example ``lengths=``, ``sequence_ids=``, ``U=``) go to every
        candidate's ``fit`` and to the scorers.
        """
        specs = C.resolve_scoring(self.scoring)
        names = list(specs)
        selection = self._selection_name(names)
        flags = {n: C.ranking_uses_correction(s, self.alias_correction, n) for n, s in specs.items()}
        rescore_specs = None
        if self.rescoring is not None:
            rescore_specs = C.resolve_scoring(self.rescoring, "rescoring")
            if len(rescore_specs) != 1:
                raise ValueError("rescoring must be a single score name or scorer object.")
            clash = set(rescore_specs) & set(specs)
            if clash:
                raise ValueError(
                    f"rescoring={self.rescoring!r} is also in scoring; the second stage must "
                    "use a different score (or name it differently with a dict)."
                )
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid is empty: there is no candidate to fit.")
        entropy = C.base_entropy(self.random_state)
        seeds = [C.candidate_seed(entropy, p) for p in candidates]
        memory = check_memory(self.memory)
        fit_and_score = memory.cache(C.fit_and_score)

        self._log(
            f"fitting {len(candidates)} candidate(s) scored by {', '.join(names)}"
            + (f" (n_jobs={self.n_jobs})" if self.n_jobs not in (None, 1) else "")
        )
        base = clone(self.estimator)

        def describe(i, out):
            scores = out["scores"]
            parts = []
            for n in names:
                r = scores.get(n)
                parts.append(f"{n}={'failed' if r is None else format(r.log_evidence, '.3f')}")
            return f"{C.format_params(candidates[i])}: {' '.join(parts)} ({out['fit_time']:.2f} s fit)"

        outs = self._run_parallel(
            (
                delayed(fit_and_score)(
                    base, params, X, y, fit_params, specs, seed, self.error_score
                )
                for params, seed in zip(candidates, seeds)
            ),
            describe,
            len(candidates),
        )
        C.warn_failures(outs, specs, type(self).__name__)
        C.warn_alias_missing(outs, flags, type(self).__name__)

        results = format_results(candidates, outs, specs, flags, self.error_score)
        score_results = [dict(o["scores"]) for o in outs]
        final_name = selection
        order = np.lexsort((np.arange(len(candidates)), results[f"rank_{selection}"]))

        if rescore_specs is not None:
            (rname,) = rescore_specs
            rflags = {
                rname: C.ranking_uses_correction(rescore_specs[rname], self.alias_correction, rname)
            }
            top = [i for i in order[: self.rescore_top_k] if outs[i]["estimator"] is not None]
            self._log(f"re-scoring the top {len(top)} candidate(s) by {rname}")
            rseeds = [C.candidate_seed(entropy, candidates[i], stream=1) for i in top]
            routs = self._run_parallel(
                (
                    delayed(C.rescore)(
                        outs[i]["estimator"], X, fit_params, rescore_specs, s,
                        self.error_score,
                    )
                    for i, s in zip(top, rseeds)
                ),
                lambda j, o: (
                    f"{C.format_params(candidates[top[j]])}: {rname}="
                    + (
                        "failed"
                        if o["scores"][rname] is None
                        else format(o["scores"][rname].log_evidence, ".3f")
                    )
                ),
                len(top),
            )
            rres = [None] * len(candidates)
            for i, o in zip(top, routs):
                rres[i] = o["scores"][rname]
                score_results[i][rname] = o["scores"][rname]
                results["score_time"][i] += o["score_time"]
            cols = C.score_columns(rname, rres, rflags[rname], "raise")
            rescored = np.zeros(len(candidates), dtype=bool)
            rescored[top] = True
            cols[f"rank_{rname}"] = np.where(
                rescored, cols[f"rank_{rname}"], len(candidates)
            ).astype(np.int64)
            results.update(cols)
            results["rescored"] = rescored
            flags.update(rflags)
            names.append(rname)
            final_name = rname
            # final order: re-scored candidates by the re-score, then the rest by stage one
            rest = [i for i in order if not rescored[i]]
            resc = sorted(top, key=lambda i: (-cols[f"score_{rname}"][i], i))
            order = np.asarray(resc + rest, dtype=np.int64)
            self._warn_two_stage(candidates, results, selection, rname, top)

        rank = np.empty(len(candidates), dtype=np.int64)
        rank[order] = np.arange(1, len(candidates) + 1)
        results["rank"] = rank
        best = int(order[0])
        value = results[f"score_{final_name}"]
        results["not_separable"] = C.not_separable_from_best(
            value, results[f"stderr_{final_name}"], best
        )
        if not np.isfinite(value[best]):
            raise ValueError(
                f"{type(self).__name__}: no candidate has a finite {final_name} score."
            )

        self.results_ = results
        self.score_results_ = score_results
        self.scorer_names_ = names
        self.selection_score_ = final_name
        self.n_candidates_ = len(candidates)
        self.best_index_ = best
        self.best_params_ = dict(candidates[best])
        self.best_score_ = float(value[best])
        if self.refit:
            self.best_estimator_ = outs[best]["estimator"]
        elif hasattr(self, "best_estimator_"):
            del self.best_estimator_
        _warn_edge_of_grid(candidates, best, type(self).__name__)
        self._log(
            f"best: {C.format_params(self.best_params_)} with {final_name}="
            f"{self.best_score_:.3f}"
        )
        return self

    def _warn_two_stage(self, candidates, results, first, second, top):
        """Warn when AIS falls below the VB bound (AIS is then biased low, usually from too
        few temperatures), or prefers a larger model."""
        stage1 = results[f"raw_score_{first}"]
        stage2 = results[f"raw_score_{second}"]
        se = np.nan_to_num(results[f"stderr_{second}"], nan=0.0)
        bounds = results[f"bound_{first}"]
        below = [
            i for i in top
            if bounds[i] == "lower" and stage2[i] + 2 * se[i] < stage1[i]
        ]
        if below:
            warn_at_caller(
                f"{second} is below the {first} lower bound for "
                f"{[C.format_params(candidates[i]) for i in below]}; the {second} estimate is "
                "biased low (for AIS: too few temperatures).",
                RuntimeWarning,
            )
        size = size_parameter(candidates)
        if size is None or len(top) < 2:
            return
        s1 = results[f"score_{first}"]
        s2 = results[f"score_{second}"]
        best1 = max(top, key=lambda i: (s1[i], -i))
        best2 = max(top, key=lambda i: (s2[i], -i))
        if candidates[best2][size] > candidates[best1][size]:
            warn_at_caller(
                f"among the re-scored candidates {second} prefers {size}="
                f"{candidates[best2][size]!r} but {first} preferred {candidates[best1][size]!r}: "
                f"{first} may be biased towards smaller models.",
                RuntimeWarning,
            )


def format_results(candidates, outs, specs, flags, error_score):
    """The common ``results_`` columns of a search, one entry per candidate."""
    n = len(candidates)
    results = {"params": np.empty(n, dtype=object)}
    for i, p in enumerate(candidates):
        results["params"][i] = dict(p)
    keys = sorted({k for p in candidates for k in p})
    for k in keys:
        data = np.empty(n, dtype=object)
        mask = np.ones(n, dtype=bool)
        for i, p in enumerate(candidates):
            if k in p:
                data[i] = p[k]
                mask[i] = False
        results[f"param_{k}"] = np.ma.MaskedArray(data, mask=mask)
    for name in specs:
        results.update(
            C.score_columns(
                name, [o["scores"][name] for o in outs], flags[name], error_score
            )
        )
    results["fit_time"] = np.array([o["fit_time"] for o in outs], dtype=float)
    results["score_time"] = np.array([o["score_time"] for o in outs], dtype=float)
    results["n_iter"] = np.array([o["n_iter"] for o in outs], dtype=np.int64)
    results["converged"] = np.array([o["converged"] for o in outs], dtype=bool)
    results["lower_bound"] = np.array([o["lower_bound"] for o in outs], dtype=float)
    results["fit_failed"] = np.array([o["fit_error"] is not None for o in outs], dtype=bool)
    results["seed"] = np.array([o["seed"] for o in outs], dtype=np.int64)
    return results


def size_parameter(candidates):
    """The single numeric grid parameter that varies, if there is exactly one."""
    keys = {k for p in candidates for k in p}
    varying = []
    for k in keys:
        values = [p.get(k) for p in candidates]
        if len({repr(v) for v in values}) > 1:
            varying.append(k)
    if len(varying) != 1:
        return None
    k = varying[0]
    if all(k in p and C.is_real(p[k]) for p in candidates):
        return k
    return None


def _warn_edge_of_grid(candidates, best, owner):
    """Warn when the selected value of a numeric grid parameter (with at least three
    values) is the largest in the grid, or the smallest while above 1: the best size may
    lie outside the grid."""
    for key in sorted({k for p in candidates for k in p}):
        if not all(key in p and C.is_real(p[key]) for p in candidates):
            continue
        values = sorted({p[key] for p in candidates})
        if len(values) < 3:
            continue
        chosen = candidates[best][key]
        if chosen == values[-1]:
            side = "largest"
        elif chosen == values[0] and chosen > 1:
            side = "smallest"
        else:
            continue
        warn_at_caller(
            f"{owner}: the selected {key}={chosen!r} is the {side} value of the grid "
            f"{values}; the best {key} may lie outside it. Extend the grid beyond "
            f"{chosen!r} and search again.",
            UserWarning,
        )
