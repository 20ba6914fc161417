"""The package demonstration: one section per estimator.

Each section fits a model on generated data, prints the bound trace, the time of the
first fit (which includes numba compilation, cached on disk for the next run) against a
later fit, and a small table ranking model sizes by the lower bound.
"""

from __future__ import annotations

import time
import warnings

from ._format import print_header
from ._sections import SECTIONS

__all__ = ["run_demo"]


def run_demo(only=None, seed=0):
    names = list(SECTIONS) if not only else [n for n in SECTIONS if n in only]
    unknown = set(only or ()) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown demo section(s) {sorted(unknown)}; choose from {list(SECTIONS)}")
    start = time.perf_counter()
    with warnings.catch_warnings():
        # the size sweeps deliberately include models that converge slowly
        warnings.simplefilter("ignore", category=Warning)
        for name in names:
            title, section = SECTIONS[name]
            print_header(title)
            section(seed)
    print(f"\ndemo finished in {time.perf_counter() - start:.1f} s")
    return 0
