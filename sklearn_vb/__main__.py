"""Command line: ``python -m sklearn_vb demo``.

The demo fits every estimator of the package on generated data, shows its bound
trace, and picks a model size by the variational lower bound; it needs no files or
network and runs in about a minute on two cores.
"""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_vb")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit each estimator on generated data and choose a size by VB")
    demo.add_argument("--only", nargs="*", default=None, help="run only these sections")
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(only=args.only, seed=args.seed)
    return 1  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
