"""Containers and the runner shared by the selection panels.

A :class:`Problem` is one data-generating setting (or one real data set) run at several
seeds; ``make(seed)`` returns the data a method sees (training and held-out parts).  A
method is a callable ``method(problem, data, seed) -> Outcome`` that selects a structure
on the training part; the runner times it and summarises each problem over its seeds:

* ``recovery_rate``: fraction of seeds where the selected structure equals the truth
  exactly (the number of states / components / state dimensions, or the edge set);
* ``distance``: mean ``|K_selected - K_true|`` for sizes, mean structural Hamming distance
  for graphs (a reversed edge counts once);
* ``heldout_loglik``: mean held-out log-likelihood per row (nats; for the CRF, held-out
  label accuracy instead, named ``heldout_accuracy``);
* ``gap_to_true``: the method's own selection score at its choice minus the same score of
  a fit at the true structure (nats, total).  Zero when the truth is chosen; positive
  when the score prefers another structure; negative when the search stopped below a
  structure it could have reached (a search failure rather than a scoring one);
* ``time_s``: mean wall time of one selection (data generation excluded), and
  ``cpu_s`` its CPU time in this process (the number to compare on a shared machine).

Problems without a known structure (real data) report held-out values and times only.
"""

from __future__ import annotations

import json
import os
import time
import traceback
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

#: the sizes a panel is built at: the guard test, ``--quick`` and the full benchmark
SIZES = ("guard", "quick", "full")


class NotApplicable(Exception):
    """Raised by a method that does not apply to a problem (e.g. hidden nodes)."""


@dataclass
class Outcome:
    """What one method chose on one seed of one problem."""

    selected: object
    recovered: bool | None = None
    distance: float | None = None
    heldout: float | None = None
    gap: float | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class Problem:
    """One setting of a family's panel, run once per seed.

    ``truth`` is the true structure (None for real data); ``heldout_kind`` names the
    held-out metric ("loglik" per row, or "accuracy").
    """

    name: str
    truth: object
    seeds: tuple
    make: object
    heldout_kind: str = "loglik"
    info: dict = field(default_factory=dict)


def check_size(size):
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}; got {size!r}.")
    return size


