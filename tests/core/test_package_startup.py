"""The package imports its estimators on first use, and ``python -m sklearn_vb compile``
fills the numba cache."""

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
import sklearn_vb
heavy = sorted(m for m in ("sklearn", "scipy", "numba", "pandas") if m in sys.modules)
listed = dir(sklearn_vb)
namespace = {}
exec("from sklearn_vb import *", namespace)
exported = sorted(k for k in namespace if not k.startswith("__builtins__"))
print(json.dumps({"heavy": heavy, "listed": listed, "exported": exported,
                  "all": sklearn_vb.__all__,
                  "modules": {k: getattr(namespace[k], "__module__", None) for k in exported}}))
"""


def test_import_loads_no_heavy_dependency_and_keeps_every_public_name():
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    # the package import itself pulls in none of scikit-learn, scipy, numba or pandas
    assert out["heavy"] == []
    assert set(out["all"]) <= set(out["listed"])
    assert sorted(out["all"]) == out["exported"]
    for name in out["all"]:
        if name != "__version__":  # each class comes from its own estimator module
            assert out["modules"][name].startswith("sklearn_vb.") and out["modules"][name] != "sklearn_vb"


def test_lazy_names_are_the_module_attributes():
    import sklearn_vb
    from sklearn_vb.hmm import VBHiddenMarkov
    from sklearn_vb.lds import VBLinearDynamicalSystem

    assert sklearn_vb.VBHiddenMarkov is VBHiddenMarkov
    assert sklearn_vb.lds.VBLinearDynamicalSystem is VBLinearDynamicalSystem
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        sklearn_vb.not_a_name  # noqa: B018


def test_compile_command_runs_the_named_warm_up_fits(capsys):
    from sklearn_vb.__main__ import main

    assert main(["compile", "--only", "boltzmann"]) == 0
    out = capsys.readouterr().out
    assert "boltzmann" in out and "kernels compiled and cached" in out
    with pytest.raises(ValueError, match="only must name estimators"):
        main(["compile", "--only", "not-an-estimator"])


def test_warm_up_fits_cover_every_public_estimator():
    import sklearn_vb
    from sklearn_vb._commands import warmup as _warmup

    classes = {name for name in sklearn_vb.__all__ if name != "__version__"}
    fitted = set()
    for name, fit in _warmup.FIRST_FITS.items():
        # which estimator each fit builds, read from its source (fitting all is slow)
        source = fit.__code__.co_names
        fitted |= classes & set(source)
    assert fitted == classes
