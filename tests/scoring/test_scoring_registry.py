"""The bridge from estimators to ScoringModels: one registry, looked up along the MRO."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov
from sklearn_vb.scoring import register_scoring_model, score, scoring_model_for
from sklearn_vb.scoring import _registry
from sklearn_vb.dag.scoring_model import DAGScoringModel
from sklearn_vb.hmm.scoring_model import HMMScoringModel
from sklearn_vb.hmm.scoring_model import GaussianHMMScoringModel

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture
def restore_registry():
    saved = dict(_registry._FACTORIES)
    yield
    _registry._FACTORIES.clear()
    _registry._FACTORIES.update(saved)


def test_estimators_have_no_scoring_method():
    # the scoring layer knows the estimators, never the reverse
    for cls in (VBDiscreteDAG, VBHiddenMarkov):
        assert not hasattr(cls, "scoring_model")


def test_hmm_factory_follows_the_emission_family():
    X = np.array([0, 1, 2, 1, 0, 0, 2, 2, 1, 0])
    cat = VBHiddenMarkov(2, max_iter=5, random_state=0).fit(X.reshape(-1, 1))
    assert isinstance(scoring_model_for(cat), HMMScoringModel)
    Xg = np.random.default_rng(0).normal(size=(20, 2))
    gauss = VBHiddenMarkov(2, emission="gaussian", max_iter=5, random_state=0).fit(Xg)
    assert isinstance(scoring_model_for(gauss), GaussianHMMScoringModel)
    with pytest.raises(NotFittedError):
        scoring_model_for(VBHiddenMarkov(2))


def test_subclass_uses_the_factory_of_its_base(restore_registry):
    class MyDAG(VBDiscreteDAG):
        pass

    X = np.random.default_rng(0).integers(0, 2, size=(30, 2))
    est = MyDAG(n_components=2, max_iter=5, random_state=0).fit(X)
    assert isinstance(scoring_model_for(est), DAGScoringModel)
    # a registration for the subclass takes precedence over the base's
    register_scoring_model(MyDAG, lambda e: ("mine", e))
    assert scoring_model_for(est) == ("mine", est)


def test_register_by_class_or_name(restore_registry):
    class Fitted:
        lower_bound_ = -1.0

    class Sub(Fitted):
        pass

    with pytest.raises(NotImplementedError, match="no ScoringModel"):
        scoring_model_for(Fitted())
    assert scoring_model_for(Fitted(), default=None) is None
    register_scoring_model("Fitted", lambda e: "by name")
    assert scoring_model_for(Sub()) == "by name"
    register_scoring_model(Fitted, lambda e: "by class")
    assert scoring_model_for(Sub()) == "by class"
    with pytest.raises(TypeError, match="callable"):
        register_scoring_model(Fitted, "not a factory")


def test_objects_that_bring_their_own_model():
    from tests.oracles.reference_models import BetaBernoulli

    ref = BetaBernoulli(2.0, 3.0)
    # a ScoringModel is its own scoring model; a fitted reference hands out its model
    assert scoring_model_for(ref) is ref
    fitted = ref.fit_vb([1, 0, 1, 1])
    assert scoring_model_for(fitted) is ref
    assert score(fitted, [1, 0, 1, 1], "cs").log_evidence == pytest.approx(
        ref.log_evidence(ref.prepare_data([1, 0, 1, 1])), rel=1e-12)


def test_configuration_without_a_model_falls_back_to_the_bound():
    class BoundOnly:  # a fitted model with a bound and no ScoringModel
        lower_bound_ = -12.5

    X = np.zeros((4, 1))
    est = BoundOnly()
    with pytest.raises(NotImplementedError, match="no ScoringModel"):
        scoring_model_for(est)
    assert scoring_model_for(est, default=None) is None
    assert score(est, X, "vb").log_evidence == est.lower_bound_
    with pytest.raises(NotImplementedError, match="ais needs scoring_model"):
        score(est, X, "ais")
