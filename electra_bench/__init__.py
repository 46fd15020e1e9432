"""electra-bench: MLM (BERT) vs RTD (ELECTRA) at equal pre-training compute."""

import os as _os

# Same seed, same machine: same numbers. MKL may otherwise pick a different thread count under load
# (MKL_DYNAMIC) or a different kernel for a differently aligned buffer (conditional numerical
# reproducibility), which changes float summation order. These only take effect if set before torch
# loads MKL, which is why they are here; a user's own settings win.
_os.environ.setdefault("MKL_DYNAMIC", "FALSE")
_os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")
# OpenMP threads sleep instead of spinning while they wait: next to a competing process, spinning threads
# burn the cores the others need (2-thread pretrain next to `yes`: 2.7-3.1x slower spinning, 1.5x passive;
# alone the same speed; weights bit-identical: benchmarks/bench_load.py, docs/performance.md).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
