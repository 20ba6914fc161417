"""The experiment record and the table of registered experiments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ._runner import run_experiment

__all__ = ["Experiment", "Option", "EXPERIMENTS", "register", "get_experiment", "run",
           "selected_sections"]


@dataclass(frozen=True)
class Option:
    """An experiment-specific setting, also offered on the command line as ``--<name>``
    (underscores become dashes).  ``default=None`` keeps the value of the chosen
    configuration (quick or full).

    Examples
    --------
    >>> from sklearn_vb.reproduce import Option
    >>> Option("draws", int, "number of parameter draws")
    Option(name='draws', type=<class 'int'>, help='number of parameter draws', default=None)
    """

    name: str
    type: Callable = int
    help: str = ""
    default: Any = None


@dataclass(frozen=True)
class Experiment:
    """One reproducible experiment.

    Attributes
    ----------
    name : str
        Registry key and command-line name (``python -m sklearn_vb reproduce <name>``).
    description : str
        One line, shown by ``reproduce --list``.
    quick, full : dict
        The two configurations.  Every key may be overridden by a keyword of the Python
        call; those named in ``options`` also from the command line.
    units : callable ``(config) -> list of keys``
        The work units.  A key is a tuple of JSON scalars (str, int, float, bool); each
        unit is computed, cached and resumed independently.
    run_unit : callable ``(key, config, seed) -> result``
        Computes one unit.  ``config["quick"]`` and ``config["seed"]`` (the run's seed,
        for randomness shared by several units such as one data set per draw) are set by
        the runner.  ``seed`` is an integer derived from the run's seed and the key
        alone, so a unit's result does not depend on the order of execution, on
        ``n_jobs`` or on resuming.  The result must be JSON-serialisable (nested dicts and
        lists of numbers and strings; NaN and infinities are allowed).
    summarize : callable ``(results, config) -> dict``
        Turns ``{key: result}`` into the experiment's tables (plain dicts, lists and
        arrays).  Tests check these numbers.
    report : callable ``(summary, config, out_dir) -> str``
        Writes the figures (PNG) into ``out_dir`` (a :class:`pathlib.Path`, or None for
        no files) and returns the markdown report, which refers to them by file name.
    options : tuple of Option
        Settings offered on the command line.
    resume_ignores : tuple of str
        Settings that change which units exist but not any unit's result (e.g. the number
        of parameter draws): a journal written with other values of them can be resumed,
        so a run with more draws continues one with fewer, and a report on the draws
        finished so far can be written from an interrupted longer run.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.reproduce import Experiment
    >>> def mean_of_draws(key, config, seed):           # one unit: one sample mean
    ...     (n,) = key
    ...     return float(np.random.default_rng(seed).standard_normal(n).mean())
    >>> toy = Experiment(
    ...     name="toy", description="sample means", quick={"sizes": [10, 1000]},
    ...     full={"sizes": [10, 1000, 100000]},
    ...     units=lambda config: [(n,) for n in config["sizes"]],
    ...     run_unit=mean_of_draws,
    ...     summarize=lambda results, config: {"means": results},
    ...     report=lambda summary, config, out_dir: "# toy")
    >>> toy.config(quick=True)
    {'sizes': [10, 1000], 'quick': True}
    >>> run = toy(quick=True, verbose=0)              # no ``out``: no files written
    >>> sorted(run.results), bool(abs(run.results[(1000,)]) < 0.1)
    ([(10,), (1000,)], True)
    """

    name: str
    description: str
    quick: dict
    full: dict
    units: Callable
    run_unit: Callable
    summarize: Callable
    report: Callable
    options: tuple = field(default_factory=tuple)
    resume_ignores: tuple = field(default_factory=tuple)

    def config(self, quick=False, **overrides):
        """The configuration dict: ``quick`` or ``full``, updated with ``overrides``
        (unknown keys raise ``ValueError``; None values are ignored)."""
        base = dict(self.quick if quick else self.full)
        unknown = sorted(k for k in overrides if k not in base)
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown} for experiment {self.name!r}; "
                             f"allowed: {sorted(base)}.")
        base.update({k: v for k, v in overrides.items() if v is not None})
        base["quick"] = bool(quick)
        return base

    def __call__(self, *, quick=False, out=None, n_jobs=1, seed=0, resume=False, verbose=1,
                 report_only=False, **overrides):
        """Run the experiment; the keywords are those of :func:`run`."""
        return run_experiment(self, quick=quick, out=out, n_jobs=n_jobs, seed=seed, resume=resume,
                   verbose=verbose, report_only=report_only, **overrides)


#: experiment name -> Experiment
EXPERIMENTS: dict = {}


def selected_sections(value, known, every="all"):
    """The sections named by a ``sections`` setting: ``every`` (all of ``known``) or a
    comma-separated list of members of ``known``; anything else raises naming both."""
    if str(value) == every:
        return list(known)
    parts = [p.strip() for p in str(value).split(",") if p.strip()]
    bad = [p for p in parts if p not in known]
    if bad or not parts:
        raise ValueError(f"sections must be {every!r} or a comma-separated list of "
                         f"{tuple(known)}; got {value!r}.")
    return parts


def register(experiment):
    """Add ``experiment`` to the table (a name can be registered once) and return it.

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
    >>> reproduce.register(toy) is reproduce.get_experiment("toy")
    True
    >>> "toy" in reproduce.list_experiments()
    True
    >>> del reproduce.EXPERIMENTS["toy"]                 # leave the table as it was
    """
    if not isinstance(experiment, Experiment):
        raise TypeError(f"expected an Experiment, got {type(experiment).__name__}.")
    if experiment.name in EXPERIMENTS and EXPERIMENTS[experiment.name] is not experiment:
        raise ValueError(f"an experiment named {experiment.name!r} is already registered.")
    for reserved in ("quick", "seed"):
        if reserved in experiment.full or reserved in experiment.quick:
            raise ValueError(f"{reserved!r} is reserved: the runner sets it in every configuration.")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get_experiment(name):
    """The registered experiment called ``name`` (``ValueError`` naming the choices).

    Examples
    --------
    >>> from sklearn_vb.reproduce import get_experiment
    >>> experiment = get_experiment("dag")        # Beal (2003), Chapter 6
    >>> experiment.name, callable(experiment)      # calling it runs the experiment
    ('dag', True)
    """
    if isinstance(name, Experiment):
        return name
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}.")
    return EXPERIMENTS[name]


def run(experiment, **kwargs):
    """Run the experiment named ``experiment`` (or an :class:`Experiment`).

    Keywords: ``quick``, ``out``, ``n_jobs``, ``seed``, ``resume``, ``verbose``,
    ``cache``, ``chunk_size``, ``backend``, ``report_only`` and any setting of the
    configuration; see
    ``sklearn_vb.reproduce._runner.run_experiment``.  Returns a
    :class:`~sklearn_vb.reproduce.ReproductionRun`.

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
    >>> result = reproduce.run(toy, quick=True, seed=1, verbose=0, sizes=[5])
    >>> result.experiment, result.config["sizes"], list(result.results)
    ('toy', [5], [(5,)])
    >>> result.results == reproduce.run(toy, quick=True, seed=1, verbose=0, sizes=[5]).results
    True
    """
    return run_experiment(get_experiment(experiment), **kwargs)
