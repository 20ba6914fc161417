"""Small helpers shared by the experiments' report writers."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["markdown_table", "save_figure", "format_number", "pyplot", "compute_time_line",
           "Verdict", "verdict_table"]


@dataclass(frozen=True)
class Verdict:
    """One line of a report's comparison with its source: what the source says, what we
    get, and whether they agree (``agree``: "yes", "no", "partly", "not run", ... followed
    by why, e.g. "no: ours is better, because ...")."""

    paper: str
    ours: str
    agree: str


def verdict_table(verdicts, title="Paper says / we get"):
    """The section every reproduction report opens with: one row per finding of the
    source (including the parts of its protocol we replaced or did not run)."""
    lines = [f"## {title}", "", "| the paper says | we get | agree? |", "|---|---|---|"]
    for v in verdicts:
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in (v.paper, v.ours, v.agree))
                     + " |")
    return "\n".join(lines) + "\n"


def format_number(value, digits=1):
    """Integers as they are, floats with ``digits`` decimals, NaN/None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if isinstance(value, (int,)) or (hasattr(value, "dtype") and value.dtype.kind in "iu"):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value):
        return "–" if math.isnan(value) else ("∞" if value > 0 else "−∞")
    return f"{value:.{digits}f}"


def markdown_table(header, rows, digits=1):
    """A markdown table: ``header`` a list of column titles, ``rows`` lists of cells."""
    lines = ["| " + " | ".join(str(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(format_number(c, digits) for c in row) + " |")
    return "\n".join(lines)


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend (figures go to files)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out_dir, filename):
    """Save ``fig`` as ``out_dir/filename`` (PNG) and close it; returns the markdown image
    line, or "" when ``out_dir`` is None."""
    plt = pyplot()
    if out_dir is None:
        plt.close(fig)
        return ""
    fig.savefig(out_dir / filename, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return f"![{filename}]({filename})"


def compute_time_line(summary):
    """The compute time of the units (their sum, also when they were read from the
    journal of an earlier run)."""
    t = summary.get("timing", {})
    if "unit_seconds_total" not in t:
        return ""
    return (f"\nCompute time: {t['unit_seconds_total']:.0f} s over {t['units']} work units "
            "(one core).\n")
