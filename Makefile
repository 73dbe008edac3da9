# scansnap: the book and its library. `make help` lists the targets.
# On a fresh machine the only requirement is python3 >= 3.10 with venv: every target sets up .venv.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Tools and notebook kernels run from the venv, activated or not.
export PATH := $(abspath $(BIN)):$(PATH)

# pip on these machines prints one harmless warning per package for each absent local index;
# only those lines are dropped (pip's own exit status is kept by pipefail).
PIP_NOISE := is ignored: it is neither a file nor a directory
PIP_FILTER := { grep -v -- '$(PIP_NOISE)' || true; }

# SCANSNAP_PROFILE picks the scale of the chapters: smoke | book (default) | paper.
# Each profile has its own build folder and execution cache, so a page executed under one
# profile is never served from the cache under another.
SCANSNAP_PROFILE ?= book
export SCANSNAP_PROFILE
ifeq ($(filter $(SCANSNAP_PROFILE),smoke book paper),)
$(error SCANSNAP_PROFILE must be one of smoke, book, paper (got '$(SCANSNAP_PROFILE)'))
endif
ifeq ($(SCANSNAP_PROFILE),book)
BOOK_OUT := .
else
BOOK_OUT := _build/$(SCANSNAP_PROFILE)
endif
BUILD := $(BOOK_OUT)/_build
HTML := $(BUILD)/html
FIGURES := _extra/figures
VERDICTS := _extra/verdicts

.PHONY: help venv book smoke data test site-test lint bench bench-sweep clean clean-cache reference binder-check

help:
	@echo "make book         build the book strictly (-W -n --keep-going) into $(HTML) and check it"
	@echo "make test         run the test suite (pytest; without the browser test of the site)"
	@echo "make site-test    open every page of the built site $(HTML) in Chromium and check it (run make book first)"
	@echo "make smoke        build the book with SCANSNAP_PROFILE=smoke (fast, small experiments)"
	@echo "make data         download and verify Chapter 8's WikiText-2 files (into \$$SCANSNAP_WIKITEXT or the user cache)"
	@echo "make lint         ruff check"
	@echo "make bench        run benchmarks/bench_train.py"
	@echo "make bench-sweep  run benchmarks/bench_sweep.py (Chapter 7's 640-run sweep against the reference)"
	@echo "make reference    (re)write book/reference/, one Library reference page per public module"
	@echo "make binder-check emulate the Binder image (binder/) and run every chapter on one core (long)"
	@echo "make clean        remove built pages, keep the execution cache"
	@echo "make clean-cache  remove the execution cache, the built pages, $(FIGURES) and $(VERDICTS)"
	@echo "make venv         create .venv and install requirements.txt (done by the targets above)"
	@echo "SCANSNAP_PROFILE=smoke|book|paper picks the scale (now: $(SCANSNAP_PROFILE))"

venv: $(STAMP)

# uv (https://docs.astral.sh/uv/), when on PATH or named by UV=..., installs the same pinned requirements (and the
# same versions of everything they pull in) several times faster than pip: 25 s against 146 s on the CI machine.
# Without it, pip. A folder of local wheels in PIP_FIND_LINKS (e.g. a CPU build of torch) is passed on to uv.
UV ?= $(shell command -v uv 2>/dev/null)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "scansnap needs python3 >= 3.10 (found " + sys.version.split()[0] + ")")'
	@if [ -n "$(UV)" ]; then \
	  test -x $(BIN)/python || { echo "creating $(VENV) with $(UV)"; $(UV) venv -q --seed -p $(PYTHON) $(VENV); }; \
	  echo "$(UV) pip install -r requirements.txt"; \
	  VIRTUAL_ENV=$(abspath $(VENV)) $(UV) pip install -q $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS)) \
	    -r requirements.txt; \
	else \
	  test -x $(BIN)/python || { echo "creating $(VENV)"; $(PYTHON) -m venv $(VENV); }; \
	  echo "$(BIN)/python -m pip install -r requirements.txt"; \
	  $(BIN)/python -m pip install -r requirements.txt 2>&1 | $(PIP_FILTER); \
	fi
	@touch $@

