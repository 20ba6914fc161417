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
metrics (held-out log-likelihood, chosen size...) next to the times.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
WORKLOADS: dict = {}


def workload(name, per="iteration"):
    """Register a benchmark workload under ``name``.

    ``per`` is "iteration" (callables return iteration counts) or "call".
    """
    if per not in ("iteration", "call"):
        raise ValueError("per must be 'iteration' or 'call'")

    def register(func):
        WORKLOADS[name] = (func, per)
        return func

    return register


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


def _unpack(result):
    if isinstance(result, dict):
        metrics = dict(result)
        n_iter = metrics.pop("n_iter", None)
        return n_iter, metrics
    return result, {}


def _measure(label, func, per, repeats):
    try:
        start = time.perf_counter()
        _unpack(func())
        warmup = time.perf_counter() - start
    except ImportError as exc:
        return Measurement(label, "skipped", message=f"not installed: {exc}")
    except Exception as exc:  # a failing comparison must not stop the run
        return Measurement(label, "error", message="".join(traceback.format_exception_only(exc)).strip())
    times, n_iters, metrics = [], [], {}
    for _ in range(repeats):
        start = time.perf_counter()
        n_iter, metrics = _unpack(func())
        times.append(time.perf_counter() - start)
        n_iters.append(n_iter)
    median = statistics.median(times)
    n_iter = n_iters[len(n_iters) // 2]
    unit = median if per == "call" or not n_iter else median / n_iter
    return Measurement(
        label, "ok", warmup_s=warmup, median_s=median, per_unit_ms=1e3 * unit,
        n_iter=n_iter, metrics=metrics,
    )


def run_workload(name, quick=False, repeats=3, verbose=True):
    """Run one registered workload and return its measurements (ours first)."""
    func, per = WORKLOADS[name]
    candidates = func(quick)
    measurements = []
    for label, candidate in candidates.items():
        if verbose:
            print(f"  {name}: {label} ...", flush=True)
        measurements.append(_measure(label, candidate, per, 1 if quick else repeats))
    ours = measurements[0]
    for m in measurements[1:]:
        if ours.status == "ok" and m.status == "ok" and m.per_unit_ms:
            m.ratio_ours_over_theirs = ours.per_unit_ms / m.per_unit_ms
    return {"workload": name, "per": per, "quick": quick, "measurements": measurements}


def markdown_table(results):
    """One markdown table for a list of workload results."""
    lines = [
        "| workload | library | status | first call (s) | median (s) | ms per unit | ours / theirs | metrics |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        unit = result["per"]
        for m in result["measurements"]:
            fmt = lambda v, f: "" if v is None else format(v, f)  # noqa: E731
            metrics = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in m.metrics.items()
            )
            lines.append(
                f"| {result['workload']} | {m.label} | {m.status}{': ' + m.message if m.message else ''} "
                f"| {fmt(m.warmup_s, '.3f')} | {fmt(m.median_s, '.3f')} "
                f"| {fmt(m.per_unit_ms, '.3f')} per {unit} | {fmt(m.ratio_ours_over_theirs, '.3f')} | {metrics} |"
            )
    return "\n".join(lines)


def write_results(results, stem="latest", directory=RESULTS_DIR):
    """Write ``<stem>.json`` and ``<stem>.md`` and return their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "processor": platform.processor()},
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "results": [
            {**r, "measurements": [asdict(m) for m in r["measurements"]]} for r in results
        ],
    }
    json_path = directory / f"{stem}.json"
    md_path = directory / f"{stem}.md"
    json_path.write_text(json.dumps(payload, indent=2))
    md_path.write_text(markdown_table(results) + "\n")
    return json_path, md_path
