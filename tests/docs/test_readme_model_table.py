"""The README's table of estimators says what each one accepts and exposes; every claim
of its last five columns is checked against a fit."""

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import sklearn_vb

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)
GAUSS = RNG.normal(size=(40, 2))
BINARY = RNG.integers(0, 2, size=(30, 3)).astype(float)

#: small data and settings a fit of each estimator in the table needs
FITS = {
    # missing values are marginalised by every emission family; the full-covariance one,
    # whose missing entries are latent variables, is the one checked here
    "VBHiddenMarkov": (dict(n_components=2, emission="gaussian", covariance_type="full",
                            max_iter=5), GAUSS, None),
    # (partial_fit needs search=False, as its cell says; the search's own fit with
    # missing values is checked below)
    "VBMixtureFactorAnalysers": (dict(search=False, max_iter=5), GAUSS, None),
    "VBLinearDynamicalSystem": (dict(n_states=1, max_iter=3), GAUSS, None),
    "VBDiscreteDAG": (dict(max_iter=5, n_init=1), BINARY, None),
    "VBSigmoidBeliefNetwork": (dict(max_iter=3, n_init=1), BINARY, None),
    "PairwiseMRF": ({}, BINARY, None),
    "BoltzmannMachine": ({}, BINARY, None),
    "LinearChainCRF": ({}, BINARY[:20, :2], RNG.integers(0, 2, size=20)),
}


def model_table():
    """{estimator: {column: cell}} of the README's "What is in the package" table."""
    text = (ROOT / "README.md").read_text()
    lines = text[text.index("| estimator | model |"):].split("\n")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        rows[cells[0].strip("`")] = dict(zip(header, cells))
    return rows


def _fit(name, X):
    params, _, y = FITS[name]
    est = getattr(sklearn_vb, name)(**params)
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y) if y is not None else est.fit(X)


def test_the_table_lists_every_estimator_checked_here():
    assert set(model_table()) == set(FITS)


@pytest.mark.parametrize("name", sorted(FITS))
def test_the_readme_row_matches_the_estimator(name):
    row = model_table()[name]
    est = _fit(name, FITS[name][1])
    assert ("lower_bound_" in vars(est)) == (row["`lower_bound_`"] == "yes")
    assert hasattr(est, "partial_fit") == row["`partial_fit`"].startswith("yes")
    takes_states = "states" in inspect.signature(est.fit).parameters
    assert takes_states == row["known states"].startswith("`states=`")
    X = np.array(FITS[name][1], dtype=float)
    X[3, 1] = np.nan
    if row["NaN in `X`"].startswith("marginalised"):
        assert np.isfinite(_fit(name, X).score(FITS[name][1][:10]))
    else:
        assert row["NaN in `X`"].startswith("refused")
        with pytest.raises(ValueError, match="NaN"):
            _fit(name, X)


def test_the_mfa_cell_names_the_options_refusing_missing_values():
    """The MFA marginalises NaN in batch VB, with or without the search, and in the
    point fits; online VB refuses it, naming the option."""
    cell = model_table()["VBMixtureFactorAnalysers"]["NaN in `X`"]
    assert "with or without the search" in cell and "missing at random" in cell
    X = np.array(GAUSS)
    X[3, 1] = np.nan
    est = sklearn_vb.VBMixtureFactorAnalysers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isfinite(est(max_iter=5, random_state=0).fit(X).score(GAUSS))
        assert np.isfinite(est(search=False, method="map", max_iter=5, random_state=0)
                           .fit(X).score(GAUSS))
    with pytest.raises(ValueError, match="online"):
        est(max_iter=3, random_state=0, search=False, learning_method="online").fit(X)
