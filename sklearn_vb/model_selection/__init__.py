"""Choosing model structure by approximate marginal likelihood.

* :class:`StructureSearch` fits every candidate of a parameter grid on the whole data and
  ranks them by an evidence score of :mod:`sklearn_vb.scoring` (VB bound, BIC, CS, AIS...).
* :class:`DAGStructureSearch` does the same for discrete Bayesian networks with hidden
  nodes over a given class or by greedy hill-climbing over edges.
* :class:`MRFStructureSearch` searches the undirected edge sets of pairwise MRFs.
* :class:`CRFFeatureSearch` searches the state and transition features of linear-chain CRFs.
* :class:`SequenceKFold` cross-validates sequence models without cutting a sequence.
"""

from ._crf_search import CRFFeatureSearch, crf_feature_sequence
from ._dag_search import DAGStructureSearch
from ._mrf_search import MRFStructureSearch, enumerate_undirected_graphs
from ._search import StructureSearch, size_parameter  # size_parameter: for the plots of a search
from ._split import SequenceKFold, lengths_to_sequence_ids, sequence_ids_to_lengths

__all__ = [
    "StructureSearch",
    "DAGStructureSearch",
    "MRFStructureSearch",
    "CRFFeatureSearch",
    "crf_feature_sequence",
    "enumerate_undirected_graphs",
    "SequenceKFold",
    "lengths_to_sequence_ids",
    "sequence_ids_to_lengths",
]
