"""The structure-search pictures example runs in quick mode and writes its figures."""

import runpy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "structure_search_pictures.py"


def test_structure_search_pictures_quick(tmp_path):
    dag, mrf = runpy.run_path(str(EXAMPLE))["main"](["--quick", "--out", str(tmp_path)])
    for name in ("dag_structure_search", "dag_best_cpts", "mrf_structure_search"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5000
    assert len(dag.results_["structure"]) == 6
    # the chain the samples came from is found by the greedy Bethe-Laplace search
    assert [tuple(e) for e in mrf.best_structure_] == [(0, 1), (1, 2), (2, 3), (3, 4)]
