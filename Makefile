# electra-bench: `make install`, `make test`, `make bench`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# Without an NVIDIA GPU, pin the CPU wheel of torch (a bare `torch` resolves to a multi-GB CUDA build).
TORCH_CPU ?= torch==2.13.0
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)

.PHONY: install test test-fast bench compare

install:
ifneq ($(HAS_GPU),yes)
	$(PIP) install -q "$(TORCH_CPU)"
endif
	$(PIP) install -q -e ".[test]"

test:
	$(PYTHON) -m pytest -q

test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

bench:
	$(PYTHON) benchmarks/bench_train.py
	$(PYTHON) benchmarks/bench_data.py
	$(PYTHON) benchmarks/bench_compare.py

compare:
	electra-bench compare
