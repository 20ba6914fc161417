"""Install the libraries the benchmarks compare with, one at a time, and record the outcome.

``python -m benchmarks.peers`` (run by ``make bench``) tries each peer separately, so one
that cannot be installed here does not stop the others; the benchmarks then report it
as skipped.  The versions of numpy, scipy, scikit-learn and numba already installed are
held fixed (a pip constraints file), so a peer never changes what our own code runs on:
a peer that needs other versions fails to install, and the reason is recorded.

``results/peers.json`` maps each peer to its installed version or to "not installed: "
and the reason; the documentation's benchmarks page shows it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: (distribution to report, pip requirement, why it is compared / how it installs)
PEERS = [
    ("hmmlearn", "hmmlearn>=0.3", "variational and EM HMMs"),
    ("pykalman", "pykalman>=0.9", "LDS by EM"),
    ("pgmpy", "pgmpy>=0.1.20", "discrete Bayesian networks by EM"),
    ("bayespy", "bayespy>=0.5", "VB linear state-space model with rotations"),
    ("statsmodels", "statsmodels>=0.14", "dynamic factor models by EM"),
    ("dynamax", "dynamax", "LDS and HMMs in JAX (pulls jax and jaxlib, CPU)"),
    # the CPU build of this exact version is what the machine provides; an open range
    # would pull the registry's newest build with several GB of CUDA libraries
    ("torch", "torch==2.13.0", "needed by pomegranate (CPU build)"),
    ("pomegranate", "pomegranate>=1.0", "HMMs and mixtures in PyTorch; loopy BP on factor graphs"),
    ("sklearn-crfsuite", "sklearn-crfsuite>=0.5", "linear-chain CRFs (CRFsuite)"),
]

#: our own dependencies, held at their installed versions while peers install
HELD = ["numpy", "scipy", "scikit-learn", "numba", "llvmlite"]

INSTALL_TIMEOUT_S = 1800


def installed_version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _constraints_file(directory):
    lines = [f"{name}=={installed_version(name)}" for name in HELD if installed_version(name)]
    path = Path(directory) / "held.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _last_error_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1][:300]


def install(peers=PEERS, timeout_s=INSTALL_TIMEOUT_S, log=print):
    """Install each missing peer; return ``{distribution: version or "not installed: ..."}``."""
    outcome = {}
    with tempfile.TemporaryDirectory() as tmp:
        constraints = _constraints_file(tmp)
        for name, requirement, why in peers:
            version = installed_version(name)
            if version is None:
                log(f"[peers] installing {requirement} ({why}) ...")
                start = time.perf_counter()
                try:
                    done = subprocess.run(
                        [sys.executable, "-m", "pip", "install", "--quiet", "-c",
                         str(constraints), requirement],
                        capture_output=True, text=True, timeout=timeout_s)
                    message = "" if done.returncode == 0 else _last_error_line(done.stderr)
                except subprocess.TimeoutExpired:
                    message = f"pip did not finish within {timeout_s} s"
                version = installed_version(name)
                log(f"[peers] {name}: {version or 'failed'} ({time.perf_counter() - start:.0f} s)")
                if version is None:
                    outcome[name] = f"not installed: {message or 'pip reported no error'}"
                    continue
            outcome[name] = version
    return outcome


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__)
    parser.add_argument("--results-dir", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    outcome = install()
    path = Path(args.results_dir) / "peers.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **outcome}, indent=2)
                    + "\n")
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
