"""The HMM's variational state is typed: the emission families' hyperparameters and
statistics, the point estimate of a ``method="ml"``/``"map"`` fit, the statistics of q(s)
and the scoring models' prepared sequences are dataclasses read by attribute, and a
fitted estimator with them pickles and clones."""

from __future__ import annotations

import ast
import dataclasses
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import sklearn_vb.hmm
from sklearn_vb import VBHiddenMarkov
from sklearn_vb.emissions import EMISSION_FAMILIES
from sklearn_vb.hmm._state import HMMSequences, HMMStats, PointParameters, SymbolSequences
from sklearn_vb.hmm.scoring_model import FamilyHMMScoringModel, HMMScoringModel

STATS_TYPES = {"categorical": "CategoricalStats", "gaussian": "GaussianStats",
               "poisson": "PoissonStats"}

#: names under which the package reads parameter batches (dicts of named blocks with a
#: leading batch axis: the ParamSpace convention of the scoring layer, shared by every
#: model) and the block-keyed Dirichlet hyperparameters of DirichletBlocksModel
BLOCK_DICT_NAMES = {"params", "params_single", "out", "grads", "a", "prior_alpha"}


def _data(emission):
    rng = np.random.RandomState(0)
    if emission == "categorical":
        return np.r_[rng.randint(0, 2, 30), rng.randint(1, 3, 30)].reshape(-1, 1)
    if emission == "poisson":
        return np.vstack([rng.poisson(1.0, (30, 2)), rng.poisson(6.0, (30, 2))])
    return np.vstack([rng.randn(30, 2), rng.randn(30, 2) + 4.0])


