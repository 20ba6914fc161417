"""Plain-text output helpers for the demo (no plotting dependency)."""

from __future__ import annotations

import time

import numpy as np

_BARS = " ▁▂▃▄▅▆▇█"


def print_header(title):
    print()
    print(title)
    print("=" * len(title))


def sparkline(values, width=60):
    """A one-line picture of a bound trace (rescaled to its own range)."""
    values = np.asarray(values, dtype=float)
    if len(values) > width:
        idx = np.linspace(0, len(values) - 1, width).round().astype(int)
        values = values[idx]
    lo, hi = values.min(), values.max()
    if hi - lo < 1e-12:
        return _BARS[-1] * len(values)
    levels = ((values - lo) / (hi - lo) * (len(_BARS) - 1)).round().astype(int)
    return "".join(_BARS[i] for i in levels)


def print_trace(model, label="lower bound"):
    bounds = model.lower_bounds_
    print(f"{label} trace ({len(bounds)} iterations, {bounds[0]:.2f} -> {bounds[-1]:.2f} nats):")
    print(f"  {sparkline(bounds)}")
    steps = np.diff(bounds)
    if steps.size:
        print(f"  smallest step {steps.min():+.2e} nats (never negative beyond round-off)")


def timed_fits(make_and_fit, repeats=2):
    """Time the first fit (compilation included) against a later identical fit."""
    times = []
    model = None
    for _ in range(repeats):
        start = time.perf_counter()
        model = make_and_fit()
        times.append(time.perf_counter() - start)
    print(f"first fit {times[0]:.3f} s (includes numba compilation or cache load), "
          f"later fit {min(times[1:]):.3f} s")
    return model


def print_size_table(header, rows, best_index, truth=None):
    """rows: list of (size, bound, extra string)."""
    labels = [str(size) + (" (true)" if truth is not None and size == truth else "") for size, _, _ in rows]
    width = max(len(header), *(len(label) for label in labels))
    print(f"  {header:>{width}} | lower bound (nats) |")
    print(f"  {'-' * width}-+--------------------+-")
    for i, (label, (_, bound, extra)) in enumerate(zip(labels, rows)):
        mark = "  <- chosen by VB" if i == best_index else ""
        print(f"  {label:>{width}} | {bound:18.2f} | {extra}{mark}")
