"""The LDS examples run in quick mode and produce their figures."""

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dimension_recovery_example(tmp_path):
    models = _load("lds_dimension_recovery").main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "lds_hinton.png").stat().st_size > 0
    assert (tmp_path / "lds_ard_traces.png").stat().st_size > 0
    assert models[-1].n_effective_states_ == 3


def test_heldout_example(tmp_path):
    errors = _load("lds_heldout_vs_ml").main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "lds_heldout_vs_ml.png").stat().st_size > 0
    # every variant learns the dynamics (k=4 beats k=1), and with twice the true
    # dimension ARD keeps VB's error within 10% of its best
    for err in errors.values():
        assert err[2] < 0.8 * err[0]
    assert errors["VB (ARD)"][-1] <= 1.1 * min(errors["VB (ARD)"])
    assert all(np.isfinite(v).all() for v in errors.values())


def test_feedback_example():
    model, found, D_true = _load("lds_feedback").main(["--quick"])
    # every true feedback weight is found significant, with few false positives
    assert found[D_true != 0].all()
    assert found[D_true == 0].sum() <= 2