# The chapters execute BOOK_JOBS at a time into the execution cache first (.ci/execute_pages.py; one intra-op
# thread each when more than one runs); jupyter-book then renders them from the cache.
BOOK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# MPLBACKEND is unset for the build: with a non-inline backend (e.g. Agg) a glued figure silently
# becomes the text "<Figure size ...>" and -W does not notice (.ci/check_build.py does).
# The execution cache does not keep the files a page writes (figures under $(FIGURES), verdicts under $(VERDICTS)):
# if they are gone while the cache is warm, the cache is dropped so the pages re-run.
# Last, .ci/check_build.py --prune deletes a built page whose source is gone (Sphinx keeps the page of a renamed module)
# and checks the site.
# First, in seconds, the data Chapter 8 needs (scansnap.wikitext.check): when they are neither there nor downloadable,
# the build stops before executing any page, with what to do as the last thing on the screen.
book: venv
	@$(BIN)/python -m scansnap data check
	@if [ -d $(BUILD)/.jupyter_cache ] && { [ ! -d $(FIGURES) ] || [ ! -d $(VERDICTS) ]; }; then \
	  echo "$(FIGURES) or $(VERDICTS) is missing: dropping the execution cache $(BUILD)/.jupyter_cache"; \
	  rm -rf $(BUILD)/.jupyter_cache; fi
	@mkdir -p $(FIGURES)
	@echo "building the book with SCANSNAP_PROFILE=$(SCANSNAP_PROFILE)"
	env -u MPLBACKEND $(BIN)/python .ci/execute_pages.py --cache $(BUILD)/.jupyter_cache --jobs $(BOOK_JOBS)
	env -u MPLBACKEND $(BIN)/jupyter-book build . --path-output $(BOOK_OUT) -W -n --keep-going
	$(BIN)/python .ci/check_build.py --html $(HTML) --prune
	@echo "open: file://$(abspath $(HTML)/index.html)"
	@echo "or serve it: $(BIN)/python -m http.server -d $(HTML)  (then http://localhost:8000)"

smoke:
	@$(MAKE) --no-print-directory book SCANSNAP_PROFILE=smoke

data: venv
	$(BIN)/python -m scansnap data download

# The suite runs on TEST_WORKERS processes (pytest-xdist; every test is seeded and single-threaded).
TEST_WORKERS ?= 2
# PYTEST_ARGS: more pytest arguments (CI: -m "not site and not book_stage", .ci/run).
PYTEST_ARGS ?=
test: venv
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The real-browser tests (tests/test_site.py, tests/test_site_explore.py: the explorable figures,
# tests/test_site_layout.py: nothing cut or wider than its column; marker `site`) of
# an already built site: they need
# Debian's Chromium at /usr/bin/chromium (apt-get install -y chromium chromium-driver; never
# `playwright install`). Screenshots go to _build/screenshots/.
site-test: venv
	@test -f $(HTML)/index.html || { echo "no built site at $(HTML): run make book first" >&2; exit 1; }
	SCANSNAP_SITE=$(abspath $(HTML)) $(BIN)/python -m pytest -q -n 2 -m site tests/test_site.py tests/test_site_checker.py \
	  tests/test_site_ledger.py tests/test_site_explore.py tests/test_site_layout.py

lint: venv
	$(BIN)/ruff check scansnap tests benchmarks _ext .ci

bench: venv
	$(BIN)/python benchmarks/bench_train.py

bench-sweep: venv
	$(BIN)/python benchmarks/bench_sweep.py

# The Library reference pages (book/reference/*.md) follow the package's modules; tests/test_reference.py
# fails when they are out of date.
reference: venv
	$(BIN)/python .ci/reference_pages.py

# Binder, emulated (.ci/binder_check.py): a fresh venv with binder/requirements.txt (the CPU torch wheel from
# local disk: PyTorch's index cannot be reached here), postBuild in an empty HOME, JupyterLab on 127.0.0.1
# pinned to one core, every chapter executed through the server. Per-chapter times: _build/binder-check/times.md.
binder-check:
	$(PYTHON) .ci/binder_check.py --profile $(SCANSNAP_PROFILE)

clean:
	@if [ -x $(BIN)/jupyter-book ] && [ -d _build ]; then $(BIN)/jupyter-book clean .; \
	else find _build -mindepth 1 -maxdepth 1 ! -name .jupyter_cache -exec rm -rf {} + 2>/dev/null || true; fi

# The execution cache key of a page includes a hash of the scansnap sources it imports
# (_ext/scansnap_book.py), so library edits re-execute the pages they affect; this starts from scratch.
clean-cache:
	rm -rf _build $(FIGURES) $(VERDICTS)
