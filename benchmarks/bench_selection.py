"""Selection quality: does the default find the number of states, components, factors or
state dimensions, and the edges, that generated the data?

One workload per family, ``selection-hmm``, ``selection-mfa``, ``selection-lds``,
``selection-dag``, ``selection-mrf`` and ``selection-crf``; each runs its panel of
problems (:mod:`benchmarks.selection`, whose modules describe every problem and method)
at several seeds, with sklearn_vb's default first and then the peers a user would pick
instead, on the same data in one run.  Every row's ``panel`` metric holds, per problem:
``recovery_rate`` (exact structure), ``distance`` (|K - K_true| or structural Hamming
distance), ``heldout_loglik`` per row (``heldout_accuracy`` for the CRF),
``gap_to_true`` (the method's own score at its choice minus at the true structure,
nats) and ``time_s`` (per selection), with the structures selected; real data sets
have no truth and report held-out values only.  ``mean_recovery_rate`` averages the
problems with a known truth.  In the full panels every selection runs in a forked child
stopped after ``FULL_TIME_CAP_S``; a stopped selection counts as not recovered and the
table says how many were stopped.

A missing peer is reported as skipped; a peer that does not apply to a problem (pgmpy
on hidden nodes) says so in its panel entry.  ``python -m benchmarks 'selection-*'``
writes ``results/selection.json`` and ``.md`` (a full run replaces only the families
it ran); ``--quick`` runs one or two seeds of small problems.
``tests/model_selection/test_selection_guard.py`` runs the ``guard`` size of the same panels and
checks them against ``benchmarks/selection_thresholds.json``.

A full panel can take hours; with ``SKLEARN_VB_SELECTION_JOURNAL=<file>`` every selection
is also written to that file as it ends, and a run stopped midway and started again with
the same file (on the same commit) takes the selections it holds from it instead of
repeating them.
"""

from __future__ import annotations

import importlib

from .harness import workload

FAMILIES = ("hmm", "mfa", "lds", "dag", "mrf", "crf")


def panel_module(family):
    return importlib.import_module(f"benchmarks.selection.{family}")


#: the wall time one selection of the full panels may take before it is stopped (s)
FULL_TIME_CAP_S = 1800.0


def _candidate(method, problems, cache, time_cap_s, journal=None):
    from .selection.common import overall, run_panel

    def run():
        panel = run_panel(problems, method, cache, time_cap_s=time_cap_s, journal=journal)
        return {"n_iter": None, **overall(panel), "panel": panel}

    return run


def _register(family):
    @workload(f"selection-{family}", per="call", repeats=1, warmup=False, stem="selection",
              compare=False)
    def selection(quick):
        from .selection.common import journal_for

        module = panel_module(family)
        problems = module.problems("quick" if quick else "full")
        cache = {}  # every method sees the same data, generated once
        cap = None if quick else FULL_TIME_CAP_S
        return {label: _candidate(method, problems, cache, cap,
                                  None if quick else journal_for(f"{family}: {label}"))
                for label, method in module.METHODS.items()}

    return selection


for _family in FAMILIES:
    _register(_family)
