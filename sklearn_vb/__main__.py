"""Command line: ``python -m sklearn_vb demo``, ``reproduce`` and ``compile``.

The demo fits every estimator of the package on generated data, shows its bound
trace, and picks a model size by the variational lower bound; it needs no files or
network and runs in about a minute on two cores.

``reproduce <experiment>`` runs a registered reproduction of a published experiment
(:mod:`sklearn_vb.reproduce`) and writes its markdown report and PNG figures to
``--out``; ``reproduce --list`` names the experiments.

``compile`` runs a small fit of every estimator so that the numba kernels are compiled
and cached on disk once (the install step of the Makefile runs it); later processes load
them from the cache instead of compiling during their first fit.
"""

import argparse
import sys
import time


def _add_reproduce(sub):
    from .reproduce import EXPERIMENTS

    rep = sub.add_parser("reproduce", help="reproduce a published experiment (see --list)")
    rep.add_argument("--list", action="store_true", help="list the experiments and exit")
    exps = rep.add_subparsers(dest="experiment")
    for name, exp in sorted(EXPERIMENTS.items()):
        p = exps.add_parser(name, help=exp.description, description=exp.description)
        p.add_argument("--quick", action="store_true",
                       help="the quick configuration (a minute or two) instead of the full one")
        p.add_argument("--out", default=None,
                       help="directory for the markdown report, PNG figures and results journal")
        p.add_argument("--n-jobs", type=int, default=1, help="parallel workers (joblib; -1: all)")
        p.add_argument("--seed", type=int, default=0, help="seed of the whole run")
        p.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from the journal in --out")
        p.add_argument("--report-only", action="store_true",
                       help="compute nothing: write the report from the units already in "
                            "the journal in --out (of a run still going or interrupted)")
        p.add_argument("--quiet", action="store_true", help="no progress line")
        for opt in exp.options:
            p.add_argument("--" + opt.name.replace("_", "-"), dest=opt.name, type=opt.type,
                           default=opt.default, help=opt.help)
    return rep


def _run_reproduce(args, rep):
    from .reproduce import EXPERIMENTS, list_experiments

    if args.list or args.experiment is None:
        for name, text in list_experiments().items():
            print(f"{name:12s} {text}")
        return 0
    exp = EXPERIMENTS[args.experiment]
    overrides = {opt.name: getattr(args, opt.name) for opt in exp.options}
    run = exp(quick=args.quick, out=args.out, n_jobs=args.n_jobs, seed=args.seed,
              resume=args.resume, verbose=0 if args.quiet else 1,
              report_only=args.report_only, **overrides)
    if args.out is None:
        print(run.report)
    else:
        print(f"report written to {run.out / (run.experiment + '.md')}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_vb")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit each estimator on generated data and choose a size by VB")
    demo.add_argument("--only", nargs="*", default=None, help="run only these sections")
    demo.add_argument("--seed", type=int, default=0)
    rep = _add_reproduce(sub)
    comp = sub.add_parser("compile", help="compile and cache the numba kernels of every estimator")
    comp.add_argument("--only", nargs="*", default=None, help="only these estimators")
    args = parser.parse_args(argv)
    if args.command == "compile":
        from ._commands.warmup import compile_kernels

        start = time.perf_counter()
        compile_kernels(only=args.only)
        print(f"kernels compiled and cached in {time.perf_counter() - start:.1f} s")
        return 0
    if args.command == "demo":
        from ._commands.demo import run_demo

        return run_demo(only=args.only, seed=args.seed)
    if args.command == "reproduce":
        return _run_reproduce(args, rep)
    return 1  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
