"""The MFA examples run in quick mode and write their figures."""

import runpy
import warnings
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name, tmp_path):
    module = runpy.run_path(str(EXAMPLES / name), run_name="example")
    output = tmp_path / (Path(name).stem + ".png")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = module["main"](["--quick", "--output", str(output)])
    assert output.is_file() and output.stat().st_size > 1000
    return result


def test_spiral_example(tmp_path):
    model = run_example("mfa_spiral.py", tmp_path)
    assert model.n_components_ >= 6
    assert np.all(model.n_factors_per_component_ == 1)
    assert model.n_births_accepted_ >= model.n_components_ - 1


def test_mixed_dimensions_example(tmp_path):
    model, truth = run_example("mfa_mixed_dimensions.py", tmp_path)
    assert model.n_components_ == 3
    assert sorted(model.n_factors_per_component_) == [1, 2, 3]


def test_digits_example(tmp_path):
    model, accuracy = run_example("mfa_digits.py", tmp_path)
    assert model.n_components_ >= 3
    assert accuracy > 0.8
