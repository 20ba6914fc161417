"""ScoringModel adapters for the package estimators, built from fitted attributes.

``ESTIMATOR_FACTORIES`` maps each estimator class to the function that builds its
ScoringModel from a fitted instance; :func:`sklearn_vb.scoring.scoring_model_for` looks
estimators up in it (and in what :func:`sklearn_vb.scoring.register_scoring_model` adds).
"""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from ...bdmc_models import BayesianBinaryAttributes, BayesianClustering, BayesianLowRank
from ...boltzmann import BoltzmannMachine
from ...boltzmann.scoring_model import BoltzmannScoringModel
from ...crf import LinearChainCRF
from ...crf.scoring_model import CRFScoringModel
from ...dag import VBDiscreteDAG
from ...dag.scoring_model import DAGScoringModel
from ...hmm import VBHiddenMarkov
from ...hmm.scoring_model import FamilyHMMScoringModel, GaussianHMMScoringModel, HMMScoringModel
from ...lds import VBLinearDynamicalSystem
from ...lds.scoring_model import LDSScoringModel
from ...mfa import VBMixtureFactorAnalysers
from ...mfa.scoring_model import MFAScoringModel
from ...mrf import PairwiseMRF
from ...mrf.scoring_model import MRFScoringModel
from ...sbn import VBSigmoidBeliefNetwork
from ...sbn.scoring_model import SBNScoringModel
from ...bdmc_models.scoring_model import BinaryAttributesScoringModel, ClusteringScoringModel, LowRankScoringModel

__all__ = ["ESTIMATOR_FACTORIES"]


#: categorical HMMs keep their all-Dirichlet parameterisation (blocks pi, A, B) and
#: Gaussian ones their named subclass; every other emission family is served by the
#: family-parameterised adapter
_HMM_SCORING_MODELS = {"categorical": HMMScoringModel, "gaussian": GaussianHMMScoringModel}


def _hmm_scoring_model(estimator):
    check_is_fitted(estimator, "lower_bound_")
    _refuse_point_fit(estimator)
    if getattr(estimator, "transition_inputs", None) is not None:
        raise NotImplementedError(
            "the scoring models of VBHiddenMarkov do not condition on transition inputs "
            "(U) yet; of the scores, only 'vb' (the fit's lower_bound_) is available for "
            "a model with transition_inputs.")
    return _HMM_SCORING_MODELS.get(estimator.emission, FamilyHMMScoringModel)(estimator)


def _refuse_point_fit(estimator):
    if getattr(estimator, "_point_fitted", False):
        raise NotImplementedError(
            f"a {type(estimator).__name__} fitted with method='ml' or 'map' has no q(theta) "
            "to score with.")


def _fitted_only(adapter):
    """The factory ``estimator -> adapter(estimator)``, refusing an unfitted estimator
    and a point fit (``method="ml"``/``"map"``)."""

    def factory(estimator):
        check_is_fitted(estimator, "lower_bound_")
        _refuse_point_fit(estimator)
        return adapter(estimator)

    return factory


ESTIMATOR_FACTORIES = {
    VBHiddenMarkov: _hmm_scoring_model,
    VBMixtureFactorAnalysers: _fitted_only(MFAScoringModel),
    VBLinearDynamicalSystem: _fitted_only(LDSScoringModel),
    VBDiscreteDAG: _fitted_only(DAGScoringModel),
    VBSigmoidBeliefNetwork: _fitted_only(SBNScoringModel),
    BayesianClustering: _fitted_only(ClusteringScoringModel),
    BayesianLowRank: _fitted_only(LowRankScoringModel),
    BayesianBinaryAttributes: _fitted_only(BinaryAttributesScoringModel),
    PairwiseMRF: lambda est: (check_is_fitted(est, "coef_"), MRFScoringModel(est))[1],
    LinearChainCRF: lambda est: (check_is_fitted(est, "coef_"), CRFScoringModel(est))[1],
    BoltzmannMachine: lambda est: (check_is_fitted(est, "coef_"), BoltzmannScoringModel(est))[1],
}