def _fitted(emission, covariance_type, **kwargs):
    X = _data(emission)
    est = VBHiddenMarkov(2, emission=emission, covariance_type=covariance_type,
                         random_state=0, max_iter=20, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=20 may stop before convergence
        est.fit(X, lengths=[25, 35])
    return est, X


FAMILY_CASES = [(e, c or "full") for e, c in EMISSION_FAMILIES]


@pytest.mark.parametrize("emission, covariance_type", FAMILY_CASES)
def test_every_family_declares_dataclasses_whose_fields_are_its_hyperparameters(
        emission, covariance_type):
    family = VBHiddenMarkov(emission=emission, covariance_type=covariance_type)._family
    for cls in (family.prior_type, family.posterior_type):
        assert dataclasses.is_dataclass(cls)
        assert tuple(f.name for f in dataclasses.fields(cls)) == family.hyper_names


@pytest.mark.parametrize("emission, covariance_type", FAMILY_CASES)
def test_fitted_state_is_typed_and_matches_the_public_attributes(emission, covariance_type):
    est, X = _fitted(emission, covariance_type)
    family = est._family
    prior, post = est._emission("prior"), est._emission("posterior")
    assert isinstance(prior, family.prior_type) and isinstance(post, family.posterior_type)
    for name in family.hyper_names:
        assert getattr(post, name) is getattr(est, f"{name}_posterior_")
        assert getattr(prior, name) is getattr(est, f"{name}_prior_")
    stats = est._stats_
    assert isinstance(stats, HMMStats)
    assert type(stats.emission).__name__ == STATS_TYPES[emission]
    assert stats.start.shape == (2,) and stats.trans.shape == (2, 2)
    # the conjugate update of the stored statistics is a posterior of the family's type
    assert isinstance(family.vbm(prior, stats.emission), family.posterior_type)
    np.testing.assert_allclose(family.occupancy(stats.emission), est.occupancy_)


def _precision_cholesky(point, D):
    """The lower Cholesky factors (K, D, D) of a full-covariance point, built from its
    fields independently of the family's code."""
    K = point.means.shape[0]
    L = np.zeros((K, D, D))
    L[:, np.arange(D), np.arange(D)] = point.prec_chol_diag
    if D > 1:
        rows, cols = np.tril_indices(D, -1)
        L[:, rows, cols] = point.prec_chol_offdiag
    return L


@pytest.mark.parametrize("emission, covariance_type", FAMILY_CASES)
def test_point_fit_state_is_typed_and_matches_the_public_attributes(emission, covariance_type):
    est, X = _fitted(emission, covariance_type, method="map")
    family, point = est._family, est._theta_
    assert isinstance(point, PointParameters) and est._point_fitted
    assert isinstance(point.emission, family.point_type)
    np.testing.assert_array_equal(point.startprob, est.startprob_)
    np.testing.assert_array_equal(point.transmat, est.transmat_)
    e = point.emission
    if emission == "categorical":
        np.testing.assert_array_equal(e.emissionprob, est.emissionprob_)
    elif emission == "poisson":
        np.testing.assert_array_equal(e.rates, est.rates_)
    else:
        np.testing.assert_array_equal(e.means, est.means_)
        if covariance_type == "diag":
            np.testing.assert_allclose(1.0 / e.precisions, est.covars_, rtol=1e-12)
        else:
            L = _precision_cholesky(e, X.shape[1])
            np.testing.assert_allclose(np.linalg.inv(L @ np.swapaxes(L, 1, 2)), est.covars_,
                                       rtol=1e-10)
    # the point's blocks are the scoring layer's parameter blocks, in their order
    names = [b[0] for b in family.param_blocks(est._emission("prior"), 2)]
    blocks = point.blocks()
    assert list(blocks) == ["startprob", "transmat"] + names
    assert all(v.shape[0] == 1 for v in blocks.values())


@pytest.mark.parametrize("emission, covariance_type", [("gaussian", "full"), ("poisson", "full")])
def test_point_of_one_state_has_no_transition_part_and_vb_has_no_point(emission,
                                                                      covariance_type):
    X = _data(emission)
    one = VBHiddenMarkov(1, emission=emission, covariance_type=covariance_type,
                         method="ml", random_state=0).fit(X)
    assert isinstance(one._theta_, PointParameters)
    assert one._theta_.startprob is None and one._theta_.transmat is None
    assert list(one._theta_.blocks()) == [b[0] for b in one._family.param_blocks(
        one._emission("prior"), 1)]
    vb, _ = _fitted(emission, covariance_type)
    assert vb._theta_ is None and not vb._point_fitted
    # a VB refit of a point fit leaves no point behind
    refit = one.set_params(method="vb").fit(X)
    assert refit._theta_ is None and hasattr(refit, "startprob_posterior_")


@pytest.mark.parametrize("emission, covariance_type", FAMILY_CASES)
@pytest.mark.parametrize("method", ["vb", "map"])
def test_fitted_estimator_pickles_and_clones(emission, covariance_type, method):
    est, X = _fitted(emission, covariance_type, method=method)
    again = pickle.loads(pickle.dumps(est))
    assert isinstance(again._stats_, HMMStats)
    if method == "map":
        assert isinstance(again._theta_, PointParameters)
        assert isinstance(again._theta_.emission, est._family.point_type)
    else:
        assert again._theta_ is None
    np.testing.assert_array_equal(again.predict(X, lengths=[25, 35]),
                                  est.predict(X, lengths=[25, 35]))
    assert again.score(X, lengths=[25, 35]) == est.score(X, lengths=[25, 35])
    assert clone(est).get_params() == est.get_params()


@pytest.mark.parametrize("emission, covariance_type", FAMILY_CASES)
def test_scoring_models_prepare_typed_sequences_and_statistics(emission, covariance_type):
    est, X = _fitted(emission, covariance_type)
    model = (HMMScoringModel if emission == "categorical" else FamilyHMMScoringModel)(est)
    data = model.prepare_data(X, lengths=[25, 35])
    if emission == "categorical":
        assert isinstance(data, SymbolSequences) and data.symbols.shape == (60,)
    else:
        assert isinstance(data, HMMSequences) and data.frames.shape == (60, 2)
        e = model.e_step(model.variational_posterior().mean(), data)
        assert isinstance(e.stats, HMMStats)
        assert e.stats.start.sum() == pytest.approx(2.0)
        assert e.stats.trans.sum() == pytest.approx(58.0)
    np.testing.assert_array_equal(data.starts, [0, 25])
    np.testing.assert_array_equal(data.ends, [25, 60])
    assert model.n_cases(data) == 60


def _string_key_reads(path):
    """``(line, name)`` of every ``name["literal"]`` read in a module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else (
                owner.attr if isinstance(owner, ast.Attribute) else type(owner).__name__)
            out.append((node.lineno, name))
    return out


def test_no_hmm_state_is_read_by_string_key():
    # only parameter batches (named blocks) may be indexed by a literal name
    root = Path(sklearn_vb.hmm.__file__).parent
    bad = [f"{path.relative_to(root)}:{line}: {name}[...]"
           for path in sorted(root.rglob("*.py"))
           for line, name in _string_key_reads(path) if name not in BLOCK_DICT_NAMES]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("emission, covariance_type", [("gaussian", "diag"), ("categorical", "full")])
def test_scorers_share_one_point_em_on_the_prepared_sequences(monkeypatch, emission,
                                                             covariance_type):
    # the scoring layer's point cache fingerprints the prepared data: the typed
    # sequences must be recognised as the same data on a second score
    from sklearn_vb.scoring import score
    from sklearn_vb.scoring._point_cache import clear_point_cache

    est, X = _fitted(emission, covariance_type)
    owner = HMMScoringModel if emission == "categorical" else FamilyHMMScoringModel
    calls = []
    original = owner.fit_point

    def counted(self, X, **kwargs):
        calls.append(kwargs)
        return original(self, X, **kwargs)

    monkeypatch.setattr(owner, "fit_point", counted)
    clear_point_cache()
    try:
        first = score(est, X, "bic", lengths=[25, 35]).log_evidence
        second = score(est, X, "bic", lengths=[25, 35]).log_evidence
    finally:
        clear_point_cache()
    assert len(calls) == 1 and first == second
