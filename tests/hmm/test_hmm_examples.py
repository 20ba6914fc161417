"""The HMM examples run in quick mode and write their figures."""

import runpy
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name, tmp_path):
    module = runpy.run_path(str(EXAMPLES / name), run_name="example")
    output = tmp_path / (Path(name).stem + ".png")
    result = module["main"](["--quick", "--output", str(output)])
    assert output.is_file() and output.stat().st_size > 1000
    return result


def test_structure_discovery_example(tmp_path):
    model = run_example("hmm_structure_discovery.py", tmp_path)
    # VB switches off most of the 12 states and keeps (close to) the 7 the data need
    assert 5 <= model.n_effective_components_ <= 8
    assert np.all(np.diff(model.lower_bounds_) >= -1e-7)


def test_english_states_example(tmp_path):
    sizes, bounds, heldout = run_example("hmm_english_states.py", tmp_path)
    assert len(bounds) == len(sizes) and np.all(np.isfinite(heldout))
    # more states than one are supported by English text
    assert max(bounds) > bounds[0]


def test_input_driven_example(tmp_path):
    results = run_example("hmm_input_driven.py", tmp_path)
    io, plain = results["input matters"]
    assert io.lower_bound_ > plain.lower_bound_ + 10.0
    io, plain = results["input irrelevant"]
    assert plain.lower_bound_ > io.lower_bound_


def test_continuous_inputs_example(tmp_path):
    results = run_example("hmm_continuous_inputs.py", tmp_path)
    models = results["input matters"]
    assert models["continuous"].lower_bound_ > models["plain"].lower_bound_ + 10.0
    models = results["input irrelevant"]
    assert models["plain"].lower_bound_ > models["continuous"].lower_bound_
