"""Side-by-side timing of sklearn_vb against the libraries users would pick instead.

A workload is a function ``f(quick: bool) -> dict[label, callable]`` registered with
:func:`workload`.  ``f`` prepares the data once; each callable runs one complete fit on
it and returns the number of iterations it ran (or ``None`` when "per call" is the
unit).  The first entry is ours; the others are comparison libraries, imported inside
their callables so that a missing library (``ImportError``) is reported as skipped.

For every candidate the harness makes one warm-up call (timed separately: it includes
numba compilation or JIT tracing), then ``repeats`` timed calls, and reports the
median time per iteration and the ratio ours/theirs (< 1 means we are faster).
Callables may return a dict ``{"n_iter": int, **metrics}`` to report extra quality
metrics (held-out log-likelihood, chosen size...) next to the times.  Two keys of that
dict are special: ``"elapsed_s"`` replaces the harness's own timing of the call (for a
callable that times only part of what it does, e.g. a score run in a subprocess), and
``"trace"`` holds per-iteration data (bound histories) written to the JSON file only.
A callable that gives up after a time cap raises :class:`OverCap`; it is reported with
status "over cap" and the cap as its time (so every ratio built on it is a lower bound).

Workloads measuring time to a converged answer rather than time per iteration use
``per="call"`` and may also set ``repeats`` (their own number of timed calls, e.g. 1
for fits of minutes), ``warmup=False`` (the workload compiles on small data itself),
``ratio_to_first=True`` (every row is divided by the first row, e.g. score time / fit
time, instead of ours / theirs), ``compare=False`` (rows are sizes of one problem, not
libraries: no ratios) and ``stem`` (the results file stem of a full run; quick runs
always write ``quick``).  A workload function may return
``(candidates, summarize)``: ``summarize(measurements)`` runs after all candidates
and may add metrics and named ``ratios`` that need every library's result (the time
to a bound target common to two libraries).
"""

from __future__ import annotations

import json
import platform
import statistics
import time
import traceback
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
WORKLOADS: dict = {}


@dataclass(frozen=True)
class Workload:
    func: object
    per: str = "iteration"
    repeats: int | None = None
    warmup: bool = True
    ratio_to_first: bool = False
    stem: str | None = None
    compare: bool = True


def workload(name, per="iteration", *, repeats=None, warmup=True, ratio_to_first=False,
             stem=None, compare=True):
    """Register a benchmark workload under ``name`` (see the module docstring).

    ``per`` is "iteration" (callables return iteration counts) or "call".
    """
    if per not in ("iteration", "call"):
        raise ValueError("per must be 'iteration' or 'call'")

    def register(func):
        WORKLOADS[name] = Workload(func, per, repeats, warmup, ratio_to_first, stem, compare)
        return func

    return register


class OverCap(Exception):
    """Raised by a callable that stopped after ``seconds``, its time cap."""

    def __init__(self, seconds, metrics=None):
        super().__init__(f"over the cap of {seconds:g} s")
        self.seconds = float(seconds)
        self.metrics = dict(metrics or {})


@dataclass
class Measurement:
    label: str
    status: str  # "ok", "skipped" or "error"
    warmup_s: float | None = None
    median_s: float | None = None
    per_unit_ms: float | None = None
    n_iter: int | None = None
    ratio_ours_over_theirs: float | None = None
    metrics: dict = field(default_factory=dict)
    message: str = ""
    ratios: dict = field(default_factory=dict)
    trace: dict = field(default_factory=dict)


def _unpack(result):
    """``(n_iter, metrics, own elapsed seconds or None, trace)`` of a callable's result."""
    if isinstance(result, dict):
        metrics = dict(result)
        n_iter = metrics.pop("n_iter", None)
        elapsed = metrics.pop("elapsed_s", None)
        trace = metrics.pop("trace", {})
        return n_iter, metrics, elapsed, trace
    return result, {}, None, {}


def _timed(func):
    start = time.perf_counter()
    n_iter, metrics, elapsed, trace = _unpack(func())
    seconds = time.perf_counter() - start if elapsed is None else elapsed
    return seconds, n_iter, metrics, trace


def _error_message(exc):
    return "".join(traceback.format_exception_only(exc)).strip()


