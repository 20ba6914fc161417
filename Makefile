# Every target creates the virtualenv if it is missing and installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# numba caches compiled kernels next to their sources; a kernel edit invalidates its entry
KERNELS := $(VENV)/.kernels-compiled

.PHONY: demo test test-portable bench doc doc-check clean data compile

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[test,plot,dask]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# compile and cache every estimator's numba kernels once, so that no later process
# (the demo, a test, a user's first fit) spends its first fit compiling them
$(KERNELS): $(STAMP) $(wildcard sklearn_vb/_core/kernels/*.py sklearn_vb/*/*kernels.py sklearn_vb/lds/kalman.py sklearn_vb/hmm/forward_backward.py)
	$(PY) -m sklearn_vb compile
	touch $(KERNELS)

compile: $(KERNELS)

demo: $(STAMP) $(KERNELS)
	$(PY) -m sklearn_vb demo

# The English text of Beal (2003) §3.5.2 (Alice, from the wordcloud source archive on PyPI,
# fetched once with pip into ~/.cache/sklearn_vb); its tests skip, saying why, if it cannot be.
data: $(STAMP)
	-$(PY) -c "from sklearn_vb.datasets import fetch_alice_text; fetch_alice_text(download=True)" >/dev/null

# The suite runs on every core (pytest-xdist; WORKERS=0 runs it in one process).
WORKERS ?= auto
test: $(STAMP) $(KERNELS) data
	MPLBACKEND=Agg $(PY) -m pytest -q -n $(WORKERS) $(PYTEST_ARGS)

# The numerically sensitive tests (marker "numerics": fits, scores, searches, the
# reproductions' quick modes) again on a second floating-point code path: numba code
# generated for a generic x86-64 CPU (no AVX) into a fresh cache, and one BLAS thread
# instead of one per core.  OPENBLAS_CORETYPE is left as the machine sets it.  Two
# pytest workers share the machine's cores.
test-portable: $(STAMP) data
	cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && \
	NUMBA_CPU_NAME=generic NUMBA_CACHE_DIR="$$cache" OPENBLAS_NUM_THREADS=1 MPLBACKEND=Agg \
	$(PY) -m pytest -q -m numerics -n 2 -p no:cacheprovider $(PYTEST_ARGS)

# make bench: every comparison library that installs here (each tried separately,
# the outcome in benchmarks/results/peers.json), all workloads, the figures and the
# README's speed table.  make bench QUICK=1: small sizes, results in results/quick.*
bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) -m benchmarks.peers
ifdef QUICK
	$(PY) -m benchmarks --quick $(BENCH_ARGS)
else
	$(PY) -m benchmarks $(BENCH_ARGS)
	$(PY) -m benchmarks.figures
	$(PY) -m benchmarks.report --readme
endif

# -n -W: every cross-reference resolves, every warning is an error.  The gallery runs the
# examples' quick modes; SKLEARN_VB_GALLERY=full runs the full experiments, =skip does not run them.
doc: $(STAMP)
	$(PY) -m pip install --quiet -e ".[doc]"
	MPLBACKEND=Agg $(PY) -m sphinx -n -W --keep-going -b html doc doc/_build/html
	@echo "documentation: doc/_build/html/index.html"

# every page, image, internal link and the search of the built site, in headless
# Chromium (Debian's chromium package); skips with a message when it is not installed
doc-check: doc
	$(PY) doc/check_site.py doc/_build/html

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