def quietly(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def size_distance(selected, truth):
    return float(abs(int(selected) - int(truth)))


def _mean(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(values)) if values else None


def _timed(method, problem, data, seed):
    """``(outcome, wall seconds)`` of one selection, its CPU time in ``outcome.extra``."""
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = method(problem, data, seed)
    out.extra.setdefault("cpu_s", time.process_time() - cpu)
    return out, time.perf_counter() - start


class _OverTimeCap(Exception):
    pass


def _timed_capped(method, problem, data, seed, time_cap_s):
    """:func:`_timed` in a forked child stopped after ``time_cap_s`` seconds, so that one
    selection that runs for hours (a peer's search on a large network) does not stop the
    panel; exceptions of the child come back as their message."""
    from ..capped_call import run_capped

    outcome = run_capped(lambda: _timed(method, problem, data, seed), time_cap_s,
                         memory_cap_mb=MEMORY_CAP_MB)
    if outcome.status == "ok":
        return outcome.values[0]
    if outcome.status == "over time cap":
        raise _OverTimeCap(outcome.message)
    if "ImportError" in outcome.message or "ModuleNotFoundError" in outcome.message:
        raise ImportError(outcome.message)
    if "NotApplicable" in outcome.message:
        raise NotApplicable(outcome.message.split(":", 1)[-1].strip())
    raise RuntimeError(outcome.message)


#: the resident memory a capped selection may reach before it is stopped (MB)
MEMORY_CAP_MB = 8192.0


class Journal:
    """Selections already made, one JSON line each, so that a long panel stopped midway
    resumes where it stopped (``SKLEARN_VB_SELECTION_JOURNAL=<file>``).  An entry is
    keyed by the method's label, the problem and the seed; nothing checks that the code
    is unchanged since it was written, so a journal belongs to one run of one commit."""

    def __init__(self, path, label):
        self.path, self.label = Path(path), label
        self.entries = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                entry = json.loads(line)
                self.entries[(entry["method"], entry["problem"], entry["seed"])] = entry

    def get(self, problem, seed):
        """``(Outcome, seconds)`` recorded for this selection, or None."""
        entry = self.entries.get((self.label, problem.name, _jsonable(seed)))
        if entry is None:
            return None
        return Outcome(**entry["outcome"]), entry["seconds"]

    def put(self, problem, seed, outcome, seconds):
        entry = {"method": self.label, "problem": problem.name, "seed": _jsonable(seed),
                 "outcome": {f.name: _jsonable(getattr(outcome, f.name))
                             for f in fields(Outcome)},
                 "seconds": seconds}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")
        self.entries[(self.label, problem.name, entry["seed"])] = entry


def journal_for(label):
    """The :class:`Journal` named by ``SKLEARN_VB_SELECTION_JOURNAL``, or None."""
    path = os.environ.get("SKLEARN_VB_SELECTION_JOURNAL")
    return Journal(path, label) if path else None


def run_problem(problem, method, data_cache=None, time_cap_s=None, journal=None):
    """Run ``method`` on every seed of ``problem``; the per-problem summary (a dict).

    ``ImportError`` propagates (the harness reports a missing library as skipped);
    any other exception is recorded for that seed and the other seeds still run.  With
    ``time_cap_s`` every selection runs in a forked child and is stopped after that many
    seconds; such seeds are counted in ``over_time_cap``, as not recovered in
    ``recovery_rate`` and left out of the other means.  With a :class:`Journal`, the
    selections it holds are taken from it and every new one is added to it.
    """
    runs, errors, over_cap = [], [], 0
    for seed in problem.seeds:
        recorded = journal.get(problem, seed) if journal is not None else None
        if recorded is not None:
            runs.append((seed, *recorded))
            continue
        key = (problem.name, seed)
        if data_cache is not None and key in data_cache:
            data = data_cache[key]
        else:
            data = problem.make(seed)
            if data_cache is not None:
                data_cache[key] = data
        try:
            if time_cap_s is None:
                out, seconds = _timed(method, problem, data, seed)
            else:
                out, seconds = _timed_capped(method, problem, data, seed, time_cap_s)
            if journal is not None:
                journal.put(problem, seed, out, seconds)
        except ImportError:
            raise
        except NotApplicable as exc:
            return {"seeds": len(problem.seeds), "ok": 0, "not_applicable": str(exc)}
        except _OverTimeCap:
            over_cap += 1
            continue
        except Exception as exc:  # one failing seed must not hide the others
            errors.append(f"seed {seed}: " + "".join(
                traceback.format_exception_only(exc)).strip()[:200])
            continue
        runs.append((seed, out, seconds))
    summary = {"seeds": len(problem.seeds), "ok": len(runs)}
    if over_cap:
        summary["over_time_cap"] = over_cap
        summary["time_cap_s"] = time_cap_s
    if problem.truth is not None:
        summary["truth"] = _jsonable(problem.truth)
        # a selection stopped at the time cap found nothing: it counts as not recovered
        rec = [o.recovered for _, o, _ in runs if o.recovered is not None] + [False] * over_cap
        summary["recovery_rate"] = float(np.mean(rec)) if rec else None
        summary["distance"] = _mean([o.distance for _, o, _ in runs])
        summary["gap_to_true"] = _mean([o.gap for _, o, _ in runs])
    key = "heldout_accuracy" if problem.heldout_kind == "accuracy" else "heldout_loglik"
    summary[key] = _mean([o.heldout for _, o, _ in runs])
    summary["time_s"] = _mean([t for _, _, t in runs])
    summary["selected"] = [_jsonable(o.selected) for _, o, _ in runs]
    extras = {}
    for _, o, _ in runs:
        for k, v in o.extra.items():
            extras.setdefault(k, []).append(_jsonable(v))
    summary.update({k: (_mean(v) if all(isinstance(x, (int, float)) for x in v) else v)
                    for k, v in extras.items()})
    if errors:
        summary["errors"] = errors
    return summary


def run_panel(problems, method, data_cache=None, log=None, time_cap_s=None, journal=None):
    """``{problem name: summary}`` of ``method`` over the panel, and the overall rates."""
    panel = {}
    for problem in problems:
        if log is not None:
            log(f"    {problem.name} ...")
        panel[problem.name] = run_problem(problem, method, data_cache, time_cap_s, journal)
    return panel


def overall(panel):
    """Panel-level metrics: mean recovery rate and mean distance over problems with a
    known truth, and the number of problems."""
    rates = [s["recovery_rate"] for s in panel.values() if s.get("recovery_rate") is not None]
    dists = [s["distance"] for s in panel.values() if s.get("distance") is not None]
    return {"problems": len(panel),
            "mean_recovery_rate": float(np.mean(rates)) if rates else None,
            "mean_distance": float(np.mean(dists)) if dists else None}


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    return value


def split_rows(X, test_fraction, seed):
    """A random split of the rows: ``(train, test)``."""
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    n_test = int(round(test_fraction * X.shape[0]))
    return X[perm[n_test:]], X[perm[:n_test]]


def edge_shd(selected, truth, directed):
    """Structural Hamming distance between two edge sets (a reversed directed edge
    counts once)."""
    if directed:
        a, b = set(map(tuple, selected)), set(map(tuple, truth))
        reversed_ = {e for e in a - b if (e[1], e[0]) in b}
        return len(a - b - reversed_) + len(b - a - {(e[1], e[0]) for e in reversed_}) \
            + len(reversed_)
    a = {frozenset(e) for e in selected}
    b = {frozenset(e) for e in truth}
    return len(a ^ b)
