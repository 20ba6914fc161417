"""Tables of the selection panels (``results/selection.json``): one row per problem and
library, as Markdown (written as ``results/selection.md`` by ``python -m benchmarks``);
the same rows make the table of the documentation's benchmarks page (``report.py``)."""

from __future__ import annotations

import json
from pathlib import Path

COLUMNS = ("family", "problem", "library", "truth", "selected", "recovery", "distance",
           "held-out", "gap to truth (nats)", "time (s)")


def _num(value, spec):
    return "" if value is None else format(value, spec)


def _selected(values):
    text = json.dumps(values)
    return text if len(text) <= 40 else text[:37] + "..."


def rows(results):
    """``(family, problem, library, truth, selected, ...)`` strings, problems in panel
    order, libraries in run order."""
    out = []
    for result in results:
        family = result["workload"].replace("selection-", "")
        measurements = result["measurements"]
        problems = []
        for m in measurements:
            for name in (m.metrics or {}).get("panel", {}):
                if name not in problems:
                    problems.append(name)
        for name in problems:
            for m in measurements:
                if m.status != "ok":
                    out.append((family, name, m.label, "", "", m.status, "", "", "", ""))
                    continue
                s = m.metrics["panel"].get(name)
                if s is None:
                    continue
                if "not_applicable" in s:
                    out.append((family, name, m.label, "", "", "n/a: " + s["not_applicable"],
                                "", "", "", ""))
                    continue
                held = s.get("heldout_loglik", s.get("heldout_accuracy"))
                truth = s.get("truth")
                truth = "" if truth is None else _selected(truth)
                recovery = "" if s.get("recovery_rate") is None else \
                    f"{s['recovery_rate']:.2f} ({s['ok']}/{s['seeds']})"
                if s.get("errors"):
                    recovery += f" [{len(s['errors'])} failed]"
                if s.get("over_time_cap"):
                    recovery += f" [{s['over_time_cap']} over {s['time_cap_s']:g} s]"
                out.append((family, name, m.label, truth, _selected(s.get("selected", [])),
                            recovery, _num(s.get("distance"), ".2f"), _num(held, ".4f"),
                            _num(s.get("gap_to_true"), ".3g"), _num(s.get("time_s"), ".2f")))
    return out


def markdown(results):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
    for row in rows(results):
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |")
    summary = ["", "| family | library | mean recovery rate | mean distance | wall time (s) |",
               "|---|---|---|---|---|"]
    for result in results:
        for m in result["measurements"]:
            mm = m.metrics or {}
            summary.append(f"| {result['workload']} | {m.label} | "
                           f"{_num(mm.get('mean_recovery_rate'), '.2f') or m.status} | "
                           f"{_num(mm.get('mean_distance'), '.2f')} | {_num(m.median_s, '.0f')} |")
    return "\n".join(lines + summary) + "\n"


def write_markdown(json_path):
    """Rewrite ``<stem>.md`` beside ``json_path`` from the stored selection results."""
    from .harness import load_results

    results = [r for r in load_results(json_path) if r["workload"].startswith("selection-")]
    path = Path(json_path).with_suffix(".md")
    path.write_text(markdown(results))
    return path
