"""Measure the long-sequence sizes quoted in ``limits.rst``.

The measurement is the ``limits-*`` benchmark workloads (``benchmarks/bench_limits.py``);
this runs them from the repository root, the same as ``python -m benchmarks 'limits-*'``::

    NUMBA_NUM_THREADS=1 python doc/limits_measure.py [--quick]

and writes ``benchmarks/results/limits.json`` and ``.md`` (``quick.*`` with ``--quick``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main([*sys.argv[1:], "limits-*"]))
