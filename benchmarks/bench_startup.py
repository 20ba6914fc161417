"""Start-up cost: the package import and the first fit of each estimator in a fresh process.

Every row runs in a fresh Python process (``subprocess``, the repository root first on
``PYTHONPATH``), so nothing is inherited from the benchmark's own process.

* ``startup-import``: ``import sklearn_vb``, the import of one estimator
  (``from sklearn_vb import VBHiddenMarkov``, which brings in scikit-learn and numba)
  and, for reference, ``import sklearn.mixture`` and ``import hmmlearn.hmm``.  The time
  is the import statement's wall time measured inside the child (interpreter start-up
  excluded), the median of ``repeats`` processes; ``cpu_s`` is its CPU time and
  ``process_s`` the whole child's wall time.
* ``startup-first-fit-cold``: the first fit of each public estimator
  (:data:`sklearn_vb._commands.warmup.FIRST_FITS`, one small fit with default options) in a
  process whose numba cache is empty (a fresh ``NUMBA_CACHE_DIR``): the kernels are
  compiled during the fit.
* ``startup-first-fit-warm``: the same in a process whose cache holds the kernels (the
  cold row's cache, or one filled by a first process when the cold workload did not
  run): the kernels are loaded from disk.

First-fit rows report the fit call's wall time (the estimator's module already
imported) and, as metrics, ``import_s`` (the estimator import), ``total_s`` (import plus
fit), the CPU seconds of both (``fit_cpu_s``, ``import_cpu_s``: robust to a loaded
machine) and ``second_fit_s``, the same fit repeated in the same process (no compiling,
no loading), so ``first_fit_s - second_fit_s`` is the price of the first call.
``load_avg`` is the machine's one-minute load average when the row started: on a shared
machine wall times can be several times the CPU times.

``python -m benchmarks 'startup-*'`` writes ``results/startup.*``.  Quick mode measures
one estimator (the CRF) and one process per row.  A full run takes a few minutes with a
warm cache, most of it the cold compilations (about a hundred CPU seconds in all).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

from .harness import workload

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1800.0

#: FIRST_FITS name -> the public class it fits
ESTIMATORS = {
    "hmm-categorical": "VBHiddenMarkov",
    "hmm-gaussian": "VBHiddenMarkov",
    "mfa": "VBMixtureFactorAnalysers",
    "lds": "VBLinearDynamicalSystem",
    "dag": "VBDiscreteDAG",
    "sbn": "VBSigmoidBeliefNetwork",
    "mrf": "PairwiseMRF",
    "boltzmann": "BoltzmannMachine",
    "crf": "LinearChainCRF",
}
QUICK_ESTIMATORS = ["crf"]

_IMPORT_CHILD = """
import json, time
w, c = time.perf_counter(), time.process_time()
{statement}
print(json.dumps({{"wall": time.perf_counter() - w, "cpu": time.process_time() - c}}))
"""

_FIT_CHILD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
name, cls = sys.argv[1], sys.argv[2]
w, c = time.perf_counter(), time.process_time()
import sklearn_vb
getattr(sklearn_vb, cls)
from sklearn_vb._commands.warmup import FIRST_FITS
w1, c1 = time.perf_counter(), time.process_time()
FIRST_FITS[name]()
w2, c2 = time.perf_counter(), time.process_time()
FIRST_FITS[name]()
w3 = time.perf_counter()
print(json.dumps({"import_s": w1 - w, "import_cpu_s": c1 - c, "first_fit_s": w2 - w1,
                  "fit_cpu_s": c2 - c1, "second_fit_s": w3 - w2}))
"""

#: one numba cache directory per estimator, shared by its cold and warm rows
_CACHES: dict = {}


def _env(cache_dir=None):
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def _child(code, args=(), cache_dir=None):
    """Run ``code`` in a fresh interpreter; its last stdout line (JSON) and the wall time."""
    import time

    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=_env(cache_dir),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip()
                           else f"exit code {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), seconds


def measure_import(statement, repeats):
    """Median import time of ``statement`` over ``repeats`` fresh processes."""
    runs = [_child(_IMPORT_CHILD.format(statement=statement)) for _ in range(repeats)]
    walls = [r["wall"] for r, _ in runs]
    median = statistics.median(walls)
    pick = walls.index(median) if median in walls else 0
    return {"n_iter": None, "elapsed_s": median, "cpu_s": runs[pick][0]["cpu"],
            "process_s": statistics.median(s for _, s in runs), "processes": repeats,
            "load_avg": os.getloadavg()[0]}


def _import_rows(quick):
    repeats = 1 if quick else 5
    rows = {}
    for label, statement, needs in [
        ("import sklearn_vb", "import sklearn_vb", "sklearn_vb"),
        ("from sklearn_vb import VBHiddenMarkov", "from sklearn_vb import VBHiddenMarkov",
         "sklearn_vb"),
        ("import sklearn.mixture", "import sklearn.mixture", "sklearn"),
        ("import hmmlearn.hmm", "import hmmlearn.hmm", "hmmlearn"),
    ]:
        def row(statement=statement, needs=needs):
            if find_spec(needs) is None:
                raise ImportError(f"No module named {needs!r}")
            return measure_import(statement, repeats)
        rows[label] = row
    return rows


def measure_first_fit(name, cold, repeats):
    """First fit of ``FIRST_FITS[name]`` in fresh processes with a cold or warm cache."""
    load = os.getloadavg()[0]
    if cold or name not in _CACHES:
        _CACHES[name] = Path(tempfile.mkdtemp(prefix=f"numba-cache-{name}-"))
        if not cold:  # fill it first: this row measures loading, not compiling
            _child(_FIT_CHILD, (name, ESTIMATORS[name]), _CACHES[name])
    runs = [_child(_FIT_CHILD, (name, ESTIMATORS[name]), _CACHES[name])[0]
            for _ in range(1 if cold else repeats)]
    firsts = [r["first_fit_s"] for r in runs]
    run = runs[firsts.index(statistics.median(firsts))] if len(runs) % 2 else runs[0]
    return {"n_iter": None, "elapsed_s": run["first_fit_s"], **run,
            "total_s": run["import_s"] + run["first_fit_s"], "processes": len(runs),
            "load_avg": load}


def _fit_rows(quick, cold):
    names = QUICK_ESTIMATORS if quick else list(ESTIMATORS)
    repeats = 1 if quick else 3
    return {name: (lambda name=name: measure_first_fit(name, cold, repeats)) for name in names}


@workload("startup-import", per="call", repeats=1, warmup=False, stem="startup")
def startup_import(quick):
    return _import_rows(quick)


@workload("startup-first-fit-cold", per="call", repeats=1, warmup=False, stem="startup",
          compare=False)
def startup_first_fit_cold(quick):
    return _fit_rows(quick, cold=True)


@workload("startup-first-fit-warm", per="call", repeats=1, warmup=False, stem="startup",
          compare=False)
def startup_first_fit_warm(quick):
    return _fit_rows(quick, cold=False)
