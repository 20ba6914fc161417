"""``reproduce mfa``: the experiments of Beal (2003) Chapter 4 with
:class:`~sklearn_vb.VBMixtureFactorAnalysers`.

* §4.5.1 (Fig 4.3): 18 Gaussian clusters in the plane, components found against points
  per cluster (:mod:`._mfa_synthetic`);
* §4.5.2 (Table 4.1): embedded clusters of intrinsic dimensions 7, 4, 3, 2, 2, 1 in 10-D
  at the thesis's sizes, analysers and factors found;
* §4.5.3 (Figs 4.6-4.7): the shrinking spiral;
* §4.6 (Fig 4.10, Table 4.2): scikit-learn's 8×8 digits standing in for CEDAR,
  unsupervised clustering and the one-model-per-class classifier against the
  BIC-penalised ML MFA grown by the birth search (and, for comparison, BIC over an EM
  grid) (:mod:`._mfa_digits`);
* §4.7 (Figs 4.13-4.14, Table 4.3): importance sampling from q with heavy-tailed and
  restart-mixture proposals against F, with weight diagnostics (:mod:`._mfa_is`);
* Fig 4.12: importance sampling and classification errors after each accepted epoch of
  one unsupervised search on the digits 0-2 (:func:`._mfa_is.search_trace_unit`).

Each fit is one work unit (cached, resumable).  Data sets depend on the run's seed and
their own identity only, so VB and ML see the same training images, and every
configuration of a synthetic experiment (``cluster_variants``, ``synthetic_variants``:
names in :data:`._mfa_synthetic.VARIANTS`) fits the same data.

``sections`` chooses the parts: a comma-separated list of ``"clusters"`` (§4.5.1),
``"embedded"`` (§4.5.2), ``"spiral"`` (§4.5.3), ``"digits"`` (§4.6), ``"is"`` (§4.7) and
``"trace"`` (Fig 4.12), or ``"all"`` (default).
"""

from __future__ import annotations

from ._experiment import Experiment, Option, register
from ._mfa_digits import classifier_unit, unsupervised_unit
from ._mfa_is import clusters_is_unit, digits_is_unit, search_trace_unit
from ._mfa_report import report, summarize
from ._mfa_sections import SECTIONS, sections, variants
from ._mfa_synthetic import VARIANTS, clusters_unit, embedded_unit, spiral_unit

__all__ = ["mfa"]

FULL = {
    "sections": "all",
    "cluster_variants": ["spatial", "default", "spatial_fixed_b", "default_fixed_b"],
    "synthetic_variants": ["spatial", "default", "spatial_fixed_b"],
    "cluster_sizes": [10, 20, 50], "cluster_reps": 2,
    "embedded_sizes": [8, 16, 32, 64, 128, 300], "embedded_reps": 2,
    "spiral_reps": 3, "max_iter": 2000,
    "n_test_per_class": 50, "train_sizes": [30, 60, 120], "class_reps": 2,
    "vb_max_iter": 2000, "ml_components": [1, 2, 3, 4], "ml_factors": [2, 5],
    "ml_max_iter": 300, "unsupervised": True, "unsupervised_max_points": None,
    "unsupervised_max_iter": 3000,
    "is_spacings": [1.0, 2.0, 4.0], "is_restarts": 10, "is_samples": 2000, "is_runs": 5,
    "is_digits_components": [1, 2, 3, 4, 6], "is_digits_factors": 4,
    "is_digits_samples": 100, "is_digits_runs": 6, "is_digits_max_points": None,
}
QUICK = dict(
    FULL, cluster_variants=["spatial", "default"], synthetic_variants=["spatial", "default"],
    # 6 of the 18 clusters (a quick-mode key only: the full mode always has 18)
    n_clusters=6, cluster_sizes=[20], cluster_reps=1, embedded_sizes=[16], embedded_reps=1,
    spiral_reps=0, train_sizes=[30], class_reps=1, ml_components=[1, 2], ml_factors=[2],
    vb_max_iter=300, ml_max_iter=100, unsupervised=False,
    is_spacings=[4.0], is_restarts=3, is_samples=200, is_runs=2,
    is_digits_components=[1, 2], is_digits_factors=2, is_digits_samples=50,
    is_digits_runs=2, is_digits_max_points=150,
)

_RUNNERS = {"clusters": clusters_unit, "embedded": embedded_unit, "spiral": spiral_unit,
            "unsupervised": unsupervised_unit, "classify": classifier_unit,
            "is_clusters": clusters_is_unit, "is_digits": digits_is_unit,
            "search_trace": search_trace_unit}


def _units(config):
    parts = sections(config)
    units = []
    if "clusters" in parts:
        units += [("clusters", int(n), r, v) for v in variants(config, "cluster_variants")
                  for n in config["cluster_sizes"] for r in range(int(config["cluster_reps"]))]
    synthetic = variants(config, "synthetic_variants")
    if "embedded" in parts:
        units += [("embedded", int(n), r, v) for v in synthetic for n in config["embedded_sizes"]
                  for r in range(int(config["embedded_reps"]))]
    if "spiral" in parts:
        units += [("spiral", r, v) for v in synthetic for r in range(int(config["spiral_reps"]))]
    if "is" in parts:
        units += [("is_clusters", float(s)) for s in config["is_spacings"]]
        units += [("is_digits", int(S)) for S in config["is_digits_components"]]
    if "trace" in parts:
        units.append(("search_trace", 0))
    if "digits" in parts:
        units += [("classify", m, int(n), r, d) for n in config["train_sizes"]
                  for r in range(int(config["class_reps"])) for m in ("vb", "ml", "ml_search")
                  for d in range(10)]
        if config["unsupervised"]:
            units.append(("unsupervised", 0))
    return units


def _run_unit(key, config, seed):
    return _RUNNERS[key[0]](key, config, seed)


mfa = register(Experiment(
    name="mfa",
    description="Beal (2003) Chapter 4: components and dimensions found (§4.5, Table 4.1), "
                "digits against BIC-ML MFA grown by birth search (Table 4.2), importance "
                "sampling against F (§4.7, Fig 4.12 through the search)",
    quick=QUICK, full=FULL, units=_units, run_unit=_run_unit, summarize=summarize,
    report=report,
    options=(Option("sections", str, "'all' (default) or a comma-separated list of "
                    f"{', '.join(SECTIONS)}"),
             Option("cluster_variants", str, "configurations of §4.5.1, comma-separated: "
                    f"{', '.join(VARIANTS)}"),
             Option("synthetic_variants", str, "configurations of §4.5.2 and §4.5.3"),
             Option("class_reps", int, "repetitions of the digit classifiers (thesis 10)"),
             Option("is_samples", int, "importance samples per run (thesis 4000)"),
             Option("max_iter", int, "VBEM iteration cap of the synthetic searches")),
    # sections and variants choose units, never a unit's result
    resume_ignores=("class_reps", "unsupervised", "sections", "cluster_variants",
                    "synthetic_variants")))
