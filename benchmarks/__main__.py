"""Run the benchmarks: ``python -m benchmarks [--quick] [--list] [name ...]``.

Each ``benchmarks/bench_*.py`` module registers workloads; results are written to
``benchmarks/results/<stem>.json`` and ``.md`` and printed as a markdown table.  The
stem is ``--output`` if given, else ``quick`` for quick runs; a full run writes the
workloads that name their own stem (``convergence``, ``score_cost``) to that file,
replacing only the entries of the workloads it ran, and all others to ``latest``.
"""

import argparse
import fnmatch
import importlib
import pkgutil
import sys
from pathlib import Path

from . import harness


def load_workload_modules():
    here = Path(__file__).resolve().parent
    for info in pkgutil.iter_modules([str(here)]):
        if info.name.startswith("bench_"):
            importlib.import_module(f"benchmarks.{info.name}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("patterns", nargs="*", help="workload names or glob patterns (default: all)")
    parser.add_argument("--quick", action="store_true", help="small data, one repeat (smoke test)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per candidate (default: the workload's own, else 3)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--output", default=None, help="results file stem (default: latest or quick)")
    parser.add_argument("--results-dir", default=None,
                        help="where to write the results files (default: benchmarks/results)")
    args = parser.parse_args(argv)

    load_workload_modules()
    names = sorted(harness.WORKLOADS)
    if args.patterns:
        names = [n for n in names if any(fnmatch.fnmatch(n, p) for p in args.patterns)]
    if args.list:
        print("\n".join(names))
        return 0
    if not names:
        print("no workload matches", args.patterns, file=sys.stderr)
        return 1
    results = []
    for name in names:
        print(f"[{name}]", flush=True)
        results.append(harness.run_workload(name, quick=args.quick, repeats=args.repeats))
    print(harness.markdown_table(results))
    if args.output or args.quick:
        groups = {args.output or "quick": (results, False)}
    else:
        groups = {}
        for result in results:
            stem = result.get("stem") or "latest"
            groups.setdefault(stem, ([], stem != "latest"))[0].append(result)
    print()
    for stem, (group, merge) in groups.items():
        json_path, md_path = harness.write_results(
            group, stem, directory=args.results_dir or harness.RESULTS_DIR, merge=merge)
        if all(r["workload"].startswith("selection-") for r in group):
            # per-problem panels: one row per problem and library instead of the raw metrics
            from .selection_report import write_markdown

            write_markdown(json_path)
        print(f"written: {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
