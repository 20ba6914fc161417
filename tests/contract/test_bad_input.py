"""A table of bad inputs across the public entry points.

Every case asserts the exception type and that the message names the argument and what
was wrong (two regular expressions, both searched case-insensitively).  Fitted models
come from small module-level fixtures, so the whole table runs in a few seconds.
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_vb import (BoltzmannMachine, LinearChainCRF, PairwiseMRF, VBDiscreteDAG, VBHiddenMarkov,
                        VBLinearDynamicalSystem, VBMixtureFactorAnalysers, VBSigmoidBeliefNetwork)
from sklearn_vb.bdmc_models import BayesianBinaryAttributes, BayesianClustering, BayesianLowRank
from sklearn_vb.model_selection import (CRFFeatureSearch, DAGStructureSearch, MRFStructureSearch,
                                        SequenceKFold, StructureSearch)
from sklearn_vb.scoring import get_scorer, score

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

RNG = np.random.default_rng(0)
SYM = RNG.integers(0, 3, size=(40, 1))
GAUSS = RNG.normal(size=(40, 2))
Y_LDS = RNG.normal(size=(40, 2))
U_LDS = RNG.normal(size=(40, 1))
DAG_X = RNG.integers(0, 2, size=(40, 2))
CHAIN = {"h": [], "a": ["h"], "b": ["h"]}
BIN = RNG.integers(0, 2, size=(30, 3))
X_CRF = RNG.integers(0, 2, size=(20, 2))
Y_CRF = RNG.integers(0, 2, size=20)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


_FITTED = {}


def fitted(name):
    """Small fitted models, built once."""
    if name not in _FITTED:
        builders = {
            "hmm": lambda: VBHiddenMarkov(2, n_symbols=3, max_iter=5, random_state=0).fit(SYM),
            "ghmm": lambda: VBHiddenMarkov(2, emission="gaussian", max_iter=5,
                                           random_state=0).fit(GAUSS),
            "lds": lambda: VBLinearDynamicalSystem(n_states=1, max_iter=3, random_state=0).fit(
                Y_LDS, U=U_LDS),
            "mfa": lambda: VBMixtureFactorAnalysers(search=False, max_iter=5,
                                                    random_state=0).fit(GAUSS),
            "dag": lambda: VBDiscreteDAG(CHAIN, cardinalities={"h": 2}, hidden="h", max_iter=5,
                                         n_init=1, random_state=0).fit(DAG_X),
            "dagc": lambda: VBDiscreteDAG(CHAIN, cardinalities=2, hidden="h", max_iter=5,
                                          n_init=1, random_state=0).fit(DAG_X),
            "ldag": lambda: VBDiscreteDAG(max_iter=5, n_init=1, random_state=0).fit(
                np.array([["a", "b"], ["b", "b"], ["a", "a"]] * 5)),
            "crf": lambda: LinearChainCRF().fit(X_CRF, Y_CRF),
            "mrf": lambda: PairwiseMRF().fit(BIN),
            "sbn": lambda: VBSigmoidBeliefNetwork(n_init=1, max_iter=3, random_state=0).fit(BIN),
            "search": lambda: StructureSearch(
                VBHiddenMarkov(n_symbols=3, max_iter=3), {"n_components": [1, 2]},
                random_state=0).fit(SYM),
        }
        _FITTED[name] = _quiet(builders[name])
    return _FITTED[name]


def _with(X, i, j, value):
    X = np.array(X, dtype=float)
    X[i, j] = value
    return X


HMM = lambda **kw: VBHiddenMarkov(2, max_iter=3, **kw)  # noqa: E731
GHMM = lambda **kw: VBHiddenMarkov(2, emission="gaussian", max_iter=3, **kw)  # noqa: E731
LDS = lambda **kw: VBLinearDynamicalSystem(n_states=1, max_iter=2, **kw)  # noqa: E731
MFA = lambda **kw: VBMixtureFactorAnalysers(search=False, max_iter=2, **kw)  # noqa: E731
DAG = lambda s=CHAIN, **kw: VBDiscreteDAG(s, max_iter=2, n_init=1, **{"hidden": "h", "cardinalities": {"h": 2}, **kw})  # noqa: E731

# (id, call, exception type, what the message must name, what it must say was wrong)
CASES = [
    # ---------------------------------------------------------------- categorical HMM
    # NaN is a missing symbol (marginalised); with nothing observed there is no alphabet
    ("hmm-all-nan", lambda: HMM().fit(np.full((5, 1), np.nan)), ValueError, r"\bX\b",
     "every symbol is missing"),
    ("hmm-inf", lambda: HMM().fit(_with(SYM, 3, 0, np.inf)), ValueError, r"\bX\b", "infinity"),
    ("hmm-3d", lambda: HMM().fit(SYM[:, :, None]), ValueError, r"\bX\b", "shape"),
    ("hmm-empty", lambda: HMM().fit(np.zeros((0, 1))), ValueError, r"\bX\b", "empty"),
    ("hmm-strings", lambda: HMM().fit(np.array([["a"], ["b"]])), ValueError, r"\bX\b", "integer symbols"),
    ("hmm-non-integer", lambda: HMM().fit(SYM + 0.5), ValueError, r"\bX\b", "non-integer"),
    ("hmm-negative", lambda: HMM().fit(SYM - 1), ValueError, r"\bX\b", "is negative"),
    ("hmm-outside-alphabet", lambda: HMM(n_symbols=2).fit(SYM), ValueError, r"\bX\b", "outside the alphabet"),
    ("hmm-lengths-sum", lambda: HMM().fit(SYM, lengths=[10, 10]), ValueError, "lengths", "sum to 20"),
    ("hmm-lengths-zero", lambda: HMM().fit(SYM, lengths=[40, 0]), ValueError, "lengths", "empty sequences"),
    ("hmm-lengths-negative", lambda: HMM().fit(SYM, lengths=[50, -10]), ValueError, "lengths", "positive"),
    ("hmm-lengths-float", lambda: HMM().fit(SYM, lengths=[20.5, 19.5]), ValueError, "lengths", "integers"),
    ("hmm-lengths-2d", lambda: HMM().fit(SYM, lengths=[[20, 20]]), ValueError, "lengths", "1-D"),
    ("hmm-both", lambda: HMM().fit(SYM, lengths=[40], sequence_ids=np.zeros(40)), ValueError,
     "lengths or sequence_ids", "not both"),
    ("hmm-ids-not-contiguous", lambda: HMM().fit(SYM, sequence_ids=np.arange(40) % 2), ValueError,
     "sequence_ids", "contiguous"),
    ("hmm-ids-length", lambda: HMM().fit(SYM, sequence_ids=np.zeros(39)), ValueError,
     "sequence_ids", "one id per row"),
    ("hmm-startprob-negative", lambda: HMM(startprob_prior=-1.0).fit(SYM), ValueError,
     "startprob_prior", "positive"),
    ("hmm-startprob-zero", lambda: HMM(startprob_prior=[0.0, 1.0]).fit(SYM), ValueError,
     "startprob_prior", "positive"),
    ("hmm-transmat-shape", lambda: HMM(transmat_prior=np.ones((3, 3))).fit(SYM), ValueError,
     "transmat_prior", "shape"),
    ("hmm-emission-prior-shape", lambda: HMM(n_symbols=3, emissionprob_prior=np.ones((2, 5))).fit(SYM),
     ValueError, "emissionprob_prior", "shape"),
    ("hmm-n-components", lambda: VBHiddenMarkov(0).fit(SYM), ValueError, "n_components", "range"),
    ("hmm-emission-name", lambda: HMM(emission="gamma").fit(SYM), ValueError, "emission", "gamma"),
    ("hmm-predict-unfitted", lambda: HMM().predict(SYM), NotFittedError, "VBHiddenMarkov", "not fitted"),
    ("hmm-score-unfitted", lambda: HMM().score(SYM), NotFittedError, "VBHiddenMarkov", "not fitted"),
    ("hmm-sample-unfitted", lambda: HMM().sample(3), NotFittedError, "VBHiddenMarkov", "not fitted"),
    ("hmm-new-alphabet", lambda: fitted("hmm").score(SYM + 3), ValueError, r"\bX\b", "outside the alphabet"),
    ("hmm-new-lengths", lambda: fitted("hmm").predict(SYM, lengths=[41]), ValueError, "lengths", "sum to 41"),
    # ---------------------------------------------------------------- Gaussian HMM
    # missing entries are marginalised (every family); infinity is refused
    ("ghmm-inf", lambda: GHMM().fit(_with(GAUSS, 1, 1, np.inf)), ValueError, r"\bX\b",
     "infinity"),
    ("ghmm-nan-column", lambda: GHMM(covariance_type="diag").fit(
        np.column_stack([GAUSS[:, 0], np.full(len(GAUSS), np.nan)])), ValueError, r"\bX\b",
     "missing \\(NaN\\) in every row"),
    ("ghmm-1d", lambda: GHMM().fit(GAUSS[:, 0]), ValueError, r"\bX\b", "2-D"),
    ("ghmm-empty", lambda: GHMM().fit(np.zeros((0, 2))), ValueError, r"\bX\b", "0 sample"),
    ("ghmm-strings", lambda: GHMM().fit(np.array([["a", "b"], ["c", "d"]])), ValueError, r"\bX\b", "numeric"),
    ("ghmm-width", lambda: fitted("ghmm").score(GAUSS[:, :1]), ValueError, r"\bX\b", "features"),
    ("ghmm-covariance-type", lambda: GHMM(covariance_type="round").fit(GAUSS), ValueError,
     "covariance_type", "round"),
    ("ghmm-beta-prior", lambda: GHMM(beta_prior=0.0).fit(GAUSS), ValueError, "beta_prior", "range|positive"),
    # ---------------------------------------------------------------- LDS
    # missing outputs are marginalised (VB and the point fits); an output never observed
    # is refused
    ("lds-nan-output", lambda: LDS(method="map").fit(
        np.column_stack([Y_LDS[:, 0], np.full(len(Y_LDS), np.nan)])), ValueError, r"\bX\b",
     "output 1 is missing \\(NaN\\) in every row"),
    ("lds-inf", lambda: LDS().fit(_with(Y_LDS, 2, 0, -np.inf)), ValueError, r"\bX\b", "infinity"),
    ("lds-u-rows", lambda: LDS().fit(Y_LDS, U=U_LDS[:-1]), ValueError, r"\bU\b", "one row per row"),
    ("lds-u-nan", lambda: LDS().fit(Y_LDS, U=_with(U_LDS, 0, 0, np.nan)), ValueError, r"\bU\b", "NaN"),
    ("lds-u-1d", lambda: LDS().fit(Y_LDS, U=U_LDS[:, 0]), ValueError, r"\bU\b", "2-D"),
    ("lds-u-strings", lambda: LDS().fit(Y_LDS, U=np.full((40, 1), "x")), ValueError, r"\bU\b", "numeric"),
    ("lds-u-missing", lambda: fitted("lds").predict(Y_LDS), ValueError, r"\bU\b", "required"),
    ("lds-u-width", lambda: fitted("lds").predict(Y_LDS, U=np.hstack([U_LDS, U_LDS])), ValueError,
     r"\bU\b", "column"),
    ("lds-width", lambda: fitted("lds").transform(Y_LDS[:, :1], U=U_LDS), ValueError, r"\bX\b", "features"),
    ("lds-n-states", lambda: VBLinearDynamicalSystem(n_states=0).fit(Y_LDS), ValueError, "n_states", "range"),
    ("lds-noise-shape", lambda: LDS(noise_shape=-1.0).fit(Y_LDS), ValueError, "noise_shape", "range"),
    ("lds-lengths", lambda: LDS().fit(Y_LDS, lengths=[30]), ValueError, "lengths", "sum to 30"),
    ("lds-transform-unfitted", lambda: LDS().transform(Y_LDS), NotFittedError, "VBLinearDynamicalSystem",
     "not fitted"),
    ("lds-forecast-steps", lambda: fitted("lds").forecast(0), ValueError, "n_steps", "positive"),
    # ---------------------------------------------------------------- MFA
    # missing entries are marginalised by batch VB (with or without the search), refused
    # by online learning
    ("mfa-nan-online", lambda: MFA(learning_method="online").fit(_with(GAUSS, 0, 0, np.nan)),
     ValueError, r"\bX\b", "online learning"),
    ("mfa-nan-feature", lambda: MFA(method="map").fit(
        np.column_stack([GAUSS[:, 0], np.full(len(GAUSS), np.nan)])), ValueError, r"\bX\b",
     "no observed value"),
    ("mfa-1d", lambda: MFA().fit(GAUSS[:, 0]), ValueError, r"\bX\b", "2-D"),
    ("mfa-empty", lambda: MFA().fit(np.zeros((0, 2))), ValueError, r"\bX\b", "0 sample"),
    ("mfa-strings", lambda: MFA().fit(np.array([["a", "b"], ["c", "d"]])), ValueError, r"\bX\b", "numeric"),
    ("mfa-too-many-components", lambda: MFA(n_components=50).fit(GAUSS), ValueError, "n_components",
     "n_samples"),
    ("mfa-alpha", lambda: MFA(alpha=0.0).fit(GAUSS), ValueError, "alpha", "range"),
    ("mfa-fit-param", lambda: MFA().fit(GAUSS, lengths=[40]), TypeError, "lengths", "unexpected"),
    ("mfa-width", lambda: fitted("mfa").transform(GAUSS[:, :1]), ValueError, r"\bX\b", "features"),
    ("mfa-predict-unfitted", lambda: MFA().predict(GAUSS), NotFittedError, "VBMixtureFactorAnalysers",
     "not fitted"),
    # ---------------------------------------------------------------- discrete DAG
    ("dag-cycle", lambda: DAG({"h": ["b"], "a": ["h"], "b": ["a"]}).fit(DAG_X), ValueError, "structure|DAG",
     "cycle"),
    ("dag-self-loop", lambda: DAG({"h": [], "a": ["h", "a"], "b": ["h"]}).fit(DAG_X), ValueError,
     r"'a'|structure", "cycle|self"),
    ("dag-unknown-hidden", lambda: DAG(hidden="zz").fit(DAG_X), ValueError, "zz", "unknown|not a node"),
    ("dag-hidden-given-data", lambda: DAG().fit(_frame({"a": DAG_X[:, 0], "b": DAG_X[:, 1], "h": DAG_X[:, 0]})),
     ValueError, "'h'", "hidden"),
    ("dag-cardinality", lambda: DAG(cardinalities={"h": 2, "a": 2, "b": 2}).fit(DAG_X + 1), ValueError,
     "'[ab]'", r"\[0, 2\)"),
    ("dag-hidden-without-cardinality", lambda: VBDiscreteDAG(CHAIN, hidden="h").fit(DAG_X), ValueError,
     "'h'|cardinalit", "cardinalit"),
    ("dag-prior-zero", lambda: DAG(prior=0.0).fit(DAG_X), ValueError, "prior", "range"),
    ("dag-prior-negative-table", lambda: DAG(prior={"a": -np.ones((2, 2))}).fit(DAG_X), ValueError,
     "prior for node 'a'", "positive"),
    ("dag-prior-shape", lambda: DAG(prior={"a": np.ones((3, 3))}).fit(DAG_X), ValueError,
     "prior for node 'a'", "shape"),
    ("dag-prior-unknown-node", lambda: DAG(prior={"zz": 1.0}).fit(DAG_X), ValueError, "prior", "unknown"),
    ("dag-columns", lambda: DAG().fit(np.hstack([DAG_X, DAG_X])), ValueError, r"\bX\b", "observed nodes"),
    ("dag-non-integral", lambda: VBDiscreteDAG().fit(GAUSS), ValueError, r"\bX\b", "non-integral"),
    ("dag-inf", lambda: VBDiscreteDAG().fit(_with(DAG_X, 0, 0, np.inf)), ValueError, r"\bX\b", "infinity"),
    ("dag-width", lambda: fitted("dag").score(np.hstack([DAG_X, DAG_X])), ValueError, r"\bX\b", "features"),
    ("dag-new-alphabet", lambda: fitted("dagc").score(DAG_X + 2), ValueError, r"\bX\b", r"\[0, 2\)"),
    ("dag-labels-for-numbers", lambda: fitted("ldag").score(DAG_X), ValueError, r"\bX\b", "learned labels"),
    ("dag-unknown-node", lambda: fitted("dag").predict_proba(DAG_X, node="zz"), ValueError, "zz", "unknown|not"),
    ("dag-sample-size", lambda: fitted("dag").sample(0), ValueError, "n_samples", "positive"),
    ("dag-predict-unfitted", lambda: DAG().predict(DAG_X), NotFittedError, "VBDiscreteDAG", "not fitted"),
    # ---------------------------------------------------------------- scoring.score
    ("score-method", lambda: score(fitted("hmm"), SYM, "magic"), ValueError, "magic", "method must be one of"),
    ("score-option", lambda: score(fitted("hmm"), SYM, "bic", n_temperatures=5), ValueError,
     "n_temperatures", "unknown option"),
    ("score-option-value", lambda: score(fitted("hmm"), SYM, "bic", estimate="mode"), ValueError,
     "estimate", "'map' or 'ml'"),
    ("score-x-none", lambda: score(fitted("hmm"), None, "vb"), ValueError, r"\bX\b", "None"),
    ("score-unfitted", lambda: score(HMM(), SYM, "vb"), NotFittedError, "VBHiddenMarkov", "not fitted"),
    ("score-alphabet", lambda: score(fitted("hmm"), SYM + 3, "bic"), ValueError, r"\bX\b", "alphabet"),
    ("score-lengths", lambda: score(fitted("hmm"), SYM, "vb", lengths=[3]), ValueError, "lengths", "sum to 3"),
    ("get-scorer-name", lambda: get_scorer("magic"), ValueError, "magic", "must be one of"),
    # ---------------------------------------------------------------- searches and splitters
    ("search-empty-grid", lambda: StructureSearch(HMM(), {"n_components": []}).fit(SYM), ValueError,
     "param_grid|n_components", "non-empty"),
    ("search-scoring", lambda: StructureSearch(HMM(), {"n_components": [1]}, scoring="magic").fit(SYM),
     ValueError, "scoring", "not a known score"),
    ("search-refit", lambda: StructureSearch(HMM(), {"n_components": [1]}, refit="bic").fit(SYM),
     ValueError, "refit", "not one of the scores"),
    ("search-rescoring-clash", lambda: StructureSearch(HMM(), {"n_components": [1]}, rescoring="vb").fit(SYM),
     ValueError, "rescoring", "also in scoring"),
    ("search-alias", lambda: StructureSearch(HMM(), {"n_components": [1]}, alias_correction="yes").fit(SYM),
     ValueError, "alias_correction", "yes"),
    ("search-top-k", lambda: StructureSearch(HMM(), {"n_components": [1]}, rescore_top_k=0).fit(SYM),
     ValueError, "rescore_top_k", "range"),
    ("search-unfitted", lambda: StructureSearch(HMM(), {"n_components": [1]}).predict(SYM), NotFittedError,
     "StructureSearch", "not fitted"),
    ("search-width", lambda: fitted("search").predict(np.hstack([SYM, SYM])), ValueError, r"\bX\b", "one column"),
    ("search-data", lambda: StructureSearch(HMM(), {"n_components": [1, 2]}).fit(SYM - 1), ValueError,
     r"\bX\b", "is negative"),
    ("dag-search-kind", lambda: DAGStructureSearch(DAG(), search="random").fit(DAG_X), ValueError,
     "search", "random"),
    ("dag-search-structures", lambda: DAGStructureSearch(DAG(), search="exhaustive").fit(DAG_X), ValueError,
     "structures", "need|give|require"),
    ("dag-search-hidden-without-structure", lambda: DAGStructureSearch(
        VBDiscreteDAG(hidden="h")).fit(DAG_X), ValueError, "hidden", "needs a structure"),
    ("dag-search-cardinalities-without-structure", lambda: DAGStructureSearch(
        VBDiscreteDAG(cardinalities={"h": 2})).fit(DAG_X), ValueError, "cardinalities",
     r"not columns of X"),
    ("dag-search-non-integral", lambda: DAGStructureSearch(VBDiscreteDAG()).fit(GAUSS), ValueError,
     r"\bX\b", "non-integral"),
    ("dag-search-1d", lambda: DAGStructureSearch(VBDiscreteDAG()).fit(DAG_X[:, 0]), ValueError,
     r"\bX\b|array", "2D|2-D"),
    # ---------------------------------------------------------------- the other public models
    ("crf-nan", lambda: LinearChainCRF().fit(_with(X_CRF, 2, 0, np.nan), Y_CRF), ValueError,
     r"\bX\b", "NaN.*no missing-value support"),
    ("crf-inf", lambda: LinearChainCRF().fit(_with(X_CRF, 2, 0, np.inf), Y_CRF), ValueError,
     r"\bX\b", "infinity"),
    ("crf-1d", lambda: LinearChainCRF().fit(X_CRF[:, 0], Y_CRF), ValueError, r"\bX\b", "2-D"),
    ("crf-strings", lambda: LinearChainCRF().fit(np.array([["a", "b"]] * 20), Y_CRF), ValueError,
     r"\bX\b", "numeric"),
    ("crf-empty", lambda: LinearChainCRF().fit(np.zeros((0, 2)), []), ValueError, r"\bX\b", "0 sample"),
    ("crf-lengths", lambda: LinearChainCRF().fit(X_CRF, Y_CRF, lengths=[3, 4]), ValueError,
     "lengths", "sum to 7"),
    ("crf-y-length", lambda: LinearChainCRF().fit(X_CRF, Y_CRF[:15]), ValueError, r"\by\b",
     "15 labels but X has 20 rows"),
    ("crf-one-class", lambda: LinearChainCRF().fit(X_CRF, np.zeros(20)), ValueError, r"\by\b",
     "two classes"),
    ("crf-prior", lambda: LinearChainCRF(prior_variance=-1).fit(X_CRF, Y_CRF), ValueError,
     "prior_variance", "positive"),
    ("crf-feature", lambda: LinearChainCRF(state_features=[5]).fit(X_CRF, Y_CRF), ValueError,
     "state_features", "column indices in 0..1"),
    ("crf-unfitted", lambda: LinearChainCRF().predict(X_CRF), NotFittedError, "LinearChainCRF",
     "not fitted"),
    ("crf-width", lambda: fitted("crf").predict(np.hstack([X_CRF, X_CRF])), ValueError, "features",
     "expecting 2"),
    ("mrf-nan", lambda: PairwiseMRF().fit(_with(BIN, 2, 0, np.nan)), ValueError, r"\bX\b",
     "NaN.*no missing-value support"),
    ("mrf-state", lambda: PairwiseMRF().fit(BIN + 1), ValueError, r"\bX\b", r"integers in \[0, 2\)"),
    ("mrf-negative", lambda: PairwiseMRF().fit(BIN - 1), ValueError, r"\bX\b", r"integers in \[0, 2\)"),
    ("mrf-float", lambda: PairwiseMRF().fit(BIN + 0.5), ValueError, r"\bX\b", "integers"),
    ("mrf-learned-float", lambda: PairwiseMRF(n_states=None).fit(GAUSS), ValueError, r"\bX\b",
     "non-integral"),
    ("mrf-strings", lambda: PairwiseMRF().fit(np.array([["a", "b", "c"]] * 5)), ValueError,
     r"\bX\b", "numeric"),
    ("mrf-self-loop", lambda: PairwiseMRF(structure=[(0, 0)]).fit(BIN), ValueError, "structure",
     "self-loop"),
    ("mrf-unknown-node", lambda: PairwiseMRF(structure=[(0, 7)]).fit(BIN), ValueError, "structure",
     "outside 0..2"),
    ("mrf-prior", lambda: PairwiseMRF(prior_variance=0).fit(BIN), ValueError, "prior_variance",
     "positive"),
    ("mrf-unfitted", lambda: PairwiseMRF().score(BIN), NotFittedError, "PairwiseMRF", "not fitted"),
    ("mrf-width", lambda: fitted("mrf").score(BIN[:, :2]), ValueError, "features", "expecting 3"),
    ("bm-nan", lambda: BoltzmannMachine().fit(_with(BIN, 2, 0, np.nan)), ValueError, r"\bX\b",
     "NaN.*no missing-value support"),
    ("bm-not-binary", lambda: BoltzmannMachine().fit(BIN * 2), ValueError, r"\bX\b", "binary 0/1"),
    ("bm-hidden", lambda: BoltzmannMachine(n_hidden=-1).fit(BIN), ValueError, "n_hidden", "range"),
    ("bm-connectivity", lambda: BoltzmannMachine(connectivity="weird").fit(BIN), ValueError,
     "connectivity", "weird"),
    ("bm-prior", lambda: BoltzmannMachine(prior_variance=-2).fit(BIN), ValueError, "prior_variance",
     "positive"),
    ("bm-unfitted", lambda: BoltzmannMachine().transform(BIN), NotFittedError, "BoltzmannMachine",
     "not fitted"),
    ("sbn-strings", lambda: VBSigmoidBeliefNetwork().fit(np.array([["a", "b", "c"]] * 20)),
     ValueError, r"\bX\b", "numeric"),
    ("sbn-1d", lambda: VBSigmoidBeliefNetwork().fit(BIN[:, 0]), ValueError, r"\bX\b", "2-D"),
    ("sbn-inf", lambda: VBSigmoidBeliefNetwork().fit(np.where(BIN > 0, np.inf, 0.0)), ValueError,
     r"\bX\b", "infinity"),
    ("sbn-not-binary", lambda: VBSigmoidBeliefNetwork().fit(BIN * 3), ValueError, r"\bX\b", "0/1"),
    ("sbn-prior", lambda: VBSigmoidBeliefNetwork(prior_variance=0).fit(BIN), ValueError,
     "prior_variance", "range"),
    ("sbn-cycle", lambda: VBSigmoidBeliefNetwork(structure={0: [1], 1: [0], 2: []}).fit(BIN),
     ValueError, "structure", "cycle"),
    ("sbn-unfitted", lambda: VBSigmoidBeliefNetwork().predict_proba(BIN), NotFittedError,
     "VBSigmoidBeliefNetwork", "not fitted"),
    ("sbn-width", lambda: fitted("sbn").score(BIN[:, :2]), ValueError, "features", "expecting 3"),
    ("clustering-nan", lambda: BayesianClustering(2).fit(_with(GAUSS, 2, 0, np.nan)), ValueError,
     r"\bX\b", "NaN.*no missing-value support"),
    ("clustering-size", lambda: BayesianClustering(0).fit(GAUSS), ValueError, "n_components", "range"),
    ("clustering-strings", lambda: BayesianClustering(2).fit(np.array([["a", "b"]] * 5)), ValueError,
     r"\bX\b", "numeric"),
    ("clustering-huge", lambda: BayesianClustering(2).fit(GAUSS * 1e150), ValueError, r"\bX\b",
     "overflow"),
    ("low-rank-1d", lambda: BayesianLowRank(2).fit(GAUSS[:, 0]), ValueError, r"\bX\b", "2-D"),
    ("low-rank-empty", lambda: BayesianLowRank(2).fit(np.zeros((0, 2))), ValueError, r"\bX\b",
     "0 sample"),
    ("binary-size", lambda: BayesianBinaryAttributes(2.5).fit(GAUSS), ValueError, "n_components",
     "int"),
    ("binary-unfitted", lambda: BayesianBinaryAttributes(2).score(GAUSS), NotFittedError,
     "BayesianBinaryAttributes", "not fitted"),
    ("crf-search-search", lambda: CRFFeatureSearch(LinearChainCRF("none", "none"),
                                                   search="magic").fit(X_CRF, Y_CRF),
     ValueError, "search", "magic"),
    ("crf-search-scoring", lambda: CRFFeatureSearch(LinearChainCRF("none", "none"), search="greedy",
                                                    scoring="magic").fit(X_CRF, Y_CRF),
     ValueError, "scoring", "not a known score"),
    ("crf-search-estimator", lambda: CRFFeatureSearch(PairwiseMRF()).fit(X_CRF, Y_CRF), ValueError,
     "state_features", "PairwiseMRF"),
    ("crf-search-nan", lambda: CRFFeatureSearch(LinearChainCRF("none", "none"), search="greedy")
     .fit(_with(X_CRF, 2, 0, np.nan), Y_CRF), ValueError, r"\bX\b", "NaN"),
    ("crf-search-unfitted", lambda: CRFFeatureSearch(LinearChainCRF()).predict(X_CRF),
     NotFittedError, "CRFFeatureSearch", "not fitted"),
    ("mrf-search-search", lambda: MRFStructureSearch(PairwiseMRF(), search="magic").fit(BIN),
     ValueError, "search", "magic"),
    ("mrf-search-structures", lambda: MRFStructureSearch(PairwiseMRF(), search="exhaustive",
                                                         structures=[[(0, 9)]]).fit(BIN),
     ValueError, "structure", "outside 0..2"),
    ("mrf-search-estimator", lambda: MRFStructureSearch(LinearChainCRF()).fit(BIN), ValueError,
     "structure", "LinearChainCRF"),
    ("mrf-search-1d", lambda: MRFStructureSearch(PairwiseMRF()).fit(BIN[:, 0]), ValueError,
     r"\bX\b", "2-D"),
    ("mrf-search-nan", lambda: MRFStructureSearch(PairwiseMRF(), search="greedy")
     .fit(_with(BIN, 2, 0, np.nan)), ValueError, r"\bX\b", "NaN"),
    ("mrf-search-unfitted", lambda: MRFStructureSearch(PairwiseMRF()).score(BIN), NotFittedError,
     "MRFStructureSearch", "not fitted"),
    ("kfold-groups", lambda: list(SequenceKFold(2).split(SYM)), ValueError, "groups", "sequence_ids"),
    ("kfold-splits", lambda: list(SequenceKFold(3).split(SYM, groups=np.repeat([0, 1], 20))), ValueError,
     "n_splits", "larger than the number of sequences"),
    ("kfold-contiguous", lambda: list(SequenceKFold(2).split(SYM, groups=np.arange(40) % 2)), ValueError,
     "groups", "contiguous"),
]


def _frame(columns):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(columns)


def test_the_table_is_large_enough():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error(case):
    _, call, kind, names, wrong = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kind) as info:
            call()
    assert type(info.value) is kind or issubclass(type(info.value), kind)
    message = str(info.value)
    assert re.search(names, message, re.IGNORECASE), f"the message does not name {names!r}: {message}"
    assert re.search(wrong, message, re.IGNORECASE), f"the message does not say {wrong!r}: {message}"
