"""The edge-set hill climber shared by the structure searches over graphs
(:class:`~sklearn_vb.model_selection.DAGStructureSearch` with directed moves under
acyclicity, :class:`~sklearn_vb.model_selection.MRFStructureSearch` with undirected
add/remove moves).

A graph class provides ``key`` (hashable), ``names``, ``edges()``, ``as_structure()`` (the
estimator's ``structure`` parameter, or what ``as_params()`` - when defined - turns into
the estimator's parameters) and ``arrow`` (for log lines); a move set provides
``neighbours(graph) -> [((kind, i, j), graph)]`` (``j`` a tuple of node indices for a move
with several targets) and ``random_graph(start, rng, n_moves)``.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_memory

from . import _common as C
from ._search import StructureSearch, _SearchBase, format_results

__all__ = ["EdgeSetSearchBase"]


class EdgeSetSearchBase(_SearchBase):
    """Exhaustive and greedy search over edge sets (see the module docstring)."""

    #: the parameters every edge-set search shares; each search adds its own
    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "structures": [list, tuple, None],
        "initial_structure": "no_validation",
        "scoring": [str, callable, list, tuple, dict],
        "alias_correction": [StrOptions({"auto"}), "boolean", dict],
        "tol": [Interval(Real, 0, None, closed="left")],
        "refit": ["boolean", str],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": [None, str, HasMethods(["cache"])],
    }

    def _fit_grid(self, X, y, fit_params, grid, count_edges):
        """Fit and score every candidate of ``grid`` with :class:`StructureSearch`."""
        inner = StructureSearch(
            self.estimator, grid, scoring=self.scoring, alias_correction=self.alias_correction,
            refit=self.refit, n_jobs=self.n_jobs, random_state=self.random_state,
            verbose=self.verbose, error_score=self.error_score, memory=self.memory,
        ).fit(X, y, **fit_params)
        for attr in ("results_", "score_results_", "scorer_names_", "selection_score_",
                     "n_candidates_", "best_index_", "best_params_", "best_score_"):
            setattr(self, attr, getattr(inner, attr))
        if hasattr(inner, "best_estimator_"):
            self.best_estimator_ = inner.best_estimator_
        elif hasattr(self, "best_estimator_"):
            del self.best_estimator_
        self.results_["structure"] = self.results_["param_structure"].data
        self.results_["n_edges"] = np.array(
            [count_edges(s) for s in self.results_["structure"]], dtype=np.int64
        )
        self.best_structure_ = self.best_params_["structure"]
        self.path_ = []
        return self

    def _climb(self, X, y, fit_params, specs, names, selection, flags, start, moveset,
               warm_factory, n_restarts=None, max_steps=None, screener=None):
        """Hill climbing from ``start`` (and ``n_restarts`` random graphs) over the moves
        of ``moveset``; every graph is fitted once, all neighbours of the current graph in
        parallel, and the climb takes the best one while it improves the selection score by
        more than ``tol``.  ``warm_factory(parent_estimator, graph)`` (or None) returns the
        ``warm_from`` hook of :func:`~sklearn_vb.model_selection._common.fit_and_score`.

        ``screener`` (or None: every neighbour is fitted) has a ``width`` and a
        ``margin`` and maps ``(parent_estimator, neighbours)`` to predicted score changes
        (or None); then only the ``width`` neighbours predicted best are fitted, and when
        none of them improves, those of the others predicted above ``-margin`` (and any
        without a prediction) are fitted too before the climb stops."""
        entropy = C.base_entropy(self.random_state)
        memory = check_memory(self.memory)
        cached = memory.cache(C.fit_and_score)
        base = clone(self.estimator)

        evaluated = {}  # graph key -> index into outs
        outs, graphs, meta = [], [], []

        def evaluate(batch, restart, step):
            """Score the graphs of ``batch`` [(graph, parent_estimator)] not seen yet."""
            todo, seen_keys = [], set()
            for g, parent in batch:
                if g.key in evaluated or g.key in seen_keys:
                    continue
                seen_keys.add(g.key)
                todo.append((g, parent))
            if not todo:
                return
            tasks = []
            for g, parent in todo:
                # a graph class whose structure is several estimator parameters says so
                params = (g.as_params() if hasattr(g, "as_params")
                          else {"structure": g.as_structure()})
                seed = C.candidate_seed(entropy, params)
                warm_from = (warm_factory(parent, g)
                             if (warm_factory is not None and parent is not None) else None)
                tasks.append(delayed(cached)(base, params, X, y, fit_params, specs, seed,
                                             self.error_score, warm_from))
            t0 = time.perf_counter()
            results = Parallel(n_jobs=self.n_jobs)(tasks)
            for (g, _), out in zip(todo, results):
                evaluated[g.key] = len(outs)
                outs.append(out)
                graphs.append(g)
                meta.append((restart, step))
            self._log(
                f"restart {restart} step {step}: scored {len(todo)} structure(s) "
                f"[{time.perf_counter() - t0:.1f} s, {len(outs)} in total]"
            )

        def value(i):
            res = outs[i]["scores"][selection]
            if res is None:
                return -np.inf
            v = res.log_evidence + (res.log_alias_correction if flags[selection] else 0.0)
            # a failed score (nan) ranks last, as in the result table: np.argmax would
            # otherwise pick it and release the best candidate's fitted model
            return v if np.isfinite(v) or v == np.inf else -np.inf

        rng = check_random_state(entropy)
        n_restarts = self.n_restarts if n_restarts is None else n_restarts
        max_steps = self.max_steps if max_steps is None else max_steps
        path = []
        for restart in range(n_restarts + 1):
            if restart == 0:
                current = start
            else:
                current = moveset.random_graph(start, rng, rng.randint(1, len(start.names) + 1))
            evaluate([(current, None)], restart, 0)
            ci = evaluated[current.key]
            path.append({"restart": restart, "step": 0, "move": None, "score": value(ci),
                         "structure": current.as_structure()})
            step = 0
            while max_steps is None or step < max_steps:
                step += 1
                neighbours = moveset.neighbours(current)
                if not neighbours:
                    break
                parent_est = outs[ci]["estimator"]

                def best_of(nbrs):
                    """The first neighbour (in move order) of the running best score, among
                    the fitted ones, if it beats the current graph by more than ``tol``."""
                    best = (None, None, value(ci))
                    for move, g in nbrs:
                        if g.key in evaluated:
                            v = value(evaluated[g.key])
                            if v > best[2] + self.tol:
                                best = (move, g, v)
                    return best

                batches = _screen(screener, parent_est, neighbours)
                for batch in batches:
                    evaluate([(g, parent_est) for _, g in batch], restart, step)
                    best_move, best_graph, best_val = best_of(neighbours)
                    if best_graph is not None:
                        break
                if best_graph is None:
                    break
                current, ci = best_graph, evaluated[best_graph.key]
                kind, p, c = best_move
                # a joint move names several targets (a tuple of node indices)
                target = (tuple(current.names[i] for i in c) if isinstance(c, tuple)
                          else current.names[c])
                move = (kind, current.names[p], target)
                path.append({"restart": restart, "step": step, "move": move, "score": best_val,
                             "structure": current.as_structure()})
                self._log(f"restart {restart} step {step}: {kind} {move[1]!r} {current.arrow} {move[2]!r}, "
                          f"{selection}={best_val:.4f}")
                _drop_fitted(outs, keep={ci, _argmax_value(outs, value)})
            _drop_fitted(outs, keep={_argmax_value(outs, value)})
        return self._finish_climb(outs, graphs, meta, path, specs, names, selection, flags)

    def _finish_climb(self, outs, graphs, meta, path, specs, names, selection, flags):
        """Set ``results_`` (one row per graph in ``graphs``, scored in ``outs``, with
        ``meta`` = (restart, step)), ``path_`` and the best-candidate attributes."""
        C.warn_failures(outs, specs, type(self).__name__)
        C.warn_alias_missing(outs, flags, type(self).__name__)
        candidates = [{"structure": g.as_structure()} for g in graphs]
        results = format_results(candidates, outs, specs, flags, self.error_score)
        order = np.lexsort((np.arange(len(outs)), results[f"rank_{selection}"]))
        rank = np.empty(len(outs), dtype=np.int64)
        rank[order] = np.arange(1, len(outs) + 1)
        results["rank"] = rank
        structures = np.empty(len(outs), dtype=object)
        for i, c in enumerate(candidates):
            structures[i] = c["structure"]
        results["structure"] = structures
        results["n_edges"] = np.array([len(g.edges()) for g in graphs], dtype=np.int64)
        results["restart"] = np.array([m[0] for m in meta], dtype=np.int64)
        results["step"] = np.array([m[1] for m in meta], dtype=np.int64)
        best = int(order[0])
        results["not_separable"] = C.not_separable_from_best(
            results[f"score_{selection}"], results[f"stderr_{selection}"], best
        )
        self.results_ = results
        self.score_results_ = [dict(o["scores"]) for o in outs]
        self.scorer_names_ = names
        self.selection_score_ = selection
        self.n_candidates_ = len(outs)
        self.best_index_ = best
        self.best_params_ = dict(candidates[best])
        self.best_structure_ = candidates[best]["structure"]
        self.best_score_ = float(results[f"score_{selection}"][best])
        self.path_ = path
        if self.refit:
            if outs[best]["estimator"] is None:  # pragma: no cover - kept above
                raise RuntimeError("the best candidate's fitted model was not kept")
            self.best_estimator_ = outs[best]["estimator"]
        elif hasattr(self, "best_estimator_"):
            del self.best_estimator_
        self._log(f"best of {len(outs)} structures: {selection}={self.best_score_:.4f}")
        return self


def _screen(screener, parent, neighbours):
    """The neighbours in the batches the climb fits one after the other: all at once
    without a screen (or a prediction), else the ``width`` predicted best, then the
    others predicted above ``-margin`` or without a prediction."""
    if screener is None or parent is None or len(neighbours) <= screener.width:
        return [neighbours]
    gains = screener(parent, neighbours)
    if gains is None:
        return [neighbours]
    gains = np.asarray(gains, dtype=float)
    known = np.isfinite(gains)
    order = np.argsort(np.where(known, -gains, np.inf), kind="stable")
    first = order[:screener.width]
    rest = [k for k in order[screener.width:] if not known[k] or gains[k] > -screener.margin]
    return [[neighbours[k] for k in sorted(first)], [neighbours[k] for k in sorted(rest)]]


def _drop_fitted(outs, keep):
    """Release fitted models no longer needed as warm-start parents or as the best."""
    for i, o in enumerate(outs):
        if i not in keep:
            o["estimator"] = None


def _argmax_value(outs, value):
    vals = [value(i) for i in range(len(outs))]
    return int(np.argmax(vals))
