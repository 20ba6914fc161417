"""Running an experiment: work units in parallel, cached, resumable, with progress."""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._core.progress import Progress
from ._cache import Journal, to_jsonable

__all__ = ["run_experiment", "unit_seed", "ReproductionRun"]


def unit_seed(seed, key):
    """The integer seed of one work unit: a function of the run's ``seed`` and the unit's
    ``key`` only (never of the order of execution or of ``n_jobs``).

    Examples
    --------
    >>> from sklearn_vb.reproduce import unit_seed
    >>> unit_seed(0, ("draw", 3)) == unit_seed(0, ("draw", 3))
    True
    >>> unit_seed(0, ("draw", 3)) != unit_seed(1, ("draw", 3))
    True
    """
    digest = zlib.crc32(json.dumps(to_jsonable(key)).encode("utf-8"))
    return int(np.random.SeedSequence([int(seed), digest]).generate_state(1)[0])


@dataclass
class ReproductionRun:
    """What :func:`run` returns.

    Attributes
    ----------
    experiment : str
    config : dict
        The configuration used (quick or full, with the overrides).
    seed : int
    results : dict
        ``{key: result}`` of every work unit.
    summary : dict
        The experiment's tables (``Experiment.summarize``), plus ``"timing"``: seconds
        per unit (``mean``, ``total``) and the number of units computed in this call and
        taken from the journal.
    report : str
        The markdown report.
    out : pathlib.Path or None
        Where the report (``<experiment>.md``) and figures were written.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import reproduce
    >>> def mean_of_draws(key, config, seed):           # one unit: one sample mean
    ...     (n,) = key
    ...     return float(np.random.default_rng(seed).standard_normal(n).mean())
    >>> toy = reproduce.Experiment(
    ...     name="toy", description="sample means", quick={"sizes": [10, 1000]},
    ...     full={"sizes": [10, 1000, 100000]},
    ...     units=lambda config: [(n,) for n in config["sizes"]],
    ...     run_unit=mean_of_draws,
    ...     summarize=lambda results, config: {"means": results},
    ...     report=lambda summary, config, out_dir: "# toy")
    >>> run = reproduce.run(toy, quick=True, verbose=0)
    >>> isinstance(run, reproduce.ReproductionRun), run.out is None, run.report
    (True, True, '# toy')
    >>> sorted(run.summary)
    ['means', 'timing']
    """

    experiment: str
    config: dict
    seed: int
    results: dict
    summary: dict
    report: str
    out: Path | None = None
    timing: dict = field(default_factory=dict)


def _compute(run_unit, keys, config, seed):
    """Worker task: compute a chunk of units; returns ``[(key, result, seconds)]``."""
    out = []
    for key in keys:
        t0 = time.perf_counter()
        result = run_unit(key, config, unit_seed(seed, key))
        out.append((key, result, time.perf_counter() - t0))
    return out


