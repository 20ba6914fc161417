"""Reproductions of published experiments: ``python -m sklearn_vb reproduce <experiment>``.

Each experiment is also callable from Python under its name, e.g.::

    from sklearn_vb import reproduce
    run = reproduce.dag(quick=True, out="out/dag", n_jobs=2, seed=0)
    run.summary["table_6_1"]          # the numbers
    print(run.report)                 # the markdown report (figures next to it in out/)

Command line (the same keywords)::

    python -m sklearn_vb reproduce --list
    python -m sklearn_vb reproduce dag --quick --out out/dag --n-jobs 2 --seed 0
    python -m sklearn_vb reproduce dag --draws 20 --out out/dag --resume

Every run is split into *work units* (for the DAG study one unit is one (draw, n,
structure, fit) combination).  Units are computed in parallel with joblib (so they also
run on a dask cluster under ``joblib.parallel_config(backend="dask")``), each with a seed
derived from the run's ``seed`` and the unit's key alone, and every finished unit is
appended to a journal in ``<out>/cache/``.  ``resume=True`` (``--resume``) reads the
journal back and computes only the missing units, so an interrupted multi-hour run
continues where it stopped and gives the same result as an uninterrupted one.  A progress
line shows the units done and an estimate of the time left.

Adding an experiment
--------------------
1. Create ``sklearn_vb/reproduce/<name>.py`` defining four functions and registering them::

       from ._experiment import Experiment, Option, register

       def _units(config):                  # the work units: a list of tuple keys
           return [(n, s) for n in config["sizes"] for s in range(config["n_structures"])]

       def _run_unit(key, config, seed):    # one unit -> JSON-serialisable result
           n, s = key
           ...
           return {"vb": float(bound), "bic": float(bic)}

       def _summarize(results, config):     # {key: result} -> tables (dict)
           ...

       def _report(summary, config, out_dir):   # figures into out_dir, returns markdown
           ...

       name = register(Experiment(
           name="name", description="one line for --list",
           quick={"sizes": [10, 20], ...}, full={"sizes": [10, 20, 40, ...], ...},
           units=_units, run_unit=_run_unit, summarize=_summarize, report=_report,
           options=(Option("draws", int, "number of parameter draws"),)))

   ``quick`` must run in a minute or two (a test runs it and checks its numbers); every
   key of the configurations can be overridden from Python (``reproduce.name(sizes=[10])``)
   and the ``options`` also from the command line (``--draws 20``).  The results of a
   unit must depend only on ``(key, config, seed)``.
2. Import it below (one line, ``from .<name> import <name>``), which also makes
   ``sklearn_vb.reproduce.<name>(...)`` the callable experiment.
3. Add ``tests/<model>/test_reproduce_<name>.py`` (``tests/reproduce/`` for an
   experiment about no single model) running the quick mode (or a smaller
   configuration) and checking its numbers, and commit the full-mode report under
   ``doc/reproduce/``.

Helpers for reports live in :mod:`sklearn_vb.reproduce._report` (markdown tables,
figure saving).
"""

from ._experiment import EXPERIMENTS, Experiment, Option, get_experiment, register, run
from ._runner import ReproductionRun, unit_seed

__all__ = ["EXPERIMENTS", "Experiment", "Option", "ReproductionRun", "get_experiment",
           "register", "run", "unit_seed", "list_experiments"]


def list_experiments():
    """``{name: description}`` of the registered experiments.

    Examples
    --------
    >>> from sklearn_vb.reproduce import list_experiments
    >>> {"dag", "ais", "bdmc"} <= set(list_experiments())
    True
    """
    return {name: exp.description for name, exp in sorted(EXPERIMENTS.items())}


# registered experiments (one line each); each import binds the experiment's name here
from .dag import dag  # noqa: E402
from .ais import ais  # noqa: E402
from .bdmc import bdmc  # noqa: E402
from .hmm import hmm  # noqa: E402
from .vmcmc import vmcmc  # noqa: E402
from .mrf import mrf  # noqa: E402
from .lds import lds  # noqa: E402
from .mfa import mfa  # noqa: E402
