"""The DAG structure-score example runs in quick mode and writes its figure."""

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dag_structure_scores.py"


def test_structure_scores_example_quick(tmp_path):
    spec = importlib.util.spec_from_file_location("dag_structure_scores", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "scores.png"
    F = module.main(["--quick", "--output", str(out)])
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert F.shape == (3, 136)
    assert np.all(np.isfinite(F)) and np.all(F < 0)
    # the observed part of the empty structure has the closed-form evidence; its two
    # childless hidden nodes can only lower the (mean-field) bound, never raise it
    from scipy.special import gammaln

    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import make_beal_dag_datasets

    data = make_beal_dag_datasets(sizes=(10, 40, 160), random_state=0)
    for row, n in enumerate((10, 40, 160)):
        X = data[n]
        closed = sum(gammaln(5) - gammaln(5 + n) + gammaln(1 + np.bincount(X[:, v], minlength=5)).sum()
                     for v in range(4))
        no_hidden = VBDiscreteDAG({f"y{v}": [] for v in range(4)}, 5, max_iter=3).fit(X)
        assert abs(no_hidden.lower_bound_ - closed) < 1e-9
        assert F[row, 0] <= closed + 1e-9
