"""Progress lines for long scoring computations.

One reporter serves every scorer that can run for more than a few seconds (annealing
schedules, Hessians built column by column, MAP restarts): it knows a label and the total
number of units of work, and prints the fraction done, the elapsed time, an estimate of
the time left (linear extrapolation of the elapsed time) and an optional extra text.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "progress_for"]


class Progress:
    """Rate-limited progress lines.

    Parameters
    ----------
    verbose : int or bool
        ``0``: silent.  ``>= 1``: a line at most every ``interval`` seconds once the work
        has lasted that long (short work stays silent), plus a final line when anything was
        printed.  ``>= 2``: additionally a line at every tenth of ``total``.
    label : str
        Shown in brackets at the start of each line, e.g. ``"ais"``.
    total : int
        Number of units of work (temperatures, Hessian columns, restarts, ...).
    interval : float, default=2.0
        Minimum number of seconds between two rate-limited lines.
    stream : file-like, default=sys.stdout
    clock : callable, default=time.monotonic
        Returns the current time in seconds (replaceable in tests).

    Calling the reporter as ``progress(done, extra)`` records that ``done`` of ``total``
    units are finished; ``extra`` is a string, or a callable returning one (evaluated only
    when a line is printed, so expensive summaries cost nothing between lines), appended
    to the line.
    """

    def __init__(self, verbose, label, total, interval=2.0, stream=None, clock=time.monotonic):
        self.verbose = int(verbose or 0)
        self.label, self.total, self.interval = str(label), int(total), float(interval)
        self.stream = stream if stream is not None else sys.stdout
        self.clock = clock
        self.t0 = clock()
        self.last = self.t0
        self.printed = 0
        self._tenth = max(1, self.total // 10)

    @property
    def elapsed(self):
        """Seconds since the reporter was created."""
        return self.clock() - self.t0

    def line(self, done, extra=None):
        """The progress line for ``done`` finished units (without printing it)."""
        el = self.clock() - self.t0
        frac = done / self.total if self.total else 1.0
        left = el * (1.0 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * int(round(20 * min(max(frac, 0.0), 1.0)))
        text = (f"[{self.label}] |{bar:<20}| {done}/{self.total} ({100 * frac:3.0f}%)  "
                f"elapsed {el:.1f}s  left ~{left:.1f}s")
        if callable(extra):
            extra = extra()
        if extra:
            text += f"  {extra}"
        return text

    def __call__(self, done, extra=None):
        if self.verbose <= 0:
            return
        now = self.clock()
        due = now - self.last >= self.interval and now - self.t0 >= self.interval
        if self.verbose >= 2 and (done == self.total or done % self._tenth == 0):
            due = True
        if done == self.total and self.printed:
            due = True
        if due:
            print(self.line(done, extra), file=self.stream, flush=True)
            self.last = now
            self.printed += 1

    def message(self, text):
        """Print a free-form line under this reporter's label when ``verbose >= 1``."""
        if self.verbose > 0:
            print(f"[{self.label}] {text}", file=self.stream, flush=True)


def progress_for(verbose, label, total):
    """``verbose`` itself when it already is a :class:`Progress`, else a new reporter."""
    return verbose if isinstance(verbose, Progress) else Progress(verbose, label, total)
