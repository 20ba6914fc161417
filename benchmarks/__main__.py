"""Run the benchmarks: ``python -m benchmarks [--quick] [--list] [name ...]``.

Each ``benchmarks/bench_*.py`` module registers workloads; results are written to
``benchmarks/results/<stem>.json`` and ``.md`` and printed as a markdown table.
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--output", default=None, help="results file stem (default: latest or quick)")
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
    stem = args.output or ("quick" if args.quick else "latest")
    json_path, md_path = harness.write_results(results, stem)
    print(harness.markdown_table(results))
    print(f"\nwritten: {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
