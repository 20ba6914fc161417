"""Optional matplotlib pictures of fitted models and structure searches.

matplotlib is imported only when a function is called (``pip install sklearn_vb[plot]``).
Every function draws on ``ax`` (or a new figure with a layout that keeps its labels
inside) and returns the axes it drew on.

* :func:`plot_score_vs_size` -- evidence scores of a structure search against model size;
* :func:`plot_bound_trace` -- the lower bound per iteration, per restart, with the
  birth, death and pruning events of the search moves;
* :func:`hinton` and :func:`plot_parameters` -- Hinton diagrams of a matrix and of the
  transition, emission, loading or conditional probability tables of a fitted model;
* :func:`plot_ard` -- the ARD precisions of a mixture of factor analysers or an LDS;
* :func:`plot_lds_states` -- filtered and smoothed LDS states with their uncertainty;
* :func:`plot_structure` and :func:`plot_structure_search` -- graphs of DAG and MRF
  structures, and the best structures of a search with their scores.
"""

from ._ard import plot_ard
from ._hinton import hinton, plot_parameters
from ._lds import plot_lds_states
from ._scores import plot_score_vs_size
from ._structure import plot_structure, plot_structure_search
from ._traces import plot_bound_trace

__all__ = [
    "plot_score_vs_size",
    "plot_bound_trace",
    "hinton",
    "plot_parameters",
    "plot_ard",
    "plot_lds_states",
    "plot_structure",
    "plot_structure_search",
]
