# electra-bench: `make install`, then `make compare`, `make test`, `make test-fast`, `make bench`,
# `make ci-regression` (the CI regression recipe, examples/ci/regression.sh), `make transformers4-env` (the
# oldest transformers the exports are checked against, in .cache/; the tests build it themselves).
#
# Everything runs in a project virtual environment, $(VENV). `make install` creates it once, with the first
# python >= 3.10 among python3, python3.13 ... python3.10 (or PYTHON=...), and installs the package into it;
# re-running it does nothing until setup.cfg or pyproject.toml change (start over: rm -r .venv).
# Use the tool directly with `. .venv/bin/activate`.
#   make install PYTHON=python3.12 VENV=/tmp/eb-venv    # choose the interpreter and where the venv lives
#   make compare ARGS="--quick"                         # options for `electra-bench compare`
VENV ?= .venv
PYTHON ?= $(firstword $(foreach p,python3 python3.13 python3.12 python3.11 python3.10,\
            $(shell $(p) -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1 && echo $(p))))
# Without an NVIDIA GPU torch is pinned to this version and taken from PyTorch's CPU wheel index (a bare
# `torch` from PyPI is, on Linux, a multi-GB CUDA build); see scripts/install_torch.py.
TORCH_CPU ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
ARGS ?=
# The tests run in this many pytest-xdist workers; on 2 cores 2 workers halve the wall time (README, Tests).
# `make test` hands out a test file per worker at a time, so module fixtures (the transformers 4 environment
# of the slow tests) are built once; the fast tier hands out single tests, which balances better.
TEST_WORKERS ?= 2

VPY := $(VENV)/bin/python
STAMP := $(VENV)/.electra-bench-installed

.PHONY: install test test-fast bench compare ci-regression transformers4-env
# A failed venv creation (e.g. Debian without python3-venv) must not leave a bin/python that looks done.
.DELETE_ON_ERROR:

install: $(STAMP)

# pip < 21.3 (bundled with python 3.10.0-3.10.3) cannot install a setup.py-less project in editable mode.
$(VPY):
	@test -n "$(PYTHON)" || { echo "error: no python >= 3.10 found (tried python3, python3.13 ... python3.10); make install PYTHON=/path/to/python3.x" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "error: $(PYTHON) is not a python >= 3.10, which electra-bench needs: make install PYTHON=/path/to/python3.x" >&2; exit 1; }
	$(PYTHON) -m venv "$(VENV)"
	@"$(VPY)" -c 'import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (21, 3))' || "$(VPY)" -m pip install -q --upgrade pip

$(STAMP): setup.cfg pyproject.toml | $(VPY)
	"$(VPY)" scripts/install_torch.py "$(TORCH_CPU)" "$(TORCH_INDEX)"
	"$(VPY)" -m pip install -q -e ".[test]"
	@touch "$@"

test: $(STAMP)
	"$(VPY)" -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=10

test-fast: $(STAMP)
	"$(VPY)" -m pytest -q -n $(TEST_WORKERS) -m "not slow"

bench: $(STAMP)
	"$(VPY)" benchmarks/bench_train.py
	"$(VPY)" benchmarks/bench_data.py
	"$(VPY)" benchmarks/bench_compare.py

compare: $(STAMP)
	"$(VENV)/bin/electra-bench" compare $(ARGS)

# The CI regression recipe, as any CI runs it: compare --quick, check against the committed baseline, append
# to the history store, plot, Markdown summary; exit 1 on a regression. Settings are the script's EB_*
# variables, e.g. `make ci-regression EB_STORE=ci-history/history.jsonl EB_OUT=ci-out`.
ci-regression: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" bash examples/ci/regression.sh

# A second small environment with the oldest transformers the project claims (scripts/transformers_env.py),
# which tests/test_transformers_versions.py loads exports with; built there too when missing.
transformers4-env: $(STAMP)
	"$(VPY)" scripts/transformers_env.py
