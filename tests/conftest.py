"""Shared pytest configuration.

Hypothesis profiles: local runs draw fresh random examples every time (the default
profile), so that repeated runs keep exploring.  When the environment variable ``CI`` is
set (to anything, the rule Hypothesis itself uses; CI services and ``.ci/run`` set
``CI=true``) the ``ci`` profile is loaded, so that a CI result depends only on the code:
not on the luck of the draw, on an example database left by earlier runs, or on the speed
of the machine.  Recent Hypothesis versions ship a similar profile under the same name;
registering it here pins what CI runs with whatever the installed version.  A test's own
``@settings(...)`` overrides only the options it names and inherits the rest from the
loaded profile.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    # examples derived from a hash of each test instead of a random seed
    derandomize=True,
    # no replay of failures stored by earlier runs in .hypothesis/
    database=None,
    # timings vary between CI machines: a slow example is not a failure
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # a failure prints the blob that reproduces it with @reproduce_failure
    print_blob=True,
)

if "CI" in os.environ:
    settings.load_profile("ci")


# Modules whose tests check the API, the documentation or input validation rather than
# a computed number.  Every other test module is numerically sensitive (it fits,
# scores, searches or runs a reproduction's quick mode) and is marked ``numerics``;
# ``make test-portable`` runs those again on a second floating-point code path.
_NOT_NUMERICS = (
    "test_architecture",
    "test_bad_input",
    "test_benchmarks",
    "test_datasets_text",
    "test_doc_",
    "test_docstring_examples",
    "test_estimator_checks",
    "test_gallery_coverage",
    "test_hypothesis_bad_input",
    "test_model_selection_plotting",
    "test_plotting",
    "test_readme_and_demo",
    "test_validation",
)


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        module = item.path.stem
        if not module.startswith(_NOT_NUMERICS) and not module.endswith("_sklearn"):
            item.add_marker(pytest.mark.numerics)


@pytest.fixture(scope="module")
def dask_cluster():
    """A local dask cluster of two in-process workers (started in a fraction of a
    second, closed with the module) for the tests of fits on dask arrays."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture
def dask_client(dask_cluster):
    """A client of :func:`dask_cluster`, closed after the test."""
    distributed = pytest.importorskip("distributed")
    with distributed.Client(dask_cluster) as client:
        yield client