def _chunks(keys, n_jobs, chunk_size):
    if chunk_size is None:
        # several chunks per worker keep the workers busy and the progress line moving
        chunk_size = max(1, min(32, len(keys) // (8 * max(n_jobs, 1)) or 1))
    return [keys[i:i + chunk_size] for i in range(0, len(keys), chunk_size)]


def _effective_n_jobs(n_jobs):
    from joblib import effective_n_jobs

    return effective_n_jobs(n_jobs)


def run_experiment(exp, *, quick=False, out=None, n_jobs=1, seed=0, resume=False, verbose=1,
        cache=None, chunk_size=None, backend=None, report_only=False, **overrides):
    """Run a registered experiment and write its report.

    Parameters
    ----------
    exp : Experiment
    quick : bool, default=False
        The quick configuration (a minute or two) instead of the full one.
    out : str or path, default=None
        Directory for the markdown report ``<experiment>.md`` and the PNG figures; also
        holds the results journal (``cache/``) unless ``cache`` is given.  None writes
        no files.
    n_jobs : int, default=1
        Parallel workers (joblib; ``-1`` = all cores).  Under
        ``joblib.parallel_config(backend="dask")`` the units run on a dask cluster.
    seed : int, default=0
        Seed of the whole run; each unit's seed is derived from it and the unit's key.
    resume : bool, default=False
        Continue from the journal of an earlier (interrupted) run with the same
        configuration and seed: its units are not computed again.  Without ``resume`` a
        new journal is started (an existing one is kept as ``<journal>.bak``).
    verbose : int, default=1
        ``0`` silent; ``1`` a progress line with the time left every few seconds.
    cache : str or path, default=None
        Journal file; default ``<out>/cache/<experiment>-<quick|full>-seed<seed>.jsonl``
        (no journal when ``out`` is None too).
    chunk_size : int, default=None
        Units per parallel task (default: a few tasks per worker, at most 32 units each).
    backend : str, default=None
        joblib backend (None: joblib's default or the active ``parallel_config``).
    report_only : bool, default=False
        Compute nothing: summarise the units already in the journal (e.g. of a run still
        going, or interrupted) and write the report from them.  The experiment's
        ``summarize`` then receives only those units; ``summary["timing"]["missing"]``
        counts the others.
    **overrides
        Settings of the configuration to change (``draws=20``, ``sizes=[10, 20]``...).

    Returns
    -------
    ReproductionRun
    """
    seed = int(seed)
    config = exp.config(quick=quick, **overrides)
    config["seed"] = seed
    out = Path(out) if out is not None else None
    if cache is None and out is not None:
        cache = out / "cache" / f"{exp.name}-{'quick' if quick else 'full'}-seed{seed}.jsonl"
    if (resume or report_only) and cache is None:
        raise ValueError("resume needs a results journal (so does report_only): give out= "
                         "or cache=.")
    journal = (Journal(cache, exp.name, config, seed, exp.resume_ignores)
               if cache is not None else None)

    keys = [tuple(k) for k in exp.units(config)]
    if len(set(keys)) != len(keys):
        raise ValueError(f"experiment {exp.name!r} produced duplicate unit keys.")
    results, seconds = ({}, {})
    if journal is not None and (resume or report_only):
        results, seconds = journal.load()
        wanted = set(keys)
        results = {k: v for k, v in results.items() if k in wanted}
    n_cached = len(results)
    missing = [k for k in keys if k not in results]
    pending = [] if report_only else missing

    progress = Progress(verbose, f"reproduce {exp.name}", len(pending))
    if verbose and n_cached:
        progress.message(f"{n_cached} of {len(keys)} units taken from {cache}")
    if journal is not None and not report_only:
        journal.start(fresh=not resume)
    t_start = time.perf_counter()
    try:
        n_workers = _effective_n_jobs(n_jobs)
        done = 0
        if n_workers == 1:
            batches = ((_compute(exp.run_unit, [k], config, seed)) for k in pending)
        else:
            from joblib import Parallel, delayed

            parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered")
            batches = parallel(delayed(_compute)(exp.run_unit, chunk, config, seed)
                               for chunk in _chunks(pending, n_workers, chunk_size))
        for batch in batches:
            for key, result, secs in batch:
                result = json.loads(json.dumps(to_jsonable(result)))  # as read back on resume
                results[key], seconds[key] = result, secs
                if journal is not None:
                    journal.add(key, result, secs)
            done += len(batch)
            progress(done)
    finally:
        if journal is not None and not report_only:
            journal.close()
    wall = time.perf_counter() - t_start

    ordered = {k: results[k] for k in keys if k in results}
    summary = exp.summarize(ordered, config)
    unit_seconds = np.array([seconds.get(k, np.nan) for k in keys], dtype=float)
    timing = {"units": len(keys), "computed": len(pending), "cached": n_cached,
              "missing": len(keys) - len(ordered),
              "wall_seconds": wall, "n_jobs": _effective_n_jobs(n_jobs),
              "unit_seconds_mean": float(np.nanmean(unit_seconds)) if len(keys) else 0.0,
              "unit_seconds_total": float(np.nansum(unit_seconds))}
    summary["timing"] = timing
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    report = exp.report(summary, config, out)
    if out is not None:
        (out / f"{exp.name}.md").write_text(report, encoding="utf-8")
        (out / f"{exp.name}_summary.json").write_text(
            json.dumps(to_jsonable(summary), indent=1), encoding="utf-8")
    return ReproductionRun(exp.name, config, seed, ordered, summary, report, out, timing)