def _measure(label, func, per, repeats, warmup=True):
    times, n_iters, metrics, trace = [], [], {}, {}
    warmup_s = None
    try:
        if warmup:
            warmup_s = _timed(func)[0]
        for _ in range(repeats):
            seconds, n_iter, metrics, trace = _timed(func)
            times.append(seconds)
            n_iters.append(n_iter)
    except ImportError as exc:
        return Measurement(label, "skipped", message=f"not installed: {exc}")
    except OverCap as exc:
        return Measurement(label, "over cap", warmup_s=warmup_s, median_s=exc.seconds,
                           per_unit_ms=1e3 * exc.seconds, metrics=exc.metrics,
                           message=str(exc))
    except Exception as exc:  # a failing comparison must not stop the run
        return Measurement(label, "error", warmup_s=warmup_s, message=_error_message(exc))
    median = statistics.median(times)
    n_iter = n_iters[len(n_iters) // 2]
    unit = median if per == "call" or not n_iter else median / n_iter
    return Measurement(
        label, "ok", warmup_s=warmup_s, median_s=median, per_unit_ms=1e3 * unit,
        n_iter=n_iter, metrics=metrics, trace=trace,
    )


def _timed_status(m):
    return m.status in ("ok", "over cap") and m.per_unit_ms


def _add_ratios(spec, measurements):
    if not spec.compare:
        return
    ours = measurements[0]
    for m in measurements[1:]:
        if ours.status == "ok" and m.status == "ok" and m.per_unit_ms and not spec.ratio_to_first:
            m.ratio_ours_over_theirs = ours.per_unit_ms / m.per_unit_ms
        if spec.ratio_to_first and _timed_status(ours) and _timed_status(m):
            m.ratios[f"/ {ours.label}"] = m.per_unit_ms / ours.per_unit_ms


def run_workload(name, quick=False, repeats=None, verbose=True):
    """Run one registered workload and return its measurements (ours first).

    ``repeats`` (timed calls per candidate) defaults to the workload's own setting,
    else 3; quick runs make one timed call.
    """
    spec = WORKLOADS[name]
    candidates = spec.func(quick)
    summarize = None
    if isinstance(candidates, tuple):
        candidates, summarize = candidates
    if repeats is None:
        repeats = spec.repeats or 3
    measurements = []
    for label, candidate in candidates.items():
        if verbose:
            print(f"  {name}: {label} ...", flush=True)
        measurements.append(_measure(label, candidate, spec.per, 1 if quick else repeats,
                                     warmup=spec.warmup))
    if summarize is not None:
        try:
            summarize(measurements)
        except Exception as exc:  # the measurements stand even if the summary fails
            measurements[0].message = f"summary failed: {_error_message(exc)}"
    _add_ratios(spec, measurements)
    return {"workload": name, "per": spec.per, "quick": quick, "stem": spec.stem,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "measurements": measurements}


def _format_metric(key, value):
    return f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"


def markdown_table(results):
    """One markdown table for a list of workload results.

    A "ratios" column (ratios of metrics, or of every row to the first) is added when
    any measurement has such ratios; "≥" marks ratios built on a time cap.
    """
    with_ratios = any(m.ratios for r in results for m in r["measurements"])
    header = "| workload | library | status | first call (s) | median (s) | ms per unit | ours / theirs |"
    header += " ratios | metrics |" if with_ratios else " metrics |"
    lines = [header, "|---" * (header.count("|") - 1) + "|"]
    fmt = lambda v, f: "" if v is None else format(v, f)  # noqa: E731
    for result in results:
        unit = result["per"]
        for m in result["measurements"]:
            metrics = ", ".join(_format_metric(k, v) for k, v in m.metrics.items())
            line = (
                f"| {result['workload']} | {m.label} | {m.status}{': ' + m.message if m.message else ''} "
                f"| {fmt(m.warmup_s, '.3f')} | {fmt(m.median_s, '.3f')} "
                f"| {fmt(m.per_unit_ms, '.3f')} per {unit} | {fmt(m.ratio_ours_over_theirs, '.3f')} |"
            )
            if with_ratios:
                capped = "≥ " if m.status == "over cap" else ""
                line += " " + ", ".join(f"{k} {capped}{v:.3g}" for k, v in m.ratios.items()) + " |"
            lines.append(line + f" {metrics} |")
    return "\n".join(lines)


def load_results(json_path):
    """The workload results stored in a results JSON file (measurements rebuilt)."""
    payload = json.loads(Path(json_path).read_text())
    names = {f.name for f in fields(Measurement)}
    return [
        {**r, "measurements": [Measurement(**{k: v for k, v in m.items() if k in names})
                               for m in r["measurements"]]}
        for r in payload.get("results", [])
    ]


def write_results(results, stem="latest", directory=RESULTS_DIR, merge=False):
    """Write ``<stem>.json`` and ``<stem>.md`` and return their paths.

    With ``merge=True`` the results already stored under ``stem`` are kept for the
    workloads not in ``results`` (a long benchmark can then be run in pieces).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"{stem}.json"
    md_path = directory / f"{stem}.md"
    if merge and json_path.is_file():
        fresh = {r["workload"] for r in results}
        kept = [r for r in load_results(json_path) if r["workload"] not in fresh]
        results = sorted(kept + list(results), key=lambda r: r["workload"])
    payload = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "processor": platform.processor()},
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "results": [
            {**r, "measurements": [asdict(m) for m in r["measurements"]]} for r in results
        ],
    }
    json_path.write_text(json.dumps(payload, indent=2))
    md_path.write_text(markdown_table(results) + "\n")
    return json_path, md_path
