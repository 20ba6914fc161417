"""Run a slow call in a forked child under a time cap and a memory cap.

A benchmark that measures what the package does today must not hang on the call
that takes an hour, nor take the machine down with the one that allocates tens of
gigabytes: the call runs in a child process (``fork``, so the child inherits the
fitted model and the compiled kernels), the parent watches the clock and the
child's resident memory, and kills the child when either cap is exceeded.  The
child's peak resident memory during the timed call is read from
``/proc/<pid>/status`` (``VmHWM``, reset after the warm-up), so it is also known for
a call that was stopped.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path


def _status_kb(pid, key):
    """A ``/proc/<pid>/status`` entry in kB (None where /proc is not available)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak_memory():
    """Reset this process's VmHWM to its current resident size (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _mb(kb):
    return None if kb is None else kb / 1024.0


@dataclass
class CappedOutcome:
    """What happened to the child.  ``status`` is "ok", "over time cap", "over memory
    cap" or "error"; ``seconds`` are the timed calls that finished (the second one
    only when it was run); ``values`` what the calls returned."""

    status: str
    seconds: list = field(default_factory=list)
    values: list = field(default_factory=list)
    warmup_s: float | None = None
    peak_rss_mb: float | None = None
    start_rss_mb: float | None = None
    message: str = ""


def _child(conn, warm, call, n_calls, repeat_below_s):
    try:
        start = time.perf_counter()
        if warm is not None:
            warm()
        conn.send(("warm", time.perf_counter() - start))
        _reset_peak_memory()
        conn.send(("rss", _status_kb(os.getpid(), "VmRSS")))
        for _ in range(n_calls):
            start = time.perf_counter()
            value = call()
            seconds = time.perf_counter() - start
            conn.send(("call", (seconds, value, _status_kb(os.getpid(), "VmHWM"))))
            if seconds > repeat_below_s:
                break
        conn.send(("done", None))
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
        conn.send(("error", "".join(traceback.format_exception_only(exc)).strip()))
    finally:
        conn.close()


def run_capped(call, cap_s, *, warm=None, n_calls=1, memory_cap_mb=8192.0, poll_s=0.2):
    """Run ``warm()`` then ``call()`` up to ``n_calls`` times in a forked child.

    ``cap_s`` limits the warm-up and each call (a call is only repeated when the
    previous one took at most half the cap, so a repeat never doubles a long run);
    ``memory_cap_mb`` limits the child's resident memory.  ``call`` must return
    something picklable.  Returns a :class:`CappedOutcome`.
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, warm, call, n_calls, cap_s / 2.0),
                       daemon=True)
    proc.start()
    child.close()
    outcome = CappedOutcome("ok")
    peak_kb = None
    deadline = time.perf_counter() + cap_s
    try:
        while True:
            if parent.poll(poll_s):
                try:
                    tag, payload = parent.recv()
                except EOFError:
                    outcome.status = "error"
                    outcome.message = f"the child process died (exit code {proc.exitcode})"
                    break
                if tag == "warm":
                    outcome.warmup_s = payload
                    deadline = time.perf_counter() + cap_s
                elif tag == "rss":
                    outcome.start_rss_mb = _mb(payload)
                elif tag == "call":
                    if not outcome.seconds:  # the peak of the first timed call
                        peak_kb = payload[2] if payload[2] is not None else peak_kb
                    outcome.seconds.append(payload[0])
                    outcome.values.append(payload[1])
                    deadline = time.perf_counter() + cap_s
                elif tag == "error":
                    outcome.status, outcome.message = "error", payload
                    break
                else:  # done
                    break
                continue
            if not outcome.seconds and outcome.warmup_s is not None:
                hwm = _status_kb(proc.pid, "VmHWM")
                peak_kb = hwm if hwm is not None else peak_kb
            rss = _status_kb(proc.pid, "VmRSS")
            if rss is not None and rss / 1024.0 > memory_cap_mb:
                outcome.status = "over memory cap"
                outcome.message = f"resident memory above {memory_cap_mb:.0f} MB"
                break
            if time.perf_counter() > deadline:
                outcome.status = "over time cap"
                outcome.message = f"no result within {cap_s:g} s"
                break
            if not proc.is_alive() and not parent.poll():
                outcome.status = "error"
                outcome.message = f"the child process died (exit code {proc.exitcode})"
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    outcome.peak_rss_mb = _mb(peak_kb)
    return outcome
